"""Real-data tier: the authors' 200-question file (CONDAMBIG_DATA_DIR=<upstream data folder>)."""

from __future__ import annotations

import json
from statistics import mean

import pytest

from condambig_tasks.benchmark import reported_values
from condambig_tasks.condambigqa.benchmark import CondAmbigQA, CondAmbigQAOptions, scored_sample
from condambig_tasks.condambigqa.loader import load_questions
from condambig_tasks.condambigqa.parser import parse_response
from condambig_tasks.condambigqa.records import Setting
from condambig_tasks.condambigqa.scoring import score_question
from tests.conftest import load_from_real_data


@pytest.fixture(scope="module")
def questions(real_data_dir):
    return load_from_real_data(real_data_dir, "condambigqa/mcaqa.json", lambda: load_questions("200"))


def test_two_hundred_questions_load(questions):
    assert len(questions) == 200
    properties = mean(len(q.properties) for q in questions)
    fragments = mean(len(q.fragments) for q in questions)
    print(f"\nCondAmbigQA-200: mean gold properties {properties:.2f}, "
          f"mean fragments {fragments:.2f} per question")
    assert 1.5 < properties < 4
    assert fragments == 20
    uncited = sum(not p.fragments for q in questions for p in q.properties)
    total = sum(len(q.properties) for q in questions)
    print(f"gold properties without citations: {uncited} of {total}")
    assert uncited / total < 0.01


def test_gold_fed_back_scores_full_citation_and_zero_count_difference(questions):
    scores = []
    for question in questions:
        output = json.dumps({"conditions": [
            {"condition": p.condition, "answer": p.answer,
             "citations": [f"Fragment {n}" for n in p.fragments]}
            for p in question.properties]})
        parsed = parse_response(output, Setting.MAIN, len(question.fragments))
        scores.append(score_question(Setting.MAIN, question, parsed, None))
    summary = reported_values(CondAmbigQA(), [scored_sample(s, judged=False) for s in scores],
                                      CondAmbigQAOptions(), judged=False)
    print(f"gold as output: {summary}")
    with_citations = [s for q, s in zip(questions, scores, strict=True) if all(p.fragments for p in q.properties)]
    assert mean(s.citation for s in with_citations) == 1.0
    assert summary["count_difference"] == 0
    assert summary["parse_rate"] == 1.0


def test_a_lean_load_of_the_real_file_hashes_and_scores_as_the_whole_one(real_data_dir,
                                                                        questions):
    """condambig-score's judge-free load of the authors' file: the provenance digest of
    the whole questions and the same scores of the gold fed back with its citations."""
    from condambig_tasks import registry
    from condambig_tasks.provenance import RecordsDigest, records_sha256

    benchmark = registry.get("condambigqa")
    options = benchmark.options({"release": "200"})
    digest = RecordsDigest(benchmark)
    lean = load_from_real_data(real_data_dir, "condambigqa/mcaqa.json",
                               lambda: benchmark.prediction_files.lean_load(options,
                                                                           digest.add))
    assert digest.hexdigest() == records_sha256(benchmark, questions)
    assert [q.id for q in lean] == [q.id for q in questions]
    for whole, kept in zip(questions, lean, strict=True):
        output = json.dumps({"conditions": [
            {"condition": p.condition, "answer": p.answer, "citations": list(p.fragments)}
            for p in whole.properties]})
        assert benchmark.score(kept, output, options) == benchmark.score(whole, output, options)
