"""condambig_metrics.text: token F1, code fences and <think> traces.

The scans are checked against regular expressions that state the same rules (fine on short
text, quadratic on adversarial text), on generated strings over an alphabet of the
characters that matter, and timed on inputs that make such regular expressions quadratic.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_metrics.judge.scoring import _blank_spans, parse_reply
from condambig_metrics.text import (
    code_fences,
    f1_from_tokens,
    reasoning_spans,
    strip_reasoning,
    token_f1,
    unwrap_code_fence,
)
from condambig_tasks.conditionalqa.parser import _closed_fence_blocks
from condambig_tasks.parsing import _fenced_blocks
from tests.support.work import growth

# The rules, as regular expressions.
THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
TASK_FENCE = re.compile(r"```(?:json|JSON|javascript)?\s*\n?(.*?)(?:```|$)", re.DOTALL)
CONDITIONALQA_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
WHOLE_REPLY_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)


def strip_reasoning_by_regex(text: str) -> str:
    text = THINK_BLOCK.sub("", text)
    if "</think>" in text.lower():
        text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    opened = re.search(r"<think>", text, flags=re.IGNORECASE)
    if opened:
        text = text[: opened.start()]
    return text.strip()


PIECES = st.sampled_from([
    "`", "``", "```", "json", "JSON", "Json", "javascript", "python", " ", "\t", "\n", "x",
    "{", "}", '"reason": "r"', "<think>", "</think>", "<THINK>", "</Think>", "<", ">", "a b",
])
TEXTS = st.lists(PIECES, max_size=16).map("".join)


@settings(max_examples=600, deadline=None)
@given(TEXTS)
def test_scans_follow_the_regular_expressions(text: str):
    assert strip_reasoning(text) == strip_reasoning_by_regex(text)
    assert [m.span() for m in THINK_BLOCK.finditer(text)] == reasoning_spans(text)
    # what the judge's reply reader does with <think> blocks (scoring.parse_reply)
    assert _blank_spans(text, reasoning_spans(text)) == THINK_BLOCK.sub(
        lambda m: " " * len(m.group(0)), text)
    assert _fenced_blocks(text) == TASK_FENCE.findall(text)
    assert _closed_fence_blocks(text) == CONDITIONALQA_FENCE.findall(text)
    whole = WHOLE_REPLY_FENCE.match(text.strip())
    assert unwrap_code_fence(text) == (whole.group(1) if whole else None)


def test_code_fences_split_closed_and_unclosed_blocks():
    fences = code_fences('a ```json\n{"x": 1}\n``` b ```\n[2')
    assert [(fence.body, fence.closed) for fence in fences] == [
        ('json\n{"x": 1}\n', True), ("\n[2", False)]
    assert code_fences("no fence") == []


def test_judge_reason_reads_a_fenced_reply():
    assert parse_reply('```JSON\n{"score": 7, "reason": " fine "}\n```').reason == "fine"
    assert parse_reply('{"score": 3, "reason": "plain"}').reason == "plain"


def test_strip_reasoning_examples():
    assert strip_reasoning("<think>a</think> answer <think>b</think>!") == "answer !"
    assert strip_reasoning("prompt-side</think> answer") == "answer"
    assert strip_reasoning("answer <think>unfinished") == "answer"


@pytest.mark.parametrize("make", [
    lambda n: "<think>" * n,
    lambda n: "<think>" + " " * 5 * n,
    lambda n: "```" + " " * 5 * n,
    lambda n: "```" + "x```" * n,
    lambda n: "```json" + "\n" * 5 * n + "`",
])
def test_scans_are_linear_on_adversarial_text(make):
    """4x the text takes well under 16x (quadratic) the work."""
    def scan(text: str) -> None:
        strip_reasoning(text)
        _blank_spans(text, reasoning_spans(text))
        _fenced_blocks(text)
        _closed_fence_blocks(text)
        unwrap_code_fence(text + "```")

    assert growth(scan, make(10_000), make(40_000)) < 8


def test_f1_from_tokens():
    assert f1_from_tokens([], []) == 0.0
    assert f1_from_tokens(["a", "b"], ["b", "c", "d"]) == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert token_f1("The Eiffel tower", "eiffel tower!") == 1.0


def squad_normalize_answer(text: str) -> str:
    """SQuAD v1.1 ``evaluate-v1.1.py``'s ``normalize_answer``, as the official script has it."""
    import string

    def remove_articles(value):
        return re.sub(r"\b(a|an|the)\b", " ", value)

    def white_space_fix(value):
        return " ".join(value.split())

    def remove_punc(value):
        exclude = set(string.punctuation)
        return "".join(ch for ch in value if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(text.lower())))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(
    list("aAnNtThHeE !?.,'\"-_()[]{}$%&*+/:;<=>@\\^`|~#0129\t\n\u00a0\u2028") +
    ["é", "É", "ß", "–", "’", "“", "İ", "Σ", "ẞ", " the ", " an ", " a "]), max_size=40)
    .map("".join))
def test_normalize_answer_is_the_squad_scripts(text):
    from condambig_metrics.text import normalize_answer

    assert normalize_answer(text) == squad_normalize_answer(text)
