"""The real ``inspect eval condambig/condambigqa`` against graders that fail.

The model under evaluation and the grader are two loopback servers
(``openai-api/subject/...``, ``openai-api/grader/...``), so the test counts what each
received: a grader that cannot be used must end the run before any generation, and
failed judgements must withhold the judged metrics with their reasons in the log.
"""

from __future__ import annotations

import glob
import json
import socket
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.connections import count_connections, counting_environment
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

SUBJECT_REPLY = json.dumps({"conditions": [
    {"condition": "The question asks about 2019.", "answer": "Ben Runner", "citations": ["1"]}]})
PREFLIGHT_TEXT = "connection check"  # metrics/judge/preflight.py's request


@pytest.fixture
def subject():
    with JudgeServer({"default": {"reply": SUBJECT_REPLY}}) as server:
        yield server


def run_inspect(tmp_path: Path, subject: JudgeServer, grader_url: str, *task_args: str,
                counted_port: int | None = None,
                data: Path = FIXTURE_DATA) -> tuple[subprocess.CompletedProcess, int]:
    """The run, and (with ``counted_port``) its connection attempts to that port."""
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(data),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                         SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k",
                         GRADER_BASE_URL=grader_url, GRADER_API_KEY="grader-key")
    attempts = None
    if counted_port is not None:
        env, attempts = counting_environment(tmp_path / "counting", counted_port, env)
    command = [executable("inspect"), "eval", "condambig/condambigqa",
               "--model", "openai-api/subject/m", "--model-role", "grader=openai-api/grader/j",
               "--log-dir", str(tmp_path / "logs"), "--display", "plain", *task_args]
    completed = warm_start.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                               timeout=600)
    return completed, 0 if attempts is None else attempts()


def only_log(tmp_path: Path):
    from inspect_ai.log import read_eval_log

    [path] = glob.glob(f"{tmp_path}/logs/*.eval")
    return read_eval_log(path)


def judge_prompts(server: JudgeServer) -> list[str]:
    return [prompt for prompt in server.stats(with_prompts=True)["prompts"]
            if PREFLIGHT_TEXT not in prompt]


def test_a_grader_refusing_the_key_ends_the_run_before_generation(tmp_path, subject):
    with JudgeServer({"require_api_key": "another-key"}) as grader:
        completed, _ = run_inspect(tmp_path, subject, grader.base_url)
        assert grader.stats()["requests"] == 1
    assert completed.returncode != 0
    assert subject.stats()["requests"] == 0
    lines = [line for line in completed.stderr.splitlines() if line.startswith("condambig:")]
    assert len(lines) == 1, completed.stderr[-3000:]
    assert "openai-api/grader/j" in lines[0] and grader.base_url in lines[0]
    assert "401" in lines[0] and "GRADER_API_KEY" in lines[0]
    assert "Traceback" not in completed.stderr
    assert not glob.glob(f"{tmp_path}/logs/*.eval")


def check_connections(url: str, port: int, monkeypatch) -> tuple[int, int]:
    """The check's attempts against the grader (``check_attempts``) and the connections one
    attempt makes to a dead ``url`` (the provider client's own tries: Inspect's openai
    client and its SDK retries), counted here in process."""
    import asyncio

    from inspect_ai.model import get_model

    from condambig.grader_preflight import ProviderCheck
    from condambig_metrics.judge.preflight import check_attempts

    connections = count_connections(monkeypatch, port)
    check = ProviderCheck(get_model("openai-api/grader/j", base_url=url, api_key="k",
                                    memoize=False))
    with pytest.raises(Exception, match="Connection error"):
        asyncio.run(check.check("connection check"))
    return check_attempts(check), len(connections)


def test_a_dead_grader_url_ends_the_run_at_once(tmp_path, subject, monkeypatch):
    """Fast: the run makes the check's attempts and no more connections; Inspect's own
    retries (minutes of them) never start."""
    with socket.socket() as probe:  # a port nobody listens on (bound: nobody gets it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        dead = f"http://127.0.0.1:{port}/v1"
        completed, attempts = run_inspect(tmp_path, subject, dead, counted_port=port)
        check_attempts, per_attempt = check_connections(dead, port, monkeypatch)
    assert completed.returncode != 0
    assert subject.stats()["requests"] == 0
    assert f"condambig: the judge --model-role grader=openai-api/grader/j at {dead} " \
        "cannot be reached" in completed.stderr
    assert attempts == check_attempts * per_attempt, (attempts, check_attempts, per_attempt)


def test_a_grader_refusing_every_judgement_ends_the_task_as_an_error(tmp_path, subject):
    # the check request passes; every judge prompt gets 403
    script = {"faults": [{"kind": "403", "contains": "EXPECTED OUTPUT"}]}
    with JudgeServer(script) as grader:
        completed, _ = run_inspect(tmp_path, subject, grader.base_url, "--limit", "1")
    log = only_log(tmp_path)
    assert log.status == "error", completed.stderr[-3000:]
    assert "the grader refuses every request" in log.error.message
    assert "403" in log.error.message
    # after Inspect's error, one line to act on, with the log's path in its command
    lines = [line for line in completed.stderr.splitlines()
             if "[condambig] condambigqa: the grader refuses every request" in line]
    assert len(lines) == 1, completed.stderr[-3000:]
    assert f"run `inspect eval-retry {log.location}`" in lines[0]


def test_failed_judgements_withhold_the_judged_metrics_and_a_rerun_sends_only_those(
        tmp_path, subject):
    # fx-003's gold conditions mention 1872: its judgements fail, the others succeed
    script = {"faults": [{"kind": "400", "contains": "1872"}]}
    with JudgeServer(script) as grader:
        completed, _ = run_inspect(tmp_path, subject, grader.base_url)
        first = judge_prompts(grader)
        log = only_log(tmp_path)
        metrics = {name: m.value for name, m in log.results.scores[0].metrics.items()}
        reasons = log.results.scores[0].metadata["null_reasons"]
        failed = sum(1 for prompt in first if "1872" in prompt)
        assert 0 < failed < len(first)
        for name in ("combined_score", "condition_score", "answer_score", "suite_score"):
            assert metrics[name] != metrics[name]  # NaN
            assert f"{failed} judgement(s) failed (judge_max_failed=0)" in reasons[name]
        assert metrics["citation_score"] == 1.0 and "citation_score" not in reasons
        assert f"condambig/condambigqa: combined_score is NaN: {failed} judgement(s) failed" \
            in completed.stderr
        assert "condambig-score condambigqa --from-log " + log.location in completed.stderr
        assert "condambig-inspect-score " + log.location in completed.stderr

        # the same run again, allowing that many failures: the judgements made are
        # served from the cache, only the failed ones are sent again
        grader.reset()
        (Path(log.location)).rename(tmp_path / "first.eval")
        completed, _ = run_inspect(tmp_path, subject, grader.base_url,
                                   "-T", f"judge_max_failed={failed}")
        again = judge_prompts(grader)
    assert sorted(again) == sorted(prompt for prompt in first if "1872" in prompt)
    log = only_log(tmp_path)
    metrics = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    assert metrics["combined_score"] == metrics["combined_score"]  # a number
    assert not (log.results.scores[0].metadata or {}).get("null_reasons")
    assert "is NaN" not in completed.stderr


def test_an_unusable_judge_cache_ends_the_run_before_generation(tmp_path, subject):
    (tmp_path / "cache" / "judge.sqlite").mkdir(parents=True)  # a folder where the file goes
    with JudgeServer({}) as grader:
        completed, _ = run_inspect(tmp_path, subject, grader.base_url)
    assert completed.returncode != 0
    assert subject.stats()["requests"] == 0
    lines = [line for line in completed.stderr.splitlines() if line.startswith("condambig:")]
    assert len(lines) == 1 and str(tmp_path / "cache" / "judge.sqlite") in lines[0], \
        completed.stderr[-3000:]
    assert "Traceback" not in completed.stderr
