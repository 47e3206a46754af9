"""Real-data tier: the upstream AmbigNQ light dev file (CONDAMBIG_DATA_DIR=<upstream data folder>)."""

from __future__ import annotations

import statistics

import pytest

from condambig_metrics.ambignq import aggregate, score_question
from condambig_tasks.ambignq.loader import load_questions
from condambig_tasks.ambignq.records import MultipleQAs, PredictedPair, SingleAnswer
from tests.conftest import load_from_real_data

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def questions(real_data_dir):
    return load_from_real_data(real_data_dir, "ambignq/dev_light.json", lambda: load_questions())


def _gold_as_prediction(record) -> list[PredictedPair]:
    """The first annotation, fed back: each answer's first string with its first phrasing."""
    annotation = record.annotations[0]
    if isinstance(annotation, SingleAnswer):
        return [PredictedPair(annotation.answers[0], record.question)]
    return [PredictedPair(p.answers[0], p.question.split("|")[0]) for p in annotation.pairs]


def test_statistics_match_the_paper(questions):
    with_pairs = sum(record.has_multiple_qa_pairs for record in questions)
    multi = sum(record.is_multi for record in questions)
    answers = [max(len(a.pairs) if isinstance(a, MultipleQAs) else 1 for a in r.annotations)
               for r in questions]
    print(f"\nAmbigNQ dev: {len(questions)} questions; with multiple QA pairs (any annotator): "
          f"{with_pairs} ({with_pairs / len(questions):.1%}); official 'multi' subset (every "
          f"annotation multipleQAs): {multi} ({multi / len(questions):.1%}); mean answers per "
          f"question (largest annotation): {statistics.mean(answers):.2f}")
    assert len(questions) == 2002
    assert with_pairs / len(questions) > 0.5  # "over 50% of development examples"


def test_gold_fed_back_scores_full_answer_f1(questions):
    scores = [score_question(r.question, r.annotations, _gold_as_prediction(r)) for r in questions]
    result = aggregate(scores)
    print("\nAmbigNQ dev, first annotation as prediction: "
          + ", ".join(f"{key} {value:.4f}" for key, value in result.items()))
    assert result["f1_answer_all"] == 1.0 and result["f1_answer_multi"] == 1.0
    assert result["f1_edit_f1"] > 0.99 and result["f1_bleu4"] > 0.99


def test_prompt_copy_baseline_and_annotator_agreement(questions):
    """The paper's observation: copying the prompt question gives a high F1 BLEU and an
    EDIT-F1 near 0 (hence EDIT-F1). Also: one annotation scored against the others."""
    copies = [score_question(r.question, r.annotations,
                             [PredictedPair(p.answer, r.question) for p in _gold_as_prediction(r)])
              for r in questions]
    copy = aggregate(copies)
    several = [r for r in questions if len(r.annotations) >= 2]
    agreement = aggregate([score_question(r.question, r.annotations[1:], _gold_as_prediction(r))
                           for r in several])
    print("\nAmbigNQ dev, gold answers with the prompt question copied: "
          + ", ".join(f"{key} {value:.4f}" for key, value in copy.items())
          + f"\nAmbigNQ dev, first annotation vs the other annotations ({len(several)} questions): "
          + ", ".join(f"{key} {value:.4f}" for key, value in agreement.items()))
    assert copy["f1_answer_all"] == 1.0 and copy["f1_edit_f1"] < 0.01 and copy["f1_bleu4"] > 0.3
    assert 0.3 < agreement["f1_answer_all"] < 1.0
