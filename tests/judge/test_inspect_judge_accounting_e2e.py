"""The real ``inspect eval condambig/condambigqa``: every failed judgement is counted
whatever Inspect does with the sample (several epochs, samples in error that Inspect is
told to tolerate), and the judge cache is the one ``CONDAMBIG_JUDGE_CACHE`` names.

The model under evaluation and the grader are two loopback servers, so the test counts
what each received.
"""

from __future__ import annotations

import glob
import json
import math
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

PREFLIGHT_TEXT = "connection check"  # metrics/judge/preflight.py's request
# the questions of the fixture file a run reads (--limit) where more would only cost CPU;
# the third, fx-003, is the one whose gold conditions mention 1872
LIMIT = 3


def reply(answer: str) -> str:
    return json.dumps({"conditions": [
        {"condition": "The question asks about 2019.", "answer": answer, "citations": ["1"]}]})


def run_inspect(tmp_path: Path, subject: JudgeServer, grader: JudgeServer, *args: str,
                **env: str) -> subprocess.CompletedProcess:
    environment = subprocess_env(
        CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
        SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k",
        GRADER_BASE_URL=grader.base_url, GRADER_API_KEY="grader-key", **env)
    command = [executable("inspect"), "eval", "condambig/condambigqa",
               "--model", "openai-api/subject/m", "--model-role", "grader=openai-api/grader/j",
               "--log-dir", str(tmp_path / "logs"), "--display", "plain", *args]
    return warm_start.run(command, env=environment, cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)


def logs(tmp_path: Path) -> list:
    from inspect_ai.log import read_eval_log

    return [read_eval_log(path) for path in sorted(glob.glob(f"{tmp_path}/logs/*.eval"))]


def metrics_of(log) -> dict[str, float]:
    return {name: m.value for name, m in log.results.scores[0].metrics.items()}


def judge_prompts(server: JudgeServer) -> list[str]:
    return [prompt for prompt in server.stats(with_prompts=True)["prompts"]
            if PREFLIGHT_TEXT not in prompt]


@pytest.mark.parametrize("reducer", [[], ["--epochs-reducer", "mean"]])
def test_failed_judgements_in_a_later_epoch_are_counted(tmp_path, reducer):
    # one sample at a time: the first epoch's outputs are judged, the second epoch's
    # (another answer) are refused with HTTP 400; Inspect's own reducer keeps the first
    # epoch's details, the task's own keeps every epoch's. The first LIMIT questions: each
    # sample of an epoch costs CPU and the counts need no more
    subject_script = {"default": {"reply": reply("Ben Runner")},
                      "rules": [{"after_requests": LIMIT, "reply": reply("Zed Walker")}]}
    with JudgeServer(subject_script) as subject, \
            JudgeServer({"faults": [{"kind": "400", "contains": "Zed Walker"}]}) as grader:
        completed = run_inspect(tmp_path, subject, grader, "--epochs", "2",
                                "--max-samples", "1", "--limit", str(LIMIT), *reducer)
        failed = sum("Zed Walker" in prompt for prompt in judge_prompts(grader))
    assert subject.stats()["requests"] == 2 * LIMIT
    assert failed > 0
    [log] = logs(tmp_path)
    metrics = metrics_of(log)
    reasons = log.results.scores[0].metadata["null_reasons"]
    if not reducer:
        assert metrics["judge_failed"] == LIMIT  # each question, in epoch 2
    for name in ("combined_score", "answer_score", "suite_score"):
        assert math.isnan(metrics[name]), (name, completed.stderr[-3000:])
        assert f"{failed} judgement(s) failed (judge_max_failed=0)" in reasons[name]
    assert f"combined_score is NaN: {failed} judgement(s) failed" in completed.stderr


@pytest.mark.parametrize("tolerance", [["--no-fail-on-error"], ["--fail-on-error", "5"]])
def test_samples_in_error_because_of_the_grader_count_as_failed_judgements(tmp_path,
                                                                           tolerance):
    # fx-003's gold conditions mention 1872: the grader refuses its judge requests (403),
    # which ends that sample in error; Inspect is told to go on without it. The first three
    # questions only: after a refusal the grader is taken to refuse every request, so each
    # later sample would end in error too
    with JudgeServer({"default": {"reply": reply("Ben Runner")}}) as subject, \
            JudgeServer({"faults": [{"kind": "403", "contains": "1872"}]}) as grader:
        completed = run_inspect(tmp_path, subject, grader, "--max-samples", "1", "--limit",
                                str(LIMIT), *tolerance)
    [log] = logs(tmp_path)
    assert any(sample.error for sample in log.samples), completed.stderr[-3000:]
    metrics = metrics_of(log)
    reasons = (log.results.scores[0].metadata or {}).get("null_reasons") or {}
    for name in ("combined_score", "suite_score"):
        assert math.isnan(metrics[name]), (name, metrics, completed.stderr[-3000:])
        assert "judgement(s) failed (judge_max_failed=0)" in reasons[name]
    assert "condambig/condambigqa: combined_score is NaN" in completed.stderr


def test_the_judge_cache_is_the_file_condambig_judge_cache_names_or_none(tmp_path):
    chosen = tmp_path / "elsewhere" / "judge.sqlite"
    chosen.parent.mkdir()
    with JudgeServer({"default": {"reply": reply("Ben Runner")}}) as subject, \
            JudgeServer({}) as grader:
        run_inspect(tmp_path, subject, grader, CONDAMBIG_JUDGE_CACHE=str(chosen))
        first = len(judge_prompts(grader))
        assert first > 0 and chosen.is_file()
        assert not (tmp_path / "cache" / "judge.sqlite").exists()
        run_inspect(tmp_path, subject, grader, CONDAMBIG_JUDGE_CACHE=str(chosen))
        assert len(judge_prompts(grader)) == first  # all from the chosen file
        run_inspect(tmp_path, subject, grader, CONDAMBIG_JUDGE_CACHE="off")
        assert len(judge_prompts(grader)) == 2 * first  # no cache: every one sent again
    assert not (tmp_path / "cache" / "judge.sqlite").exists()
    assert all(log.status == "success" for log in logs(tmp_path))
