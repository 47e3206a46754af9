"""The lm-eval side of every benchmark, built from its :class:`~condambig_tasks.benchmark.Benchmark`.

A task folder's ``utils.py`` is three lines: ``task = LmEvalTask("<benchmark>")`` and the
names its YAML refers to (``load_docs``, ``doc_to_text``, ``doc_to_target``,
``process_results``, and ``agg_<metric>`` for every metric of the spec).

- ``load_docs`` (``custom_dataset``) receives lm-eval's ``--metadata`` keys and the YAML's
  ``dataset_kwargs``; a variant's fixed options sit in ``dataset_kwargs: {task_options:
  {...}}``, and ``--metadata`` that contradicts them is an error naming the task to use
  (:mod:`condambig_tasks.lm_eval_options`). Judge options (``judge_*``) travel in each doc.
- ``process_results`` scores one output when no model is needed and emits numbers; when the
  benchmark needs its corpus step (a judge, agent models) it emits a small item (id, output)
  and the scoring happens in the aggregation step, once for the whole run (rank 0 under
  data parallelism), every model call of the run batched or concurrent.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import sys
from collections.abc import Callable
from typing import Any

from condambig_tasks import registry, settings
from condambig_tasks.benchmark import (
    CORPUS,
    Benchmark,
    Runtime,
    ScoredSample,
    plain_summary,
    run_blocking,
    score_run,
)
from condambig_tasks.errors import CondambigError
from condambig_tasks.lm_eval_options import resolve_lm_eval_options
from condambig_tasks.progress import Progress, show_project_logs
from condambig_tasks.provenance import load_with_provenance
from condambig_tasks.run_memo import RunMemo

logger = logging.getLogger("condambig")

TASK_OPTIONS_KEY = "task_options"
AGGREGATION_PREFIX = "agg_"


class LmEvalTask:
    """lm-eval hooks of one benchmark (picklable: it holds only the benchmark's name)."""

    def __init__(self, benchmark: str) -> None:
        self.benchmark_name = benchmark

    @property
    def benchmark(self) -> Benchmark:
        return registry.get(self.benchmark_name)

    def load_docs(self, **metadata: Any) -> dict[str, Any]:
        import datasets

        show_project_logs()
        benchmark = self.benchmark
        fixed = metadata.pop(TASK_OPTIONS_KEY, None) or {}
        resolved = resolve_lm_eval_options(benchmark, metadata, fixed)
        options, metadata = resolved.options, resolved.metadata
        judge_options = (settings.lm_eval_judge_options(metadata)
                         if benchmark.uses_judge and benchmark.judge_applies(options) else {})
        judged = _judge_configured(benchmark, options, judge_options)
        for note in benchmark.run_notes(options, judged):
            logger.warning("%s", note)
        benchmark.prepare(options, Runtime(front_end="lm_eval"))
        options_json = json.dumps(benchmark.options_to_json(options), sort_keys=True)
        judge_json = json.dumps(judge_options, sort_keys=True)
        judge = settings.judge_config_from_environment(judge_options) if judged else None
        items, provenance = load_with_provenance(
            benchmark, options, judge=None if judge is None else judge.model)
        if judge is not None and judge.base_url:
            provenance["judge_base_url"] = judge.base_url
        _record_in_task_config(provenance)
        docs = []
        for item in items:
            target = benchmark.target(item, options)
            docs.append({
                "id": benchmark.item_id(item),
                "prompt": benchmark.prompt(item, options),
                "target": " | ".join(target) if isinstance(target, list) else target,
                "record": json.dumps(benchmark.to_record(item), ensure_ascii=False),
                "options": options_json,
                "judge": judge_json,
            })
        return {"test": datasets.Dataset.from_list(docs)}

    def doc_to_text(self, doc: dict[str, Any]) -> str:
        return doc["prompt"]

    def doc_to_target(self, doc: dict[str, Any]) -> str:
        return doc["target"]

    def process_results(self, doc: dict[str, Any], results: list[str]) -> dict[str, Any]:
        benchmark = self.benchmark
        output = results[0] if results else ""
        options = benchmark.options(json.loads(doc["options"]), strict=False)
        judged = _judge_configured(benchmark, options, json.loads(doc["judge"]))
        active = benchmark.reported_metrics(options, judged)
        if benchmark.needs_corpus_step(options, judged):
            item = {"id": doc["id"], "output": output, "options": doc["options"],
                    "judge": doc["judge"]}
            return {spec.name: item for spec in active}
        sample = benchmark.score(benchmark.from_record(json.loads(doc["record"])), output,
                                 options)
        values: dict[str, Any] = {}
        for spec in active:
            if spec.aggregation == CORPUS:
                values[spec.name] = {"sample": sample.to_json(), "options": doc["options"],
                                     "judge": doc["judge"]}
            else:
                value = sample.values.get(spec.name)
                values[spec.name] = math.nan if value is None else float(value)
        return values

    def aggregation(self, metric: str) -> Callable[[list[Any]], float]:
        """``agg_<metric>``: the corpus value of one metric from lm-eval's items."""
        return functools.partial(aggregate, self.benchmark_name, metric)

    def __getattr__(self, name: str) -> Any:
        if name.startswith(AGGREGATION_PREFIX):
            return self.aggregation(name[len(AGGREGATION_PREFIX):])
        raise AttributeError(name)


def _record_in_task_config(provenance: dict[str, Any]) -> None:
    """Put the provenance block in the calling task's ``config.metadata``, which lm-eval
    writes to the results JSON (``configs.<task>.metadata.provenance``).

    lm-eval 0.4.13 calls ``custom_dataset`` from ``ConfigurableTask.download`` with the
    metadata unpacked into keyword arguments, so the task is found on the call stack; when
    it is not there (another caller), the block is only logged.
    """
    frame = sys._getframe(1)
    for _ in range(8):
        frame = frame.f_back
        if frame is None:
            break
        config = getattr(frame.f_locals.get("self"), "config", None)
        if config is not None and hasattr(config, "custom_dataset") and \
                hasattr(config, "metadata"):
            if config.metadata is None:
                config.metadata = {}
            config.metadata["provenance"] = provenance
            return
    logger.info("%s provenance: %s", provenance["benchmark"], json.dumps(provenance))


def _judge_configured(benchmark: Benchmark, options: Any, judge_options: dict[str, Any]) -> bool:
    """A judge applies to this task and one is configured (environment or --metadata)."""
    return benchmark.uses_judge and benchmark.judge_applies(options) and \
        settings.judge_config_from_environment(judge_options) is not None


_RUNS: RunMemo[dict[str, float | None]] = RunMemo()


def aggregate(benchmark_name: str, metric: str, items: list[Any]) -> float:
    """One metric of a run. Numbers are averaged (or summed) directly; items that need the
    corpus step or a corpus metric are scored together once and shared by every metric."""
    if not items:
        return math.nan
    benchmark = registry.get(benchmark_name)
    spec = benchmark.metric_spec(metric)
    if not isinstance(items[0], dict):
        samples = [ScoredSample(id="", values={metric: value}) for value in items]
        value = plain_summary(samples, [spec])[metric]
        return math.nan if value is None else value
    judge = settings.judge_config_from_environment(json.loads(items[0].get("judge") or "{}"))
    judge_identity = None if judge is None else [judge.model, judge.base_url]
    summary = _RUNS.get_or_compute(
        [benchmark_name, judge_identity, items], lambda: _summarise_items(benchmark, items))
    value = summary.get(metric)
    return math.nan if value is None else float(value)


def _summarise_items(benchmark: Benchmark, items: list[dict[str, Any]]) -> dict[str, Any]:
    if len({(item["options"], item["judge"]) for item in items}) != 1:
        raise ValueError(f"{benchmark.name}: items of one task carry different options")
    options = benchmark.options(json.loads(items[0]["options"]), strict=False)
    judge_options = json.loads(items[0]["judge"])
    judged = _judge_configured(benchmark, options, judge_options)
    if "sample" in items[0]:
        samples = [ScoredSample.from_json(item["sample"]) for item in items]
        return benchmark.summarise(samples, options, judged)
    by_id = _items_by_id(benchmark.name, items[0]["options"])
    batch = [(by_id[item["id"]], item["output"]) for item in items]
    engine = None
    if judged:
        from condambig_metrics.judge import openai_judge_engine

        engine = openai_judge_engine(settings.judge_config_from_environment(judge_options),
                                     progress_factory=Progress)
    samples = run_blocking(score_run(
        benchmark, batch, options, Runtime(judge=engine, front_end="lm_eval")))
    if engine is not None:
        logger.info("%s judge: %s", benchmark.name, engine.stats)
        if engine.endpoint_failure is not None:
            raise CondambigError(f"{benchmark.name}: the judge endpoint failed "
                                 f"({engine.endpoint_failure}); no judge metric is reported.")
    return benchmark.summarise(samples, options, judged)


@functools.lru_cache(maxsize=4)
def _items_by_id(benchmark_name: str, options_json: str) -> dict[str, Any]:
    benchmark = registry.get(benchmark_name)
    options = benchmark.options(json.loads(options_json), strict=False)
    return {benchmark.item_id(item): item for item in benchmark.load(options)}
