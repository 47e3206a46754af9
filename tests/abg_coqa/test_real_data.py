"""Real-data tier: the upstream Abg-CoQA val file (CONDAMBIG_DATA_DIR=<upstream data folder>)."""

from __future__ import annotations

import statistics
from dataclasses import replace

import pytest

from condambig_metrics.abg_coqa import leave_one_out_f1
from condambig_metrics.text import normalize_answer
from condambig_tasks.abg_coqa.loader import AbgCoQADataConfig, load_turns
from condambig_tasks.abg_coqa.parser import DetectionReply, TextReply
from condambig_tasks.abg_coqa.samples import build_samples
from condambig_tasks.abg_coqa.scoring import score_clarification, score_detection
from condambig_tasks.benchmark import ScoredSample, reported_values
from condambig_tasks.registry import get
from tests.conftest import load_from_real_data

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def turns(real_data_dir):
    return load_from_real_data(real_data_dir, "abg_coqa/coqa_abg_val.json", lambda: load_turns(AbgCoQADataConfig(split="val")))


def test_counts(turns):
    ambiguous = [turn for turn in turns if turn.ambiguous]
    replies = sum(len(turn.clarification.replies) for turn in ambiguous)
    second = sum(turn.second_clarification is not None for turn in ambiguous)
    print(f"\nAbg-CoQA val: {len(turns)} turns, {len(ambiguous)} ambiguous "
          f"({len(ambiguous) / len(turns):.1%}), {replies} clarification replies, "
          f"{second} ambiguous turns with a second reference clarification question")
    assert (len(turns), len(ambiguous), replies) == (1092, 130, 266)
    assert len(build_samples(turns, "clarified_qa")) == replies


def test_first_reference_fed_back_under_leave_one_out(turns):
    agree, elsewhere, neither = [], [], []
    for sample in build_samples(turns, "clarified_qa"):
        references = sample.reply.answers
        first = references[0]
        f1 = leave_one_out_f1(references, first)
        normalised = {normalize_answer(answer) for answer in references}
        (agree if len(normalised) == 1 else elsewhere).append(f1)
        if all(normalize_answer(other) != normalize_answer(first) for other in references[1:]):
            neither.append(f1)
    print(f"\nAbg-CoQA val clarified QA, first reference as answer: {len(agree)} replies whose "
          f"three references agree score {statistics.mean(agree):.3f}; the other "
          f"{len(elsewhere)} score {statistics.mean(elsewhere):.3f} on average (leave-one-out); "
          f"overall {statistics.mean(agree + elsewhere):.3f}")
    assert all(value == 1.0 for value in agree)
    assert statistics.mean(elsewhere) < 1.0
    assert neither and all(value < 1.0 for value in neither)


def _summarise(subtask: str, samples: list[ScoredSample]) -> dict:
    benchmark = get("abg_coqa")
    return reported_values(benchmark, samples, benchmark.options({"subtask": subtask}), judged=False)


def test_reference_clarification_question_scores_bleu_100_against_itself(turns):
    samples = build_samples(turns, "clarification")
    outcomes = [score_clarification(s, TextReply(s.turn.reference_clarification_questions[0], True))
                for s in samples]
    result = _summarise("clarification", outcomes)
    print(f"\nAbg-CoQA val: {len(samples)} reference clarification questions against themselves: "
          + ", ".join(f"{k} {result[k]:.1f}" for k in ("bleu1", "bleu2", "bleu3", "bleu4")))
    assert all(result[f"bleu{n}"] == pytest.approx(100.0) for n in (1, 2, 3, 4))
    # the second annotator's question as the hypothesis: the paper's human agreement (test: 40.8 / 21.9)
    second = [score_clarification(s, TextReply(s.turn.second_clarification.question, True))
              for s in samples if s.turn.second_clarification is not None]
    second = [replace(o, details={**o.details, "references": o.details["references"][:1]})
              for o in second]
    human = _summarise("clarification", second)
    print("second annotator vs first (val): "
          + ", ".join(f"{k} {human[k]:.1f}" for k in ("bleu1", "bleu2", "bleu3", "bleu4")))
    assert 10 < human["bleu1"] < 90


def test_gold_detection_labels_and_answers_score_1(turns):
    outcomes = [score_detection(s, DetectionReply(s.turn.ambiguous, s.turn.target.answer, True))
                for s in build_samples(turns, "detection")]
    result = _summarise("detection", outcomes)
    always_answer = _summarise("detection", [score_detection(s, DetectionReply(False, "", True))
                                         for s in build_samples(turns, "detection")])
    print(f"\nAbg-CoQA val detection: gold -> P/R/F1 {result['precision']:.2f}/{result['recall']:.2f}/"
          f"{result['f1']:.2f}, answer F1 {result['answer_f1']:.3f}; never-ambiguous -> F1 "
          f"{always_answer['f1']:.2f}")
    assert (result["precision"], result["recall"], result["f1"], result["answer_f1"]) == (1.0, 1.0, 1.0, 1.0)
    assert always_answer["f1"] == 0.0
