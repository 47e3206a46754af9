"""What a leaderboard reads from a run: the headline metric first, the suite score, the
provenance block, and Inspect's conventions for a failing or mis-bound judge; and that
``lm_eval --tasks condambig`` runs every benchmark (the whole-suite check, on this module's
run).

Real ``lm_eval`` / ``inspect eval`` / ``condambig-score`` runs on the hand-written fixture
data (lm-eval's ``dummy`` model answers every prompt with the same text; Inspect talks to a
loopback OpenAI-compatible server).
"""

from __future__ import annotations

import glob
import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import SUITE_SCORE, headline_metric, metric_spec, task_version
from condambig_tasks.provenance import (
    load_records_with_provenance,
    outputs_sha256,
    records_sha256,
    scoring_sha256,
)
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import lm_eval_results, warm_start
from tests.support.judge_server import JudgeServer

LEAVES = {  # leaf task -> (benchmark, task options) of the condambig group
    "condambigqa": ("condambigqa", {}),
    "hotpot_flm": ("hotpot_flm", {}),
    "conditionalqa": ("conditionalqa", {}),
    "ambignq": ("ambignq", {}),
    "abg_coqa_detection": ("abg_coqa", {"subtask": "detection"}),
    "abg_coqa_clarification": ("abg_coqa", {"subtask": "clarification"}),
    "abg_coqa_clarified_qa": ("abg_coqa", {"subtask": "clarified_qa"}),
}


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1",
                          CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"), **extra)


def _run(command: list[str], env: dict[str, str], cwd: Path,
         ok: bool = True) -> subprocess.CompletedProcess:
    result = warm_start.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=600)
    if ok:
        assert result.returncode == 0, \
            f"{command[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None or math.isnan(a) or math.isnan(b):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


# ---------------------------------------------------------------------- in-process


def test_records_digest_changes_when_one_record_changes(tmp_path, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA / "ambignq", data / "ambignq")
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(data))
    benchmark = registry.get("ambignq")
    options = benchmark.options({})
    _, _, before = load_records_with_provenance(benchmark, options)
    file = data / "ambignq" / "dev_light.json"
    records = json.loads(file.read_text())
    records[-1]["question"] += " (edited)"
    file.write_text(json.dumps(records))
    _, _, after = load_records_with_provenance(benchmark, options, judge="some-judge")
    assert before["data"]["records"] == after["data"]["records"] == len(records)
    assert before["data"]["records_sha256"] != after["data"]["records_sha256"]
    [source] = after["data"]["sources"]
    assert source["kind"] == "file" and source["path"].endswith("dev_light.json")
    assert before["data"]["sources"][0]["sha256"] != source["sha256"]
    assert after["judge"] == "some-judge" and after["task_version"] == benchmark.version


def test_suite_score_is_the_headline_on_a_zero_to_one_scale():
    flm = registry.get("hotpot_flm")
    options = flm.options({})
    assert headline_metric(flm, options, False) == "f1_recovery"
    assert metric_spec(flm, "f1_recovery").scale == 100.0
    abg = registry.get("abg_coqa")
    clarification = abg.options({"subtask": "clarification"})
    assert headline_metric(abg, clarification, True) == "bleu4"
    # every headline is higher-is-better
    for name, options in LEAVES.values():
        benchmark = registry.get(name)
        for judged in (False, True):
            headline = headline_metric(benchmark, benchmark.options(options), judged)
            assert headline is not None and metric_spec(benchmark, headline).higher_is_better


# ---------------------------------------------------------------------- lm-eval


def test_group_yaml_gives_the_unweighted_mean_of_the_leaves():
    """lm-eval's own group aggregation on our group YAMLs, with finite leaf values and
    unequal sizes (the e2e run below gets an undefined HotpotQA-FLM recovery from its
    random agents, so its suite score is null)."""
    from types import SimpleNamespace

    import yaml
    from lm_eval.api.group import Group
    from lm_eval.api.task import ConfigurableTask

    from condambig_tasks.lm_eval_tasks import task_folder

    def group(path: str) -> tuple[Group, list[str]]:
        config = yaml.safe_load((Path(task_folder()) / path).read_text())
        return Group.from_config({k: v for k, v in config.items() if k != "task"}), config["task"]

    def leaf(name: str) -> ConfigurableTask:
        task = object.__new__(ConfigurableTask)
        task._config = SimpleNamespace(task=name)
        return task

    suite, children = group("condambig/_condambig.yaml")
    abg, subtasks = group("abg_coqa/_abg_coqa.yaml")
    for name in subtasks:
        abg.add(leaf(name))
    for name in children:
        suite.add(abg if name == "abg_coqa" else leaf(name))
    values = dict(zip(LEAVES, (0.5, 0.4, 0.3, 0.2, 0.1, 0.05, 0.6), strict=True))
    metrics = {task: {f"{SUITE_SCORE},none": value, "sample_len": 10 * index + 1}
               for index, (task, value) in enumerate(values.items())}
    assert suite.aggregate(metrics)[f"{SUITE_SCORE},none"] == pytest.approx(2.15 / 7)
    assert abg.aggregate(metrics)[f"{SUITE_SCORE},none"] == pytest.approx(0.75 / 3)


def _suite_tasks() -> set[str]:
    """The lm-eval tasks the ``condambig`` group runs: each benchmark's suite member, the
    tasks of its group when the member is the group."""
    tasks = set()
    for name in registry.BENCHMARKS:
        benchmark = registry.get(name)
        if benchmark.suite_member == benchmark.group:
            tasks.update(variant.task for variant in benchmark.variants)
        else:
            tasks.add(benchmark.suite_member)
    return tasks


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory, tiny_t5):
    """``lm_eval --tasks condambig`` on the fixtures (one run for the lm-eval tests, the
    whole-suite check of tests/test_suite_e2e.py's lm-eval half included)."""
    tmp = tmp_path_factory.mktemp("suite")
    metadata = json.dumps({"answering_agent": str(tiny_t5), "downstream_model": str(tiny_t5)})
    run = _run([executable("lm_eval"), "--model", "dummy", "--tasks", "condambig",
                "--output_path", str(tmp / "out"), "--metadata", metadata], _env(tmp), tmp)
    [results] = glob.glob(f"{tmp}/out/**/results_*.json", recursive=True)
    return {**json.loads(Path(results).read_text()), "stderr (test)": run.stderr}


@pytest.mark.e2e
def test_lm_eval_condambig_group_runs_every_benchmark(suite_run):
    """The whole suite through ``lm_eval --tasks condambig``: every benchmark's task runs
    (moved here from tests/test_suite_e2e.py to share this module's run)."""
    results = suite_run
    assert _suite_tasks() <= set(results["results"])
    assert {"condambig", "abg_coqa"} <= set(results["group_subtasks"])
    assert "parse_rate,none" in results["results"]["condambigqa"]
    assert "f1_recovery,none" in results["results"]["hotpot_flm"]


@pytest.mark.e2e
def test_lm_eval_reports_the_headline_first_and_the_suite_score(suite_run):
    results = suite_run["results"]
    leaf_scores = []
    for task, (name, options) in LEAVES.items():
        benchmark = registry.get(name)
        typed = benchmark.options(options)
        headline = headline_metric(benchmark, typed, judged=False)
        metrics = [key.split(",")[0] for key in results[task]
                   if key.endswith(",none") and "_stderr" not in key]
        assert metrics[0] == headline, (task, metrics[:3])
        assert metrics[-1] == SUITE_SCORE, task
        value = results[task][f"{headline},none"]
        suite = results[task][f"{SUITE_SCORE},none"]
        assert _same(suite, value / metric_spec(benchmark, headline).scale), task
        assert suite_run["higher_is_better"][task][headline] is True
        leaf_scores.append(suite)
        assert suite_run["versions"][task] == task_version(benchmark).comparability
    # lm-eval's group mean over the leaf tasks, unweighted (NaN when a leaf has none)
    expected = sum(leaf_scores) / len(leaf_scores)
    assert _same(results["condambig"][f"{SUITE_SCORE},none"], expected)
    abg = [results[f"abg_coqa_{s}"][f"{SUITE_SCORE},none"]
           for s in ("detection", "clarification", "clarified_qa")]
    assert _same(results["abg_coqa"][f"{SUITE_SCORE},none"], sum(abg) / 3)
    # directions: a signed difference and a count have none, the absolute error is lower-better
    directions = suite_run["higher_is_better"]["condambigqa"]
    assert directions["count_difference"] is None and directions["answer_count"] is None
    assert directions["count_error"] is False


@pytest.mark.e2e
def test_lm_eval_says_why_a_headline_or_the_suite_score_is_null(suite_run):
    """lm-eval shows NaN; after its table one line per null headline says why (as the
    results JSON's configs.<task>.metadata.null_reasons has it), and one for the group."""
    results, lines = suite_run["results"], suite_run["stderr (test)"].splitlines()
    null_tasks = []
    for task, (name, options) in LEAVES.items():
        benchmark = registry.get(name)
        headline = headline_metric(benchmark, benchmark.options(options), judged=False)
        if not _same(results[task][f"{headline},none"], None):
            continue
        null_tasks.append(task)
        reasons = suite_run["configs"][task]["metadata"]["null_reasons"]
        assert reasons[headline] and SUITE_SCORE in reasons, task
        assert f"condambig: {task}: {headline} is null: {reasons[headline]}" in lines, task
    assert null_tasks, "the dummy model's suite has a null headline (HotpotQA-FLM's recovery)"
    assert _same(results["condambig"][f"{SUITE_SCORE},none"], None)
    [group_line] = [line for line in lines if line.startswith("condambig: group condambig: ")]
    assert all(task in group_line for task in null_tasks) and "is null" in group_line


@pytest.mark.e2e
def test_lm_eval_gives_every_number_a_stderr_and_prints_each_headline(suite_run):
    """No ``N/A`` beside a number of ours: each leaf's headline and suite_score have a
    standard error (none with one resampling unit: the fixture's Abg-CoQA test turns), and
    lm-eval combines the leaves' into each group's (its own ``unweighted_mean_stderr``: a
    number when every leaf has one, see tests/ambignq/test_e2e.py); after the table, one
    line per non-null headline and one per group with a suite_score."""
    from lm_eval.api.metrics import unweighted_mean_stderr

    results, lines = suite_run["results"], suite_run["stderr (test)"].splitlines()
    for task, (name, options) in LEAVES.items():
        benchmark = registry.get(name)
        headline = headline_metric(benchmark, benchmark.options(options), judged=False)
        one_unit = lm_eval_results.unit_count(benchmark, benchmark.options(options)) < 2
        for metric in (headline, SUITE_SCORE):
            value, stderr = results[task][f"{metric},none"], results[task][f"{metric}_stderr,none"]
            if _same(value, None) or one_unit:  # no spread to estimate
                assert stderr == "N/A", (task, metric, stderr)
            else:
                assert isinstance(stderr, float), (task, metric, stderr)
        if not _same(results[task][f"{headline},none"], None):
            assert lm_eval_results.headline_line(suite_run, task) in lines, task
    for group, leaves in (("abg_coqa", [leaf for leaf in LEAVES if leaf.startswith("abg")]),
                          ("condambig", list(LEAVES))):
        stderrs = [results[leaf][f"{SUITE_SCORE}_stderr,none"] for leaf in leaves]
        stderr = results[group][f"{SUITE_SCORE}_stderr,none"]
        if "N/A" in stderrs:
            assert stderr == "N/A", group
            continue
        assert stderr == pytest.approx(unweighted_mean_stderr(stderrs)), group
        assert lm_eval_results.group_line(suite_run, group, leaves) in lines, group


@pytest.mark.e2e
def test_lm_eval_results_carry_the_provenance_block(suite_run, tiny_t5):
    for task, (name, options) in LEAVES.items():
        provenance = suite_run["configs"][task]["metadata"]["provenance"]
        benchmark = registry.get(name)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
            items, _, _ = load_records_with_provenance(benchmark, benchmark.options(options))
        assert provenance["benchmark"] == name and provenance["task_version"] == benchmark.version
        assert provenance["data"]["records"] == len(items), task
        assert provenance["data"]["records_sha256"] == records_sha256(benchmark, items), task
        assert provenance["data"]["sources"] and all(
            source["kind"] == "file" and len(source["sha256"]) == 64
            for source in provenance["data"]["sources"]), task
        assert provenance["judge"] is None
    models = suite_run["configs"]["hotpot_flm"]["metadata"]["provenance"]["models"]
    assert models["answering_agent"] == str(tiny_t5) == models["downstream_model"]


# ---------------------------------------------------------------------- condambig-score


def test_condambig_score_prints_the_provenance_block(tmp_path, monkeypatch, capsys):
    from condambig_tasks.cli import main

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    questions = json.loads((FIXTURE_DATA / "ambignq" / "dev_light.json").read_text())
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": q["id"], "output": "Q: ? A: x"} for q in questions]))
    assert main(["ambignq", "--outputs", str(outputs)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert list(report["metrics"])[0] == "f1_answer_all"
    benchmark = registry.get("ambignq")
    _, _, expected = load_records_with_provenance(benchmark, benchmark.options({}))
    expected["outputs_sha256"] = outputs_sha256((q["id"], "Q: ? A: x") for q in questions)
    expected["scoring_sha256"] = scoring_sha256("ambignq", benchmark.version,
                                                expected["options"], expected["outputs_sha256"])
    assert report["provenance"] == expected


# ---------------------------------------------------------------------- Inspect


def _inspect(task: str, tmp_path: Path, env: dict[str, str], *arguments: str,
             ok: bool = True) -> subprocess.CompletedProcess:
    return _run([executable("inspect"), "eval", task, "--model", "openai-api/loopback/subject",
                 "--log-dir", str(tmp_path / "logs"), "--log-format", "json",
                 "--display", "none", "--max-retries", "1", *arguments], env, tmp_path, ok=ok)


def _only_log(tmp_path: Path) -> dict:
    [log_file] = sorted((tmp_path / "logs").glob("*.json"))
    return json.loads(log_file.read_text())


@pytest.fixture
def subject_server():
    with JudgeServer({"default": {"reply": "Which boat do you mean?"}}) as server:
        yield server


@pytest.mark.e2e
def test_inspect_failing_judge_leaves_judge_metrics_unscored_and_counted(
        tmp_path, subject_server):
    """Every judge request fails (HTTP 400; the grader answers the check before
    generation): each sample keeps its judge-free numbers, its judge metrics are NaN
    (Inspect's unscored sentinel) with reason grader_failed and the failed prompts in its
    metadata, judge_failed counts them, and the log says why the judge metrics are NaN."""
    with JudgeServer({"faults": [{"kind": "400", "contains": "ACTUAL OUTPUT"}]}) as grader:
        env = _env(tmp_path, LOOPBACK_BASE_URL=subject_server.base_url,
                   LOOPBACK_API_KEY="test-key", BADJUDGE_BASE_URL=grader.base_url,
                   BADJUDGE_API_KEY="test-key")
        _inspect("condambig/abg_coqa", tmp_path, env, "-T", "subtask=clarification",
                 "--model-role", "grader=openai-api/badjudge/judge")
        assert grader.stats()["requests"] >= 1
    log = _only_log(tmp_path)
    assert log["status"] == "success"
    samples = log["samples"]
    assert samples
    for sample in samples:
        [score] = sample["scores"].values()
        assert score["reason"] == "grader_failed"
        assert math.isnan(score["value"]["judge_helpfulness"])
        assert score["value"]["judge_failed"] == 1.0
        assert score["value"]["parse_rate"] == 1.0
        calls = score["metadata"]["judge_calls"]
        assert calls and all(call["failed"] and call["prompt"] for call in calls)
    metrics = {name: value["value"]
               for name, value in log["results"]["scores"][0]["metrics"].items()}
    assert metrics["judge_failed"] == len(samples)
    assert math.isnan(metrics["judge_helpfulness"])
    reasons = log["results"]["scores"][0]["metadata"]["null_reasons"]
    assert f"{len(samples)} judgement(s) failed" in reasons["judge_helpfulness"]
    assert list(metrics)[0] == "bleu4"  # the headline
    assert log["eval"]["headline_metric"]["metric"] == "bleu4"
    provenance = log["eval"]["metadata"]["provenance"]
    assert provenance["judge"] == "openai-api/badjudge/judge"
    assert provenance["data"]["records"] == len(samples)


@pytest.mark.e2e
def test_inspect_grader_bound_to_two_models_is_refused_in_one_line(tmp_path, subject_server):
    env = _env(tmp_path, LOOPBACK_BASE_URL=subject_server.base_url, LOOPBACK_API_KEY="test-key")
    result = _inspect("condambig/abg_coqa", tmp_path, env, "-T", "subtask=clarification",
                      "--model-role",
                      "grader=openai-api/loopback/judge_a,openai-api/loopback/judge_b",
                      ok=False)
    assert result.returncode != 0
    assert "condambig: abg_coqa: the grader role is bound to 2 models" in result.stderr
    assert "Traceback" not in result.stderr
    assert subject_server.stats()["requests"] == 0  # refused before any generation
