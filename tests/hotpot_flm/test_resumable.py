"""Agent work stored batch by batch: an interrupted pipeline resumes with the same numbers.

The pipeline is what every front end runs (condambig-score, lm-eval's aggregation, Inspect's
scorer), so resuming is checked here on the pipeline itself, with a cancelled task as the
interrupt (what asyncio's Ctrl-C handling, Inspect and lm-eval do).
"""

from __future__ import annotations

import asyncio
import random
import sqlite3
import threading
import zlib
from collections.abc import Sequence
from types import SimpleNamespace

import pytest

from condambig_tasks.hotpot_flm.agents import YesNoAnsweringAgent
from condambig_tasks.hotpot_flm.batching import length_sorted_batches
from condambig_tasks.hotpot_flm.cache import AnswerCache, ScoreCache, answer_key
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.pipeline import run_pipeline
from condambig_tasks.interrupts import settle
from tests.hotpot_flm.conftest import repeater_questions, run_pipeline_now


class CountingScorer:
    """A yes/no scorer whose P(yes) depends on the prompt and on the batch it came in
    (as float noise of padded batches does), and which can be held part-way."""

    def __init__(self, batch_size: int = 3):
        self.batch_size = batch_size
        self.checkpoint = SimpleNamespace(identity="scripted-scorer",
                                          spec=SimpleNamespace(name_or_path="scripted"))
        self.rule = "scripted"
        self.batches: list[list[str]] = []
        self.hold_batch: int | None = None  # this batch waits for `release`
        self.started = threading.Event()
        self.release = threading.Event()

    def plan(self, prompts: Sequence[str]) -> list[list[str]]:
        unique = list(dict.fromkeys(prompts))
        batches = length_sorted_batches([len(p) for p in unique], self.batch_size, 10 ** 9)
        return [[unique[index] for index in batch] for batch in batches]

    def yes_probabilities(self, prompts: Sequence[str]) -> list[float]:
        if len(self.batches) == self.hold_batch:
            self.started.set()
            assert self.release.wait(10)
        self.batches.append(list(prompts))
        noise = sum(map(len, prompts)) % 7 * 1e-9  # depends on the whole batch
        return [zlib.crc32(prompt.encode()) % 1000 / 1000 * 0.99 + noise for prompt in prompts]


class Reader:
    identity, decoding = "scripted-reader", "scripted"

    def __init__(self):
        self.asked: list[str] = []

    def answer(self, prompts: Sequence[str]) -> list[str]:
        self.asked.extend(prompts)
        return [prompt[:12] for prompt in prompts]


@pytest.fixture
def examples(flm_data):
    return load_examples("full")


def test_the_rest_of_a_plan_is_the_plan_of_the_rest():
    """Why a resumed run forms the batches an uninterrupted one does: dropping the first
    batches of a plan and planning again gives the remaining batches."""
    generator = random.Random(7)
    for _ in range(200):
        lengths = [generator.randint(1, 60) for _ in range(generator.randint(1, 40))]
        size, budget = generator.randint(1, 8), generator.randint(20, 200)
        plan = length_sorted_batches(lengths, size, budget)
        done = generator.randint(0, len(plan))
        rest = sorted(index for batch in plan[done:] for index in batch)
        again = length_sorted_batches([lengths[index] for index in rest], size, budget)
        assert [[rest[index] for index in batch] for batch in again] == plan[done:]


def test_a_cancelled_run_keeps_its_batches_and_the_rerun_computes_only_the_rest(examples,
                                                                                tmp_path):
    questions = repeater_questions(examples)
    clean_scorer = CountingScorer()
    clean = run_pipeline_now(examples, questions, YesNoAnsweringAgent(clean_scorer), Reader(),
                             AnswerCache(tmp_path / "clean.sqlite", "r", "s"),
                             ScoreCache(tmp_path / "clean.sqlite", "a", "s"))

    path = tmp_path / "agents.sqlite"
    scorer = CountingScorer()
    scorer.hold_batch = 4  # the interrupt comes while the fifth batch is being computed

    async def interrupted() -> None:
        task = asyncio.ensure_future(run_pipeline(
            examples, questions, YesNoAnsweringAgent(scorer), Reader(),
            AnswerCache(path, "r", "s"), ScoreCache(path, "a", "s")))
        await asyncio.get_running_loop().run_in_executor(None, scorer.started.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task  # at once: the run does not wait for the batch in progress
        scorer.release.set()

    asyncio.run(interrupted())
    assert settle(10)
    kept = ScoreCache(path, "a", "s")
    assert len(kept) == sum(map(len, scorer.batches)) == sum(map(len, clean_scorer.batches[:5]))
    assert len(AnswerCache(path, "r", "s")) == 0

    resumed_scorer, reader = CountingScorer(), Reader()
    resumed = run_pipeline_now(examples, questions, YesNoAnsweringAgent(resumed_scorer), reader,
                               AnswerCache(path, "r", "s"), ScoreCache(path, "a", "s"))
    assert resumed_scorer.batches == clean_scorer.batches[5:]  # the same batches, the rest only
    assert resumed.outcomes == clean.outcomes
    assert ScoreCache(path, "a", "s").get_many(
        [p for batch in clean_scorer.batches for p in batch]) == ScoreCache(
        tmp_path / "clean.sqlite", "a", "s").get_many(
        [p for batch in clean_scorer.batches for p in batch])


def test_downstream_answers_are_kept_batch_by_batch(examples, tmp_path):
    """A downstream model that fails part-way: the finished batches are cached."""
    path = tmp_path / "agents.sqlite"

    class FailingReader(Reader):
        def plan(self, prompts):
            return [list(prompts[start:start + 2]) for start in range(0, len(prompts), 2)]

        def answer(self, prompts):
            if len(self.asked) >= 4:
                raise RuntimeError("out of memory")
            return super().answer(prompts)

    with pytest.raises(RuntimeError):
        run_pipeline_now(examples, repeater_questions(examples), YesNoAnsweringAgent(
            CountingScorer()), FailingReader(), AnswerCache(path, "r", "s"))
    assert len(AnswerCache(path, "r", "s")) == 4
    reader = Reader()
    run = run_pipeline_now(examples, repeater_questions(examples), YesNoAnsweringAgent(
        CountingScorer()), reader, AnswerCache(path, "r", "s"))
    assert len(reader.asked) == sum(len(outcome.computed) for outcome in run.outcomes)
    assert len(AnswerCache(path, "r", "s")) == len(reader.asked) + 4


def test_score_cache_reads_only_probabilities(tmp_path):
    cache = ScoreCache(tmp_path / "c.sqlite", "a", "s")
    cache.put_many({"a": 0.25, "b": 1.0, "big": 3.0, "neg": -0.5})
    with sqlite3.connect(tmp_path / "c.sqlite") as connection:  # not a number at all
        connection.execute("INSERT INTO candidate_scores VALUES (?, ?)",
                           (answer_key("a", "s", "text"), "high"))
    assert cache.get_many(["a", "b", "big", "neg", "text", "absent"]) == {"a": 0.25, "b": 1.0}
    assert ScoreCache(tmp_path / "c.sqlite", "other-agent", "s").get_many(["a"]) == {}
