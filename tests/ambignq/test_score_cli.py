"""``condambig-score ambignq`` on the official prediction formats (hand-computed numbers)."""

from __future__ import annotations

import json

import pytest

from condambig_tasks.cli import main
from tests.conftest import FIXTURE_DATA

REFERENCE = FIXTURE_DATA / "ambignq" / "dev_light.json"
ANSWERS_ONLY = {
    "fx-001": ["Marie Curie"],                 # 1.0
    "fx-002": ["1932", "1958", "1960"],        # 2 of 2 gold, 2 of 3 predicted: 0.8
    "fx-003": [],                              # 0.0
    "fx-004": "Lake Orrin",                    # a bare string is one answer: 1.0 (single annotation)
    "fx-005": ["nine"],                        # 1 of 2 gold, 1 of 1 predicted: 2/3
    "fx-006": ["Copper River"],                # articles ignored: 1.0
}
PAIRS = {
    "fx-001": [{"question": "who discovered polonium with her husband?", "answer": "Marie Curie"}],
    "fx-002": [{"question": "When did the first Harbour Bridge tram run?", "answer": "1932"},
               {"question": "when did the harbour bridge tram run?", "answer": "1958"}],
    "fx-003": [],
    "fx-004": [],
    "fx-005": [{"question": "How many moons did Tessaly have in 1990?", "answer": "nine"}],
    "fx-006": [],
}


def _score(tmp_path, capsys, predictions, *extra: str) -> dict:
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(predictions))
    code = main(["ambignq", "--pred", str(pred), "--ref", str(REFERENCE), *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    result = json.loads(captured.out)
    return {**result["metrics"], "n_questions": result["n_scored"]}


def test_answers_only_format(tmp_path, capsys):
    result = _score(tmp_path, capsys, ANSWERS_ONLY)
    assert result["f1_answer_all"] == pytest.approx((1 + 0.8 + 0 + 1 + 2 / 3 + 1) / 6)
    assert result["f1_answer_multi"] == pytest.approx((0.8 + 0 + 2 / 3) / 3)
    assert result["f1_bleu1"] is None and result["f1_edit_f1"] is None  # no questions given
    assert result["n_questions"] == 6


def test_question_answer_pairs_format(tmp_path, capsys):
    result = _score(tmp_path, capsys, PAIRS)
    # fx-002: edit-F1 pairs 1.0 (+first) and 0.0 (no edit vs +last): 2*1/(2+2) = 0.5
    # fx-005: gold -does +did +planet +in +1990, predicted -does +did +in +1990: 8/9; 2*(8/9)/3
    assert result["f1_edit_f1"] == pytest.approx((0.5 + 0 + 2 * (8 / 9) / 3) / 3)
    assert result["f1_answer_all"] == pytest.approx((1 + 1 + 0 + 0 + 2 / 3 + 0) / 6)
    assert set(result) >= {"f1_bleu1", "f1_bleu2", "f1_bleu3", "f1_bleu4"}
    assert 0 < result["f1_bleu4"] < result["f1_bleu1"] < 1


def test_raw_outputs_are_parsed_as_the_task_parses_them(tmp_path, capsys):
    raw = [{"id": qid, "output": json.dumps(pairs)} for qid, pairs in PAIRS.items()]
    raw[2]["output"] = "no idea"
    result = _score(tmp_path, capsys, raw)
    assert result["f1_edit_f1"] == pytest.approx(_score(tmp_path, capsys, PAIRS)["f1_edit_f1"])
    assert result["parse_rate"] == pytest.approx(3 / 6)  # fx-001, fx-002, fx-005; "[]" has no pair


def test_missing_predictions_are_left_out_and_counted(tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"fx-001": ["Marie Curie"]}))
    assert main(["ambignq", "--pred", str(pred), "--ref", str(REFERENCE)]) == 0
    captured = capsys.readouterr()
    assert "9 of 10 items have no output (left out)" in captured.err
    result = json.loads(captured.out)
    assert result["metrics"]["f1_answer_all"] == 1.0
    assert (result["n_scored"], result["missing_outputs"]) == (1, 9)


def test_unknown_ids_are_an_error(tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"fx-001": ["Marie Curie"], "nope": ["x"]}))
    assert main(["ambignq", "--pred", str(pred), "--ref", str(REFERENCE)]) == 2
    assert "1 id(s) are not AmbigNQ item ids (first: 'nope')" in capsys.readouterr().err


def test_mixed_formats_are_rejected(tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps({"fx-001": ["a"], "fx-002": [{"question": "q", "answer": "a"}]}))
    assert main(["ambignq", "--pred", str(pred), "--ref", str(REFERENCE)]) == 2
    assert "mixes answer strings and question-answer objects" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["[]", "{}", ""])
def test_an_empty_outputs_file_is_an_error(tmp_path, capsys, content):
    pred = tmp_path / "pred.json"
    pred.write_text(content)
    assert main(["ambignq", "--pred", str(pred), "--ref", str(REFERENCE)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("condambig-score ambignq: ") and str(pred) in error
