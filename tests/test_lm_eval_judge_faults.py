"""lm-eval under judge faults: a judge that cannot be used ends the run before any
generation; a judge that fails after generation loses nothing (results and samples are
written, the judged metrics are null with the reason and the command that finishes the
judging); ``judge_max_failed`` withholds a judged mean over too few judgements; a key given
in ``--metadata`` is written nowhere.

The model under evaluation is a loopback chat-completions server (so the test sees whether
any generation request reached it), the judge another one whose faults the test scripts.
Tests whose checks fit one run read that run (``failed_judgements``): each lm-eval start
costs seconds of CPU.
"""

from __future__ import annotations

import glob
import json
import math
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

SUBJECT_REPLY = json.dumps({"conditions": [
    {"condition": "The question asks about the men's race in 2019.",
     "answer": "Ben Runner won the men's race in 2019.", "citations": [1]},
    {"condition": "Women's race", "answer": "Ana Runner", "citations": [2]},
]})
HEALTHY = {"rules": [{"contains": "Ana Runner", "scores": {"6": 0.25, "7": 0.75}}],
           "default": {"scores": {"8": 1.0}}}
JUDGE_PROMPT_TEXT = "ACTUAL OUTPUT"  # in every judgement prompt, not in the preflight check
SECRET = "sk-condambig-test-secret-4711"
SCOPED_SECRET = "sk-condambig-scoped-secret-0815"


@pytest.fixture(scope="module")
def subject():
    """The model under evaluation: one fixed CondAmbigQA answer to every prompt."""
    with JudgeServer({"default": {"reply": SUBJECT_REPLY}}) as server:
        yield server


@pytest.fixture
def judge():
    with JudgeServer(HEALTHY) as server:
        yield server


def _env(tmp_path: Path, judge_url: str, key: str = "test-key") -> dict[str, str]:
    return subprocess_env(
        CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
        OPENAI_API_KEY="subject-key", CONDAMBIG_JUDGE_MODEL="loopback-judge",
        CONDAMBIG_JUDGE_BASE_URL=judge_url, CONDAMBIG_JUDGE_API_KEY=key,
        CONDAMBIG_JUDGE_MAX_RETRIES="0")


@pytest.fixture(scope="module")
def failed_judgements(subject, tmp_path_factory):
    """One run whose judgements of one question fail (HTTP 400, its prompts only; the error
    quotes the Authorization header, the key ``SECRET`` from the environment) while the
    others succeed, given a key scoped to the benchmark in --metadata (``SCOPED_SECRET``):
    ``(result, out, judge stats)``."""
    root = tmp_path_factory.mktemp("failed_judgements")
    script = {**HEALTHY, "faults": [{"kind": "400", "echo_key": True,
                                     "contains": "When did the bridge open?"}]}
    metadata = json.dumps({"condambigqa": {"judge_api_key": SCOPED_SECRET,
                                           "max_conditions": 5}})
    with JudgeServer(script) as judge:
        out = root / "out"
        result = _lm_eval(subject, out, _env(root, judge.base_url, key=SECRET),
                          "--metadata", metadata)
        return result, out, judge.stats()


def _lm_eval(subject: JudgeServer, out: Path, env: dict[str, str],
             *extra: str) -> subprocess.CompletedProcess:
    subject.reset()
    return warm_start.run(
        [executable("lm_eval"), "--model", "local-chat-completions", "--apply_chat_template",
         "--model_args", f"model=subject,base_url={subject.base_url}/chat/completions,"
         "tokenizer_backend=None", "--tasks", "condambigqa", "--limit", "3",
         "--output_path", str(out), "--log_samples", *extra],
        env=env, cwd=out.parent, capture_output=True, text=True, timeout=600)


def _written(out: Path) -> tuple[dict, list[dict]]:
    [results] = glob.glob(f"{out}/**/results_*.json", recursive=True)
    [samples] = glob.glob(f"{out}/**/samples_condambigqa_*.jsonl", recursive=True)
    rows = [json.loads(line) for line in Path(samples).read_text().splitlines()]
    return json.loads(Path(results).read_text()), rows


@pytest.mark.parametrize("fault, advised, not_advised", [
    ("closed port", ["CONDAMBIG_JUDGE_BASE_URL"],
     ["CONDAMBIG_JUDGE_API_KEY", "CONDAMBIG_JUDGE_MODEL"]),
    ("401", ["CONDAMBIG_JUDGE_API_KEY"], ["CONDAMBIG_JUDGE_BASE_URL", "CONDAMBIG_JUDGE_MODEL"]),
    ("unknown model", ["CONDAMBIG_JUDGE_MODEL", "CONDAMBIG_JUDGE_BASE_URL"],
     ["CONDAMBIG_JUDGE_API_KEY"]),
])
def test_a_judge_that_cannot_be_used_ends_the_run_before_any_generation(
        fault, advised, not_advised, subject, judge, tmp_path, closed_port):
    if fault == "closed port":
        url = f"http://127.0.0.1:{closed_port}/v1"
        env = _env(tmp_path, url)
    elif fault == "401":
        judge.set_script({**HEALTHY, "require_api_key": "the-right-key"})
        url, env = judge.base_url, _env(tmp_path, judge.base_url, key="a-wrong-key")
    else:
        judge.set_script({"faults": [{"kind": "404", "code": "model_not_found"}]})
        url, env = judge.base_url, _env(tmp_path, judge.base_url)
    result = _lm_eval(subject, tmp_path / "out", env)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("condambig: ")]
    assert len(lines) == 1, result.stderr[-3000:]
    assert url in lines[0] and "loopback-judge" in lines[0] and "before any generation" in lines[0]
    # the settings that fit the cause, each named once (the endpoint's own advice is not
    # repeated beside them)
    assert all(lines[0].count(variable) == 1 for variable in advised), lines[0]
    assert not any(variable in lines[0] for variable in not_advised), lines[0]
    assert "What to do" not in lines[0]
    if fault != "closed port":
        assert f"HTTP {401 if fault == '401' else 404}" in lines[0]
    assert "Traceback" not in result.stderr
    assert subject.stats()["requests"] == 0  # nothing was generated
    assert not glob.glob(f"{tmp_path}/out/**/samples_*.jsonl", recursive=True)


def _null_line(stderr: str, task: str, metric: str) -> str:
    found = [line for line in stderr.splitlines()
             if line.startswith(f"condambig: {task}: {metric} is null: ")]
    assert len(found) == 1, stderr[-4000:]
    return found[0]


def test_a_judge_failing_after_generation_keeps_the_run_and_says_how_to_finish(
        subject, judge, tmp_path):
    # the preflight passes; every judgement then gets HTTP 401 (the endpoint "died")
    judge.set_script({**HEALTHY, "faults": [{"kind": "401", "contains": JUDGE_PROMPT_TEXT}]})
    env = _env(tmp_path, judge.base_url)
    out = tmp_path / "out"
    result = _lm_eval(subject, out, env)
    assert result.returncode != 0, result.stderr[-3000:]  # the judged numbers are missing
    results, samples = _written(out)  # ... but lm-eval wrote its results and samples
    assert len(samples) == 3 and subject.stats()["requests"] == 3
    task = results["results"]["condambigqa"]
    assert math.isnan(task["combined_score,none"]) and math.isnan(task["suite_score,none"])
    assert task["citation_score,none"] == pytest.approx(task["citation_score,none"])  # a number
    metadata = results["configs"]["condambigqa"]["metadata"]
    assert "the judge endpoint failed" in metadata["null_reasons"]["combined_score"]
    assert metadata["provenance"]["judge"] == "loopback-judge"
    assert metadata["provenance"]["judge_base_url"] == judge.base_url
    # after lm-eval's table: the reason, with the command that finishes the judging
    assert result.stdout.count("combined_score") >= 1
    line = _null_line(result.stderr, "condambigqa", "combined_score")
    [command] = re.findall(r"`([^`]+)`", line)
    assert f"--from-log {out}" in command and "--task condambigqa" in command
    # the advice names the settings as lm-eval users give them (the key's two variables)
    assert "Check the key in CONDAMBIG_JUDGE_API_KEY (or OPENAI_API_KEY)" in line, line

    judge.set_script(HEALTHY)  # the endpoint is back
    words = shlex.split(command)
    assignments = dict(word.split("=", 1) for word in words if re.match(r"^[A-Z_]+=", word))
    argv = [word for word in words if word.split("=", 1)[0] not in assignments]
    assert argv[0] == "condambig-score"
    finished = warm_start.run(
        [executable("condambig-score"), *argv[1:]], capture_output=True, text=True,
        timeout=600, cwd=tmp_path,
        env={**subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                              CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                              CONDAMBIG_JUDGE_API_KEY="test-key"), **assignments})
    assert finished.returncode == 0, finished.stderr[-3000:]
    metrics = json.loads(finished.stdout)["metrics"]
    assert metrics["judge_failed"] == 0 and metrics["combined_score"] is not None
    assert metrics["citation_score"] == pytest.approx(task["citation_score,none"])


def test_judge_max_failed_withholds_a_judged_mean_over_too_few_judgements(
        failed_judgements, subject, judge, tmp_path):
    # the judgements of one question fail (HTTP 400, its prompts only); the others succeed
    strict, out, _ = failed_judgements
    assert strict.returncode != 0, strict.stderr[-3000:]
    results, _ = _written(out)
    task = results["results"]["condambigqa"]
    assert task["judge_failed,none"] > 0 and math.isnan(task["combined_score,none"])
    line = _null_line(strict.stderr, "condambigqa", "combined_score")
    assert "judgement(s) failed (judge_max_failed=0)" in line and "--from-log" in line
    assert "only the missing judgements are sent" in line

    # allowed: the numbers, exit 0; the key given in --metadata is written nowhere
    judge.set_script({**HEALTHY, "faults": [{"kind": "400",
                                             "contains": "When did the bridge open?"}]})
    env = _env(tmp_path, judge.base_url)
    metadata = json.dumps({"judge_max_failed": 1000, "judge_api_key": SECRET})
    tolerant = _lm_eval(subject, tmp_path / "tolerant", env, "--metadata", metadata)
    assert tolerant.returncode == 0, tolerant.stderr[-3000:]
    results, _ = _written(tmp_path / "tolerant")
    task = results["results"]["condambigqa"]
    assert task["judge_failed,none"] > 0 and not math.isnan(task["combined_score,none"])
    assert "judge_api_key is ignored" in tolerant.stderr
    for path in (tmp_path / "tolerant").rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_an_unusable_judge_cache_ends_the_run_before_any_generation(subject, judge, tmp_path):
    """The cache opens in the aggregation step, after generation: it is opened once before."""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    env = {**_env(tmp_path, judge.base_url), "CONDAMBIG_JUDGE_CACHE": str(folder)}
    result = _lm_eval(subject, tmp_path / "out", env)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("condambig: ")]
    assert len(lines) == 1 and str(folder) in lines[0], result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    assert subject.stats()["requests"] == 0


def test_a_judge_key_scoped_to_the_benchmark_in_metadata_is_written_nowhere(
        failed_judgements):
    """``{"condambigqa": {"judge_api_key": ...}}`` was written to the results'
    ``configs.condambigqa.metadata.condambigqa.judge_api_key``. (The shared run withholds a
    judged mean, but writes its results and samples: they are what is searched.)"""
    run, out, _ = failed_judgements
    results, samples = _written(out)
    assert len(samples) == 3
    assert results["configs"]["condambigqa"]["metadata"]["condambigqa"] == {"max_conditions": 5}
    assert "judge_api_key is ignored" in run.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert SCOPED_SECRET not in path.read_text(errors="replace"), path


def test_a_key_an_endpoint_echoes_in_its_errors_is_written_nowhere(failed_judgements):
    """Judge error bodies are copied into null_reasons, logs and samples: one that quotes
    the Authorization header ("Incorrect API key provided: Bearer sk-...") is redacted."""
    run, out, judge_stats = failed_judgements
    assert run.returncode != 0 and judge_stats["outcomes"].get("400", 0) > 0
    assert "Bearer [redacted]" in run.stderr
    assert SECRET not in run.stdout + run.stderr
    for path in out.rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_a_withheld_judged_metric_beside_a_judge_free_headline_is_said(subject, judge, tmp_path):
    """Abg-CoQA's clarification headline is BLEU (judge-free): when its judged metric is
    withheld the run still exits non-zero, and a line after the table says why."""
    judge.set_script({**HEALTHY, "faults": [{"kind": "400",
                                             "contains": "Clarification Helpfulness"}]})
    out = tmp_path / "out"
    subject.reset()
    result = warm_start.run(
        [executable("lm_eval"), "--model", "local-chat-completions", "--apply_chat_template",
         "--model_args", f"model=subject,base_url={subject.base_url}/chat/completions,"
         "tokenizer_backend=None", "--tasks", "abg_coqa_clarification", "--limit", "2",
         "--output_path", str(out), "--log_samples"],
        env=_env(tmp_path, judge.base_url), cwd=tmp_path, capture_output=True, text=True,
        timeout=600)
    assert result.returncode == 1, result.stderr[-3000:]
    [results] = glob.glob(f"{out}/**/results_*.json", recursive=True)
    task = json.loads(Path(results).read_text())["results"]["abg_coqa_clarification"]
    assert math.isnan(task["judge_helpfulness,none"]) and not math.isnan(task["bleu4,none"])
    line = _null_line(result.stderr, "abg_coqa_clarification", "judge_helpfulness")
    assert "judgement(s) failed (judge_max_failed=0)" in line and "--from-log" in line
