"""``condambig-score BENCHMARK --outputs FILE [options]``: score saved model outputs, print JSON.

One front end for every benchmark, built from its :class:`~condambig_tasks.benchmark.Benchmark`:
the option flags are the benchmark's options dataclass fields (``max_conditions`` ->
``--max-conditions``), the outputs are ``[{"id": ..., "output": "<raw model text>"}]`` (JSON
or JSON Lines) or a benchmark's official prediction format, and the result is JSON with
``null`` (never NaN) for a metric no sample has a value for.

Ids, the same rule for every benchmark: an output whose id is not in the data, or an id
given twice, is an error; items without an output are left out and counted
(``missing_outputs``), as the official scripts of ConditionalQA and AmbigQA (with
``--only-predicted``) leave them out.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from condambig_tasks import (
    cli_judge,
    interrupts,
    json_files,
    registry,
    run_logs,
    run_record,
    uncertainty,
)
from condambig_tasks.benchmark import (
    Benchmark,
    Runtime,
    json_safe,
    options_to_json,
    run_blocking,
    uses_judge,
)
from condambig_tasks.data import load_items, recording_sources
from condambig_tasks.errors import CondambigError, PredictionFileError, command_error
from condambig_tasks.options import option_specs
from condambig_tasks.progress import Progress, show_project_logs
from condambig_tasks.provenance import (
    OUTPUTS_SHA256_KEY,
    SCORING_SHA256_KEY,
    RecordsDigest,
    outputs_sha256,
    provenance_block,
    record_scoring_sha256,
)
from condambig_tasks.run import BenchmarkRun, EnvironmentJudge, judge_wanted, retry_hint


def build_parser(names: Sequence[str] | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="condambig-score", description="Score model outputs on a condambig benchmark.")
    subparsers = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name in names or registry.available():
        benchmark = registry.get(name)
        sub = subparsers.add_parser(name, help=benchmark.title,
                                    description=(type(benchmark).__doc__ or "").strip())
        _add_arguments(sub, benchmark)
    return parser


def _add_arguments(parser: argparse.ArgumentParser, benchmark: Benchmark) -> None:
    files = benchmark.prediction_files
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--outputs", "--pred", *files.aliases, dest="outputs",
        metavar="FILE",
        help='[{"id": ..., "output": "<raw model text>"}] as JSON or JSON Lines'
             + (f"; or {files.format}" if files.format else ""))
    source.add_argument(
        "--from-log", dest="from_log", metavar="PATH",
        help="rescore a run from its log: an lm-eval --output_path folder or samples_*.jsonl "
             "(--log_samples), or an Inspect log (.eval / .json) or log folder; the options "
             "come from the log (flags may only change scoring, e.g. the judge)")
    parser.add_argument("--task", metavar="NAME",
                        help="with --from-log: the task to rescore when the log holds several")
    if files.reference is not None:
        parser.add_argument("--ref", type=Path, metavar="FILE",
                            help="reference data in the upstream format (default: the "
                                 "configured data source)")
    # default=None: a flag not given leaves the option to the log (--from-log), the
    # environment (CONDAMBIG_FLM_*) or the declared default shown in the help
    for option in option_specs(benchmark.options_type):
        flags = [f"--{option.name.replace('_', '-')}", *option.flags]
        help_text = f"{option.help} (default {option.default_value})"
        if option.kind is bool:
            parser.add_argument(*flags, dest=option.name, default=None,
                                action=argparse.BooleanOptionalAction, help=help_text)
        else:
            choices = None if option.allowed is None else [str(v) for v in option.allowed]
            parser.add_argument(*flags, dest=option.name, default=None,
                                metavar=None if choices else "VALUE", choices=choices,
                                help=help_text)
    if uses_judge(benchmark):
        cli_judge.add_judge_arguments(parser)
    parser.add_argument("--limit", type=int, metavar="N",
                        help="score only the first N items that have an output")
    parser.add_argument("--per-sample", "--per-question", "--per-example", dest="per_sample",
                        type=Path, metavar="FILE",
                        help="also write every sample's values and details (JSON Lines)")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="also write the run record: this JSON with the outputs scored "
                             "and every sample's scores, one versioned file that "
                             "condambig-report and --from-log read")
    uncertainty.add_bootstrap_arguments(parser, "the stderr / ci95 of every metric")


def _replace_lone_surrogates(outputs: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """The outputs with lone surrogates as U+FFFD, and how many held one: a model can emit
    them (a JSON ``\\ud800`` escape), no UTF-8 file or request can carry them."""
    from condambig_metrics.text import replace_lone_surrogates

    replaced, count = {}, 0
    for key, output in outputs.items():
        clean = replace_lone_surrogates(output) if isinstance(output, str) else output
        count += clean != output
        replaced[key] = clean
    return replaced, count


def run(benchmark: Benchmark, args: argparse.Namespace) -> dict[str, Any]:
    # the flags _add_arguments declared, one per option spec
    given = {spec.name: getattr(args, spec.name) for spec in option_specs(benchmark.options_type)
             if getattr(args, spec.name) is not None}
    logged, notes, reduce = None, [], None
    if args.from_log is not None:
        logged = run_logs.read_run(benchmark, args.from_log, args.task)
        if logged.logged().later_epochs:  # the run's reducer, refused before anything is scored
            from condambig_tasks import inspect_epochs
            from condambig_tasks.inspect_rescore import PROG

            reduce = inspect_epochs.reducer(logged.epochs_reducer, str(logged.source),
                                            f"{PROG} {logged.source}")
        options, notes = run_logs.resolve_options(benchmark, logged, given)
    elif args.task is not None:
        raise PredictionFileError("--task chooses a task of a --from-log log; give --from-log.")
    else:
        options = benchmark.options(given)
    flags = {key: getattr(args, key, None) for key in cli_judge.JUDGE_FLAGS}
    run, config = BenchmarkRun.with_options(benchmark, options, EnvironmentJudge(
        {key: value for key, value in flags.items() if value is not None}))
    for note in notes:
        print(f"condambig-score {benchmark.name}: {note}", file=sys.stderr)
    source = args.outputs if logged is None else logged.source
    if args.limit is not None and args.limit < 1:
        raise PredictionFileError("--limit must be at least 1")
    reference = getattr(args, "ref", None)
    lean_load, digest = benchmark.prediction_files.lean_load, None
    with recording_sources() as sources:
        if reference is not None:
            items = benchmark.prediction_files.reference(reference, options)
        elif lean_load is not None and not run.needs_corpus_step:
            digest = RecordsDigest(benchmark)  # the whole items, hashed as they are read
            items = load_items(benchmark, options, lambda given: lean_load(given, digest.add))
        else:
            items = load_items(benchmark, options)
    by_id = {benchmark.item_id(item): item for item in items}
    if logged is None:
        outputs, non_text = _read_outputs(benchmark, args.outputs, items, options)
    else:
        outputs, non_text = logged.outputs_by_id(), logged.logged().non_text
    outputs, surrogates = _replace_lone_surrogates(outputs)
    if surrogates:
        print(f"condambig-score {benchmark.name}: {source}: {surrogates} of {len(outputs)} "
              "outputs hold lone surrogates (not encodable text); each is scored with "
              "U+FFFD in its place (lone_surrogate_outputs).", file=sys.stderr)
    unknown = [key for key in outputs if key not in by_id]
    if unknown:
        raise PredictionFileError(
            f"{source}: {len(unknown)} id(s) are not {benchmark.title} item ids "
            f"(first: {unknown[0]!r}); check the split and options.")
    missing = [key for key in by_id if key not in outputs]
    selected = [(by_id[key], outputs[key]) for key in by_id if key in outputs]
    if args.limit:
        selected = selected[: args.limit]
    if not selected:
        raise PredictionFileError(f"{source}: no output to score.")
    if missing:
        print(f"condambig-score {benchmark.name}: {len(missing)} of {len(by_id)} items have "
              "no output (left out).", file=sys.stderr)

    engine = None
    if logged is not None and logged.framework == run_logs.LM_EVAL and \
            judge_wanted(benchmark, options, EnvironmentJudge()):
        command = [benchmark.name, "--from-log", str(args.from_log),  # less the judge flags
                   *(["--task", args.task] if args.task is not None else [])]
        notice = cli_judge.logged_judge_notice(
            benchmark.name, cli_judge.logged_judge(logged.logged().judge, logged.provenance),
            config, command)
        if notice:
            print(f"condambig-score {benchmark.name}: {notice}", file=sys.stderr)
    if config is not None:
        from condambig_metrics.judge import openai_judge_engine
        from condambig_metrics.judge.preflight import CheckedBackend

        engine = openai_judge_engine(config, progress_factory=Progress,
                                     names=cli_judge.what_to_set())
        # a wrong URL, key or model ends the run after one request, not after every
        # judgement's retries; a fully cached run sends nothing
        engine.backend = CheckedBackend(engine.backend, cli_judge.describe(config))
    for note in run.notes():
        print(f"condambig-score {note}", file=sys.stderr)
    runtime = Runtime(judge=engine)
    if run.needs_corpus_step:  # the judge is checked at its first request (CheckedBackend)
        run.before_generation(runtime)
    samples = run_blocking(run.score(selected, runtime))
    scored_outputs = [(benchmark.item_id(item), output) for item, output in selected]
    if reduce is not None:  # an Inspect run of several epochs
        samples, scored_outputs = _reduce_epochs(benchmark, run, runtime, logged, reduce,
                                                 selected, samples)
    if args.per_sample:
        args.per_sample.parent.mkdir(parents=True, exist_ok=True)
        with args.per_sample.open("w", encoding="utf-8") as sink:
            for sample in samples:
                sink.write(json.dumps(sample.to_json(), ensure_ascii=False) + "\n")
    summary = run.after_scoring(
        samples, engine, max_failed=0 if config is None else config.max_failed,
        rerun="" if engine is None else _rerun(engine.endpoint_refused))
    metrics, reasons = summary.values, summary.reasons
    expected = benchmark.expected_size(options)
    if expected is not None and len(by_id) < expected:
        print(f"condambig-score {benchmark.name}: the data holds {len(by_id)} of the "
              f"{expected} items of the full split; the numbers cover those only.",
              file=sys.stderr)
    result: dict[str, Any] = {
        "benchmark": benchmark.name,
        "version": benchmark.version,
        "options": options_to_json(benchmark, options),
        "n_outputs": len(outputs),
        "n_items": len(by_id),
        "n_expected": expected,
        "n_scored": len(samples),
        "missing_outputs": len(missing),
        "non_text_outputs": non_text,
        "lone_surrogate_outputs": surrogates,
        "metrics": metrics,
        "null_reasons": reasons,
    }
    if args.bootstrap_resamples:
        estimates = uncertainty.uncertainty(benchmark, samples, options, run.judged,
                                            resamples=args.bootstrap_resamples, seed=args.seed)
        result["stderr"], result["ci95"] = uncertainty.estimates_json(estimates, metrics)
        result["uncertainty"] = uncertainty.describe(benchmark, samples,
                                                     args.bootstrap_resamples, args.seed,
                                                     estimates)
    if engine is not None:
        stats = engine.stats
        result["judge"] = {"model": engine.model_name,
                           "base_url": config.base_url,
                           "requests": stats.requests_sent + engine.backend.check_requests,
                           "retries": stats.retries,
                           "logprob_fallbacks": stats.logprob_fallbacks,
                           "cache_hits": stats.cache_hits, "failures": stats.failures,
                           "max_failed": config.max_failed}
    result["provenance"] = provenance_block(
        benchmark, options, items, sources, judge=None if engine is None else engine.model_name,
        judge_base_url=None if config is None else config.base_url, digest=digest)
    result["provenance"][OUTPUTS_SHA256_KEY] = outputs_sha256(scored_outputs)
    record_scoring_sha256(result["provenance"])
    if logged is not None:
        result["source"] = {"framework": logged.framework, "path": str(logged.source),
                            "task": logged.task, "provenance": logged.provenance}
        result["source"].update(_check_outputs(benchmark, logged, result["provenance"],
                                               whole=not args.limit))
        if logged.metrics:
            result["reported"] = dict(logged.metrics)
    result = json_safe(result)
    if args.record is not None:  # also when judged metrics are withheld: what was scored
        run_record.write(args.record, run_record.build(
            result, scored_outputs, samples, None if logged is None else logged.model))
    if engine is not None and engine.endpoint_failure is not None:
        # authentication / endpoint: the result is printed (what could be scored, the judged
        # metrics null with the hint), the exit status is not 0
        raise JudgedMetricsWithheld(
            f"the judge endpoint failed, {stats.failures} judgement(s) "
            f"failed: {engine.endpoint_failure.rstrip('.')}; "
            f"{_retry_hint(engine, engine.endpoint_refused)}", result)
    if engine is not None and stats.failures > config.max_failed:
        raise JudgedMetricsWithheld(
            f"{stats.failures} judgement(s) failed (more than "
            f"judge_max_failed={config.max_failed}), so the judged metrics are null; "
            f"{_retry_hint(engine)}", result)
    return result


def _reduce_epochs(benchmark: Benchmark, run: BenchmarkRun, runtime: Runtime,
                   logged: run_logs.RunResult, reduce: Any, selected: list,
                   first: list) -> tuple[list, list[tuple[str, str]]]:
    """An Inspect run of several epochs: every epoch's outputs scored, each sample's epochs
    reduced with the run's reducer (:mod:`condambig_tasks.inspect_epochs`); and the outputs
    scored as the run's digest names them, ``(<id>@<epoch>, output)``."""
    from condambig_tasks import inspect_epochs

    by_id = {benchmark.item_id(item): item for item, _ in selected}
    outputs = [{benchmark.item_id(item): output for item, output in selected}]
    epochs = [first]
    for rows in logged.logged().later_epochs:
        here, _ = _replace_lone_surrogates({row["id"]: row["output"] for row in rows
                                            if row["id"] in by_id})
        outputs.append(here)
        epochs.append(run_blocking(run.score(
            [(by_id[key], output) for key, output in here.items()], runtime)))
    print(f"condambig-score {benchmark.name}: {logged.source}: the run's "
          f"{len(epochs)} epochs are scored and each sample's reduced with "
          f"{', '.join(logged.epochs_reducer) or inspect_epochs.DEFAULT_REDUCER}, as the "
          "run did.", file=sys.stderr)
    judge_metrics = {spec.name for spec in benchmark.metric_specs if spec.judge}
    return inspect_epochs.reduce_epochs(reduce, epochs, outputs, judge_metrics), [
        (f"{key}@{epoch}", output) for epoch, here in enumerate(outputs, start=1)
        for key, output in here.items()]


class JudgedMetricsWithheld(CondambigError):
    """Too many judgements failed: the result (judged metrics null) is printed and the
    command exits non-zero (the message follows ``condambig-score <benchmark>: ``)."""

    def __init__(self, message: str, result: dict[str, Any]):
        super().__init__(message)
        self.result = result


def _rerun(refused: bool) -> str:
    """How to judge the same outputs again: the same command (``refused``: the endpoint
    refused every request, so no failure allowance helps)."""
    return ("run the command again" if refused else
            "run the same command again (or allow failures with --judge-max-failed N)")


def _retry_hint(engine: Any, refused: bool = False) -> str:
    """What to run after failed judgements (:func:`condambig_tasks.run.retry_hint`; the
    endpoint failure itself is said before it)."""
    return retry_hint(_rerun(refused), cache_enabled=engine.cache is not None, refused=refused)


def _check_outputs(benchmark: Benchmark, logged: run_logs.RunResult, here: dict[str, Any],
                   whole: bool) -> dict[str, Any]:
    """The run's recorded outputs digest and whether the outputs rescored here give it
    (None: not checked, the run recorded none or ``--limit`` scored a part); a different
    digest means the log was edited after the run, or its outputs are another run's: said
    in one line (the numbers here are those of the outputs in the log). Data other than
    the run's (its records digest differs) is said in one line too."""
    run = logged.provenance
    digest = ((run or {}).get("data") or {}).get("records_sha256")
    if digest is not None and digest != here["data"]["records_sha256"]:
        print(f"condambig-score {benchmark.name}: the run's data (records sha256 "
              f"{digest[:12]}…, {run['data'].get('records')} records) differs from the data "
              f"here ({here['data']['records_sha256'][:12]}…, {here['data']['records']} "
              "records); the numbers can differ from the run's.", file=sys.stderr)
    recorded = logged.outputs_sha256
    matched = recorded == here[OUTPUTS_SHA256_KEY] if recorded is not None and whole else None
    if matched is False:
        print(f"condambig-score {benchmark.name}: warning: {logged.source}: the outputs "
              f"in the log (sha256 {here[OUTPUTS_SHA256_KEY][:12]}…) are not the ones the "
              f"run scored (sha256 {recorded[:12]}…): the log was edited or holds another "
              "run's outputs; the numbers here are those of the outputs in the log, not "
              "the run's.", file=sys.stderr)
    # a recorded scoring digest that the log's options and version do not give again was
    # refused when the log was read (run_logs.read_run): here it matched
    scoring = logged.scoring_sha256
    return {OUTPUTS_SHA256_KEY: recorded, f"{OUTPUTS_SHA256_KEY}_matched": matched,
            "task_version": logged.version, SCORING_SHA256_KEY: scoring,
            f"{SCORING_SHA256_KEY}_matched": None if scoring is None else True}


def _read_outputs(benchmark: Benchmark, source: str, items: list,
                  options: Any) -> tuple[dict[str, Any], int]:
    """Id -> output, and how many outputs were not text (a number, object, list or null:
    scored as empty text, said on stderr)."""
    files = benchmark.prediction_files
    named = files.named
    if source in named:
        return {benchmark.item_id(item): output
                for item in items if (output := named[source](item)) is not None}, 0
    path = Path(source)
    if path.is_dir():
        raise PredictionFileError(f"{source}: is a folder; give the outputs file.")
    if not path.exists():
        raise PredictionFileError(f"{source}: no such file" + (
            f" (or one of: {', '.join(named)})" if named else ""))
    raw = _read_json_or_lines(path)
    if raw in ([], {}):
        raise PredictionFileError(f"{path}: the file holds no outputs.")
    if isinstance(raw, list) and all(isinstance(r, dict) and "output" in r for r in raw) and raw:
        outputs: dict[str, Any] = {}
        non_text = 0
        for row in raw:
            if "id" not in row:
                raise PredictionFileError(f"{path}: every output needs an 'id'.")
            key = files.output_id(row)
            if key in outputs:
                raise PredictionFileError(f"{path}: id {key!r} appears more than once.")
            output = row["output"]
            non_text += not isinstance(output, str)
            outputs[key] = output if isinstance(output, str) else ""
        if non_text:
            print(f"condambig-score {benchmark.name}: {path}: {non_text} of {len(outputs)} "
                  "outputs are not text (a number, object, list or null); they are scored "
                  "as empty outputs (non_text_outputs).", file=sys.stderr)
        return outputs, non_text
    predictions = None if files.read is None else files.read(raw, str(path), options)
    if predictions is None:
        expected = ('[{"id": ..., "output": "<raw model text>"}]'
                    + (f" or {files.format}" if files.format else ""))
        raise PredictionFileError(f"{path}: expected {expected}.")
    return predictions, 0


def _read_json_or_lines(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as error:
        raise PredictionFileError(f"{path}: cannot read it ({error}).") from None
    try:
        return json_files.loads(text)
    except json_files.JsonFileError as error:
        if error.line is None:  # nesting or a number: not a syntax matter of JSON Lines
            raise PredictionFileError(f"{path}: cannot be read as JSON ({error}).") from None
        try:
            return [value for _, value in json_files.loads_lines(text)]
        except json_files.JsonFileError as line_error:
            reason = error if line_error.column is not None else line_error
            raise PredictionFileError(
                f"{path}: not JSON or JSON Lines ({reason}).") from None


def main(argv: list[str] | None = None) -> int:
    """Ctrl-C or SIGTERM: one line saying what is cached, exit 130 (the caches keep every
    judgement and agent batch finished, so the same command resumes)."""
    prefix = "condambig-score"
    with interrupts.sigterm_as_sigint():
        try:
            args = build_parser(_benchmark_names(argv)).parse_args(argv)
            prefix = f"condambig-score {args.benchmark}"
            show_project_logs()
            try:
                result = run(registry.get(args.benchmark), args)
            except JudgedMetricsWithheld as withheld:
                json.dump(withheld.result, sys.stdout, indent=2, ensure_ascii=False,
                          allow_nan=False)
                sys.stdout.write("\n")
                print(f"{prefix}: {withheld}", file=sys.stderr)
                return 2
            except (CondambigError, FileNotFoundError, ValueError) as error:
                return command_error(prefix, error)
            json.dump(result, sys.stdout, indent=2, ensure_ascii=False, allow_nan=False)
            sys.stdout.write("\n")
            return 0
        except KeyboardInterrupt:
            print(interrupts.interrupted_line(prefix), file=sys.stderr)
            if argv is None:  # the console script owns the process: no slow teardown
                interrupts.exit_now(interrupts.EXIT_CODE)
            return interrupts.EXIT_CODE


def _benchmark_names(argv: list[str] | None) -> list[str] | None:
    """Only the named benchmark's module is imported when one is named (fast start)."""
    words = sys.argv[1:] if argv is None else argv
    known = registry.available()
    return [words[0]] if words and words[0] in known else None


if __name__ == "__main__":
    sys.exit(main())
