"""``condambig-score conditionalqa``: official scores, official quirks, raw outputs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condambig_tasks.cli import main
from tests.conditionalqa.conftest import FIXTURE_FOLDER

REFERENCE = FIXTURE_FOLDER / "dev.json"
SCORES = ["em", "em_with_conditions", "f1", "f1_with_conditions"]
SUBSETS = {"total": "", "yesno": "yesno_", "extractive": "extractive_",
           "conditional": "conditional_"}
READING = ["parse_rate", "out_of_range_citations", "truncated_documents", "outputs_truncated"]


def block(result: dict, subset: str) -> dict:
    """One official breakdown of the CLI's metrics, as {em, ..., f1_with_conditions}."""
    return {key: result["metrics"][SUBSETS[subset] + key] for key in SCORES}


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


def test_gold_predictions_score_one_on_every_official_metric(tmp_path, capsys):
    pred = write(tmp_path, "pred.json", gold_predictions())
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    official = [prefix + key for prefix in SUBSETS.values() for key in SCORES]
    # the headline (overall F1 with conditions) first, suite_score last
    assert list(report["metrics"]) == ["f1_with_conditions"] + [
        name for name in official if name != "f1_with_conditions"] + READING + ["suite_score"]
    assert report["metrics"]["suite_score"] == pytest.approx(1.0)
    for subset in SUBSETS:
        assert all(value == pytest.approx(1.0) for value in block(report, subset).values())
    # the official format is not read from raw replies: no parsing metrics
    assert all(report["metrics"][name] is None for name in READING)
    assert report["n_scored"] == 10 and report["missing_outputs"] == 0


def test_always_yes_matches_hand_computation(tmp_path, capsys):
    pred = write(tmp_path, "pred.json", [{"id": p["id"], "answers": [["yes", []]]} for p in gold_predictions()])
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    # q0 yes -> 1; q1 yes[c,c]/no[c] -> EM 1/2, with conditions 0; q7 yes -> 1; every
    # other question 0 (q6 is a plain no).
    assert block(report, "total") == pytest.approx(dict(zip(SCORES, [2.5 / 10, 2 / 10, 2.5 / 10, 2 / 10], strict=True)))
    assert block(report, "yesno") == pytest.approx(dict(zip(SCORES, [2.5 / 4, 2 / 4, 2.5 / 4, 2 / 4], strict=True)))
    assert block(report, "extractive") == pytest.approx(dict(zip(SCORES, [0.0] * 4, strict=True)))
    # conditional: q1 (EM 0.5, w/ conds 0) and q4 (0)
    assert block(report, "conditional") == pytest.approx(dict(zip(SCORES, [0.25, 0.0, 0.25, 0.0], strict=True)))


def test_missing_predictions_are_left_out_with_a_warning(tmp_path, capsys):
    # evaluate.py skips a reference question without a prediction (appends no score)
    predictions = [{"id": p["id"], "answers": [["yes", []]]} for p in gold_predictions()][1:]
    pred = write(tmp_path, "pred.json", predictions)
    code, report, err = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    assert "1 of 10 items have no output" in err and "left out" in err
    assert report["missing_outputs"] == 1 and report["n_scored"] == 9
    # only q1..q9 averaged: EM = (0.5 + 1) / 9 (q1 and q7), yes/no: q1, q6, q7
    assert report["metrics"]["em"] == pytest.approx(1.5 / 9)
    assert report["metrics"]["yesno_em"] == pytest.approx(1.5 / 3)


def test_unknown_prediction_ids_are_an_error(tmp_path, capsys):
    predictions = [*gold_predictions(), {"id": "not-a-question", "answers": []}]
    pred = write(tmp_path, "pred.json", predictions)
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 2 and "not-a-question" in err


def test_empty_breakdown_is_null(tmp_path, capsys):
    pred = write(tmp_path, "pred.json", [{"id": "dev-fixture-0", "answers": [["yes", []]]}])
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    assert report["metrics"]["em"] == 1.0
    assert block(report, "extractive") == dict(zip(SCORES, [None] * 4, strict=True))


RAW_OUTPUTS = {
    "dev-fixture-0": '{"answers": [{"answer": "yes", "conditions": []}]}',
    "dev-fixture-1": 'Here you go:\n```json\n{"answers": [{"answer": "yes", "conditions": [6, 7]}, '
    '{"answer": "no", "conditions": [8, 99]}]}\n```',
    "dev-fixture-2": "It takes about four weeks.",
    "dev-fixture-3": '{"answers": ["a photo of your garden"]}',
    "dev-fixture-4": '{"answers": [{"answer": "£110", "conditions": []}, {"answer": "£55", "conditions": [8]}]}',
    "dev-fixture-5": '{"answers": []}',
    "dev-fixture-6": '{"answers": [{"answer": "no", "conditions": []}]}',
    "dev-fixture-7": '{"answers": ["yes"]}',
    "dev-fixture-8": '{"answers": [{"answer": "within 4 weeks", "conditions": []}]}',
    "dev-fixture-9": '{"answers": [{"answer": "£300", "conditions": []}]}',
}


def test_raw_outputs_are_parsed_and_scored_with_the_documents_beside_the_reference(tmp_path, capsys):
    pred = write(tmp_path, "raw.json", [{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()])
    code, report, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 0
    assert {name: report["metrics"][name] for name in READING} == {
        "parse_rate": pytest.approx(9 / 10),
        "out_of_range_citations": 1,
        "truncated_documents": 0,
        "outputs_truncated": 0,
    }
    assert report["n_scored"] == 10
    # per question EM: 1, 1, 0 (parse failure), 1/2 (one of two, padded), 1, 1, then
    # 1, 1, 1, 0 ("£300" is not "up to £300")
    assert report["metrics"]["em"] == pytest.approx(7.5 / 10)
    assert report["metrics"]["em_with_conditions"] == pytest.approx(7.5 / 10)
    assert report["metrics"]["extractive_em"] == pytest.approx(2.5 / 5)


def test_per_sample_file_holds_values_and_parsed_answers(tmp_path, capsys):
    pred = write(tmp_path, "raw.json", [{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()])
    per_sample = tmp_path / "per_sample.jsonl"
    code, _, _ = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE),
                         "--per-sample", str(per_sample))
    assert code == 0
    rows = {row["id"]: row for row in map(json.loads, per_sample.read_text().splitlines())}
    assert rows["dev-fixture-4"]["details"]["answers"] == [["£110", []], ["£55", ["<p>Electric boats pay half the fee.</p>"]]]
    assert "parse failure" in rows["dev-fixture-2"]["explanation"]


def test_raw_outputs_equal_the_official_file_they_parse_to(tmp_path, capsys):
    raw = write(tmp_path, "raw.jsonl", [])
    raw.write_text("\n".join(json.dumps({"id": k, "output": v}) for k, v in RAW_OUTPUTS.items()))
    documents = {d["url"]: d["contents"] for d in json.loads((FIXTURE_FOLDER / "documents.json").read_text())}
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
    _, from_raw, _ = run_cli(capsys, "--pred", str(raw), "--ref", str(REFERENCE))
    _, from_official, _ = run_cli(capsys, "--pred", str(official_path), "--ref", str(REFERENCE))
    for name in READING:
        from_raw["metrics"].pop(name)
        from_official["metrics"].pop(name)
    assert from_raw["metrics"] == from_official["metrics"]


def test_raw_outputs_without_documents_name_the_missing_file(tmp_path, capsys, monkeypatch, isolated_cache):
    data_dir = tmp_path / "data"
    (data_dir / "conditionalqa").mkdir(parents=True)
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    reference = tmp_path / "questions" / "dev.json"  # no documents.json beside it
    reference.parent.mkdir()
    reference.write_text(REFERENCE.read_text(encoding="utf-8"), encoding="utf-8")
    pred = write(tmp_path, "raw.json", [{"id": "dev-fixture-0", "output": "{}"}])
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(reference))
    assert code == 2
    assert "documents.json" in err and "CONDAMBIG_DATA_DIR" in err
    # the official format quotes its conditions: no documents needed
    official = write(tmp_path, "official.json", [{"id": "dev-fixture-0", "answers": [["yes", []]]}])
    code, report, _ = run_cli(capsys, "--pred", str(official), "--ref", str(reference))
    assert code == 0 and report["metrics"]["em"] == 1.0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ({"id": "x"}, "expected"),
        ([{"id": "dev-fixture-0", "answers": "yes"}], "must be a list"),
        ([{"id": "dev-fixture-0", "answers": [["yes", []]]}, {"id": "dev-fixture-1", "output": "{}"}], "either 'answers'"),
        ([{"id": "elsewhere", "answers": []}], "not ConditionalQA item ids"),
        ([{"id": "dev-fixture-0", "answers": []}, {"id": "dev-fixture-0", "answers": []}], "more than once"),
        ([], "the file holds no outputs"),
    ],
)
def test_bad_prediction_files_exit_2_with_a_reason(tmp_path, capsys, content, message):
    pred = write(tmp_path, "pred.json", content)
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(REFERENCE))
    assert code == 2
    assert message in err


def test_missing_files_exit_2(tmp_path, capsys):
    code, _, err = run_cli(capsys, "--pred", str(tmp_path / "none.json"), "--ref", str(REFERENCE))
    assert code == 2 and "no such file" in err
    pred = write(tmp_path, "pred.json", gold_predictions())
    code, _, err = run_cli(capsys, "--pred", str(pred), "--ref", str(tmp_path / "dev.json"))
    assert code == 2 and "does not exist" in err


def test_reference_defaults_to_the_dev_split(tmp_path, capsys, fixture_data):
    pred = write(tmp_path, "pred.json", gold_predictions())
    code, report, _ = run_cli(capsys, "--pred", str(pred))
    assert code == 0 and report["metrics"]["f1_with_conditions"] == pytest.approx(1.0)
    assert report["options"] == {"split": "dev", "max_document_words": 4000}
