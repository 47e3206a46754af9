"""lm-eval's ``<metric>_stderr,none`` of our tasks, the lines after its table and the outputs
digest, through lm-eval's own aggregation step (``_compute_task_aggregations``, as the
evaluator calls it) on tasks built by :class:`CondambigTask` from the fixture data.

Every standard error must be :func:`condambig_tasks.uncertainty.uncertainty` on the samples
the run scored (scored again here, independently of the glue), ``"N/A"`` only where the
value itself is null, and none at all with ``bootstrap_iters`` 0 (lm-eval's meaning).
"""

from __future__ import annotations

import math
from collections import defaultdict

import pytest
from lm_eval import evaluator_utils
from lm_eval.api.metrics import mean_stderr, unweighted_mean_stderr

from condambig_tasks import lm_eval_command, lm_eval_glue
from condambig_tasks.benchmark import SUITE_SCORE, headline_metric
from condambig_tasks.provenance import outputs_sha256
from condambig_tasks.uncertainty import uncertainty
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS as ABG_OUTPUTS
from tests.ambignq.scripted_outputs import RAW_OUTPUTS as AMBIGNQ_OUTPUTS
from tests.test_lm_eval_tasks import quiet_glue  # noqa: F401 (fixture)

pytestmark = pytest.mark.usefixtures("use_fixture_data", "quiet_glue")

ABG_TASKS = [f"abg_coqa_{subtask}" for subtask in ("detection", "clarification",
                                                  "clarified_qa")]


def _task(name: str):
    from condambig_tasks.lm_eval_task import CondambigTask

    overrides = {"dataset_kwargs": {"task_options": {"split": "val"}}} \
        if name.startswith("abg_coqa") else {}
    return CondambigTask(config={"task": name, **overrides})


def _outputs(name: str) -> dict[str, str]:
    if name == "ambignq":
        return AMBIGNQ_OUTPUTS
    return ABG_OUTPUTS[name.removeprefix("abg_coqa_")]


def _evaluate(name: str, bootstrap_iters: int = 100000):
    """What lm-eval's evaluator does with a task after generation: ``process_results`` per
    doc (in doc order), then ``_compute_task_aggregations``."""
    task = _task(name)
    outputs = _outputs(name)
    raw = defaultdict(list)
    docs = list(task.test_docs())
    for doc in docs:
        for metric, value in task.process_results(doc, [outputs[doc["id"]]]).items():
            raw[(metric, "none")].append(value)
    metrics, _ = evaluator_utils._compute_task_aggregations(task, raw, bootstrap_iters)
    return task, docs, metrics


def _options(task):
    return task.hooks.benchmark.options((task.config.dataset_kwargs or {}).get("task_options"))


def _expected(task, docs, resamples: int = 1000):
    """uncertainty() on the samples scored here (not by the glue)."""
    benchmark = task.hooks.benchmark
    options = _options(task)
    by_id = {benchmark.item_id(item): item for item in benchmark.load(options)}
    outputs = _outputs(task.config.task)
    samples = [benchmark.score(by_id[doc["id"]], outputs[doc["id"]], options) for doc in docs]
    return samples, uncertainty(benchmark, samples, options, False, resamples=resamples)


@pytest.mark.parametrize("name", ["ambignq", *ABG_TASKS])
def test_every_stderr_is_uncertainty_on_the_scored_samples(name):
    task, docs, metrics = _evaluate(name)
    _, expected = _expected(task, docs)
    reported = [key.split(",")[0] for key in metrics if "_stderr" not in key]
    assert reported and set(reported) == set(expected)
    for metric in reported:
        stderr = metrics[f"{metric}_stderr,none"]
        value = metrics[f"{metric},none"]
        if math.isnan(value):  # a null metric has no standard error: lm-eval's own marker
            assert stderr == "N/A" and expected[metric].stderr is None, metric
            continue
        assert isinstance(stderr, float), (metric, stderr)
        assert stderr == pytest.approx(expected[metric].stderr, rel=1e-12, abs=1e-15), metric
    assert f"{SUITE_SCORE}_stderr,none" in metrics


def test_a_mean_over_independent_questions_has_lm_evals_own_mean_stderr():
    """AmbigNQ resamples questions, one sample each: its means' stderr is lm-eval's
    ``mean_stderr`` of the per-document numbers."""
    task, docs, metrics = _evaluate("ambignq")
    samples, _ = _expected(task, docs)
    values = [sample.values["f1_answer_all"] for sample in samples]
    assert metrics["f1_answer_all_stderr,none"] == pytest.approx(mean_stderr(values))
    assert metrics["f1_answer_all_stderr,none"] > 0


def test_bootstrap_iters_bounds_the_resamples_and_zero_means_no_stderr():
    task, docs, metrics = _evaluate("abg_coqa_detection", bootstrap_iters=200)
    _, expected = _expected(task, docs, resamples=200)
    assert metrics["f1_stderr,none"] == pytest.approx(expected["f1"].stderr)
    _, _, none = _evaluate("abg_coqa_detection", bootstrap_iters=0)
    stderrs = {key: value for key, value in none.items() if "_stderr" in key}
    assert stderrs and set(stderrs.values()) == {"N/A"}


def test_the_outputs_digest_is_in_the_tasks_provenance():
    for name in ("ambignq", "abg_coqa_detection"):
        task, docs, _ = _evaluate(name)
        outputs = _outputs(name)
        provenance = task.dump_config()["metadata"]["provenance"]
        assert provenance["outputs_sha256"] == outputs_sha256(
            [(doc["id"], outputs[doc["id"]]) for doc in docs]), name


def test_judge_free_per_document_values_are_unchanged():
    """The whole sample rides on the CORPUS metrics only: a MEAN metric's per-document value
    stays the number lm-eval logs."""
    task = _task("ambignq")
    doc = next(iter(task.test_docs()))
    values = task.process_results(doc, [AMBIGNQ_OUTPUTS[doc["id"]]])
    assert isinstance(values["f1_answer_all"], float)
    assert values[SUITE_SCORE]["id"] == doc["id"]
    assert values[SUITE_SCORE]["output"] == AMBIGNQ_OUTPUTS[doc["id"]]


def test_the_headline_and_group_lines_after_the_table(monkeypatch):
    monkeypatch.setattr(lm_eval_command, "running_lm_eval_command", lambda: True)
    found = {name: _evaluate(name) for name in ["ambignq", *ABG_TASKS]}
    lines = lm_eval_glue.report_lines()
    leaves = []
    for name, (task, docs, metrics) in found.items():
        benchmark = task.hooks.benchmark
        headline = headline_metric(benchmark, _options(task), False)
        value, stderr = metrics[f"{headline},none"], metrics[f"{headline}_stderr,none"]
        assert (f"{name} {headline} = {value:.4f} ± {stderr:.4f} "
                f"(n = {len(docs)}, judge none)") in lines
        if name in ABG_TASKS:
            leaves.append((metrics[f"{SUITE_SCORE},none"],
                           metrics[f"{SUITE_SCORE}_stderr,none"], len(docs)))
    mean = sum(value for value, _, _ in leaves) / 3
    stderr = unweighted_mean_stderr([se for _, se, _ in leaves])
    assert lines[-1] == (f"group abg_coqa {SUITE_SCORE} = {mean:.4f} ± {stderr:.4f} "
                         f"(3 tasks, n = {sum(n for _, _, n in leaves)})")
    assert len(lines) == 5  # one per task, then the group (the suite's other leaves: none)


def test_a_program_calling_lm_eval_gets_only_the_null_lines():
    _evaluate("ambignq")
    assert lm_eval_glue.report_lines() == []  # pytest is not the lm_eval command


def test_the_resamples_and_unit_of_the_stderrs_are_in_the_provenance():
    task, docs, _ = _evaluate("abg_coqa_detection", bootstrap_iters=200)
    recorded = task.dump_config()["metadata"]["provenance"]["uncertainty"]
    assert recorded["resamples"] == 200 and recorded["unit"] == "conversation"
    assert recorded["units"] == len({doc["id"].split("|")[0] for doc in docs})


def test_a_failing_stderr_keeps_lm_evals_na_and_the_numbers(monkeypatch):
    from condambig_tasks import lm_eval_task

    def broken(self, raw_metrics, bootstrap_iters):
        raise RuntimeError("no estimate")

    monkeypatch.setattr(lm_eval_task.CondambigTask, "standard_errors", broken)
    _, _, metrics = _evaluate("ambignq")
    assert not math.isnan(metrics["f1_answer_all,none"])  # the number is kept
    assert metrics["f1_answer_all_stderr,none"] == "N/A"


def test_a_task_file_contradicting_its_variant_is_an_error():
    from condambig_tasks.errors import ConfigurationError
    from condambig_tasks.lm_eval_task import CondambigTask

    with pytest.raises(ConfigurationError, match="abg_coqa_detection: the task file's"):
        CondambigTask(config={"task": "abg_coqa_detection", "dataset_kwargs": {
            "task_options": {"split": "val", "subtask": "clarification"}}})
    task = CondambigTask(config={"task": "abg_coqa_detection", "dataset_kwargs": {
        "task_options": {"split": "val"}}})  # more options, the variant's kept: allowed
    assert task.config.dataset_kwargs["task_options"]["subtask"] == "detection"
