"""How many judge requests the grader may have in flight: the project's default judge
concurrency (as lm-eval and ``condambig-score`` get), unless the user chose one.

Inspect 0.3.285 gives a model with no ``max_connections`` adaptive concurrency starting at
20 connections, which caps the judge of a scorer that has 32 requests ready (at 500 ms per
judgement, 40 judgements/s instead of 64). A judge request therefore asks for adaptive
concurrency starting at :data:`DEFAULT_JUDGE_CONCURRENCY` (Inspect's bounds and its
back-off on rate limits otherwise), unless the user chose the connections:

- ``--max-connections`` or ``--batch`` (for the eval, or in the grader's own config): Inspect
  lets them win over any adaptive setting, so the request's setting is not used;
- ``--adaptive-connections``, or ``adaptive_connections`` in the grader's own config: the
  request then leaves the connections alone. A request's config would override the eval's
  adaptive setting, so the eval's is read from the task-start hook's ``EvalSpec``
  (``model_generate_config``, public): the latest task started in this process says. Two
  evals run concurrently in one process with different adaptive settings would share it.
"""

from __future__ import annotations

from inspect_ai.hooks import Hooks, TaskStart, hooks
from inspect_ai.model import GenerateConfig, Model
from inspect_ai.util import AdaptiveConcurrency

from condambig_metrics.judge.records import DEFAULT_JUDGE_CONCURRENCY

_eval_chose_adaptive = False  # set by the hook below at every task start


def _chooses_connections(config: GenerateConfig) -> bool:
    return config.max_connections is not None or config.adaptive_connections is not None


@hooks(name="condambig_grader_connections",
       description="Notes whether the eval chose its model connections (adaptive "
                   "concurrency), so that the grader's default does not override it.")
class EvalConnections(Hooks):
    async def on_task_start(self, data: TaskStart) -> None:
        global _eval_chose_adaptive
        _eval_chose_adaptive = _chooses_connections(data.spec.model_generate_config)


def grader_connections(model: Model) -> GenerateConfig:
    """The part of a judge request's config that sets the grader's connections: empty when
    the user chose them (for this grader or the whole eval)."""
    if _eval_chose_adaptive or _chooses_connections(model.config):
        return GenerateConfig()
    defaults = AdaptiveConcurrency()
    return GenerateConfig(adaptive_connections=AdaptiveConcurrency(
        min=min(defaults.min, DEFAULT_JUDGE_CONCURRENCY), start=DEFAULT_JUDGE_CONCURRENCY,
        max=max(defaults.max, DEFAULT_JUDGE_CONCURRENCY)))
