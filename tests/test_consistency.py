"""Same raw outputs, same numbers through every front end, for every benchmark.

In-process, without a judge, on the fixture data: (a) the lm-eval glue as lm-eval calls it
(the hooks :class:`~condambig_tasks.lm_eval_task.CondambigTask` gives lm-eval: ``load_docs``,
``process_results`` per doc, then ``agg_<metric>`` over the items of each metric), (b) the Inspect task's scorer and
metric on ``TaskState``s built from its samples, and (c) ``condambig-score``
(``condambig_tasks.cli.main``). Every lm-eval variant of a benchmark is checked with the
options it fixes. Subprocess runs of the real commands are in the benchmarks' e2e tests and
tests/test_toy_benchmark.py.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from condambig_tasks.benchmark import CORPUS, Benchmark, json_safe, reported_metrics
from condambig_tasks.cli import main
from tests.support.inspect_scoring import scripted_scores
from tests.test_contract import (
    BENCHMARK_NAMES,
    JUNK_OUTPUTS,
    LmEvalVariant,
    fixture_data,  # noqa: F401 (fixture)
    lm_eval_hooks,
    lm_eval_variants,
    load_benchmark,
    toy_registered,  # noqa: F401 (fixture)
)

# Outputs given to the fixture items in turn: well-formed, partly valid, junk.
SCRIPTED_OUTPUTS: dict[str, list[str]] = {
    "ambignq": [
        '[{"question": "Who discovered polonium?", "answer": "Marie Curie"},'
        ' {"question": "Who discovered it first?", "answer": "Pierre Curie"}]',
        'Sure: {"question": "which river flows through Ashcombe?", "answer": "Copper River"}',
        "I am not sure.",
    ],
    "condambigqa": [
        '{"conditions": [{"condition": "in 2019", "answer": "Ana Runner", '
        '"citations": ["Fragment 1", "Fragment 2"]}]}',
        '```json\n{"conditions": [{"condition": "cars", "answer": "1925", '
        '"citations": ["Fragment 9"]},]}\n```',
        "I am not sure.",
    ],
    "conditionalqa": [
        '{"answers": [{"answer": "yes", "conditions": [1]}]}',
        '[["no", [1, 99]], "maybe"]',
        "not JSON at all",
    ],
    "abg_coqa": ["AMBIGUOUS", "Do you mean the red boat or the blue boat?", "Blue.", "   "],
    "hotpot_flm": ["Which film do you mean?", "What year?", "?"],
    "toy": ["Answer: Paris", "answer: tokyo.", "Nairobi", "Answer: Lima"],
}


def _model_options(benchmark: Benchmark, request) -> dict[str, Any]:
    """Options every front end gets besides the variant's (HotpotQA-FLM's agent models)."""
    fields = {f.name for f in dataclasses.fields(benchmark.options_type)}
    if not {"answering_agent", "downstream_model"} <= fields:
        return {}
    agent = str(request.getfixturevalue("tiny_t5"))
    # no answer cache: each front end runs the agents itself (details say what was computed)
    wanted = {"answering_agent": agent, "downstream_model": agent, "agent_device": "cpu",
              "agent_dtype": "float32", "downstream_cache": False}
    return {key: value for key, value in wanted.items() if key in fields}


def _outputs(name: str, ids: list[str]) -> dict[str, str]:
    choices = [*SCRIPTED_OUTPUTS.get(name, []), *JUNK_OUTPUTS]
    return {key: choices[i % len(choices)] for i, key in enumerate(ids)}


# ---------------------------------------------------------------------- the three front ends


def _lm_eval(name: str, variant: LmEvalVariant, extra: dict[str, Any], outputs: dict[str, str],
             active: list) -> tuple[dict[str, float], dict[str, dict[str, Any]] | None]:
    """Corpus values, and per-sample items when lm-eval scores each doc on its own."""
    utils = lm_eval_hooks(name)
    docs = utils.load_docs(version=variant.version, pretrained="scripted",
                           task_options=variant.task_options, **extra)["test"]
    assert sorted(doc["id"] for doc in docs) == sorted(outputs)
    per_doc = {doc["id"]: utils.process_results(doc, [outputs[doc["id"]]]) for doc in docs}
    corpus = {spec.name: getattr(utils, f"agg_{spec.name}")(
        [values[spec.name] for values in per_doc.values()]) for spec in active}
    if any(isinstance(value, dict) and "sample" not in value
           for values in per_doc.values() for value in values.values()):
        return corpus, None  # the corpus step scores in the aggregation
    return corpus, per_doc


def _inspect(name: str, options: dict[str, Any], outputs: dict[str, str]) -> tuple[dict, dict]:
    from condambig._factory import benchmark_task

    task = benchmark_task(name, options, judge=False)  # the judge-free numbers
    [metric] = task.metrics
    sample_scores = scripted_scores(task, outputs)
    corpus = metric(sample_scores)
    scores = {str(score.sample_id): score.score for score in sample_scores}
    return corpus, scores


def _cli(name: str, options: dict[str, Any], outputs: dict[str, str], tmp_path: Path,
         capsys) -> tuple[dict, dict[str, dict]]:
    outputs_file, per_sample = tmp_path / "outputs.json", tmp_path / "per_sample.jsonl"
    outputs_file.write_text(json.dumps([{"id": k, "output": v} for k, v in outputs.items()]))
    flags = []
    for option, value in options.items():
        flag = "--" + option.replace("_", "-")
        if isinstance(value, bool):
            flags.append(flag if value else "--no-" + option.replace("_", "-"))
        else:
            flags += [flag, str(value)]
    capsys.readouterr()
    code = main([name, "--outputs", str(outputs_file), *flags, "--per-sample", str(per_sample)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = [json.loads(line) for line in per_sample.read_text().splitlines()]
    return json.loads(captured.out), {row["id"]: row for row in rows}


# ---------------------------------------------------------------------- comparison


def _same(a: Any, b: Any) -> bool:
    """Equal numbers, where None and NaN both mean "no value"."""
    missing_a = a is None or (isinstance(a, float) and math.isnan(a))
    missing_b = b is None or (isinstance(b, float) and math.isnan(b))
    if missing_a or missing_b:
        return missing_a and missing_b
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)


def _check_variant(name: str, variant: LmEvalVariant, request, tmp_path: Path, capsys) -> None:
    benchmark = load_benchmark(name)
    extra = _model_options(benchmark, request)
    option_values = {**extra, **variant.task_options}
    options = benchmark.options(option_values)
    active = reported_metrics(benchmark, options, judged=False)
    names = [spec.name for spec in active]
    ids = [benchmark.item_id(item) for item in benchmark.load(options)]
    outputs = _outputs(name, ids)
    label = variant.task
    tmp_path.mkdir(parents=True, exist_ok=True)

    cli, cli_samples = _cli(name, option_values, outputs, tmp_path, capsys)
    lm_eval, lm_eval_docs = _lm_eval(name, variant, extra, outputs, active)
    inspect, inspect_scores = _inspect(name, option_values, outputs)

    assert list(cli["metrics"]) == names, label
    assert cli["n_scored"] == len(ids) and cli["missing_outputs"] == 0, label
    # Inspect's metric gives each metric's stderr beside it, as condambig-score's "stderr"
    assert set(inspect) == set(names) | {f"{metric}_stderr" for metric in names}, label
    for metric in names:
        reference = cli["metrics"][metric]
        assert _same(lm_eval[metric], reference), (label, "lm-eval", metric, lm_eval[metric], reference)
        assert _same(inspect[metric], reference), (label, "inspect", metric, inspect[metric], reference)
        stderr = cli["stderr"][metric]
        assert _same(inspect[f"{metric}_stderr"], stderr), (label, "inspect stderr", metric)

    assert set(cli_samples) == set(ids) == set(inspect_scores), label
    for key, row in cli_samples.items():
        present = {k: v for k, v in row["values"].items() if v is not None}
        score = inspect_scores[key]
        assert set(score.value) == set(present), (label, key, score.value, present)
        assert all(_same(score.value[k], v) for k, v in present.items()), (label, key)
        assert json_safe(score.metadata or {}) == row["details"], (label, key)
        assert (score.explanation or "") == row["explanation"], (label, key)
        if lm_eval_docs is None:
            continue
        for spec in active:
            item = lm_eval_docs[key][spec.name]
            if spec.aggregation == CORPUS or isinstance(item, dict):
                # a CORPUS metric (or, without one, the metric carrying the outputs digest)
                # holds the whole sample
                assert item["sample"] == row, (label, key, spec.name)
            else:
                assert _same(item, row["values"].get(spec.name)), (label, key, spec.name)


@pytest.mark.parametrize("name", BENCHMARK_NAMES)
def test_front_ends_agree(name, fixture_data, request, tmp_path, capsys, monkeypatch):  # noqa: F811
    for variable in ("CONDAMBIG_JUDGE_MODEL", "CONDAMBIG_JUDGE_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    load_benchmark(name)  # skips while the benchmark is not ported
    variants = lm_eval_variants(name)
    assert variants, f"{name}: no lm-eval task file names CondambigTask"
    for variant in variants:
        _check_variant(name, variant, request, tmp_path / variant.task, capsys)
