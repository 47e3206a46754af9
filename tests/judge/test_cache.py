"""The sqlite judge cache: persistence, keys, resuming a killed run, sharing between processes."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from condambig_metrics.judge import JudgeCache, cache_key, render_prompt
from condambig_metrics.judge.errors import JudgeCacheError
from condambig_metrics.judge.records import JudgeResult
from tests.judge.conftest import request
from tests.support.judging import judge_blocking

REPO = Path(__file__).resolve().parents[2]


def test_round_trip_and_persistence(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "judge.sqlite"
    cache = JudgeCache(path)
    cache.put("k1", "m", JudgeResult.judged(7.25, True, "close"))
    cache.close()
    reopened = JudgeCache(path)
    assert reopened.get("k1") == JudgeResult.judged(7.25, True, "close", cached=True)
    assert reopened.get("k2") is None
    assert len(reopened) == 1
    assert pickle.loads(pickle.dumps(reopened)).get("k1").raw_score == 7.25


def test_key_depends_on_judge_model_and_full_prompt() -> None:
    prompt = render_prompt(request("Lyon"))
    assert cache_key("m", prompt) == cache_key("m", prompt)
    assert cache_key("m", prompt) != cache_key("n", prompt)
    assert cache_key("m", prompt) != cache_key("m", prompt + " ")
    assert cache_key("ab", "c") != cache_key("a", "bc")


def test_unwritable_location_says_what_to_do(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(JudgeCacheError, match="CONDAMBIG_JUDGE_CACHE"):
        len(JudgeCache(blocker / "judge.sqlite"))


def _write_many(path: str, worker: int) -> None:
    cache = JudgeCache(path)
    for index in range(150):
        # half the keys are shared between the workers, half are their own
        key = f"shared-{index}" if index % 2 else f"w{worker}-{index}"
        cache.put(key, "m", JudgeResult.judged(float(index % 11), False, f"w{worker}"))


def test_two_processes_can_share_one_file(tmp_path: Path) -> None:
    path = str(tmp_path / "judge.sqlite")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_many, args=(path, n)) for n in (1, 2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert len(JudgeCache(path)) == 75 + 75 + 75  # shared odd keys once, even keys per worker


def _wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the judge run")
        time.sleep(0.02)


@pytest.mark.e2e
def test_killed_run_resumes_asking_only_for_what_is_missing(
    judge_server, make_engine, tmp_path: Path
) -> None:
    server = judge_server({"latency_ms": 80, "default": {"scores": {"6": 1.0}}})
    path = tmp_path / "judge.sqlite"
    total = 20
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.judge._judge_run", server.base_url, str(path), str(total)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    try:
        _wait_for(lambda: path.exists() and len(JudgeCache(path)) >= 5)
    finally:
        process.kill()
        process.wait(10)
    done = len(JudgeCache(path))
    assert 5 <= done < total
    asked_before = set(server.stats(with_prompts=True)["prompts"])

    server.reset()
    requests = [request(f"answer number {i}") for i in range(total)]
    results = judge_blocking(make_engine(server, cache=JudgeCache(path)), requests)
    assert server.stats()["requests"] == total - done
    resumed = set(server.stats(with_prompts=True)["prompts"])
    cached_prompts = {render_prompt(r) for r, res in zip(requests, results, strict=True)
                      if res.cached}
    assert len(cached_prompts) == done and not resumed & cached_prompts
    assert cached_prompts <= asked_before
    assert all(not r.failed and r.raw_score == 6.0 for r in results)


def test_cancelled_run_resumes_asking_only_for_what_is_missing(
    judge_server, make_engine, tmp_path: Path
) -> None:
    # slow enough that the 14 judgements after the sixth (7 rounds of 2) cannot all finish
    # while a loaded machine delays the polling loop below
    server = judge_server({"latency_ms": 200})
    path = tmp_path / "judge.sqlite"
    requests = [request(f"answer number {i}") for i in range(20)]

    async def run_then_cancel() -> None:
        engine = make_engine(server, cache=JudgeCache(path), concurrency=2)
        task = asyncio.create_task(engine.judge_many(requests))
        while len(JudgeCache(path)) < 6:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(run_then_cancel())
    done = len(JudgeCache(path))
    assert 6 <= done < 20
    server.reset()
    results = judge_blocking(make_engine(server, cache=JudgeCache(path)), requests)
    # each missing judgement asked once, none of the cached ones; a request the cancelled
    # run had sent (at most its 2 in flight) may reach a loaded server after the reset
    prompts = server.stats(with_prompts=True)["prompts"]
    assert len(set(prompts)) == 20 - done
    assert 20 - done <= len(prompts) <= 20 - done + 2
    assert sum(r.cached for r in results) == done


def test_key_depends_on_the_weighting_rule_and_keeps_the_default_key() -> None:
    import hashlib

    prompt = render_prompt(request("Lyon"))
    # the default rule's key is sha256(model \0 prompt), as before the rules existed
    assert cache_key("m", prompt) == cache_key("m", prompt, "condambig") == \
        hashlib.sha256(b"m\x00" + prompt.encode()).hexdigest()
    assert cache_key("m", prompt, "deepeval") != cache_key("m", prompt)


class _GluedSpaceBackend:
    """Replies {"score": 7} with the score token " 7" (space glued), top " 7" .6 / " 8" .4."""

    model_name = "fake-judge"

    def __init__(self) -> None:
        self.calls = 0

    async def complete(self, prompt: str):
        import math

        from condambig_metrics.judge import JudgeCompletion, token_logprobs

        self.calls += 1
        pieces = ['{"', "score", '":', " 7", "}"]
        tokens = [token_logprobs(piece, 0.0, [(piece, 0.0)]) for piece in pieces]
        tokens[3] = token_logprobs(" 7", math.log(0.6),
                                   [(" 7", math.log(0.6)), (" 8", math.log(0.4))])
        return JudgeCompletion(text="".join(pieces), token_logprobs=tokens)


def test_switching_the_weighting_never_returns_the_other_rules_judgement(tmp_path: Path) -> None:
    from dataclasses import replace

    from condambig_metrics.judge import JudgeEngine

    backend = _GluedSpaceBackend()
    engine = JudgeEngine(backend, JudgeCache(tmp_path / "j.sqlite"))
    ours = request("Lyon")
    theirs = replace(ours, weighting="deepeval")
    first = asyncio.run(engine.judge_many([ours, theirs, ours]))
    # one call per (prompt, rule): condambig weights " 7"/" 8" -> 7*.6 + 8*.4 = 7.4;
    # DeepEval finds no token equal to "7" -> the integer 7, unweighted
    assert backend.calls == 2
    assert [(r.raw_score, r.weighted) for r in first] == [
        (pytest.approx(7.4), True), (7.0, False), (pytest.approx(7.4), True)]
    again = asyncio.run(engine.judge_many([theirs, ours]))
    assert backend.calls == 2 and all(r.cached for r in again)
    assert [(r.raw_score, r.weighted) for r in again] == [(7.0, False), (pytest.approx(7.4), True)]
