"""``question_bleu`` computes NLTK's ``corpus_bleu`` on n-gram counts made once per question
text: the very numbers NLTK gives (compared with ``==``, not approximately) on the fixture
data's questions and on random token sequences; and EDIT-F1 on cached edits equals the
official definition."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_metrics.ambignq import (
    MultipleQAs,
    edit_f1,
    greedy_set_f1,
    normalize_question,
    question_bleu,
    question_edits,
)

nltk_bleu = pytest.importorskip("nltk.translate.bleu_score")
WEIGHTS = [(1.0,), (0.5, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.25, 0.25, 0.25, 0.25)]


def _pycoco_epsilon(p_n: list[Fraction], **_: object) -> list[float]:
    return [(p.numerator + 1e-15) / (p.denominator + 1e-9) for p in p_n]


def nltk_question_bleu(predicted: str, references: list[str]) -> tuple[float, ...]:
    """The definition: NLTK's corpus_bleu over one hypothesis, pycocoevalcap's epsilons."""
    hypothesis = predicted.split()
    reference_tokens = [reference.split() for reference in references]
    if not hypothesis or not any(reference_tokens):
        return (0.0, 0.0, 0.0, 0.0)
    scores = nltk_bleu.corpus_bleu([reference_tokens], [hypothesis], weights=WEIGHTS,
                                   smoothing_function=_pycoco_epsilon)
    if not isinstance(scores, list):
        return (0.0, 0.0, 0.0, 0.0)
    return tuple(float(score) for score in scores)


def _fixture_questions(use_fixture_data) -> list[str]:
    from condambig_tasks import registry
    from condambig_tasks.data import load_items

    benchmark = registry.get("ambignq")
    texts = []
    for item in load_items(benchmark, benchmark.options({})):
        texts.append(item.question)
        for annotation in item.annotations:
            if isinstance(annotation, MultipleQAs):
                texts += [part for pair in annotation.pairs for part in pair.question.split("|")]
    return [normalize_question(text) for text in texts]


def test_equal_to_nltk_on_the_fixture_questions(use_fixture_data):
    questions = _fixture_questions(use_fixture_data)
    assert len(questions) > 10
    for predicted, reference in itertools.product(questions, repeat=2):
        for references in ([reference], [reference, predicted[::-1]], [reference, ""]):
            assert question_bleu(predicted, references) == \
                nltk_question_bleu(predicted, references), (predicted, references)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from("a b c d e the of".split()), max_size=12),
       st.lists(st.lists(st.sampled_from("a b c d e the of x".split()), max_size=12),
                min_size=1, max_size=3))
def test_equal_to_nltk_on_random_token_sequences(hypothesis, references):
    predicted, texts = " ".join(hypothesis), [" ".join(tokens) for tokens in references]
    assert question_bleu(predicted, texts) == nltk_question_bleu(predicted, texts)


def _edit_f1_definition(prompt: str, predicted: str, references: list[str]) -> float:
    """EDIT-F1 as the official script computes it, edits recomputed for every pair."""
    predicted_edits = question_edits(prompt.split(" "), predicted.split(" "))
    best = 0.0
    for reference in references:
        reference_edits = question_edits(prompt.split(" "), reference.split(" "))
        if not reference_edits and not predicted_edits:
            best = max(best, 1.0)
        elif reference_edits and predicted_edits:
            best = max(best, greedy_set_f1(predicted_edits, reference_edits, lambda a, b: a == b))
    return best


def test_cached_edits_give_the_official_edit_f1(use_fixture_data):
    questions = _fixture_questions(use_fixture_data)
    for prompt, predicted in itertools.product(questions[:6], questions):
        for _ in range(2):  # computed, then from the cache
            assert edit_f1(prompt, predicted, questions[1:4]) == \
                _edit_f1_definition(prompt, predicted, questions[1:4])
