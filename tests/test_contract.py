"""Every registered benchmark keeps the contract of ``condambig_tasks.benchmark``.

Parametrised over ``registry.available()`` plus the toy benchmark of
``tests/support/toy_benchmark`` (registered through ``CONDAMBIG_EXTRA_BENCHMARKS``). A
benchmark whose module does not import yet is skipped as "not ported yet", so its checks
start to run as soon as it imports. The helpers here (YAML reading, variants, option sets)
are shared with tests/test_consistency.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from condambig_tasks import registry
from condambig_tasks.benchmark import (
    SUITE_SPEC,
    Benchmark,
    json_safe,
    options_to_json,
    reported_metrics,
    reported_values,
)
from condambig_tasks.lm_eval_glue import LmEvalTask
from tests.conftest import FIXTURE_DATA, REPO_ROOT

TOY = "toy"
TOY_TARGET = "tests.support.toy_benchmark.benchmark:Toy"
TOY_LM_EVAL = REPO_ROOT / "tests" / "support" / "toy_benchmark" / "lm_eval"
LM_EVAL_TASKS = REPO_ROOT / "condambig_tasks" / "lm_eval_tasks"
JUNK_OUTPUTS = ("", "{{{", "null")
BENCHMARK_NAMES = list(dict.fromkeys([*registry.available(), TOY]))


# ---------------------------------------------------------------------- shared helpers


@dataclass(frozen=True)
class FunctionRef:
    """A YAML ``!function module.name`` tag, read without importing anything."""

    name: str


@dataclass(frozen=True)
class AggregationOf:
    """Stands for the aggregation function :class:`CondambigTask` binds to one metric."""

    metric: str


TASK_CLASS = FunctionRef("condambig_tasks.lm_eval_task.CondambigTask")


class _TaskYamlLoader(yaml.SafeLoader):
    pass


_TaskYamlLoader.add_constructor(
    "!function", lambda loader, node: FunctionRef(loader.construct_scalar(node)))


def read_task_yaml(path: Path) -> dict[str, Any]:
    """An lm-eval task YAML with its ``include:`` templates merged (the file's keys win)."""
    config = yaml.load(path.read_text(encoding="utf-8"), Loader=_TaskYamlLoader) or {}
    includes = config.pop("include", None) or []
    merged: dict[str, Any] = {}
    for include in [includes] if isinstance(includes, str) else includes:
        merged.update(read_task_yaml(path.parent / include))
    merged.update(config)
    return merged


def lm_eval_folder(name: str) -> Path:
    return TOY_LM_EVAL if name == TOY else LM_EVAL_TASKS / name


@dataclass(frozen=True)
class LmEvalVariant:
    """One lm-eval task of a benchmark: its task file and the config
    :class:`~condambig_tasks.lm_eval_task.CondambigTask` builds for it from the spec."""

    path: Path
    config: dict[str, Any]

    @property
    def task(self) -> str:
        return str(self.config["task"])

    @property
    def task_options(self) -> dict[str, Any]:
        return dict((self.config.get("dataset_kwargs") or {}).get("task_options") or {})

    @property
    def version(self) -> Any:
        return (self.config.get("metadata") or {}).get("version", 1.0)


def lm_eval_variants(name: str) -> list[LmEvalVariant]:
    """Every task file of the benchmark's folder naming the :class:`CondambigTask` class,
    with the config that class builds (aggregations as :class:`AggregationOf`)."""
    from condambig_tasks.lm_eval_configs import task_config

    benchmark = registry.get(name)
    variants = []
    for path in sorted(lm_eval_folder(name).glob("*.yaml")):
        stub = read_task_yaml(path)
        if stub.get("class") != TASK_CLASS:
            continue
        found = registry.task_variant(str(stub.get("task")))
        assert found is not None and found[0].name == name, \
            f"{path}: {stub.get('task')!r} is no task of {name}"
        config = task_config(benchmark, found[1], lm_eval_hooks(name), AggregationOf, stub)
        variants.append(LmEvalVariant(path, config))
    return variants


def lm_eval_task_config(task: str) -> dict[str, Any]:
    """The config lm-eval runs for one task name, with the hooks and aggregations outside a
    task (what lm-eval calls, without a task instance to record null reasons in)."""
    from condambig_tasks.lm_eval_configs import task_config

    found = registry.task_variant(task)
    assert found is not None, task
    hooks = lm_eval_hooks(found[0].name)
    return task_config(found[0], found[1], hooks, hooks.aggregation)


def lm_eval_hooks(name: str) -> LmEvalTask:
    """The benchmark's lm-eval hooks (``load_docs``, ``process_results``, ``agg_<metric>``)."""
    return LmEvalTask(name)


def load_benchmark(name: str) -> Benchmark:
    """The benchmark, or a skip while its module is not ported to the contract."""
    try:
        return registry.get(name)
    except ImportError as error:
        pytest.skip(f"{name}: not ported yet ({error})")


def option_sets(benchmark: Benchmark, name: str) -> dict[str, Any]:
    """The default options and those of every lm-eval variant, by label (duplicates once)."""
    found: dict[str, Any] = {"defaults": benchmark.options({})}
    for variant in lm_eval_variants(name):
        options = benchmark.options(variant.task_options)
        if options not in found.values():
            found[variant.task] = options
    return found


def extra_benchmarks_with_toy() -> str:
    """``CONDAMBIG_EXTRA_BENCHMARKS`` with the toy added to whatever the user registered."""
    current = os.environ.get("CONDAMBIG_EXTRA_BENCHMARKS", "").strip()
    return ",".join(filter(None, [current, f"{TOY}={TOY_TARGET}"]))


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch) -> None:
    """The toy benchmark is found the way any outside benchmark is: the environment."""
    monkeypatch.setenv("CONDAMBIG_EXTRA_BENCHMARKS", extra_benchmarks_with_toy())


@pytest.fixture
def fixture_data(monkeypatch) -> Path:
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    return FIXTURE_DATA


def _assert_json_safe_summary(summary: dict[str, Any], expected: list[str], label: str) -> None:
    assert list(summary) == expected, f"{label}: summarise must give the reported metrics, headline first"
    for metric, value in summary.items():
        assert value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)), \
            f"{label}: {metric} = {value!r} is not a number or None"
    json.dumps(json_safe(summary), allow_nan=False)


# ---------------------------------------------------------------------- the contract


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_metric_names_are_unique(name):
    benchmark = load_benchmark(name)
    names = [spec.name for spec in benchmark.metric_specs]
    assert benchmark.name == name
    assert names and len(names) == len(set(names)), names


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_lm_eval_metric_lists_follow_the_metric_spec(name):
    benchmark = load_benchmark(name)
    variants = lm_eval_variants(name)
    assert sorted(v.task for v in variants) == sorted(v.task for v in benchmark.variants), \
        f"{lm_eval_folder(name)} must hold one task file (class: !function " \
        f"{TASK_CLASS.name}) per variant of {name}"
    problems = []
    for variant in variants:
        label = variant.path.name
        reported = reported_metrics(benchmark, benchmark.options(variant.task_options),
                                              judged=True)
        metric_list = variant.config.get("metric_list") or []
        listed = [entry.get("metric") for entry in metric_list]
        # the list may hold more of the spec than one run reports (lm-eval aggregates only
        # the metrics process_results emits), never fewer, in spec order, suite_score last
        expected = [spec for spec in (*benchmark.metric_specs, SUITE_SPEC)
                    if spec.name in listed or spec in reported]
        if listed != [spec.name for spec in expected]:
            problems.append(f"{label}: metric_list {listed} != spec {[s.name for s in expected]}")
            continue
        for entry, spec in zip(metric_list, expected, strict=True):
            if entry.get("aggregation") != AggregationOf(spec.name):
                problems.append(f"{label}: {spec.name} aggregation must be its own, got "
                                f"{entry.get('aggregation')}")
            # a count or signed difference has no direction: an explicit null, so that
            # lm-eval neither guesses one nor warns
            if "higher_is_better" not in entry or entry["higher_is_better"] is not \
                    spec.higher_is_better:
                problems.append(f"{label}: {spec.name} higher_is_better must be "
                                f"{spec.higher_is_better}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_options_are_frozen_with_defaults(name):
    benchmark = load_benchmark(name)
    kind = benchmark.options_type
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen, \
        f"{kind.__name__} must be a frozen dataclass"
    options = benchmark.options({})
    assert isinstance(options, kind)
    for option in dataclasses.fields(kind):
        has_default = (option.default is not dataclasses.MISSING
                       or option.default_factory is not dataclasses.MISSING)
        assert has_default, f"option {option.name} needs a default"
        default = (option.default if option.default is not dataclasses.MISSING
                   else option.default_factory())
        assert getattr(options, option.name) == default, option.name
    first = next(iter(dataclasses.fields(kind)), None)
    if first is not None:
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(options, first.name, getattr(options, first.name))
    json.dumps(options_to_json(benchmark, options), allow_nan=False)


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_records_round_trip_every_fixture_item(name, fixture_data):
    benchmark = load_benchmark(name)
    for label, options in option_sets(benchmark, name).items():
        items = benchmark.load(options)
        assert items, f"{label}: no fixture items"
        ids = [benchmark.item_id(item) for item in items]
        assert len(ids) == len(set(ids)), f"{label}: item ids repeat"
        for item in items:
            record = benchmark.to_record(item)
            text = json.dumps(record, allow_nan=False, ensure_ascii=False)
            back = benchmark.from_record(json.loads(text))
            assert back == item, f"{label}: {benchmark.item_id(item)} does not round-trip"
            assert benchmark.to_record(back) == record


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_summary_of_no_samples_is_json_safe(name):
    benchmark = load_benchmark(name)
    for label, options in option_sets(benchmark, name).items():
        for judged in (False, True):
            expected = [s.name for s in reported_metrics(benchmark, options, judged)]
            summary = reported_values(benchmark, [], options, judged)
            _assert_json_safe_summary(summary, expected, f"{label} judged={judged}")


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_summary_of_junk_outputs_is_json_safe(name, fixture_data):
    benchmark = load_benchmark(name)
    for label, options in option_sets(benchmark, name).items():
        if benchmark.needs_corpus_step(options, judged=False):
            continue  # agent models score these outputs: tests/test_consistency.py
        samples = []
        for item in benchmark.load(options):
            for junk in JUNK_OUTPUTS:
                sample = benchmark.score(item, junk, options)
                assert sample.id == benchmark.item_id(item)
                json.dumps(sample.to_json(), allow_nan=False)
                samples.append(sample)
        expected = [s.name for s in reported_metrics(benchmark, options, judged=False)]
        _assert_json_safe_summary(reported_values(benchmark, samples, options, judged=False),
                                  expected, label)
        for value in (v for s in samples for v in s.values.values()):
            assert value is None or math.isfinite(value), f"{label}: per-sample {value!r}"
