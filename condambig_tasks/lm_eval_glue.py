"""The lm-eval side of every benchmark, built from its :class:`~condambig_tasks.benchmark.Benchmark`.

:class:`condambig_tasks.lm_eval_task.CondambigTask` builds each lm-eval task's config from
the spec with these hooks, and holds its run, an :class:`LmEvalTask`: ``load_docs`` resolves
its options and judge once, and ``process_results`` and the aggregation score with them
(under data parallelism every rank loads its own and rank 0 aggregates the gathered items);
``agg_<metric>`` gives a metric's aggregation outside a task.

- ``load_docs`` (``custom_dataset``) receives lm-eval's ``--metadata`` keys and the task's
  ``dataset_kwargs``; a variant's fixed options sit in ``dataset_kwargs: {task_options:
  {...}}``, and ``--metadata`` that contradicts them is an error naming the task to use
  (:mod:`condambig_tasks.lm_eval_options`). Each doc also carries its item's record and the
  run's options and judge settings, for the samples log and ``condambig-score --from-log``
  (:mod:`condambig_tasks.run_logs`).
- ``process_results`` scores one output when no model is needed and emits numbers; when the
  benchmark needs its corpus step (a judge, agent models) it emits a small item (id, output)
  and the scoring happens in the aggregation step, once for the whole run (rank 0 under
  data parallelism), every model call of the run batched or concurrent. A judge-free run's
  CORPUS metrics (else its last metric) carry the whole scored sample with its id and
  output, so the aggregation step has every sample: for the standard errors
  (:func:`standard_errors`) and the outputs digest of the provenance block.
- after lm-eval's table, one line per task gives its headline with its standard error, and
  one per group its ``suite_score`` (:func:`report_lines`).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from condambig_tasks import (
    exit_status,
    interrupts,
    lm_eval_command,
    lm_eval_configs,
    lm_eval_preflight,
    registry,
    run_record,
    settings,
)
from condambig_tasks.benchmark import (
    CORPUS,
    SUITE_SCORE,
    Benchmark,
    Runtime,
    ScoredSample,
    metric_spec,
    options_to_json,
    plain_summary,
    reported_metrics,
    run_blocking,
)
from condambig_tasks.lm_eval_options import resolve_lm_eval_options
from condambig_tasks.progress import Progress, show_project_logs
from condambig_tasks.provenance import outputs_sha256, record_scoring_sha256
from condambig_tasks.run import (
    BenchmarkRun,
    EnvironmentJudge,
    RunResult,
    judge_cache_assignment,
)
from condambig_tasks.run_memo import RunMemo
from condambig_tasks.uncertainty import (
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    Estimate,
    describe,
    estimates_json,
    uncertainty,
)

logger = logging.getLogger("condambig")

AGGREGATION_PREFIX = "agg_"


class LmEvalTask:
    """One lm-eval task's run: ``load_docs`` resolves its options and judge once and keeps
    its items; ``process_results`` and the aggregations score with them, and the run scored
    once in the aggregation step is reported to ``task``, the lm-eval task holding this run
    (its ``config.metadata`` receives the provenance block and the null reasons; None
    outside lm-eval)."""

    def __init__(self, benchmark: str, task: Any = None) -> None:
        self.benchmark_name, self.task = benchmark, task
        self._runs: RunMemo[ScoredRun] = RunMemo()
        self._checked = True  # nothing loaded yet, nothing to check

    def __deepcopy__(self, memo: dict) -> LmEvalTask:
        # TaskConfig.to_dict deep-copies the config (dataclasses.asdict), whose hooks are
        # this run's: a copy of the config describes the same run. The copy stays bound to
        # the task that built it (``self.task``): lm-eval 0.4.13 never deep-copies a task
        # object, and a copy of one would report to the original's config.metadata
        return self

    @property
    def benchmark(self) -> Benchmark:
        return registry.get(self.benchmark_name)

    @property
    def task_name(self) -> str:
        return getattr(self.task, "task_name", None) or self.benchmark_name

    def _metadata(self) -> dict[str, Any] | None:
        """The task's ``config.metadata`` (lm-eval writes it to ``configs.<task>``)."""
        metadata = getattr(getattr(self.task, "config", None), "metadata", None)
        return metadata if isinstance(metadata, dict) else None

    def load_docs(self, **metadata: Any) -> dict[str, Any]:
        """The docs of the run ``metadata`` asks for (lm-eval's ``--metadata`` keys and the
        task's ``dataset_kwargs``). What needs a request or an agent model waits for
        :meth:`before_generation`: building a task needs no key and no network."""
        import datasets

        show_project_logs()
        benchmark = self.benchmark
        fixed = metadata.pop(lm_eval_configs.TASK_OPTIONS_KEY, None) or {}
        resolved = resolve_lm_eval_options(benchmark, metadata, fixed)
        self.run, self.judge = BenchmarkRun.with_options(benchmark, resolved.options,
                                                         EnvironmentJudge(resolved.judge))
        for note in self.run.notes():
            logger.warning("%s", note)
        judge = self.judge
        items, records, provenance = self.run.load(
            judge=None if judge is None else judge.model,
            judge_base_url=None if judge is None else judge.base_url)
        written = self._metadata()
        self.provenance = None if written is None else provenance  # what the results hold
        if written is not None:  # lm-eval writes config.metadata to results_*.json
            _drop_judge_api_keys(written)
            written["provenance"] = provenance  # configs.<task>.metadata.provenance
        self.items = {benchmark.item_id(item): item for item in items}
        self.reported = tuple(reported_metrics(benchmark, self.run.options, self.run.judged))
        self.carriers = _whole_sample_metrics(self.reported)
        self._runs, self._checked = RunMemo(), False  # the runs scored are this load's
        options_json = json.dumps(options_to_json(benchmark, self.run.options), sort_keys=True)
        judge_json = json.dumps(resolved.judge, sort_keys=True)
        docs = []
        for item, record in zip(items, records, strict=True):
            target = benchmark.target(item, self.run.options)
            docs.append({
                "benchmark": benchmark.name,  # which benchmark a renamed samples file holds
                "id": benchmark.item_id(item),
                "prompt": benchmark.prompt(item, self.run.options),
                "target": " | ".join(target) if isinstance(target, list) else target,
                "record": json.dumps(record, ensure_ascii=False),
                "options": options_json,
                "judge": judge_json,
            })
        return {"test": datasets.Dataset.from_list(docs)}

    def before_generation(self) -> None:
        """Once per load, what the run needs that building its task must not ask for
        (``BenchmarkRun.before_generation``): its agent models, its judge's endpoint and
        cache (:func:`condambig_tasks.lm_eval_preflight.preflight_judge`)."""
        if self._checked:
            return
        self._checked = True
        self.run.before_generation(check_judge=functools.partial(
            lm_eval_preflight.preflight_judge, self.benchmark, self.judge))

    def doc_to_text(self, doc: dict[str, Any]) -> str:
        return doc["prompt"]

    def doc_to_target(self, doc: dict[str, Any]) -> str:
        return doc["target"]

    def process_results(self, doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
        output = results[0] if results else ""
        if self.run.needs_corpus_step:
            item = {"id": doc["id"], "output": output}
            return {spec.name: item for spec in self.reported}
        sample = self.benchmark.score(self.items[doc["id"]], output, self.run.options)
        whole = {"id": doc["id"], "output": output, "sample": sample.to_json()}
        values: dict[str, Any] = {}
        for spec in self.reported:
            if spec.name in self.carriers:
                values[spec.name] = whole
            else:
                value = sample.values.get(spec.name)
                values[spec.name] = math.nan if value is None else float(value)
        return values

    def aggregation(self, metric: str) -> Aggregation:
        """``agg_<metric>``: the corpus value of one metric from lm-eval's items."""
        return Aggregation(self, metric)

    # ------------------------------------------------------------------ aggregation
    def aggregate(self, metric: str, items: list[Any]) -> float:
        """One metric of the run. Numbers are averaged (or summed) directly; items that
        need the corpus step or a corpus metric are scored together once and shared by
        every metric, and the run is reported (:meth:`_report`)."""
        if not items:
            return math.nan
        spec = metric_spec(self.benchmark, metric)
        if not isinstance(items[0], dict):
            samples = [ScoredSample(id="", values={metric: value}) for value in items]
            value = plain_summary(samples, [spec])[metric]
            return math.nan if value is None else value
        scored = self.scored_run(items)
        self._report(scored)
        value = scored.result.values.get(metric)
        return math.nan if value is None else float(value)

    def scored_run(self, items: list[dict[str, Any]]) -> ScoredRun:
        """The run of the task's items (whole samples, or outputs the corpus step scores),
        scored once and shared by every metric and the standard errors."""
        return self._runs.get_or_compute([self.task_name, items],
                                         lambda: self._score(items))

    def _score(self, items: list[dict[str, Any]]) -> ScoredRun:
        run, judge = self.run, self.judge
        outputs = ([(str(item["id"]), item["output"]) for item in items]
                   if all("id" in item and "output" in item for item in items) else None)
        judge_model = None if judge is None else judge.model
        if "sample" in items[0]:  # scored per document
            samples = [ScoredSample.from_json(item["sample"]) for item in items]
            return ScoredRun(run.summarise(samples), run, samples, outputs, judge_model)
        batch = [(self.items[item["id"]], item["output"]) for item in items]
        engine = None
        if judge is not None:
            from condambig_metrics.judge import openai_judge_engine

            # a judge error names the settings as lm-eval users give them (--metadata too)
            engine = openai_judge_engine(judge, progress_factory=Progress,
                                         names=lm_eval_preflight.LM_EVAL_SETTINGS)
        with interrupts.sigterm_as_sigint():  # stopped as by Ctrl-C: lm_eval_interrupt
            samples = run_blocking(run.score(batch, Runtime(judge=engine)))
        if engine is not None:
            logger.info("%s judge: %s", run.benchmark.name, engine.stats)
        result = run.after_scoring(
            samples, engine, max_failed=0 if judge is None else judge.max_failed,
            rerun=_rerun(run.benchmark, self.task_name, judge))
        return ScoredRun(result, run, samples, outputs, judge_model)

    def standard_errors(self, raw_metrics: Mapping[tuple[str, str], list[Any]],
                        bootstrap_iters: int) -> dict[str, float]:
        """``<metric>_stderr,<filter>`` of every metric of the run whose estimate is a
        number (:func:`condambig_tasks.uncertainty.uncertainty` on the samples the aggregation
        scored); the others keep lm-eval's ``"N/A"``. The lines after the table say the same.

        Resamples: ``min(bootstrap_iters, 1000)``. lm-eval's ``bootstrap_iters`` (100,000 by
        default; the ``lm_eval`` command has no option for it, ``simple_evaluate`` has) bounds
        its own bootstraps, and lm-eval itself draws at most 100 for its corpus metrics (BLEU,
        chrF, TER: ``evaluator_utils._compute_task_aggregations``); 1,000 is the project's
        default everywhere (``condambig-score``, Inspect), so one run's outputs give one stderr in every
        front end. ``bootstrap_iters`` 0 (lm-eval: no stderr) never reaches here."""
        resamples = min(bootstrap_iters, DEFAULT_RESAMPLES)
        found: dict[str, float] = {}
        for filter_key in dict.fromkeys(key for _, key in raw_metrics):
            items = next((items for (_, key), items in raw_metrics.items()
                          if key == filter_key and items and isinstance(items[0], dict)), None)
            if items is None:
                continue
            scored = self.scored_run(items)
            estimates = scored.estimates(resamples)
            scored.stderr, _ = estimates_json(estimates, scored.result.values)
            if self.provenance is not None:  # how, as the CLI says
                self.provenance["uncertainty"] = describe(self.benchmark, scored.samples,
                                                          resamples, DEFAULT_SEED, estimates)
            for (metric, key) in raw_metrics:
                if key == filter_key and scored.stderr.get(metric) is not None:
                    found[f"{metric}_stderr,{key}"] = float(scored.stderr[metric])
        return found

    def _report(self, scored: ScoredRun) -> None:
        """Record in the task's ``config.metadata`` (written to the results JSON) why metrics
        are null (``null_reasons``, beside ``provenance``) and the digest of the outputs
        scored (``provenance.outputs_sha256``, with ``scoring_sha256``); keep the task's lines
        printed after lm-eval's table (its headline, or why it is null: lm-eval itself shows
        NaN without a reason). Withheld judged metrics also give the run a non-zero exit
        status once the ``lm_eval`` command has written its output (not a Python program
        calling lm-eval: its own exit is its own)."""
        if self.task is None:  # not lm-eval's aggregation step (e.g. a direct call)
            return
        result, metadata, provenance = scored.result, self._metadata(), self.provenance
        if metadata is not None and result.reasons:
            metadata["null_reasons"] = dict(result.reasons)
        if provenance is not None and scored.outputs_sha256 is not None:
            provenance["outputs_sha256"] = scored.outputs_sha256
            record_scoring_sha256(provenance)
        if result.judge_failed and lm_eval_command.running_lm_eval_command():
            exit_status.fail_at_exit()
        exit_status.say_at_exit(report_lines)
        if self.task_name in _RUNS:  # every metric of a task reports the same run
            return
        if settings.record_dir() is not None:
            _write_record(self.task_name, scored, provenance)
        _RUNS[self.task_name] = scored

    def __getattr__(self, name: str) -> Any:
        if name.startswith(AGGREGATION_PREFIX):
            return self.aggregation(name[len(AGGREGATION_PREFIX):])
        raise AttributeError(name)


class Aggregation:
    """One metric's aggregation of a task's run (lm-eval calls it with the metric's items
    only)."""

    def __init__(self, hooks: LmEvalTask, metric: str) -> None:
        self.hooks, self.metric = hooks, metric

    def __call__(self, items: list[Any]) -> float:
        return self.hooks.aggregate(self.metric, items)

    def __repr__(self) -> str:  # what to_dict writes for it (it has no source of its own)
        return (f"condambig_tasks.lm_eval_glue.LmEvalTask({self.hooks.benchmark_name!r})"
                f".{AGGREGATION_PREFIX}{self.metric}")


def _drop_judge_api_keys(metadata: dict[str, Any]) -> None:
    """A key in lm-eval's ``--metadata`` (plain, or scoped to a benchmark:
    ``{"condambigqa": {"judge_api_key": ...}}``) is a secret: lm-eval writes the metadata
    to its results, so it is removed there (the scoped object is replaced by a copy without
    it, so the options read from the same object still see it and warn)."""
    metadata.pop("judge_api_key", None)
    for name, value in list(metadata.items()):
        if isinstance(value, dict) and "judge_api_key" in value:
            metadata[name] = {k: v for k, v in value.items() if k != "judge_api_key"}


def _whole_sample_metrics(active: list[Any]) -> set[str]:
    """The metrics whose items carry the whole scored sample in a run scored per document:
    each CORPUS metric (it needs the samples), else the last one (so every run's items hold
    every sample's id, output and values; the other metrics stay plain numbers)."""
    corpus = {spec.name for spec in active if spec.aggregation == CORPUS}
    return corpus or ({active[-1].name} if active else set())


@dataclass
class ScoredRun:
    """One task's run as lm-eval's aggregation step scored it: the result, the samples and
    run it was computed on, the outputs scored as (item id, output) pairs (None when the
    items did not carry them) and the judge model; its estimates are computed once per
    number of resamples."""

    result: RunResult
    run: BenchmarkRun
    samples: list[ScoredSample]
    outputs: list[tuple[str, Any]] | None
    judge_model: str | None
    stderr: dict[str, float | None] = field(default_factory=dict)  # as lm-eval's table has it
    _estimates: dict[int, dict[str, Estimate]] = field(default_factory=dict)

    def estimates(self, resamples: int) -> dict[str, Estimate]:
        if resamples not in self._estimates:
            self._estimates[resamples] = uncertainty(
                self.run.benchmark, self.samples, self.run.options, self.run.judged,
                resamples=resamples, seed=DEFAULT_SEED)
        return self._estimates[resamples]

    @functools.cached_property
    def outputs_sha256(self) -> str | None:
        """The outputs' digest, computed once: every metric's aggregation reports it."""
        return None if self.outputs is None else outputs_sha256(self.outputs)


def _rerun(benchmark: Benchmark, task_name: str, judge: Any) -> str:
    """How to finish the judging from lm-eval's own log (the retry hint's command,
    :meth:`condambig_tasks.run.BenchmarkRun.after_scoring`)."""
    if judge is None:
        return ""
    kept = lm_eval_command.kept_samples()
    command = ["condambig-score", benchmark.name, "--from-log", kept or "DIR", "--task", task_name,
               "--judge-model", judge.model]
    if judge.base_url:
        command += ["--judge-base-url", judge.base_url]
    chosen = bool(judge.cache_path or settings.environment_value(settings.CACHE_DIR_VARIABLE))
    text = f"`{judge_cache_assignment(judge.cache_file, chosen)}{shlex.join(command)}`"
    return (f"run {text} to finish the judging" if kept else
            f"this run kept no samples: rerun lm_eval with --output_path DIR --log_samples, "
            f"then run {text}")


_RUNS: dict[str, ScoredRun] = {}  # the tasks aggregated in this process, in order


def _write_record(task_name: str, scored: ScoredRun, provenance: Any) -> None:
    """The task's run record in ``$CONDAMBIG_RECORD_DIR``: what lm-eval's results say of
    it, with every output and every sample's scores (judged ones included, which its
    samples file does not hold)."""
    run, result = scored.run, scored.result
    benchmark = run.benchmark
    if scored.outputs is None:
        return
    estimates = scored.estimates(DEFAULT_RESAMPLES)  # computed once: the stderr reuses it
    stderr, ci95 = estimates_json(estimates, result.values)
    model = lm_eval_command.model_name()
    summary = {
        "benchmark": benchmark.name, "version": benchmark.version,
        "options": options_to_json(benchmark, run.options), "n_scored": len(scored.samples),
        "metrics": dict(result.values), "null_reasons": dict(result.reasons),
        "stderr": stderr, "ci95": ci95,
        "uncertainty": describe(benchmark, scored.samples, DEFAULT_RESAMPLES, DEFAULT_SEED,
                                estimates),
        "judge": {"model": scored.judge_model} if scored.judge_model else None,
        "provenance": provenance,
        "source": {"framework": "lm_eval", "task": task_name,
                   run_record.SCORED_BY: "lm_eval"}}
    path = settings.record_dir() / run_record.file_name(task_name, model)
    try:  # the results are written regardless
        run_record.write(path, run_record.build(summary, scored.outputs, scored.samples, model))
    except OSError as error:
        logger.warning("%s: no run record: cannot write %s (%s)", task_name, path, error)
        return
    logger.info("%s: run record written to %s", task_name, path)


def report_lines() -> list[str]:
    """The lines after lm-eval's table: per task aggregated, its headline with its
    standard error (only under the ``lm_eval`` command: a program calling lm-eval has the
    results) or why it is null, and a withheld judged metric when the headline itself is
    not judged (the run exits non-zero, and this line says why); then per group of the
    spec whose every task was aggregated (:func:`condambig_tasks.lm_eval_configs.
    spec_groups`), its ``suite_score``: lm-eval's unweighted mean of its leaves' and
    lm-eval's combination of their standard errors (``unweighted_mean_stderr``), or why it
    is null (lm-eval's group mean of a NaN is NaN)."""
    values = lm_eval_command.running_lm_eval_command()
    lines = []
    for task, scored in _RUNS.items():
        run, headline = scored.result, scored.result.headline
        if headline is None:
            continue
        if run.values.get(headline) is None:
            lines.append(f"{task}: {headline} is null: {run.reasons.get(headline, 'no value')}")
            continue
        if values:
            lines.append(f"{task} {headline} = "
                         f"{_number(run.values[headline], scored.stderr.get(headline))} "
                         f"(n = {len(scored.samples)}, judge {scored.judge_model or 'none'})")
        withheld = [name for name in run.reasons
                    if run.values.get(name) is None and name != SUITE_SCORE]
        if run.judge_failed and withheld:
            lines.append(f"{task}: {withheld[0]} is null: {run.reasons[withheld[0]]}")
    groups = lm_eval_configs.spec_groups()
    for name, group in groups.items():
        names = lm_eval_configs.leaf_tasks(name, groups)
        if not group.averages_suite_score or not set(names) <= _RUNS.keys():
            continue
        leaves = [_RUNS[leaf] for leaf in names]
        null = [leaf for leaf in names if _RUNS[leaf].result.values.get(SUITE_SCORE, 0.0) is None]
        if null:
            why = _RUNS[null[0]].result.reasons.get(SUITE_SCORE, "no value")
            lines.append(f"group {name}: {SUITE_SCORE} is null: the {SUITE_SCORE} of "
                         f"{', '.join(null)} is null ({why})")
        elif values and all(_suite_score(leaf) is not None for leaf in leaves):
            lines.append(_group_line(name, leaves))
    return lines


def _suite_score(scored: ScoredRun) -> float | None:
    """The run's ``suite_score`` when its headline has a value (else no group line)."""
    run = scored.result
    if run.headline is None or run.values.get(run.headline) is None:
        return None
    return run.values.get(SUITE_SCORE)


def _group_line(name: str, leaves: list[ScoredRun]) -> str:
    from lm_eval.api.metrics import aggregate_subtask_metrics, unweighted_mean_stderr

    sizes = [len(leaf.samples) for leaf in leaves]
    value = aggregate_subtask_metrics([_suite_score(leaf) for leaf in leaves], sizes,
                                      weight_by_size=False)
    stderrs = [leaf.stderr.get(SUITE_SCORE) for leaf in leaves]
    stderr = None if None in stderrs else float(unweighted_mean_stderr(stderrs))
    return (f"group {name} {SUITE_SCORE} = {_number(value, stderr)} "
            f"({len(leaves)} tasks, n = {sum(sizes)})")


def _number(value: float, stderr: float | None) -> str:
    """As lm-eval's table prints a value and its stderr (4 decimals, ``N/A``)."""
    return f"{value:.4f} ± {'N/A' if stderr is None else f'{stderr:.4f}'}"
