"""Ctrl-C / SIGTERM in ``condambig-score``: one line, exit 130 within 2 s, and a rerun resumes.

A real ``condambig-score`` process is signalled part-way through a slow loopback judge
(CondAmbigQA, one judgement at a time). The rerun must ask the judge only for what the
interrupted run did not cache and give the numbers of a run never interrupted. (HotpotQA-FLM's
agent step: tests/hotpot_flm/test_interrupt_resume.py.)
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
from pathlib import Path

import pytest

from condambig_metrics.judge.preflight import PREFLIGHT_PROMPT
from condambig_tasks import interrupts
from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support.interrupting import assert_clean_stop, interrupt, sqlite_rows
from tests.support.judge_server import JudgeServer

CONDAMBIGQA_OUTPUT = json.dumps({"conditions": [
    {"condition": "The question asks about the men's race.", "answer": "Ben Runner",
     "citations": ["1"]},
    {"condition": "Women's race", "answer": "Ana Runner", "citations": ["2"]},
]})
JUDGE_SCRIPT = {"rules": [{"contains": "Ben Runner", "scores": {"8": 0.5, "9": 0.5}}],
                "default": {"scores": {"3": 0.25, "4": 0.75}}}


def test_sigterm_cancels_an_asyncio_run_as_ctrl_c_does():
    """SIGTERM reaches the run as a cancellation (clean-up runs), then KeyboardInterrupt."""
    cleaned_up = []

    async def long_run() -> None:
        try:
            await asyncio.sleep(30)
        finally:
            cleaned_up.append(True)

    timer = threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM))
    with interrupts.sigterm_as_sigint():
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            asyncio.run(long_run())
    assert cleaned_up == [True]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def judgement_prompts(server: JudgeServer) -> list[str]:
    """The judge prompts the server received, less the endpoint check before the first one."""
    return [prompt for prompt in server.stats(with_prompts=True)["prompts"]
            if prompt != PREFLIGHT_PROMPT]


@pytest.fixture(scope="module")
def slow_judge():
    # slow enough that a loaded machine still signals mid-run (28 judgements, one at a time)
    with JudgeServer({**JUDGE_SCRIPT, "latency_ms": 400}) as server:
        yield server


@pytest.mark.e2e
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_judged_run_stops_at_once_and_the_rerun_asks_only_for_the_rest(slow_judge, tmp_path,
                                                                        signum):
    items = json.loads((FIXTURE_DATA / "condambigqa" / "condambigqa_fixture.json").read_text())
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": item["id"], "output": CONDAMBIGQA_OUTPUT}
                                   for item in items]))
    command = [executable("condambig-score"), "condambigqa", "--outputs", str(outputs)]

    def env(cache: Path, concurrency: int) -> dict[str, str]:
        return subprocess_env(
            CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
            CONDAMBIG_JUDGE_MODEL="loopback-judge", CONDAMBIG_JUDGE_BASE_URL=slow_judge.base_url,
            CONDAMBIG_JUDGE_API_KEY="test-key", CONDAMBIG_JUDGE_CACHE=str(cache),
            CONDAMBIG_JUDGE_CONCURRENCY=str(concurrency))

    slow_judge.reset()
    clean = json.loads(run_ok(command, env(tmp_path / "clean.sqlite", 16), tmp_path).stdout)
    everything = judgement_prompts(slow_judge)
    needed = len(everything)
    assert needed == len(set(everything)) > 6

    cache = tmp_path / "judge.sqlite"
    slow_judge.reset()  # one judgement at a time: the signal comes with most still to do
    code, work_after, stderr = interrupt(command, env(cache, 1), tmp_path,
                                          lambda: len(judgement_prompts(slow_judge)) >= 4,
                                          signum, lambda: len(judgement_prompts(slow_judge)))
    # concurrency 1: at most the request sent as the signal came
    line = assert_clean_stop(code, work_after, stderr, in_flight=1)
    [(cached,)] = sqlite_rows(cache, "SELECT COUNT(*) FROM judgements")
    assert 3 <= cached < needed
    assert f"judge loopback-judge {cached}/{needed}" in line

    slow_judge.reset()
    again = json.loads(run_ok(command, env(cache, 16), tmp_path).stdout)
    asked = judgement_prompts(slow_judge)
    assert len(asked) == needed - cached == len(set(asked))  # only the missing judgements
    assert set(asked) <= set(everything)
    assert again["metrics"] == clean["metrics"]
    assert again["judge"]["cache_hits"] == cached
