"""Task versions change by rule: scoring or prompts change -> the version changes.

``tests/fixtures/versions.json`` records, per benchmark, its version and the fingerprint of
what a run reports (tests/support/versions.py). A changed fingerprint under the same
version fails here; so does a version lm-eval, Inspect or CHANGELOG.md do not agree on.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
from pathlib import Path

import pytest

from condambig_metrics.judge import JudgeCriterion
from condambig_tasks import registry
from condambig_tasks.benchmark import MetricSpec, headline_metric, task_version, uses_judge
from tests.support.versions import benchmark_fingerprint, fingerprint, judge_prompts, recorded
from tests.test_contract import lm_eval_variants

NAMES = sorted(registry.BENCHMARKS)
CHANGELOG = Path(__file__).resolve().parents[1] / "CHANGELOG.md"
RECORD_COMMAND = "CONDAMBIG_DATA_DIR=tests/fixtures/data python -m tests.support.versions --record"


@pytest.mark.parametrize("name", NAMES)
def test_fingerprint_changes_only_with_the_version(name, use_fixture_data):
    benchmark = registry.get(name)
    entry = recorded().get(name)
    assert entry is not None, f"{name} has no recorded fingerprint: run {RECORD_COMMAND}"
    current = benchmark_fingerprint(name)
    if entry["version"] == benchmark.version:
        assert current == entry["fingerprint"], (
            f"{name}: the metric spec, option defaults, prompts or generation settings changed "
            f"but the version is still {benchmark.version}. Bump {type(benchmark).__name__}."
            f"version (lm-eval's metadata.version follows it), add a CHANGELOG.md line, then run "
            f"{RECORD_COMMAND}")
    else:
        pytest.fail(f"{name}: version {benchmark.version} has no recorded fingerprint "
                    f"(recorded: {entry['version']}); run {RECORD_COMMAND}")


def test_the_fingerprint_sees_a_metric_and_a_prompt_change(use_fixture_data, monkeypatch):
    benchmark = registry.get("ambignq")
    variants = [({}, {"max_gen_toks": 512})]
    base = fingerprint(benchmark, variants)
    assert fingerprint(benchmark, variants) == base  # deterministic
    flipped = tuple(dataclasses.replace(spec, higher_is_better=not spec.higher_is_better)
                    if spec.name == "parse_rate" else spec for spec in benchmark.metric_specs)
    extra = (*benchmark.metric_specs, MetricSpec("new_metric", "a new metric"))
    original_prompt = type(benchmark).prompt
    changes = [("metric_specs", flipped), ("metric_specs", extra),
               ("prompt", lambda self, item, options: original_prompt(self, item, options) + " ")]
    for attribute, value in changes:
        with monkeypatch.context() as patch:
            patch.setattr(type(benchmark), attribute, value)
            assert fingerprint(benchmark, variants) != base, attribute
    assert fingerprint(benchmark, variants) == base
    assert fingerprint(benchmark, [({}, {"max_gen_toks": 256})]) != base


@pytest.mark.parametrize("name", [name for name in NAMES if uses_judge(registry.get(name))])
def test_the_fingerprint_sees_the_judge_criteria_and_template(name, use_fixture_data,
                                                              monkeypatch):
    import condambig_metrics.judge.prompt as prompt

    benchmark = registry.get(name)
    variants = [({}, None)]
    base = fingerprint(benchmark, variants)
    [first, *_] = judge_prompts(benchmark)
    assert "Evaluation criteria:" in first  # the criteria were found and rendered
    with monkeypatch.context() as patch:
        patch.setattr(prompt, "_TEMPLATE", prompt._TEMPLATE.replace("an evaluator", "a judge"))
        assert fingerprint(benchmark, variants) != base
    package = importlib.import_module(type(benchmark).__module__.rpartition(".")[0])
    criterion_modules = [importlib.import_module(info.name) for info in
                         pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    module, attribute, criterion = next(
        (module, attribute, value) for module in criterion_modules
        for attribute, value in vars(module).items() if isinstance(value, JudgeCriterion))
    with monkeypatch.context() as patch:
        patch.setattr(module, attribute, dataclasses.replace(
            criterion, evaluation_steps=(*criterion.evaluation_steps, "One more step.")))
        assert fingerprint(benchmark, variants) != base
    assert fingerprint(benchmark, variants) == base


@pytest.mark.parametrize("name", NAMES)
def test_every_front_end_and_the_changelog_carry_the_version(name, use_fixture_data):
    benchmark = registry.get(name)
    for variant in lm_eval_variants(name):
        assert variant.version == task_version(benchmark).comparability, variant.path.name
    section = re.search(rf"(?ms)^## {re.escape(name)}\n(.*?)(?=^## |\Z)", CHANGELOG.read_text())
    assert section is not None, f"CHANGELOG.md has no section ## {name}"
    assert f"- {benchmark.version} — " in section.group(1), \
        f"CHANGELOG.md ## {name} has no line for version {benchmark.version}"


@pytest.mark.parametrize("name", ["ambignq", "conditionalqa", "abg_coqa"])
def test_inspect_task_version_and_headline(name, use_fixture_data):
    import importlib

    task_function = getattr(importlib.import_module(f"condambig.{name}"), name)
    task = task_function()
    benchmark = registry.get(name)
    assert task.version == task_version(benchmark).comparability
    assert task.metadata["full_task_version"] == benchmark.version
    options = benchmark.options({})
    assert task.headline_metric is not None
    assert task.headline_metric.metric == headline_metric(benchmark, options, judged=False)
    assert task.metadata["provenance"]["task_version"] == benchmark.version
