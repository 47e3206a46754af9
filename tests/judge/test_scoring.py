"""Reading scores from replies and weighting them by token probabilities (no server)."""

from __future__ import annotations

import math

import pytest

from condambig_metrics.judge import (
    JudgeCompletion,
    TokenLogprobs,
    UnparseableReplyError,
    judge_reply,
    parse_reply,
    render_prompt,
    token_logprobs,
)
from condambig_metrics.judge.scoring import score_of_token, weighted_mean
from tests.judge.conftest import request


def tokens_of(*pieces: str, top_at: int | None = None, top: dict[str, float] | None = None):
    return [TokenLogprobs(piece, top if index == top_at else {piece: 0.0})
            for index, piece in enumerate(pieces)]


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"score": 7, "reason": "close"}', 7.0),
    ('```json\n{"score": 3, "reason": "wrong year"}\n```', 3.0),
    ("Score: 9/10 - good", 9.0),
    ("8", 8.0),
    ("10\nThe answer matches.", 10.0),
    ('<think>score: 2 maybe? no</think>{"score": 6}', 6.0),
    ("{'score': '4', 'reason': 'partial'}", 4.0),
    ('{"score": 7.5}', 7.5),
])
def test_parse_reply_finds_the_score(reply: str, expected: float) -> None:
    assert parse_reply(reply).value == expected


@pytest.mark.parametrize("reply", [
    "", "I cannot grade this.", '{"score": 11}', '{"score": "high"}', "Score: -1",
    "<think>score: 5</think>", '{"reason": "no score key"}',
])
def test_unparseable_replies_raise_the_retryable_error(reply: str) -> None:
    with pytest.raises(UnparseableReplyError):
        parse_reply(reply)


def test_reason_is_read_from_json_reply() -> None:
    assert parse_reply('{"score": 4, "reason": "misses the year"}').reason == "misses the year"
    assert parse_reply("Score: 4").reason == ""


def test_weighted_mean_is_the_probability_weighted_integer_mean() -> None:
    top = {" 7": math.log(0.6), " 8": math.log(0.3), " seven": math.log(0.05),
           " 11": math.log(0.05)}
    # (0.6*7 + 0.3*8) / (0.6 + 0.3): words and out-of-range integers are not score tokens
    assert weighted_mean(top) == pytest.approx(6.6 / 0.9)
    assert weighted_mean({" yes": 0.0}) is None


def test_score_of_token_reads_glued_digits_only() -> None:
    assert [score_of_token(t) for t in [" 7", "7,", ":7", '"10"', "11", "7a", "٣", ""]] == [
        7, 7, 7, 10, None, None, None, None]


def test_judge_reply_weights_at_the_score_token() -> None:
    top = {" 6": math.log(0.5), " 9": math.log(0.3), " 2": math.log(0.2)}
    completion = JudgeCompletion(
        text='{"score": 6, "reason": "ok"}',
        token_logprobs=tokens_of('{"', "score", '":', " 6", ",", ' "', "reason", '":', ' "',
                                 "ok", '"}', top_at=3, top=top),
    )
    judgement = judge_reply(completion)
    assert judgement.weighted is True
    assert judgement.raw_score == pytest.approx(0.5 * 6 + 0.3 * 9 + 0.2 * 2)
    assert judgement.reason == "ok"


def test_score_split_over_two_tokens_falls_back_to_the_integer() -> None:
    # "10" tokenised as "1" + "0": the alternatives at "1" do not describe the score.
    completion = JudgeCompletion(
        text='{"score": 10}',
        token_logprobs=tokens_of('{"', "score", '":', " 1", "0", "}", top_at=3,
                                 top={" 1": -0.1, " 2": -2.0}),
    )
    judgement = judge_reply(completion)
    assert (judgement.raw_score, judgement.weighted) == (10.0, False)


def test_without_logprobs_the_parsed_integer_is_the_score() -> None:
    judgement = judge_reply(JudgeCompletion(text='{"score": 4}', token_logprobs=None))
    assert (judgement.raw_score, judgement.weighted) == (4.0, False)


def test_tokens_not_matching_the_text_fall_back_to_the_integer() -> None:
    completion = JudgeCompletion(text='{"score": 4}',
                                 token_logprobs=tokens_of("{", '"score": ', "5", "}", top_at=2,
                                                          top={"5": 0.0}))
    assert judge_reply(completion).weighted is False


def test_token_logprobs_merges_duplicates_and_keeps_the_chosen_token() -> None:
    entry = token_logprobs(" 7", -0.5, [("8", math.log(0.2)), ("8", math.log(0.1)), ("x", None)])
    assert math.exp(entry.top["8"]) == pytest.approx(0.3)
    assert entry.top[" 7"] == -0.5
    assert "x" not in entry.top


def test_render_prompt_has_criteria_steps_texts_and_scale() -> None:
    prompt = render_prompt(request("It is Lyon", expected="Paris", question="Capital of France?"))
    assert "Answer Correctness" in prompt
    assert "factually correct based on the expected answer" in prompt
    assert "1. Check whether the actual answer contradicts" in prompt
    assert "3. The answer addresses the question" in prompt
    for text in ("Capital of France?", "It is Lyon", "Paris"):
        assert text in prompt
    assert prompt.index("It is Lyon") < prompt.index("EXPECTED OUTPUT:\n")
    assert '{"score": <integer 0-10>' in prompt
    assert render_prompt(request("It is Paris")) != prompt
