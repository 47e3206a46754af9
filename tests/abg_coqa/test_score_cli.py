"""``condambig-score abg_coqa`` with raw and structured predictions."""

from __future__ import annotations

import json

import pytest

from condambig_metrics.abg_coqa import corpus_bleu
from condambig_tasks.cli import main
from tests.abg_coqa.scripted_outputs import EXPECTED, RAW_OUTPUTS
from tests.conftest import FIXTURE_DATA

REFERENCE = FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"


def score(tmp_path, capsys, subtask: str, predictions: list[dict], *extra: str) -> dict:
    pred = tmp_path / f"{subtask}.json"
    pred.write_text(json.dumps(predictions))
    code = main(["abg_coqa", "--subtask", subtask, "--pred", str(pred), "--ref", str(REFERENCE), *extra])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)["metrics"]


def raw(subtask: str) -> list[dict]:
    return [{"id": key, "output": value} for key, value in RAW_OUTPUTS[subtask].items()]


@pytest.mark.parametrize("subtask", ["detection", "clarified_qa"])
def test_raw_outputs(tmp_path, capsys, subtask):
    result = score(tmp_path, capsys, subtask, raw(subtask))
    for name, value in EXPECTED[subtask].items():
        assert result[name] == pytest.approx(value), name


def test_raw_clarification_outputs_are_parsed_before_bleu(tmp_path, capsys):
    result = score(tmp_path, capsys, "clarification", raw("clarification"))
    expected = corpus_bleu(
        ["Do you mean the red boat or the blue boat?", "Which tree are you asking about?"],
        [["Do you mean the red boat or the blue boat?", "Are you asking about the old boat?"],
         ["Which tree do you mean?"]],
    )
    assert {k: result[k] for k in expected} == pytest.approx(expected)
    assert 0 < result["bleu4"] < result["bleu1"] < 100 and result["parse_rate"] == 1.0


def test_structured_predictions(tmp_path, capsys):
    detection = [
        {"id": "fxstoryone|3|2", "ambiguous": False, "answer": "blue"},
        {"id": "fxstoryone|4|2", "ambiguous": True},
        {"id": "fxstorytwo|2|1", "ambiguous": True, "answer": ""},
        {"id": "fxstorytwo|3|1", "ambiguous": False, "answer": "books"},
        {"id": "fxstorythree|5|1", "ambiguous": False, "answer": "yes"},
    ]
    result = score(tmp_path, capsys, "detection", detection)
    assert (result["precision"], result["recall"], result["f1"]) == pytest.approx((0.5, 0.5, 0.5))
    assert result["parse_rate"] == 1.0
    clarified = [{"id": "fxstorythree|5|1", "reply": k, "answer": a} for k, a in enumerate(["yes", "no", "no"])]
    result = score(tmp_path, capsys, "clarified_qa", clarified)  # the other replies: left out
    assert result["f1"] == pytest.approx((1 + 1 + (1 + 0.4 + 1) / 3) / 3)
    references = [{"id": "fxstoryone|4|2", "question": "Do you mean the red boat or the blue boat?"},
                  {"id": "fxstorythree|5|1", "question": "Which tree do you mean?"}]
    assert score(tmp_path, capsys, "clarification", references)["bleu4"] == pytest.approx(100.0)


def test_wrong_ids_and_missing_predictions_are_explained(tmp_path, capsys):
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "nope", "output": "x"}]))
    assert main(["abg_coqa", "--subtask", "detection", "--pred", str(pred), "--ref", str(REFERENCE)]) == 2
    assert "are not Abg-CoQA item ids" in capsys.readouterr().err
    # items without a prediction are left out and counted
    pred.write_text(json.dumps([{"id": "fxstoryone|3|2", "output": "blue"}]))
    assert main(["abg_coqa", "--subtask", "detection", "--pred", str(pred), "--ref", str(REFERENCE)]) == 0
    captured = capsys.readouterr()
    result = json.loads(captured.out)
    assert (result["n_items"], result["n_scored"], result["missing_outputs"]) == (5, 1, 4)
    assert result["metrics"]["answer_f1"] == 1.0 and "4 of 5 items have no output" in captured.err
    pred.write_text(json.dumps([{"id": "fxstorythree|5|1", "answer": "no"}]))
    assert main(["abg_coqa", "--subtask", "clarified_qa", "--pred", str(pred), "--ref", str(REFERENCE)]) == 2
    assert "'reply': k" in capsys.readouterr().err
    pred.write_text(json.dumps([{"id": "fxstoryone|3|2", "output": "blue"}] * 2))
    assert main(["abg_coqa", "--subtask", "detection", "--pred", str(pred), "--ref", str(REFERENCE)]) == 2
    assert "appears more than once" in capsys.readouterr().err


def test_unknown_subtask_is_refused(tmp_path, capsys):
    pred = tmp_path / "p.json"
    pred.write_text(json.dumps([{"id": "fxstoryone|3|2", "output": "blue"}]))
    with pytest.raises(SystemExit):
        main(["abg_coqa", "--subtask", "summaries", "--pred", str(pred), "--ref", str(REFERENCE)])
