"""condambig-score's judge-free CondAmbigQA run keeps each question without its fragments'
text (scoring reads how many there are): the same scores and the same provenance digest as
a run over the whole questions (the digest lm-eval and Inspect record), and reading a
dropped text is an error, not an empty fragment."""

from __future__ import annotations

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import PredictionFiles
from condambig_tasks.condambigqa.benchmark import CondAmbigQA
from condambig_tasks.condambigqa.prompts import build_prompt
from condambig_tasks.condambigqa.records import DroppedFragment, Setting
from condambig_tasks.provenance import load_records_with_provenance
from tests.condambigqa.test_consistency import _cli


@pytest.mark.parametrize("setting", [s.value for s in Setting])
def test_a_lean_run_equals_a_run_over_the_whole_questions(use_fixture_data, tmp_path, capsys,
                                                          monkeypatch, setting):
    scored_with = []
    original = CondAmbigQA.score

    def spy(self, item, output, options):
        scored_with.append(type(item.fragments[0]) if item.fragments else None)
        return original(self, item, output, options)

    monkeypatch.setattr(CondAmbigQA, "score", spy)
    lean = _cli(tmp_path, capsys, ("--setting", setting))  # (summary, per question)
    assert scored_with and set(scored_with) == {DroppedFragment}  # the lean load was used
    scored_with.clear()
    monkeypatch.setattr(CondAmbigQA, "prediction_files", PredictionFiles())
    whole = _cli(tmp_path, capsys, ("--setting", setting))
    assert DroppedFragment not in scored_with
    assert lean == whole
    benchmark = registry.get("condambigqa")
    _, _, provenance = load_records_with_provenance(
        benchmark, benchmark.options({"setting": setting}))
    assert lean[0]["provenance"]["data"] == provenance["data"]


def test_a_dropped_fragment_text_is_an_error(use_fixture_data):
    benchmark = registry.get("condambigqa")
    question = benchmark.load(benchmark.options({}))[0]
    lean = question.without_fragment_text()
    assert len(lean.fragments) == len(question.fragments) > 0
    assert (lean.id, lean.question, lean.properties) == (
        question.id, question.question, question.properties)
    with pytest.raises(RuntimeError, match="drops its fragments' text"):
        build_prompt(lean, Setting.MAIN)
    # the closed-book prompts show no fragment: they build from a lean question
    assert build_prompt(lean, Setting.CLOSED_BOOK) == build_prompt(question,
                                                                   Setting.CLOSED_BOOK)
