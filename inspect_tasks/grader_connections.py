"""How many judge requests the grader may have in flight: the project's default judge
concurrency (as lm-eval and ``condambig-score`` get), unless the user chose one.

Inspect 0.3.285 gives a model with no ``max_connections`` adaptive concurrency starting at
20 connections, which caps the judge of a scorer that has 32 requests ready (at 500 ms per
judgement, 40 judgements/s instead of 64). A judge request therefore asks for adaptive
concurrency starting at :data:`DEFAULT_JUDGE_CONCURRENCY` (Inspect's own bounds and its
back-off on rate limits otherwise) when nothing in effect for the grader sets
``max_connections``, ``adaptive_connections`` or ``batch``: neither the grader's own config
(``--model-role grader={model: ..., max_connections: N}``) nor the eval's
(``--max-connections``, ``--adaptive-connections``, ``--batch``, which Inspect passes on to
every role).

The eval's config is read with ``inspect_ai.model._generate_config.active_generate_config``,
an Inspect internal (no public function returns the config a scorer runs under):
``tests/judge/test_inspect_grader_connections_e2e.py`` fails when it moves or stops
holding the command line's values.
"""

from __future__ import annotations

from inspect_ai.model import GenerateConfig, Model
from inspect_ai.util import AdaptiveConcurrency

from condambig_metrics.judge.records import DEFAULT_JUDGE_CONCURRENCY


def _chooses_connections(config: GenerateConfig) -> bool:
    return (config.max_connections is not None or config.adaptive_connections is not None
            or bool(config.batch))


def grader_connections(model: Model) -> GenerateConfig:
    """The part of a judge request's config that sets the grader's connections: empty when
    the user chose them (for this grader or the whole eval)."""
    from inspect_ai.model._generate_config import active_generate_config

    if _chooses_connections(model.config) or _chooses_connections(active_generate_config()):
        return GenerateConfig()
    defaults = AdaptiveConcurrency()
    return GenerateConfig(adaptive_connections=AdaptiveConcurrency(
        min=min(defaults.min, DEFAULT_JUDGE_CONCURRENCY), start=DEFAULT_JUDGE_CONCURRENCY,
        max=max(defaults.max, DEFAULT_JUDGE_CONCURRENCY)))
