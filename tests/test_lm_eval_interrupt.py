"""Ctrl-C in a judged ``lm_eval`` run keeps every finished generation: one line, exit 130,
and the command it prints resumes without generating again, to a clean run's numbers.

A real ``lm_eval`` process (the model under evaluation a loopback chat-completions server
answering every prompt with one CondAmbigQA output: the interrupt is handled the same for
every lm-eval model, and an ``hf`` model's start-up would cost every run seconds of CPU) is
interrupted while a slow loopback judge scores its outputs, one at a time. Generations are
counted by lm-eval's request cache ("Cached requests: N, Requests remaining: M",
``lm_eval.api.model.CachingLM``) and by the requests the model's server received.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
import signal
import subprocess
from pathlib import Path

import pytest

from condambig_metrics.judge.preflight import PREFLIGHT_PROMPT
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.interrupting import interrupt
from tests.support.judge_server import JudgeServer
from tests.test_interrupts import CONDAMBIGQA_OUTPUT, JUDGE_SCRIPT

pytestmark = pytest.mark.e2e

LIMIT = 3
CACHE_LINE = re.compile(r"Cached requests: (\d+), Requests remaining: (\d+)")


def judgements(server: JudgeServer) -> list[str]:
    return [prompt for prompt in server.stats(with_prompts=True)["prompts"]
            if prompt != PREFLIGHT_PROMPT]


@pytest.fixture(scope="module")
def subject():
    """The model under evaluation: one fixed CondAmbigQA answer to every prompt."""
    with JudgeServer({"default": {"reply": CONDAMBIGQA_OUTPUT}}) as server:
        yield server


@pytest.fixture(scope="module")
def slow_judge():
    with JudgeServer({**JUDGE_SCRIPT, "latency_ms": 400}) as server:
        yield server


def _results(out: Path) -> dict:
    [path] = glob.glob(f"{out}/**/results_*.json", recursive=True)
    return json.loads(Path(path).read_text())["results"]["condambigqa"]


class Runs:
    """The ``lm_eval`` command of these tests, in one folder, against the slow judge."""

    def __init__(self, model: JudgeServer, judge: JudgeServer, folder: Path) -> None:
        self.model, self.judge, self.folder = model, judge, folder

    def command(self, out: str, *extra: str) -> list[str]:
        return [executable("lm_eval"), "--model", "local-chat-completions",
                "--apply_chat_template", "--model_args",
                f"model=subject,base_url={self.model.base_url}/chat/completions,"
                "tokenizer_backend=None", "--tasks", "condambigqa", "--limit", str(LIMIT),
                "--output_path", str(self.folder / out), *extra]

    def env(self, cache: str, concurrency: int) -> dict[str, str]:
        return subprocess_env(
            CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_CACHE_DIR=str(self.folder / "cache"),
            CONDAMBIG_JUDGE_MODEL="loopback-judge", CONDAMBIG_JUDGE_BASE_URL=self.judge.base_url,
            CONDAMBIG_JUDGE_API_KEY="test-key", CONDAMBIG_JUDGE_CACHE=str(self.folder / cache),
            CONDAMBIG_JUDGE_CONCURRENCY=str(concurrency), OPENAI_API_KEY="subject-key")

    def run(self, words: list[str], cache: str) -> subprocess.CompletedProcess:
        result = warm_start.run(words, env=self.env(cache, 16), cwd=self.folder,
                                capture_output=True, text=True, timeout=900)
        assert result.returncode == 0, result.stderr[-4000:]
        return result


@pytest.fixture(scope="module")
def clean(subject, slow_judge, tmp_path_factory):
    """A run never interrupted: its results and the judgements it needed."""
    runs = Runs(subject, slow_judge, tmp_path_factory.mktemp("clean"))
    slow_judge.reset()
    subject.reset()
    runs.run(runs.command("clean"), "clean.sqlite")
    assert subject.stats()["requests"] == LIMIT
    needed = len(judgements(slow_judge))
    assert needed > 4
    return _results(runs.folder / "clean"), needed


@pytest.mark.parametrize("signum, own_cache", [
    (signal.SIGINT, False), (signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["SIGINT", "SIGINT-use_cache", "SIGTERM"])
def test_an_interrupt_while_judging_keeps_the_generations_and_the_rerun_does_not_regenerate(
        subject, slow_judge, clean, tmp_path, signum, own_cache):
    reference, needed = clean
    runs = Runs(subject, slow_judge, tmp_path)
    extra = ("--use_cache", str(tmp_path / "own" / "requests")) if own_cache else ()
    slow_judge.reset()  # one judgement at a time: the signal comes with most still to do
    code, after, stderr = interrupt(runs.command("interrupted", *extra),
                                    runs.env("judge.sqlite", 1), tmp_path,
                                    lambda: len(judgements(slow_judge)) >= 2, signum,
                                    work=lambda: len(judgements(slow_judge)))
    assert code == 130, stderr[-4000:]
    assert after <= 1, f"{after} judgements asked after the signal (one at a time in flight)"
    assert "Traceback" not in stderr, stderr[-4000:]
    [line] = [line for line in stderr.splitlines() if line.startswith("condambig: ")]
    assert line.startswith(f"condambig: interrupted; kept: {LIMIT} generations"), line
    assert "judge loopback-judge" in line and "without generating again" in line
    [rerun] = re.findall(r"`([^`]+)`", line)
    words = shlex.split(rerun)
    assert words[0] == "lm_eval" and "--use_cache" in words
    if own_cache:
        # the same command (lm-eval itself names its legacy command line's subcommand)
        assert words[1:] == ["run", *runs.command("interrupted", *extra)[1:]]

    slow_judge.reset()
    subject.reset()
    again = runs.run([executable("lm_eval"), *words[1:]], "judge.sqlite")
    assert CACHE_LINE.findall(again.stderr) == [(str(LIMIT), "0")]  # nothing generated
    assert subject.stats()["requests"] == 0  # the model was asked for nothing
    asked = judgements(slow_judge)
    assert 0 < len(asked) < needed  # only the judgements the interrupted run had not cached
    resumed = _results(tmp_path / "interrupted")
    for metric in ("combined_score,none", "citation_score,none", "suite_score,none"):
        assert resumed[metric] == pytest.approx(reference[metric]), metric


def test_the_framework_internals_it_reads_are_still_there():
    """The ``evaluate`` frame's locals and the cache's file naming this module relies on."""
    import inspect

    from lm_eval import evaluator
    from lm_eval.api.model import CachingLM, hash_args

    from condambig_tasks import lm_eval_interrupt

    code = inspect.unwrap(evaluator.evaluate).__code__
    assert code.co_name == lm_eval_interrupt.EVALUATE_FUNCTION
    assert {lm_eval_interrupt.RUN_TASKS_LOCAL, lm_eval_interrupt.MODEL_LOCAL} <= \
        set(code.co_varnames)
    assert evaluator.__name__ == lm_eval_interrupt.EVALUATOR_MODULE
    assert '"_rank"' in inspect.getsource(evaluator.simple_evaluate)
    assert "dbdict" in inspect.getsource(CachingLM.__init__) and callable(hash_args)


def test_a_run_stopped_before_any_generation_finished_is_told_how_to_keep_them(monkeypatch):
    from condambig_tasks.lm_eval_interrupt import KeptGenerations, interrupted_line

    argv = ["run", "--model", "hf", "--tasks", "condambigqa"]
    monkeypatch.setattr("sys.argv", ["/venv/bin/lm_eval", *argv])
    line = interrupted_line(KeptGenerations("/cache/lm_eval_requests/ab12"), "", argv)
    assert line.startswith("interrupted before any generation was kept; run ")
    assert "`lm_eval run --model hf --tasks condambigqa --use_cache " \
           "/cache/lm_eval_requests/ab12`" in line
    own = interrupted_line(KeptGenerations(None, own_cache=True), "judge m 3/9", argv)
    assert "in the run's --use_cache, judge m 3/9" in own
    assert "`lm_eval run --model hf --tasks condambigqa` to resume" in own
