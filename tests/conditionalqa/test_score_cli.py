"""``condambig-score conditionalqa``: official structure, official quirks, raw outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condambig_tasks.cli import main
from tests.conditionalqa.conftest import FIXTURE_FOLDER

REFERENCE = FIXTURE_FOLDER / "dev.json"
DOCUMENTS = FIXTURE_FOLDER / "documents.json"
OFFICIAL_KEYS = ["EM", "EM_with_conditions", "F1", "F1_with_conditions"]


def run_cli(capsys, *arguments: str) -> tuple[int, dict | None, str]:
    code = main(["conditionalqa", *arguments])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else None), captured.err


def write(tmp_path: Path, name: str, value) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def gold_predictions() -> list[dict]:
    return [{"id": q["id"], "answers": q["answers"]} for q in json.loads(REFERENCE.read_text())]


def test_gold_predictions_score_one_with_the_official_structure(tmp_path, capsys):
    pred = write(tmp_path, "pred.json", gold_predictions())
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    assert list(report) == ["total", "yesno", "extractive", "conditional"]
    for block in report.values():
        assert list(block) == OFFICIAL_KEYS
        assert all(value == pytest.approx(1.0) for value in block.values())


def test_always_yes_matches_hand_computation(tmp_path, capsys):
    pred = write(tmp_path, "pred.json", [{"id": p["id"], "answers": [["yes", []]]} for p in gold_predictions()])
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    # q0 yes -> 1; q1 yes[c,c]/no[c] -> EM 1/2, with conditions 0; every other question 0.
    assert report["total"] == pytest.approx(dict(zip(OFFICIAL_KEYS, [1.5 / 6, 1 / 6, 1.5 / 6, 1 / 6], strict=True)))
    assert report["yesno"] == pytest.approx(dict(zip(OFFICIAL_KEYS, [0.75, 0.5, 0.75, 0.5], strict=True)))
    assert report["extractive"] == pytest.approx(dict(zip(OFFICIAL_KEYS, [0.0] * 4, strict=True)))
    # conditional: q1 (EM 0.5, w/ conds 0) and q4 (0)
    assert report["conditional"] == pytest.approx(dict(zip(OFFICIAL_KEYS, [0.25, 0.0, 0.25, 0.0], strict=True)))


def test_missing_predictions_are_left_out_with_a_warning(tmp_path, capsys):
    predictions = [{"id": p["id"], "answers": [["yes", []]]} for p in gold_predictions()][1:]
    predictions.append({"id": "not-a-question", "answers": []})
    pred = write(tmp_path, "pred.json", predictions)
    code, report, err = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    assert "1 of 6 reference questions have no prediction" in err and "left out" in err
    assert "not-a-question" in err
    # only q1..q5 averaged: EM = 0.5 / 5
    assert report["total"]["EM"] == pytest.approx(0.1)
    assert report["yesno"]["EM"] == pytest.approx(0.5)


def test_empty_breakdown_is_null(tmp_path, capsys):
    pred = write(tmp_path, "pred.json", [{"id": "dev-fixture-0", "answers": [["yes", []]]}])
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    assert report["total"]["EM"] == 1.0
    assert report["extractive"] == dict(zip(OFFICIAL_KEYS, [None] * 4, strict=True))


RAW_OUTPUTS = {
    "dev-fixture-0": '{"answers": [{"answer": "yes", "conditions": []}]}',
    "dev-fixture-1": 'Here you go:\n```json\n{"answers": [{"answer": "yes", "conditions": [6, 7]}, '
    '{"answer": "no", "conditions": [8, 99]}]}\n```',
    "dev-fixture-2": "It takes about four weeks.",
    "dev-fixture-3": '{"answers": ["a photo of your garden"]}',
    "dev-fixture-4": '{"answers": [{"answer": "£110", "conditions": []}, {"answer": "£55", "conditions": [8]}]}',
    "dev-fixture-5": '{"answers": []}',
}


def test_raw_outputs_are_parsed_and_scored_with_documents(tmp_path, capsys):
    pred = write(tmp_path, "raw.json", [{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()])
    code, report, _ = run_cli(
        capsys, "--pred", str(pred), "--ref", str(REFERENCE), "--documents", str(DOCUMENTS)
    )
    assert code == 0
    assert report["parsing"] == {
        "parse_rate": pytest.approx(5 / 6),
        "parse_failures": 1,
        "out_of_range_citations": 1,
        "truncated_documents": 0,
        "questions": 6,
    }
    # per question EM: 1, 1, 0 (parse failure), 1/2 (one of two, padded), 1, 1
    assert report["total"]["EM"] == pytest.approx(4.5 / 6)
    assert report["total"]["EM_with_conditions"] == pytest.approx(4.5 / 6)
    assert report["extractive"]["EM"] == pytest.approx(1.5 / 3)


def test_raw_outputs_equal_the_official_file_they_parse_to(tmp_path, capsys):
    raw = write(tmp_path, "raw.jsonl", [])
    raw.write_text("\n".join(json.dumps({"id": k, "output": v}) for k, v in RAW_OUTPUTS.items()))
    documents = {d["url"]: d["contents"] for d in json.loads(DOCUMENTS.read_text())}
    references = {q["id"]: q for q in json.loads(REFERENCE.read_text())}
    official = []
    for identifier, output in RAW_OUTPUTS.items():
        from condambig_tasks.conditionalqa.parser import parse_model_output

        contents = documents[references[identifier]["url"]]
        parsed = parse_model_output(output, {i + 1: e for i, e in enumerate(contents)})
        if parsed.parsed:
            official.append({"id": identifier, "answers": parsed.official_answers()})
        else:  # a failure scores 0: an answer that matches nothing, for the official file
            official.append({"id": identifier, "answers": [["<parse failure>", []]]})
    official_path = write(tmp_path, "official.json", official)
    _, from_raw, _ = run_cli(capsys, "--pred", str(raw), "--ref", str(REFERENCE), "--documents", str(DOCUMENTS))
    _, from_official, _ = run_cli(capsys, "--pred", str(official_path), "--ref", str(REFERENCE))
    from_raw.pop("parsing")
    assert from_raw == from_official


def test_raw_outputs_without_documents_name_the_missing_file(tmp_path, capsys, monkeypatch, isolated_cache):
    data_dir = tmp_path / "data"
    (data_dir / "conditionalqa").mkdir(parents=True)
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    pred = write(tmp_path, "raw.json", [{"id": "dev-fixture-0", "output": "{}"}])
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 2
    assert "documents.json" in err and "CONDAMBIG_DATA_DIR" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"id": "x"}, "JSON list of objects"),
        ([{"id": "dev-fixture-0", "answers": "yes"}], "must be a list"),
        ([{"id": "dev-fixture-0", "answers": [["yes", []]]}, {"id": "dev-fixture-1", "output": "{}"}], "either 'answers'"),
        ([{"id": "elsewhere", "answers": []}], "no prediction id matches"),
        ([], "no predictions"),
    ],
)
def test_bad_prediction_files_exit_2_with_a_reason(tmp_path, capsys, content, message):
    pred = write(tmp_path, "pred.json", content)
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 2
    assert message in err


def test_missing_files_exit_2(tmp_path, capsys):
    code, _, err = run_cli(capsys, "--pred", str(tmp_path / "none.json"), "--ref", str(REFERENCE))
    assert code == 2 and "does not exist" in err
    pred = write(tmp_path, "pred.json", gold_predictions())
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(tmp_path / "dev.json"))
    assert code == 2 and "does not exist" in err


def test_reference_defaults_to_the_dev_split(tmp_path, capsys, fixture_data):
    pred = write(tmp_path, "pred.json", gold_predictions())
    code, report, _ = run_cli(capsys, "--pred", str(pred))
    assert code == 0 and report["total"]["F1_with_conditions"] == pytest.approx(1.0)
