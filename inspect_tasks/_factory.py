"""The Inspect side of every benchmark, built from its :class:`~condambig_tasks.benchmark.Benchmark`.

A benchmark's ``@task`` function declares its ``-T`` options as keyword parameters (Inspect
reads them from the signature) and returns :func:`benchmark_task`. The scorer puts only
per-sample numbers in ``Score.value`` (so Inspect's epoch reducers average them correctly)
and the details (judge results, parsed pairs, texts for corpus metrics) in
``Score.metadata``; one metric per benchmark computes the corpus values from them with the
benchmark's own ``summarise``.
"""

from __future__ import annotations

import logging
import math
from typing import Any

from inspect_ai import Task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, model_roles
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Solver, TaskState, generate

from condambig.judge_backend import GRADER_ROLE, grader_judge_engine
from condambig_tasks import registry
from condambig_tasks.benchmark import Runtime, ScoredSample, load_items
from condambig_tasks.progress import show_project_logs

logger = logging.getLogger("condambig")


def benchmark_task(
    benchmark_name: str,
    option_values: dict[str, Any],
    *,
    judge: bool = True,
    max_tokens: int | None = None,
    solver: Solver | None = None,
    dataset_name: str | None = None,
    metadata: dict[str, Any] | None = None,
) -> Task:
    """The Inspect task of one benchmark with the given options (``-T`` values)."""
    show_project_logs()
    benchmark = registry.get(benchmark_name)
    options = benchmark.options({k: v for k, v in option_values.items() if v is not None})
    judged = (benchmark.uses_judge and benchmark.judge_applies(options) and bool(judge)
              and model_roles().get(GRADER_ROLE) is not None)
    for note in benchmark.run_notes(options, judged):
        logger.warning("%s", note)
    benchmark.prepare(options, Runtime(roles=dict(model_roles()), front_end="inspect"))
    options_json = benchmark.options_to_json(options)
    samples = []
    for item in load_items(benchmark, options):
        target = benchmark.target(item, options)
        samples.append(Sample(
            id=benchmark.item_id(item), input=benchmark.prompt(item, options),
            target=target if target else "", metadata={"record": benchmark.to_record(item)},
        ))
    return Task(
        dataset=MemoryDataset(samples, name=dataset_name or benchmark_name),
        solver=solver or generate(),
        scorer=benchmark_scorer(benchmark_name, options_json, judged),
        metrics=[benchmark_metrics(benchmark_name, options_json, judged)],
        # no temperature here: providers differ (Inspect's hf provider rejects 0.0); set
        # --temperature on the command line
        config=GenerateConfig(max_tokens=max_tokens or benchmark.max_tokens(options)),
        version=benchmark.version,
        metadata={"benchmark": benchmark_name, "options": options_json, "judged": judged,
                  **(metadata or {})},
    )


@scorer(metrics=[])  # the task sets benchmark_metrics(...)
def benchmark_scorer(benchmark_name: str, options: dict[str, Any], judged: bool) -> Scorer:
    """Score one output the way every front end does (the judge: the ``grader`` role)."""
    benchmark = registry.get(benchmark_name)
    typed_options = benchmark.options(options)
    corpus_step = benchmark.needs_corpus_step(typed_options, judged)
    engines: list = []  # one judge engine for the whole eval: one cache, one concurrency bound

    def judge_engine():
        if not judged:
            return None
        if not engines:
            engines.append(grader_judge_engine())
        return engines[0]

    async def score(state: TaskState, target: Target) -> Score:
        item = benchmark.from_record(state.metadata["record"])
        output = state.output.completion
        if corpus_step:
            # Inspect's own progress display counts the samples scored, judge included
            runtime = Runtime(judge=judge_engine(), roles=dict(model_roles()),
                              front_end="inspect")
            [sample] = await benchmark.score_batch([(item, output)], typed_options, runtime)
        else:
            sample = benchmark.score(item, output, typed_options)
        values = {name: float(value) for name, value in sample.values.items()
                  if value is not None and not math.isnan(float(value))}
        return Score(value=values, answer=output[:2000], explanation=sample.explanation,
                     metadata=dict(sample.details))

    return score


@metric
def benchmark_metrics(benchmark_name: str, options: dict[str, Any], judged: bool) -> Metric:
    """Every corpus metric of the benchmark, from the per-sample values and details."""
    benchmark = registry.get(benchmark_name)
    typed_options = benchmark.options(options)

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        samples = [
            ScoredSample(
                id=str(score.sample_id),
                values=score.score.value if isinstance(score.score.value, dict) else {},
                details=score.score.metadata or {},
            )
            for score in scores
        ]
        summary = benchmark.summarise(samples, typed_options, judged)
        return {name: math.nan if value is None else float(value)
                for name, value in summary.items()}

    return compute
