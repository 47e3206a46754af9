"""The real ``inspect eval`` with an ``openai-api/<service>/<model>`` grader on the loopback server."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.support import warm_start

REPO = Path(__file__).resolve().parents[2]
TASK = "tests/judge/grader_probe_task.py"  # relative: Inspect globs task paths from the cwd
SCRIPT = {"rules": [
    {"contains": "EXPECTED OUTPUT:\n<<<\nParis", "scores": {"7": 0.6, "8": 0.3, "seven": 0.1},
     "reason": "france judged"},
    {"contains": "EXPECTED OUTPUT:\n<<<\nRome", "scores": {"2": 0.5, "4": 0.5}},
]}


def run_inspect(server_url: str, tmp_path: Path, grader: bool) -> dict:
    environment = {**os.environ, "LOOPBACK_BASE_URL": server_url, "LOOPBACK_API_KEY": "test-key",
                   "CONDAMBIG_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "inspect_ai", "eval", TASK,
               "--model", "openai-api/loopback/subject", "--log-dir", str(tmp_path / "logs"),
               "--log-format", "json", "--display", "none", "--max-retries", "2"]
    if grader:
        command += ["--model-role", "grader=openai-api/loopback/judge"]
    completed = warm_start.run(command, cwd=REPO, env=environment, capture_output=True,
                               text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr[-3000:]
    [log_file] = sorted((tmp_path / "logs").glob("*.json"))
    return json.loads(log_file.read_text())


def sample_scores(log: dict) -> dict[str, dict]:
    return {sample["id"]: next(iter(sample["scores"].values())) for sample in log["samples"]}


@pytest.mark.e2e
def test_inspect_grader_role_talks_to_the_loopback_judge_with_logprobs(
    judge_server, tmp_path: Path
) -> None:
    server = judge_server(SCRIPT)
    log = run_inspect(server.base_url, tmp_path, grader=True)
    assert log["status"] == "success"
    scores = sample_scores(log)
    assert scores["france"]["metadata"]["weighted"] is True
    assert scores["france"]["metadata"]["raw_score"] == pytest.approx((0.6 * 7 + 0.3 * 8) / 0.9)
    assert scores["france"]["value"] == pytest.approx(6.6 / 9)  # raw score / 10
    assert scores["france"]["explanation"] == "france judged"
    assert scores["italy"]["value"] == pytest.approx(0.3)
    assert scores["france"]["metadata"]["grader"] == "openai-api/loopback/judge"
    assert server.stats()["requests"] == 4  # two answers + two judgements
    # judgements went to the default cache under CONDAMBIG_CACHE_DIR
    assert (tmp_path / "cache" / "judge.sqlite").is_file()


@pytest.mark.e2e
def test_without_grader_role_no_judge_is_used(judge_server, tmp_path: Path) -> None:
    server = judge_server(SCRIPT)
    log = run_inspect(server.base_url, tmp_path, grader=False)
    scores = sample_scores(log)
    assert {score["explanation"] for score in scores.values()} == {"no grader role"}
    assert server.stats()["requests"] == 2
