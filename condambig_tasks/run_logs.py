"""The one reader of finished framework runs: lm-eval's results and samples, Inspect logs
and saved ``condambig-score`` JSON, for ``condambig-score --from-log``, ``condambig-report``
and ``condambig-register``.

Each source is read the way its framework writes it:

- lm-eval: ``<output_path>/<model>/results_<date>.json`` (``results[task]["<metric>,none"]``
  and ``"<metric>_stderr,none"``, ``configs[task].metadata`` with our provenance block,
  ``n-samples``) and, with ``--log_samples``, ``samples_<task>_<date>.jsonl`` beside it (one
  row per doc: our ``doc`` with ``id``, ``options``, ``judge``; ``filtered_resps[0]`` is the
  text ``process_results`` scored), as lm-eval 0.4's ``EvaluationTracker`` names them;
- Inspect: a ``.eval`` / ``.json`` log through ``inspect_ai.log.read_eval_log`` (the task's
  ``metadata`` holds the benchmark and its resolved options, ``output.completion`` is the
  text the scorer read, ``results.scores[*].metrics`` what the run printed);
- ``condambig-score``: its JSON saved to a file (``benchmark``, ``options``, ``metrics``),
  and its run record (``--record``: that JSON with the outputs and per-sample scores,
  versioned; :mod:`condambig_tasks.run_record`), the one file any front end's run can be
  turned into.

Which benchmark and variant a framework task name is comes from the spec
(:func:`condambig_tasks.registry.task_variant`); a run under another task name (a user's own
lm-eval YAML over our glue, Inspect's generic ``abg_coqa`` task) is placed by the benchmark
and options it recorded (:func:`condambig_tasks.benchmark.variant_of`).

Each file is converted once, into a :class:`RunResult` (what the run reported, its options,
provenance and digests) whose :class:`Logged` (its outputs and per-sample scores) is read
when first asked for. :func:`read_results` gives the runs under some paths, for the report
and the register; :func:`read_scored_samples` their per-sample scores; :func:`read_run`
one run with its outputs, so it can be rescored, e.g. with another judge,
without generating again.
"""

from __future__ import annotations

import dataclasses
import functools
import glob
import itertools
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condambig_tasks import json_files, registry, run_record
from condambig_tasks.benchmark import (
    Benchmark,
    ScoredSample,
    TaskVersion,
    Variant,
    finite_number,
    options_to_json,
    reported_values,
    task_version,
    variant_of,
)
from condambig_tasks.data import load_items
from condambig_tasks.errors import ConfigurationError, PredictionFileError
from condambig_tasks.json_files import kind as _kind
from condambig_tasks.provenance import OUTPUTS_SHA256_KEY, SCORING_SHA256_KEY, scoring_sha256

LM_EVAL = "lm_eval"
INSPECT = "inspect"
CLI = "condambig-score"
# lm-eval's sample file name (EvaluationTracker.save_results_samples):
# samples_<task>_<datetime.now().isoformat() with ':' -> '-'>.jsonl
_LM_EVAL_SAMPLES = re.compile(
    r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl$")
_LM_EVAL_RESULTS_DATE = re.compile(r"_(?P<date>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.json$")
_WHAT_TO_GIVE = ("give an lm-eval --output_path folder (run with --log_samples), a "
                 "samples_<task>_<date>.jsonl file, an Inspect log (.eval / .json) or folder, "
                 "or a condambig-score --record file")


class RunLogError(PredictionFileError):
    """A path that is not a run this command can read (one line: what it is, what to give)."""


class NotARunFile(RunLogError):
    """A file named directly that is none of the kinds of run this module reads."""


@dataclass(frozen=True)
class Logged:
    """A run's samples as its log holds them, read once for ``--from-log`` and the report:
    the outputs its scorer read and its own per-sample scores (``samples`` None: it has
    none, ``reason`` why)."""

    # [{"id", "output"}]: of epoch 1 in an Inspect run; a record's are read by --from-log
    outputs: list[dict[str, str]]
    samples: list[ScoredSample] | None
    reason: str | None = None
    later_epochs: tuple[tuple[dict[str, str], ...], ...] = ()  # Inspect: epochs 2..
    failed: int = 0  # Inspect: samples that ended in an error (no output)
    options: dict[str, Any] = field(default_factory=dict)  # lm-eval: the docs' options
    judge: dict[str, Any] = field(default_factory=dict)  # lm-eval: the docs' judge_* settings
    non_text: int = 0  # lm-eval: logged responses that were not text (scored as "")


# ---------------------------------------------------------------------- entry points


def read_run(benchmark: Benchmark, path: str | Path, task: str | None = None) -> RunResult:
    """The run of ``benchmark`` logged at ``path`` (a file or a folder of logs); ``task``
    chooses among several tasks of the benchmark found there. Its ``logged()`` holds the
    outputs to rescore; ``version`` is the task version the log recorded (None: none)."""
    root = Path(path)
    runs, notices = _runs_under(root)
    found = [run for run in runs if run.rescorable is not None]
    mine = [run for run in found if run.benchmark == benchmark.name]
    if not mine:
        others = sorted({f"{run.benchmark} (task {run.task})" for run in found})
        if others:
            raise RunLogError(
                f"{root}: holds no {benchmark.title} run, only runs of {', '.join(others)}; "
                f"score those with condambig-score <benchmark> --from-log {root}.")
        if any(run.framework == LM_EVAL for run in runs):
            raise RunLogError(f"{root}: holds lm-eval results but no samples: rerun lm_eval "
                              "with --log_samples (the scores need every output).")
        held = "no condambig run of a known task" if runs or notices else "no framework log"
        raise RunLogError(f"{root}: holds {held}; {_WHAT_TO_GIVE}.")
    if task is not None:
        chosen = [run for run in mine if _task_key(run.task) == _task_key(task)]
        if not chosen:
            raise RunLogError(f"{root}: no run of task {task!r}; found: "
                              f"{', '.join(sorted({run.task for run in mine}))}.")
        mine = chosen
    tasks = sorted({run.task for run in mine})
    if len(tasks) > 1:
        raise RunLogError(f"{root}: holds runs of several {benchmark.title} tasks "
                          f"({', '.join(tasks)}); choose one with --task NAME.")
    if len(mine) > 1:
        raise RunLogError(f"{root}: holds {len(mine)} runs of task {tasks[0]} "
                          f"({'; '.join(str(run.per_sample or run.source) for run in mine)}); "
                          "give one file.")
    logged = mine[0].rescorable()
    _check_scoring_digest(benchmark, logged)
    return dataclasses.replace(logged, notes=logged.notes + _version_notes(benchmark, logged))


def _check_scoring_digest(benchmark: Benchmark, logged: RunResult) -> None:
    """The options and task version in the log are the ones the run scored with: the
    run's ``scoring_sha256`` over them and its outputs digest is given again (a log
    without one is read as before)."""
    if logged.scoring_sha256 is None or logged.outputs_sha256 is None:
        return
    here = scoring_sha256(benchmark.name, logged.version, logged.options,
                          logged.outputs_sha256)
    if here != logged.scoring_sha256:
        raise RunLogError(
            f"{logged.source}: its options or task version are not the ones the run scored "
            f"with (its {SCORING_SHA256_KEY} {logged.scoring_sha256[:12]}…, the log now gives "
            f"{here[:12]}…): the log was edited after the run; give the log the run wrote, "
            "or score the outputs with condambig-score --outputs and the options you mean.")


def _version_notes(benchmark: Benchmark, logged: RunResult) -> tuple[str, ...]:
    """One line when the run was made with another version of the benchmark's task."""
    recorded = logged.version
    if recorded is None or recorded == benchmark.version:
        return ()
    try:
        comparable = TaskVersion(recorded).comparability == task_version(benchmark).comparability
    except (ValueError, IndexError):
        comparable = False
    return (f"{logged.source}: the run was made with {benchmark.name} task version "
            f"{recorded}; this is version {benchmark.version}, which scores its outputs"
            + (" (the same comparability version: the same scores)." if comparable else
               " (another comparability version: its numbers can differ from the run's)."),)


def _same_copies(path: Path, what: str, copies: Iterable[tuple[str, Any]]) -> None:
    """Every copy a log keeps of its options (or version) says the same: one edited and
    not the others is one line naming where they differ."""
    present = [(place, value) for place, value in copies if value is not None]
    for place, value in present[1:]:
        first_place, first = present[0]
        if value == first:
            continue
        if isinstance(value, dict) and isinstance(first, dict):
            keys = sorted(k for k in {*value, *first} if value.get(k) != first.get(k))
            shown = "; ".join(f"{k}: {first.get(k)!r} in {first_place}, {value.get(k)!r} in "
                              f"{place}" for k in keys[:3])
        else:
            shown = f"{first!r} in {first_place}, {value!r} in {place}"
        raise RunLogError(f"{path}: its {what} differ ({shown}): the log was edited after "
                          "the run; give the log the run wrote.")


def resolve_options(benchmark: Benchmark, logged: RunResult,
                    given: Mapping[str, Any]) -> tuple[Any, list[str]]:
    """The typed options to score with, and notices (the run's notes first): the run's
    options, where a command-line value may differ only if it changes nothing the model was
    asked (same items, prompts and generation budget), e.g. HotpotQA-FLM's agent device or
    CondAmbigQA's ``matching``."""
    try:
        base = benchmark.options(logged.options)
    except ConfigurationError as error:
        raise RunLogError(f"{logged.source}: the run's options do not fit this version of "
                          f"{benchmark.name} ({error}).") from None
    merged = benchmark.options({**logged.options, **given})
    changed = [name for name in given if getattr(base, name) != getattr(merged, name)]
    if not changed:
        return merged, list(logged.notes)
    described = ", ".join(f"--{name.replace('_', '-')} {getattr(merged, name)!s} (the run: "
                          f"{getattr(base, name)!s})" for name in changed)
    if _what_was_asked(benchmark, base) != _what_was_asked(benchmark, merged):
        raise ConfigurationError(
            f"{described}: changes the items or prompts the model answered; drop the flag "
            "(the options come from the log) or generate again.")
    return merged, [*logged.notes, f"{described}: scoring only, the prompts are unchanged."]


def benchmark_of_task(task: str) -> str | None:
    """The benchmark a task name of the spec belongs to (an lm-eval task, an Inspect task
    with or without ``condambig/``), None for a name no benchmark declares."""
    known = registry.task_variant(_task_key(task))
    return None if known is None else known[0].name


def variant_for(benchmark: Benchmark, options: Mapping[str, Any],
                temperature: float | None = None) -> Variant:
    """The variant of a run that names options, not a task (the spec's most specific
    variant whose fixed options it has and whose sampling fits the run's ``temperature``,
    None when not recorded; the default variant when the options no longer parse)."""
    try:
        return variant_of(benchmark, benchmark.options(dict(options), strict=False),
                                    temperature)
    except ConfigurationError:
        return benchmark.variants[0]


def benchmark_options(benchmark: Benchmark, values: Mapping[str, Any]) -> dict[str, Any]:
    """The benchmark's options from a framework's mixed metadata (unknown keys ignored);
    options this version no longer accepts are kept as recorded."""
    try:
        return options_to_json(benchmark, benchmark.options(dict(values), strict=False))
    except ConfigurationError:
        return {key: value for key, value in values.items() if isinstance(key, str)}


# ---------------------------------------------------------------------- finding runs


def _task_key(task: str) -> str:
    return task.removeprefix(registry.INSPECT_PREFIX)


def _what_was_asked(benchmark: Benchmark, options: Any) -> tuple[int, list[tuple[str, str]]]:
    items = load_items(benchmark, options)
    return benchmark.max_tokens(options), [
        (benchmark.item_id(item), benchmark.prompt(item, options)) for item in items]


# ---------------------------------------------------------------------- lm-eval


def _doc_benchmark(path: Path, strict: bool = True) -> str | None:
    """The benchmark a samples file's docs name (None: not ours, or written before docs
    named it); ``strict``: a file whose rows are not condambig docs is an error (named
    directly, not in a folder)."""
    rows = _read_rows(path, first_only=True)
    doc = rows[0][1].get("doc") if rows and isinstance(rows[0][1], dict) else None
    if not isinstance(doc, dict) or "options" not in doc:
        if not strict:
            return None
        raise RunLogError(f"{path}: not an lm-eval samples file (rows with 'doc' and "
                          f"'resps'); {_WHAT_TO_GIVE}.")
    named = doc.get("benchmark")
    return named if isinstance(named, str) and named in registry.available() else None


def _read_rows(path: Path, first_only: bool = False) -> list[tuple[int, Any]]:
    """(line number, value) of the file's JSON lines (:func:`json_files.loads_lines`)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise RunLogError(f"{path}: cannot read it ({error}).") from None
    try:
        return list(itertools.islice(json_files.loads_lines(text), 1 if first_only else None))
    except json_files.JsonFileError as error:
        raise RunLogError(f"{path}: line {error.line} is not JSON ({error.reason}); "
                          f"{_WHAT_TO_GIVE}.") from None


def _samples_run(path: Path) -> tuple[list[RunResult], list[str]]:
    """A samples file's run, for ``--from-log``: the run of its task in the results file of
    the same run beside it, else the samples alone (their docs give its options)."""
    match = _LM_EVAL_SAMPLES.match(path.name)
    task = match["task"] if match else path.stem
    # a task the spec does not name (a renamed file, a user's own YAML task over our glue):
    # the benchmark its docs name
    benchmark = (benchmark_of_task(task) if match else None) or \
        _doc_benchmark(path, strict=match is None)
    if benchmark is None:
        return [], [f"skipped {path}: not a condambig task"]
    run = (match and _lm_eval_run_beside(path, match, benchmark)) or RunResult(
        source=path, framework=LM_EVAL, model=None, benchmark=benchmark,
        variant=registry.get(benchmark).variants[0], task=task, metrics={}, per_sample=path,
        logged=functools.cache(functools.partial(_lm_eval_logged, path)))
    return [_rescorable(run, _read_lm_eval)], []


def _rescorable(run: RunResult, read: Callable[[RunResult], RunResult]) -> RunResult:
    """``run`` with how ``--from-log`` reads it for rescoring (when chosen)."""
    return dataclasses.replace(run, rescorable=functools.partial(read, run))


def _read_lm_eval(run: RunResult) -> RunResult:
    """A samples file's run: its outputs and the options its docs carry, with what the
    results file of the same run beside it reported (none: a samples file alone, whose
    variant its docs' options give)."""
    path = run.per_sample
    logged = run.logged()
    block = run.provenance or {}
    _same_copies(path, "recorded options", [
        ("the samples' docs", logged.options),
        ("the results' provenance block", _dict_or_none(block.get("options")))])
    notes = () if not logged.non_text else (
        f"{path}: {logged.non_text} of {len(logged.outputs)} logged responses are not text; "
        "they are scored as empty outputs (non_text_outputs).",)
    variant = run.variant if run.source != path else \
        variant_for(registry.get(run.benchmark), logged.options)
    return dataclasses.replace(run, source=path, variant=variant, options=logged.options,
                               notes=notes, version=_text(block.get("task_version")),
                               rescorable=None, logged=lambda: logged)


def _lm_eval_logged(path: Path) -> Logged:
    """A condambig lm-eval samples file, one row per doc: the output ``process_results``
    scored and the values it returned (a CORPUS metric's item carries the whole
    ScoredSample, a MEAN / SUM metric its number; an item with only the output means the
    scoring happened in the aggregation step: a judge, HotpotQA-FLM's agents)."""
    rows = _read_rows(path)
    if not rows:
        raise RunLogError(f"{path}: holds no samples.")
    outputs, options, judges, non_text = [], {}, {}, 0
    samples: list[ScoredSample] | None = []
    for number, row in rows:
        doc = row.get("doc") if isinstance(row, dict) else None
        if not isinstance(doc, dict) or not {"id", "options", "judge"} <= set(doc):
            raise RunLogError(f"{path}: not a condambig lm-eval samples file (its docs lack "
                              f"id / options / judge); {_WHAT_TO_GIVE}.")
        identifier = doc["id"]
        if isinstance(identifier, bool) or not isinstance(identifier, (str, int)):
            raise _shape_error(path, number, f"the doc's 'id' is {_kind(identifier)}, not a "
                                             "string")
        for name, seen in (("options", options), ("judge", judges)):
            if not isinstance(doc[name], str) or doc[name] not in seen:
                seen[doc[name]] = _json_object(path, number, doc[name], name)
        output = _lm_eval_output(path, number, row)
        non_text += not isinstance(output, str)
        outputs.append({"id": str(identifier),
                        "output": output if isinstance(output, str) else ""})
        names = row.get("metrics")
        if not isinstance(names, list):
            raise _shape_error(path, number, f"'metrics' is {_kind(names)}, not a list")
        values: dict[str, float | None] = {}
        whole = None
        for name in names:
            item = row.get(name)
            if isinstance(item, dict) and isinstance(item.get("sample"), dict):
                whole = ScoredSample.from_json(item["sample"])
            elif isinstance(item, dict):
                samples = None
            else:
                values[name] = finite_number(item)
        if samples is not None:
            samples.append(whole or ScoredSample(id=str(identifier), values=values))
    if len(options) != 1 or len(judges) != 1:
        raise RunLogError(f"{path}: its samples carry different options; give the samples "
                          "file of one task run.")
    _check_unique(path, outputs)
    return Logged(outputs=outputs, samples=samples,
                  reason=None if samples is not None else (
                      "scored in lm-eval's aggregation step (a judge or HotpotQA-FLM's "
                      "agents): its samples file holds the outputs, not their scores"),
                  options=next(iter(options.values())), judge=next(iter(judges.values())),
                  non_text=non_text)


def _lm_eval_output(path: Path, number: int, row: Mapping[str, Any]) -> Any:
    """What ``process_results`` received: the filtered response, else the raw one (lm-eval
    writes ``filtered_resps`` as one value per request and ``resps`` as one list of
    responses per request); a value that is not text is returned as is, for counting."""
    filtered = row.get("filtered_resps")
    if filtered is not None and not isinstance(filtered, list):
        raise _shape_error(path, number, f"'filtered_resps' is {_kind(filtered)}, not a list")
    if filtered:
        return filtered[0]
    responses = row.get("resps")
    if responses is None or responses == []:
        return ""
    if not isinstance(responses, list) or not isinstance(responses[0], list):
        raise _shape_error(path, number, f"'resps' is {_kind(responses)}, not a list of "
                                         "lists")
    return responses[0][0] if responses[0] else ""


def _json_object(path: Path, number: int, text: Any, name: str) -> dict[str, Any]:
    """The doc field ``name``: a JSON object written as a string, as our tasks log it."""
    if not isinstance(text, str):
        raise _shape_error(path, number, f"the doc's '{name}' is {_kind(text)}, not a JSON "
                                         "object string")
    try:
        value = json_files.loads(text)
    except json_files.JsonFileError as error:
        raise _shape_error(path, number, f"the doc's '{name}' is not JSON ({error})") from None
    if not isinstance(value, dict):
        raise _shape_error(path, number, f"the doc's '{name}' holds {_kind(value)}, not a JSON "
                                         "object")
    return value


def _shape_error(path: Path, number: int, problem: str) -> RunLogError:
    return RunLogError(f"{path}: line {number}: {problem}; not a sample row as lm-eval "
                       "writes it for a condambig task (give the file lm_eval wrote).")


def _is_lm_eval_content(data: Any) -> bool:
    """Whether a JSON value is an lm-eval results file (``results`` beside its configs)."""
    return isinstance(data, dict) and isinstance(data.get("results"), dict) and (
        "configs" in data or "config" in data)


LM_EVAL_FILTER = "none"  # our tasks define no filters: every metric key ends in ",none"


def _metrics_and_stderr(
    values: Mapping[str, Any],
) -> tuple[dict[str, float | None], dict[str, float]]:
    """Metric -> value (None: NaN) and metric -> standard error, from the values a
    framework printed, ``<metric>_stderr`` its metric's (NaN: none, the metric withheld)."""
    metrics: dict[str, float | None] = {}
    stderr: dict[str, float] = {}
    for name, value in values.items():
        number = finite_number(value)
        if not name.endswith("_stderr"):
            metrics[name] = number
        elif number is not None:
            stderr[name.removesuffix("_stderr")] = number
    return metrics, stderr


def _lm_eval_run_beside(path: Path, match: re.Match[str], benchmark: str) -> RunResult | None:
    """The run of the samples' task in the results file of the same run beside them
    (``<name>_<date>.json``, ``match`` the samples file's name; None when there is none)."""
    for candidate in sorted(path.parent.glob(f"*_{match['date']}.json")):
        content, problem = _load_result_json(candidate, None)
        if problem is not None:
            raise RunLogError(f"{candidate}: {problem}; put back the results file lm_eval "
                              "wrote, or move it away (the samples alone can be rescored).")
        if _is_lm_eval_content(content):
            runs = _lm_eval_result(candidate, content, benchmark)[0]
            return next((run for run in runs if run.task == match["task"]), None)
    return None


def _check_unique(path: Path, outputs: list[dict[str, str]]) -> None:
    seen: set[str] = set()
    for row in outputs:
        if row["id"] in seen:
            raise RunLogError(f"{path}: sample id {row['id']!r} appears more than once.")
        seen.add(row["id"])


# ---------------------------------------------------------------------- run records


def _read_record(run: RunResult, data: Mapping[str, Any]) -> RunResult:
    """A run record's outputs, options and digests, for rescoring."""
    path = run.source
    outputs = run_record.outputs(path, data)
    if {row["id"] for row in outputs} != {sample.id for sample in run.logged().samples}:
        raise RunLogError(f"{path}: its outputs are not one per sample (a run of several "
                          "epochs); rescore the log it was made from.")
    _check_unique(path, outputs)
    task = _text(_object(path, data, "source").get("task"))
    return dataclasses.replace(run, task=_task_key(task or run.task), framework=CLI,
                               model=_text(data.get("model")), rescorable=None,
                               version=_text(data.get("version")),
                               logged=lambda: Logged(outputs, None))


def record_of_log(path: Path) -> dict[str, Any]:
    """The run record of one finished framework run whose log holds every sample's scores
    (an Inspect log of one epoch), made from the log without scoring it again: its numbers,
    digests and options as recorded, its outputs and samples."""
    found = read_results([path])
    if len(found.runs) != 1:
        why = found.notices[0].removeprefix(f"skipped {path}: ") if found.notices else \
            f"it holds {len(found.runs)} condambig runs"
        raise RunLogError(f"{path}: no run record: {why}.")
    [run] = found.runs
    scored = read_scored_samples(run)
    if scored.samples is None:
        raise RunLogError(f"{path}: no run record without scoring again: {scored.reason}; "
                          f"make it with condambig-score {run.benchmark} --from-log {path} "
                          "--record FILE.")
    logged = run.rescorable()  # the log read once: the report's run, its outputs
    _check_scoring_digest(registry.get(run.benchmark), logged)
    summary = {"benchmark": run.benchmark, "version": logged.version or run.version,
               "options": logged.options, "n_scored": len(scored.samples),
               "metrics": dict(run.metrics), "stderr": dict(run.stderr),
               "judge": {"model": run.judge, "base_url": run.judge_base_url}
               if run.judge else None,
               "provenance": {**(logged.provenance or {}),
                              OUTPUTS_SHA256_KEY: logged.outputs_sha256,
                              SCORING_SHA256_KEY: logged.scoring_sha256},
               "source": {"framework": run.framework, "path": str(path), "task": logged.task,
                          run_record.SCORED_BY: run.framework, "created": run.created,
                          "task_args": dict(run.task_args)}}
    return run_record.build(summary, logged.outputs_by_id().items(), scored.samples, run.model)


# ---------------------------------------------------------------------- Inspect


def _read_inspect(run: RunResult, header: Any) -> RunResult:
    """An Inspect run's outputs for rescoring, with notes on what ``--from-log`` scores
    otherwise than the run did, once its copies of its options and version agree."""
    path, spec = run.source, header.eval
    logged = run.logged()
    if not (logged.outputs or logged.later_epochs or logged.failed):
        raise RunLogError(f"{path}: the Inspect log holds no samples (run with "
                          "--no-log-samples, or stopped before any); rerun logging samples.")
    notes = []
    if header.status != "success":
        notes.append(f"the Inspect run ended with status {header.status}; its logged "
                     "samples are scored.")
    if logged.failed:
        notes.append(f"{logged.failed} sample(s) ended in an error and have no output "
                     "(left out).")
    metadata = spec.metadata or {}
    roles = {name: getattr(config, "model", str(config))
             for name, config in (spec.model_roles or {}).items()}
    grader = roles.pop("grader", None)
    if grader is not None and metadata.get("judged", True):
        notes.append(f"the run was judged by the Inspect grader {grader}; "
                     "condambig-score judges with --judge-model / $CONDAMBIG_JUDGE_MODEL.")
    if roles:
        notes.append("the run bound Inspect model role(s) "
                     f"{', '.join(f'{k}={v}' for k, v in roles.items())}; condambig-score "
                     "cannot call them and scores with its own settings.")
    block = run.provenance or {}
    _same_copies(path, "recorded options", [
        ("the task metadata", _dict_or_none(metadata.get("options"))),
        ("its provenance block", _dict_or_none(block.get("options"))),
        *(("the scorer's arguments", _dict_or_none((scorer.options or {}).get("options")))
          for scorer in spec.scorers or [] if scorer.name.endswith("benchmark_scorer"))])
    _same_copies(path, "recorded task versions", [
        ("the task metadata", _text(metadata.get("full_task_version"))),
        ("its provenance block", _text(block.get("task_version")))])
    reducer = spec.config.epochs_reducer
    return dataclasses.replace(run, task=spec.task, notes=tuple(notes), rescorable=None,
                               version=_text(metadata.get("full_task_version"))
                               or _text(block.get("task_version")),
                               epochs_reducer=tuple([reducer] if isinstance(reducer, str)
                                                    else reducer or ()))


def _inspect_logged(path: Path, log: Any) -> Logged:
    """An Inspect log's samples: each epoch's outputs (a sample that ended in an error has
    none) and, in a run of one epoch, each sample's ``Score`` (``value`` its numbers,
    ``metadata`` its details less the judge's transcript); read by
    :mod:`condambig_tasks.inspect_samples`, one line if doctored."""
    from condambig_tasks.inspect_samples import InspectSampleError, read_samples

    try:
        logged = read_samples(path)
    except InspectSampleError as error:
        raise RunLogError(str(error)) from None
    epochs = log.eval.config.epochs or 1
    by_epoch = [tuple({"id": s.id, "output": s.completion} for s in logged
                      if s.epoch == epoch and not s.failed) for epoch in range(1, epochs + 1)]
    for rows in by_epoch:
        _check_unique(path, list(rows))
    reason = ("the Inspect log holds no samples" if not logged else
              f"the run has {epochs} epochs (its numbers average them)" if epochs > 1 else
              None)
    samples = []
    for sample in logged if reason is None else []:
        score = next(iter(sample.scores.values()), None)
        if score is None and not sample.failed:
            reason = f"sample {sample.id} has no score"
        if score is None or sample.failed:
            continue
        values = score.value if isinstance(score.value, dict) else {}
        samples.append(ScoredSample(
            id=sample.id, values={k: finite_number(v) for k, v in values.items()},
            details={k: v for k, v in score.metadata.items() if k != "judge_calls"},
            explanation=score.explanation or ""))
    return Logged(outputs=list(by_epoch[0]), samples=None if reason else samples,
                  reason=reason, later_epochs=tuple(by_epoch[1:]),
                  failed=sum(sample.failed for sample in logged))


def _dict_or_none(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def _recorded_digests(path: Path, blocks: Sequence[Mapping[str, Any] | None],
                      ) -> dict[str, str | None]:
    """``outputs_sha256`` and ``scoring_sha256``: the first of each recorded in ``blocks``
    (an Inspect log's score metadata, where the task-end hook of
    :mod:`condambig.null_reasons` writes them; a provenance block); None in a log without
    one."""
    found = {}
    for key in (OUTPUTS_SHA256_KEY, SCORING_SHA256_KEY):
        digest = next((block[key] for block in blocks if block and block.get(key) is not None),
                      None)
        if digest is not None and not isinstance(digest, str):
            raise RunLogError(f"{path}: its recorded {key!r} is {_kind(digest)}, not a "
                              "sha256; give the log the run wrote.")
        found[key] = digest
    return found


def _provenance(path: Path, metadata: Mapping[str, Any]) -> dict[str, Any] | None:
    """The run's provenance block (``condambig_tasks.provenance``), None when the run has
    none; one of another shape is an error naming the log."""
    block = metadata.get("provenance")
    if block is None:
        return None
    data = block.get("data", {}) if isinstance(block, dict) else None
    digest = data.get("records_sha256") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(digest, (str, type(None))):
        raise RunLogError(f"{path}: its provenance block is not the one condambig writes "
                          "('data' with a 'records_sha256' string); give the log the run "
                          "wrote.")
    return block


# ---------------------------------------------------------------------- results (the report)

RESULTS_EXPECTED = ("an lm-eval results file (results_*.json) or --output_path folder, an "
                    "Inspect log (.eval, or .json from --log-format json), a condambig-score "
                    "--record file, or a saved condambig-score JSON (with its --per-sample "
                    "file)")


@dataclass(frozen=True)
class RunResult:
    """One model on one task variant, as one framework recorded it: the one run type every
    reader gives (the report's and the register's runs, the run ``--from-log`` rescores)."""

    source: Path
    framework: str  # LM_EVAL | INSPECT | CLI
    model: str
    benchmark: str
    variant: Variant  # the spec's variant the run is a run of
    task: str  # the task name the framework ran (the variant's, or a user's own)
    metrics: Mapping[str, float | None]
    stderr: Mapping[str, float] = field(default_factory=dict)
    n: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    judge: str | None = None  # the judge model that scored it (None: no judge)
    created: str | None = None
    judge_base_url: str | None = None  # where that judge answered (None: not recorded)
    ci95: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # the run's own
    # where its per-sample scores are: lm-eval's samples file, a condambig-score --per-sample
    # file (None: none found; an Inspect log holds its own)
    per_sample: Path | None = None
    notes: tuple[str, ...] = ()  # what the reader assumed about the run, one line each
    # the data it read, from its provenance block: how many records, from which files
    # (their names; a hub dataset's name), None / () when not recorded
    data_records: int | None = None
    data_sources: tuple[str, ...] = ()
    version: str | None = None  # the task version the run recorded (None: not recorded)
    task_args: Mapping[str, Any] = field(default_factory=dict)  # Inspect's -T, as given
    outputs_sha256: str | None = None  # the digest of the outputs it scored, when recorded
    provenance: Mapping[str, Any] | None = None  # its provenance block, when it has one
    scoring_sha256: str | None = None  # provenance.scoring_sha256, when recorded
    # its samples, read once when first asked for (a saved condambig-score JSON's: those of
    # the --per-sample file that goes with it; None: none found)
    logged: Callable[[], Logged] | None = field(default=None, compare=False, repr=False)
    # an Inspect run of several epochs: the reducer(s) it combined each sample's epochs with
    epochs_reducer: tuple[str, ...] = ()
    unfinished: str | None = None  # an Inspect run that did not finish: its log's status
    # the run as --from-log rescores it (its outputs checked, notes on what it assumed),
    # read when chosen; None: the run holds no outputs to rescore
    rescorable: Callable[[], RunResult] | None = field(default=None, compare=False,
                                                       repr=False)

    def outputs_by_id(self) -> dict[str, str]:
        """Id -> the output the run's scorer read (of epoch 1 in an Inspect run)."""
        return {row["id"]: row["output"] for row in self.logged().outputs}


@dataclass
class RunResults:
    runs: list[RunResult] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def read_results(paths: Iterable[str | Path]) -> RunResults:
    """Every run under ``paths`` (files or folders), in the order given; a file of another
    kind named directly is an error, one met in a folder a notice."""
    found = RunResults()
    # a --per-sample file given and also found in a folder given is attached once
    per_sample: dict[Path, tuple[Path, list[ScoredSample]]] = {}
    read: set[Path] = set()  # a file given and also found in a folder given is read once
    for raw in paths:
        path = Path(raw)
        if path.is_file() and path.suffix == ".jsonl":
            per_sample.setdefault(path.resolve(), (path, _read_per_sample_file(path)))
            continue
        files = _run_files(path, from_log=False)
        if not files:
            raise RunLogError(f"{path}: holds no results_*.json, .eval or .json file; "
                              f"expected {RESULTS_EXPECTED}.")
        for file in files:
            if file.resolve() in read:
                continue
            read.add(file.resolve())
            runs, notices = _read_file(file, strict=not path.is_dir(), from_log=False)
            found.runs.extend(run for run in runs if run.unfinished is None)
            found.notices.extend([*notices, *(
                f"skipped {run.source}: the Inspect run did not finish (status "
                f"{run.unfinished})" for run in runs if run.unfinished)])
            for beside in _per_sample_files_beside(file, runs) if path.is_dir() else []:
                per_sample.setdefault(beside.resolve(),
                                      (beside, _read_per_sample_file(beside)))
    for path, samples in per_sample.values():
        _attach_per_sample(found, path, samples)
    found.runs[:], notices = each_run_once(found.runs)
    found.notices.extend(notices)
    return found


def each_run_once(given: Sequence[RunResult]) -> tuple[list[RunResult], list[str]]:
    """The runs with a framework's run given twice, as its log and as the run record it
    wrote (``CONDAMBIG_RECORD_DIR`` beside ``--log-dir``), kept once: the same framework,
    task, model, outputs digest and numbers. It is kept as its record when one is given (it
    holds every sample's scores), and a notice says so: never compared with itself."""
    kept: dict[tuple, int] = {}
    runs: list[RunResult] = []
    notices: list[str] = []
    for run in given:
        key = (run.framework, run.task, run.model, run.outputs_sha256,
               tuple(sorted(run.metrics.items())))
        # a run without a digest, or condambig-score's: nothing says it is another's
        comparable = run.outputs_sha256 is not None and run.framework != CLI
        index = kept.setdefault(key, len(runs)) if comparable else len(runs)
        if index == len(runs):
            runs.append(run)
            continue
        first = runs[index]
        record, other = (run, first) if run.per_sample == run.source else (first, run)
        runs[index] = record
        notices.append(f"{other.source} and {record.source} are one {run.framework} run "
                       f"(task {run.task}, model {run.model}, the same outputs and "
                       f"numbers): read once, from {record.source}")
    return runs, notices


def _per_sample_files_beside(saved: Path, runs: list[RunResult]) -> list[Path]:
    """In a folder, the ``--per-sample`` files named after a condambig-score JSON
    (``b.per-sample.jsonl`` beside ``b.json``), as if given with it."""
    if not any(run.framework == CLI and run.per_sample is None for run in runs):
        return []  # a run record holds its own samples
    return sorted(path for path in saved.parent.glob(f"{glob.escape(saved.stem)}.*.jsonl")
                  if path.is_file() and not _LM_EVAL_SAMPLES.match(path.name))


_INSPECT_JSON_HEAD = re.compile(r'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


def _give(from_log: bool) -> str:
    """What to give the command: ``--from-log`` rescores outputs, the report reads results."""
    return _WHAT_TO_GIVE if from_log else f"expected {RESULTS_EXPECTED}"


def _run_files(path: Path, from_log: bool) -> list[Path]:
    """The files that may hold runs: ``path`` itself, or under a folder its Inspect logs
    (``.eval``), its JSON (lm-eval results, Inspect logs, run records, condambig-score
    results; not Inspect's ``logs.json`` listing) and, for ``--from-log``, lm-eval's
    samples files, after the results files they may go with."""
    if not path.exists():
        raise RunLogError(f"{path}: no such file or folder; {_give(from_log)}.")
    if path.is_file():
        return [path]
    return sorted((p for p in path.rglob("*") if p.is_file() and (
        p.suffix == ".eval" or (p.suffix == ".json" and p.name != "logs.json")
        or (from_log and p.suffix == ".jsonl" and p.name.startswith("samples_")))),
        key=lambda p: (p.suffix == ".jsonl", p))


def _runs_under(root: Path) -> tuple[list[RunResult], list[str]]:
    """``--from-log``'s runs under ``root``: an lm-eval samples file is the run of the
    results file beside it when that file holds its task, else a run of its own."""
    runs: list[RunResult] = []
    notices: list[str] = []
    attached: set[Path | None] = set()  # the samples files of the results read so far
    for file in _run_files(root, from_log=True):
        if file not in attached:
            found, skipped = _read_file(file, strict=file == root, from_log=True)
            runs += found
            notices += skipped
            attached.update(run.per_sample for run in found)
    return runs, notices


def _read_file(path: Path, strict: bool, from_log: bool) -> tuple[list[RunResult], list[str]]:
    """The runs one file holds, each converted by its format's reader; a file of no format
    read here is an error when named directly (``strict``), else a notice."""
    give = _give(from_log)
    if path.suffix == ".jsonl":  # lm-eval samples (the report reads a .jsonl as --per-sample)
        return _samples_run(path)
    if path.suffix == ".eval" or (path.suffix == ".json" and _INSPECT_JSON_HEAD.match(
            _head(path))):  # without parsing a large log twice
        return _inspect_result(path, give)
    if path.suffix == ".json":
        data, problem = _load_result_json(path, give if strict else None)
        if problem is not None:
            return [], [f"skipped {path}: {problem}"]
        if run_record.is_record(data):
            return _record_result(path, data, strict)
        if _is_lm_eval_content(data):
            return _lm_eval_result(path, data)
        if isinstance(data, dict) and isinstance(data.get("eval"), dict):
            return _inspect_result(path, give)
        if isinstance(data, dict) and isinstance(data.get("metrics"), dict) and \
                isinstance(data.get("benchmark"), str):
            return _score_json_result(path, data)
    if strict:
        raise NotARunFile(f"{path}: not a run of lm-eval, Inspect or condambig-score; {give}.")
    return [], [f"skipped {path}: not an lm-eval, Inspect or condambig-score result"]


def _head(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(256)
    except OSError:
        return ""


def _load_result_json(path: Path, give: str | None) -> tuple[Any, str | None]:
    """The file's value, or (in a folder: ``give`` None) why it cannot be read."""
    try:
        return json_files.loads(path.read_text(encoding="utf-8")), None
    except (OSError, UnicodeDecodeError, json_files.JsonFileError) as error:
        if give is None:
            return None, f"cannot be read as JSON ({error})"
        raise RunLogError(f"{path}: cannot be read as JSON ({error}); {give}.") from None


def _lm_eval_result(path: Path, data: Mapping[str, Any], benchmark_name: str | None = None,
                    ) -> tuple[list[RunResult], list[str]]:
    """The runs of an lm-eval results file; ``benchmark_name``: the benchmark of a task
    the file does not place (its samples' docs name it)."""
    runs, notices = [], []
    configs = _object(path, data, "configs")
    groups = set(_object(path, data, "group_subtasks"))
    counts = _object(path, data, "n-samples")
    model = _lm_eval_model(path, data)
    for task, values in data["results"].items():
        if not isinstance(values, dict):
            raise RunLogError(f"{path}: 'results' of task {task!r} is {_kind(values)}, not an "
                              f"object; expected {RESULTS_EXPECTED}.")
        metadata = _object(path, _object(path, configs, task), "metadata")
        block = _provenance(path, metadata)
        provenance = block or {}
        placed = _lm_eval_variant(task, provenance)
        if isinstance(placed, str) and benchmark_name in registry.available():
            placed = registry.get(benchmark_name), registry.get(benchmark_name).variants[0]
        if isinstance(placed, str):
            if task not in groups:  # a group's own row repeats its tasks
                notices.append(f"skipped task {task!r} in {path}: {placed}")
            continue
        benchmark, variant = placed
        # lm-eval's "<metric>,none" / "<metric>_stderr,none" ("N/A": no standard error)
        metrics, stderr = _metrics_and_stderr({key.partition(",")[0]: value for key, value
                                               in values.items()
                                               if key.partition(",")[2] == LM_EVAL_FILTER})
        recorded = provenance.get("options")
        options = benchmark_options(benchmark, recorded if isinstance(recorded, dict) else
                                    {**metadata, **variant.options})
        n_samples = _object(path, counts, task)
        samples = _lm_eval_samples_file(path, task)
        run = RunResult(
            source=path, framework=LM_EVAL, model=model, benchmark=benchmark.name,
            variant=variant, task=task, metrics=metrics, stderr=stderr,
            n=_int(n_samples.get("effective", n_samples.get("original"))), options=options,
            judge=_text(provenance.get("judge")) or _text(metadata.get("judge_model")),
            judge_base_url=_text(provenance.get("judge_base_url"))
            or _text(metadata.get("judge_base_url")),
            created=_created(data.get("date")), per_sample=samples,
            **_recorded_digests(path, [provenance]), **_data_read(provenance),
            provenance=block,
            logged=None if samples is None else functools.cache(
                functools.partial(_lm_eval_logged, samples)))
        runs.append(run if samples is None else _rescorable(run, _read_lm_eval))
    return runs, notices


def _data_read(provenance: Any) -> dict[str, Any]:
    """``data_records`` / ``data_sources`` of a run from its provenance block's ``data``."""
    data = provenance.get("data") if isinstance(provenance, Mapping) else None
    if not isinstance(data, Mapping):
        return {}
    sources = data.get("sources") if isinstance(data.get("sources"), list) else []
    names = [str(source["repository"]) if source.get("repository") else
             Path(str(source.get("path") or source.get("url") or "")).name
             for source in sources if isinstance(source, Mapping)]
    return {"data_records": _int(data.get("records")),
            "data_sources": tuple(name for name in names if name)}


def _lm_eval_samples_file(results: Path, task: str) -> Path | None:
    """``samples_<task>_<date>.jsonl`` of the same run beside its results (``--log_samples``)."""
    date = _LM_EVAL_RESULTS_DATE.search(results.name)
    candidate = results.parent / f"samples_{task}_{date['date']}.jsonl" if date else None
    return candidate if candidate is not None and candidate.is_file() else None


def _lm_eval_variant(task: str, provenance: Mapping[str, Any]) -> tuple[Benchmark, Variant] | str:
    """The benchmark and variant of an lm-eval task: the spec's, else the benchmark and
    options its provenance block recorded; else why it is skipped."""
    known = registry.task_variant(task)
    if known is not None:
        return known
    named = provenance.get("benchmark")
    if not isinstance(named, str):
        return "not a condambig task"
    if named not in registry.available():
        return f"benchmark {named!r} is not registered"
    benchmark = registry.get(named)
    return benchmark, variant_for(benchmark, _dict_or_none(provenance.get("options")) or {})


def _lm_eval_model(path: Path, data: Mapping[str, Any]) -> str:
    """The model lm-eval names the run by (``model_name``: its own reading of
    ``--model_args``, ``pretrained=`` and the like), else the ``--model`` type."""
    name = data.get("model_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    return str(_object(path, data, "config").get("model") or "unknown model")


def _created(value: Any) -> str | None:
    if isinstance(value, (int, float)):
        from datetime import datetime, timezone

        return datetime.fromtimestamp(value, tz=timezone.utc).isoformat(timespec="seconds")
    return str(value) if value else None


def _inspect_result(path: Path, give: str) -> tuple[list[RunResult], list[str]]:
    """An Inspect log's run from its header (its samples read when asked for); one that did
    not finish is marked ``unfinished``: the report skips it, ``--from-log`` scores it."""
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path), header_only=True)
    except Exception:  # noqa: BLE001 - a zip or JSON that is not an Inspect log
        raise RunLogError(f"{path}: cannot be read as an Inspect log; {give}.") from None
    spec = log.eval
    metadata = spec.metadata or {}
    # the benchmark and options the task metadata records (an older log: its task name's
    # benchmark, its -T arguments that are options of it)
    named, options = metadata.get("benchmark"), metadata.get("options")
    if not isinstance(named, (str, type(None))):
        raise RunLogError(f"{path}: the task metadata's 'benchmark' is {_kind(named)}, not a "
                          "benchmark name; give the log the run wrote.")
    if options is not None and not isinstance(options, dict):
        raise RunLogError(f"{path}: the task metadata's 'options' is {_kind(options)}, not "
                          "an object of benchmark options; give the log the run wrote.")
    named = named or benchmark_of_task(spec.task)
    if named is None or named not in registry.available():
        return [], [f"skipped {path}: Inspect task {spec.task!r} is not a condambig task"]
    benchmark = registry.get(named)
    task = _task_key(spec.task)
    # the -T arguments the run was given (those left at None dropped)
    task_args = {key: value for key, value in (spec.task_args or {}).items()
                 if value is not None}
    if options is None:
        known = {f.name for f in dataclasses.fields(benchmark.options_type)}
        options = {key: value for key, value in task_args.items() if key in known}
    # the temperature the run sampled at: the task's config under the command line's
    # (a variant's task such as condambigqa_paper sets its own), as the plan records it
    temperature = getattr(getattr(log.plan, "config", None), "temperature", None)
    if temperature is None:
        temperature = getattr(spec.model_generate_config, "temperature", None)
    variant = _variant_of_task(benchmark, task, options, temperature)
    scores = log.results.scores if log.results else []
    metrics, stderr = _inspect_metrics(scores)
    provenance = _provenance(path, metadata)
    block = provenance or {}
    grader, grader_url = _grader(spec.model_roles)
    judge = _text(block.get("judge")) or (grader if metadata.get("judged") else None)
    # the model the run evaluated; a HotpotQA-FLM baseline's questioner (no model asked)
    questioner = metadata.get("questioner")
    # with several epochs the run's digest covers every epoch's outputs (``<id>@<epoch>``),
    # as condambig-score's of the same log does
    blocks = [score.metadata for score in scores] + [provenance]
    run = RunResult(source=path, framework=INSPECT,
                    model=questioner if questioner in ("repeater", "human") else spec.model,
                    benchmark=named, variant=variant, task=task, metrics=metrics,
                    stderr=stderr, options=options, judge=judge,
                    n=_int(log.results.completed_samples) if log.results else None,
                    judge_base_url=grader_url if judge else None,
                    created=str(spec.created), **_data_read(block),
                    # the full task version: in the task metadata, else the provenance
                    # block, else (an older log) Inspect's own
                    version=_text(metadata.get("full_task_version"))
                    or _text(block.get("task_version")) or str(spec.task_version),
                    task_args=task_args, provenance=provenance,
                    **_recorded_digests(path, blocks),
                    logged=functools.cache(functools.partial(_inspect_logged, path, log)),
                    unfinished=None if log.status == "success" and log.results is not None
                    else str(log.status))
    return [_rescorable(run, functools.partial(_read_inspect, header=log))], []


def _variant_of_task(benchmark: Benchmark, task: str, options: Mapping[str, Any],
                     temperature: float | None = None) -> Variant:
    """The task's own variant, unless its options or its sampling make it another
    (Inspect's hotpot_flm -T split=test is a run of hotpot_flm_test, condambigqa_paper
    run at --temperature 0 is not a paper run; a user's own task is its options')."""
    known = registry.task_variant(task)
    if known is not None and known[0].name == benchmark.name and \
            known[1].accepts(benchmark_options(benchmark, options)) and \
            (temperature is None or known[1].generates_like(temperature)):
        return known[1]
    return variant_for(benchmark, options, temperature)


def _inspect_metrics(scores: Iterable[Any]) -> tuple[dict[str, float | None], dict[str, float]]:
    """Metric -> value and metric -> standard error (``<metric>_stderr``, or a scorer's
    ``stderr`` beside its one metric)."""
    values: dict[str, Any] = {}
    for score in scores:
        single = [name for name in score.metrics if name != "stderr"]
        for name, metric in score.metrics.items():
            if name != "stderr":
                values[name] = metric.value
            elif len(single) == 1:
                values[f"{single[0]}_stderr"] = metric.value
    return _metrics_and_stderr(values)


def _grader(roles: Any) -> tuple[str | None, str | None]:
    """The model and base URL of an Inspect log's ``grader`` role (None: no grader)."""
    grader = (roles or {}).get("grader")
    if isinstance(grader, list):
        grader = grader[0] if grader else None
    return getattr(grader, "model", None), _text(getattr(grader, "base_url", None))


def _score_json_result(path: Path, data: Mapping[str, Any]) -> tuple[list[RunResult], list[str]]:
    named = data["benchmark"]
    if named not in registry.available():
        return [], [f"skipped {path}: benchmark {named!r} is not registered"]
    options = dict(_object(path, data, "options"))
    variant = variant_for(registry.get(named), options)
    metrics = {name: finite_number(value) for name, value in data["metrics"].items()}
    judge, provenance = _object(path, data, "judge"), _object(path, data, "provenance")
    stderr = {name: value for name, raw in _object(path, data, "stderr").items()
              if (value := finite_number(raw)) is not None}
    ci95 = {name: (low, high) for name, raw in _object(path, data, "ci95").items()
            if isinstance(raw, list) and len(raw) == 2
            and None not in (low := finite_number(raw[0]), high := finite_number(raw[1]))}
    return [RunResult(source=path, framework=CLI, model=str(data.get("model") or path.stem),
                      benchmark=named, variant=variant, task=variant.task, metrics=metrics,
                      stderr=stderr, ci95=ci95, n=_int(data.get("n_scored")), options=options,
                      judge=_text(judge.get("model")),
                      judge_base_url=_text(judge.get("base_url")
                                           or provenance.get("judge_base_url")),
                      **_recorded_digests(path, [provenance]),
                      provenance=dict(provenance) or None, **_data_read(data))], []


def _record_result(path: Path, data: Mapping[str, Any],
                   strict: bool) -> tuple[list[RunResult], list[str]]:
    """A run record: its JSON as condambig-score's, its per-sample scores inside it."""
    try:
        run_record.check(path, data)
    except run_record.RunRecordError as error:
        if strict:
            raise
        return [], [f"skipped {error}"]
    # its per-sample scores; its outputs are read by _read_record alone (they must be text
    # to rescore; the report needs none)
    logged = functools.cache(lambda: Logged(outputs=[], samples=run_record.samples(path, data)))
    runs, notices = _score_json_result(path, data)
    source = _object(path, data, "source")
    framework = source.get(run_record.SCORED_BY)
    task = _task_key(_text(source.get("task")) or "")  # the framework's run, as its log says
    if framework in (LM_EVAL, INSPECT):  # else condambig-score's numbers
        runs = [dataclasses.replace(
            run, framework=framework, task=task or run.task,
            variant=_variant_of_task(registry.get(run.benchmark), task, run.options),
            version=_text(data.get("version")), created=_text(source.get("created")),
            task_args=dict(_object(path, source, "task_args"))) for run in runs]
    return [_rescorable(dataclasses.replace(run, per_sample=path, logged=logged),
                        functools.partial(_read_record, data=data)) for run in runs], notices


# ---------------------------------------------------------------------- per-sample scores


@dataclass(frozen=True)
class ScoredRun:
    """A run's per-sample scores, as :func:`condambig_tasks.uncertainty` takes them, or
    why it has none (``samples`` None, ``reason`` one line)."""

    samples: list[ScoredSample] | None
    options: Any = None  # the benchmark's typed options the run scored with
    judged: bool = False
    reason: str | None = None


def read_scored_samples(run: RunResult) -> ScoredRun:
    """The per-sample scores of ``run``: an Inspect log's ``Score`` of every sample, the
    per-doc values of lm-eval's ``--log_samples`` file, a ``condambig-score --per-sample``
    file. They must give the numbers the run reported (else: none, and why)."""
    benchmark = registry.get(run.benchmark)
    try:
        options = benchmark.options(dict(run.options), strict=False)
    except ConfigurationError as error:
        return ScoredRun(None, reason=f"its options do not fit this version ({error})")
    judged = run.judge is not None
    logged = run.logged() if run.logged is not None else Logged([], None, (
        "the run was saved without --log_samples" if run.framework == LM_EVAL else
        "give its --per-sample file beside the JSON"))
    samples, reason = logged.samples, logged.reason
    if samples is None and run.framework == LM_EVAL and run.per_sample not in (None, run.source):
        rescored = rescored_samples_file(run.per_sample)
        if rescored.is_file():  # condambig-score --from-log wrote it
            samples, reason = _read_per_sample_file(rescored), None
        else:
            reason += ("; to pair it, rescore it once (the judge's cache answers what it "
                       "judged): " + rescoring_command(run.benchmark, run.per_sample))
    if samples is None:
        return ScoredRun(None, options, judged, reason)
    mismatch = _mismatch(benchmark, run.metrics, samples, options, judged)
    if mismatch is not None:
        return ScoredRun(None, options, judged, f"its per-sample scores do not give the "
                                                f"numbers it reported ({mismatch})")
    return ScoredRun(samples, options, judged)


def _mismatch(benchmark: Benchmark, reported: Mapping[str, float | None],
              samples: list[ScoredSample], options: Any, judged: bool) -> str | None:
    """The first reported metric the samples give another value of (None: all agree)."""
    import math

    try:
        summary = reported_values(benchmark, samples, options, judged)
    except Exception as error:  # noqa: BLE001 - samples of another benchmark or shape
        return f"{benchmark.name} cannot summarise them: {type(error).__name__}: {error}"
    for name, value in reported.items():
        mine = summary.get(name)
        if None not in (value, mine) and not math.isclose(value, mine, rel_tol=1e-6,
                                                          abs_tol=1e-6):
            return f"{name} = {mine:.6g}, the run: {value:.6g}"
    return None


def _read_per_sample_file(path: Path) -> list[ScoredSample]:
    """A ``condambig-score --per-sample`` file: one ScoredSample JSON per line."""
    samples = []
    for number, row in _read_rows(path):
        if not isinstance(row, dict) or not isinstance(row.get("id"), (str, int)) or \
                not isinstance(row.get("values"), dict):
            raise RunLogError(f"{path}: line {number} is not a sample as condambig-score "
                              "--per-sample writes it ('id', 'values'); expected "
                              f"{RESULTS_EXPECTED}.")
        samples.append(ScoredSample.from_json(row))
    if not samples:
        raise RunLogError(f"{path}: holds no samples; give the --per-sample file "
                          "condambig-score wrote.")
    _check_unique(path, [{"id": sample.id} for sample in samples])
    return samples


def rescored_samples_file(samples: Path) -> Path:
    """Where ``condambig-score --from-log`` of an lm-eval samples file writes its per-sample
    scores for the report: beside it, ``samples_<task>_<date>.per-sample.jsonl``."""
    return samples.with_name(f"{samples.stem}.per-sample.jsonl")


def rescoring_command(benchmark: str, samples: Path) -> str:
    """The one command that gives an lm-eval run scored in its aggregation step (a judge,
    HotpotQA-FLM's agents) per-sample scores the report reads."""
    return (f"`condambig-score {benchmark} --from-log {shlex.quote(str(samples))} "
            f"--per-sample {shlex.quote(str(rescored_samples_file(samples)))}`")


def _attach_per_sample(found: RunResults, path: Path, samples: list[ScoredSample]) -> None:
    """Give a ``--per-sample`` file to the condambig-score JSON of the same run among the
    inputs (same benchmark and options, as many samples, the same numbers). One that goes
    with none is an error: the file records no benchmark or options of its own."""
    waiting = [index for index, run in enumerate(found.runs)
               if run.framework == CLI and run.per_sample is None]
    for index in waiting:
        if _per_sample_difference(found.runs[index], samples) is None:
            found.runs[index] = dataclasses.replace(
                found.runs[index], per_sample=path, logged=functools.partial(Logged, [], samples))
            return
    named = [found.runs[index] for index in waiting  # b.per-sample.jsonl, b.json
             if path.name.startswith(found.runs[index].source.stem + ".")]
    if named:
        raise RunLogError(
            f"{path}: does not reproduce {named[0].source} "
            f"({_per_sample_difference(named[0], samples)}); give the --per-sample file "
            "condambig-score wrote with that JSON, or score the outputs again.")
    raise RunLogError(
        f"{path}: a --per-sample file that goes with no condambig-score JSON among the "
        "inputs (it records no benchmark or options); give it with the JSON of the same "
        "run, or give the run record instead (condambig-score ... --record FILE).")


def _per_sample_difference(run: RunResult, samples: list[ScoredSample]) -> str | None:
    """How a --per-sample file differs from a condambig-score JSON (None: it reproduces
    it: as many samples, the same numbers under its options)."""
    if run.n != len(samples):
        return f"{len(samples)} samples, the JSON: n_scored {run.n}"
    benchmark = registry.get(run.benchmark)
    try:
        options = benchmark.options(dict(run.options), strict=False)
    except ConfigurationError as error:
        return f"the JSON's options do not fit this version ({error})"
    return _mismatch(benchmark, run.metrics, samples, options, run.judge is not None)


# ---------------------------------------------------------------------- shapes


def _object(path: Path, container: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``container[key]`` where the format has an object (or nothing: empty)."""
    value = container.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RunLogError(f"{path}: {key!r} is {_kind(value)}, not an object; give the file "
                          "the framework wrote.")
    return value


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _int(value: Any) -> int | None:
    number = finite_number(value)
    return int(number) if number is not None else None
