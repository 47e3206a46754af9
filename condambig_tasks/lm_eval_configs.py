"""lm-eval's task and group configs, derived from each benchmark's spec.

A task config (``lm_eval.config.task.TaskConfig``) takes its metric list, generation
settings, fixed options and version from the :class:`~condambig_tasks.benchmark.Variant`
and :class:`~condambig_tasks.benchmark.Benchmark` it runs; groups come from
``Benchmark.group`` and ``Benchmark.suite_member``. The task files under
``condambig_tasks/lm_eval_tasks`` only name the tasks for lm-eval's index
(``condambig_tasks/lm_eval_tasks/generate.py`` writes them from here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from condambig_tasks import registry
from condambig_tasks.benchmark import (
    SUITE_SPEC,
    Benchmark,
    MetricSpec,
    TaskVersion,
    Variant,
    json_safe,
    reported_metrics,
    task_version,
)
from condambig_tasks.errors import ConfigurationError

TASK_OPTIONS_KEY = "task_options"  # dataset_kwargs key of a variant's fixed options
TEST_SPLIT = "test"
# Between a prompt and its answer. Every prompt is sent as its paper wrote it and ends where
# the answer begins (CondAmbigQA's with a newline); lm-eval puts the delimiter only before a
# written-out answer (a few-shot example), never before a generation, so "" changes no
# prompt and never adds a space after a prompt's own newline (lm-eval's task tests reject a
# whitespace delimiter after a prompt ending in whitespace).
TARGET_DELIMITER = ""


def variant_options(benchmark: Benchmark, variant: Variant) -> Any:
    return benchmark.options(dict(variant.options), strict=False)


def listed_metrics(benchmark: Benchmark, variant: Variant) -> list[MetricSpec]:
    """What the variant can report (with or without a judge), in spec order,
    ``suite_score`` last: lm-eval's ``metric_list`` and ``higher_is_better``."""
    options = variant_options(benchmark, variant)
    reported = {spec.name for judged in (False, True)
                for spec in reported_metrics(benchmark, options, judged)}
    return [spec for spec in (*benchmark.metric_specs, SUITE_SPEC) if spec.name in reported]


def generation_kwargs(benchmark: Benchmark, variant: Variant) -> dict[str, Any]:
    """Greedy decoding unless the variant samples (lm-eval sets temperature 0.0 when
    ``do_sample`` is false: ``lm_eval.models.utils.normalize_gen_kwargs``)."""
    kwargs: dict[str, Any] = {"until": [], "do_sample": variant.temperature is not None}
    if variant.temperature is not None:
        kwargs["temperature"] = float(variant.temperature)
    kwargs["max_gen_toks"] = variant.max_tokens or benchmark.max_tokens(
        variant_options(benchmark, variant))
    return kwargs


def task_metadata(benchmark: Benchmark, variant: Variant) -> dict[str, Any]:
    """``metadata.version`` (the comparability version N) and the variant's default judge
    (lm-eval's ``--metadata`` and a task file's ``metadata`` override both)."""
    metadata: dict[str, Any] = {"version": task_version(benchmark).comparability}
    if variant.judge_model:
        metadata["judge_model"] = variant.judge_model
    return metadata


def task_config(
    benchmark: Benchmark, variant: Variant, hooks: Any,
    aggregation: Callable[[str], Callable[[list[Any]], float]],
    overrides: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole task config of one variant. ``hooks``: the benchmark's
    :class:`~condambig_tasks.lm_eval_glue.LmEvalTask`; ``aggregation(metric)``: the
    aggregation function of one metric; ``overrides``: the task file's own keys (a user's
    file may fix more options, change generation settings or add metadata)."""
    extra = dict(overrides or {})
    extra.pop("class", None)
    extra.pop("task", None)
    dataset_kwargs = dict(extra.pop("dataset_kwargs", None) or {})
    options = {**json_safe(dict(variant.options)),
               **(dataset_kwargs.pop(TASK_OPTIONS_KEY, None) or {})}
    if not variant.accepts(options):  # its metric list and generation settings would not fit
        fixed = ", ".join(f"{key}={value}" for key, value in variant.options.items())
        raise ConfigurationError(
            f"{variant.task}: the task file's task_options contradict what this task fixes "
            f"({fixed}); name the {benchmark.name} task that fixes them instead, or a task "
            "name of your own with those options")
    if options:
        dataset_kwargs[TASK_OPTIONS_KEY] = options
    metadata = {**task_metadata(benchmark, variant), **(extra.pop("metadata", None) or {})}
    config: dict[str, Any] = {
        "task": variant.task,
        "custom_dataset": hooks.load_docs,
        "dataset_kwargs": dataset_kwargs or None,
        "test_split": TEST_SPLIT,
        "output_type": "generate_until",
        "doc_to_text": hooks.doc_to_text,
        "doc_to_target": hooks.doc_to_target,
        "target_delimiter": TARGET_DELIMITER,
        "process_results": hooks.process_results,
        "generation_kwargs": generation_kwargs(benchmark, variant),
        "metric_list": [{"metric": spec.name, "aggregation": aggregation(spec.name),
                         "higher_is_better": spec.higher_is_better}
                        for spec in listed_metrics(benchmark, variant)],
        "metadata": metadata,
    }
    return {**config, **extra}


# ---------------------------------------------------------------------- groups


@dataclass(frozen=True)
class GroupSpec:
    """One lm-eval group: its members (tasks or groups), whether it averages its leaves'
    ``suite_score`` (unweighted) and its ``metadata.version``."""

    name: str
    tasks: tuple[str, ...]
    version: int
    averages_suite_score: bool


def benchmark_group(benchmark: Benchmark) -> GroupSpec | None:
    """``Benchmark.group``: its greedy variants (a sampled variant reproduces one paper
    run and is asked for by name). It averages ``suite_score`` when it stands for the
    benchmark in the suite."""
    if benchmark.group is None:
        return None
    return GroupSpec(benchmark.group,
                     tuple(v.task for v in benchmark.variants if v.temperature is None),
                     task_version(benchmark).comparability,
                     averages_suite_score=benchmark.suite_member == benchmark.group)


def suite_group() -> GroupSpec:
    """The ``condambig`` suite: every built-in benchmark's ``suite_member``."""
    return GroupSpec(registry.SUITE,
                     tuple(registry.get(name).suite_member for name in registry.BENCHMARKS),
                     TaskVersion(registry.SUITE_VERSION).comparability,
                     averages_suite_score=True)


def spec_groups() -> dict[str, GroupSpec]:
    """Every group the spec declares (the suite and each benchmark's group), by name."""
    groups = [benchmark_group(registry.get(name)) for name in registry.available()]
    found = {group.name: group for group in groups if group is not None}
    found[registry.SUITE] = suite_group()
    return found


def leaf_tasks(name: str, groups: Mapping[str, GroupSpec]) -> list[str]:
    """The tasks under a group, nested groups expanded (lm-eval averages leaves)."""
    group = groups.get(name)
    if group is None:
        return [name]
    return [leaf for member in group.tasks for leaf in leaf_tasks(member, groups)]

