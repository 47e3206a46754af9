"""Bad input is data: a hostile or damaged file given to ``condambig-score`` (outputs, data
under ``CONDAMBIG_DATA_DIR``, lm-eval and Inspect logs for ``--from-log``) or to
``condambig-report`` ends the real command with exit 2 and one stderr line naming the file,
never a traceback; outputs that are not text are scored as empty and counted aloud.

Each case runs the installed command in a subprocess on tiny files written to ``tmp_path``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.test_rescore_logs import DATE, _doc, _inspect_log, _row, _write_results

DEEP = "[" * 100_000 + "]" * 100_000  # deeper than any recursion limit
HUGE = "1" * 5_000  # over Python's int-string conversion limit (4,300 digits)


def _run(command: str, arguments: list[str], cwd: Path,
         data: Path = FIXTURE_DATA) -> subprocess.CompletedProcess:
    return warm_start.run([executable(command), *arguments], capture_output=True, text=True,
                          cwd=cwd, timeout=300,
                          env=subprocess_env(CONDAMBIG_DATA_DIR=str(data)))


def _assert_one_line_naming(result: subprocess.CompletedProcess, path: Path) -> str:
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert str(path) in lines[0] or path.name in lines[0], lines[0]
    return lines[0]


def _outputs(folder: Path, rows: list[dict]) -> Path:
    path = folder / "outputs.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


# ---------------------------------------------------------------------- outputs files


@pytest.mark.parametrize("name, content", [
    ("deep.json", DEEP),
    ("deep.jsonl", '{"id": "fx-001", "output": "x"}\n' + DEEP + "\n"),
    ("huge.json", '[{"id": "fx-001", "output": "x", "tokens": ' + HUGE + "}]"),
    ("huge.jsonl", '{"id": "fx-001", "output": "x"}\n{"id": ' + HUGE + ', "output": "y"}\n'),
], ids=["deep.json", "deep.jsonl", "huge.json", "huge.jsonl"])  # not the contents: a test's id
# is in PYTEST_CURRENT_TEST, and an environment string over 128 KB stops every subprocess
def test_unreadable_outputs_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    line = _assert_one_line_naming(_run("condambig-score", ["ambignq", "--outputs", str(path)],
                                        tmp_path), path)
    assert ("nested too deeply" if "deep" in name else "longer than 4300 digits") in line
    if name.endswith(".jsonl") and "deep" in name:
        assert "line 2" in line


def test_outputs_that_are_not_text_are_counted_and_said(tmp_path):
    path = _outputs(tmp_path, [{"id": "fx-001", "output": 5},
                               {"id": "fx-002", "output": {"answer": "x"}},
                               {"id": "fx-003", "output": "1958"}])
    result = _run("condambig-score", ["ambignq", "--outputs", str(path)], tmp_path)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "not text" in line]
    assert len(said) == 1 and "2 of 3 outputs" in said[0] and str(path) in said[0], \
        result.stderr
    scored = json.loads(result.stdout)
    assert scored["non_text_outputs"] == 2 and scored["n_scored"] == 3


def test_abg_coqa_detection_answer_must_be_text(tmp_path):
    path = _outputs(tmp_path, [{"id": "fxteststoryone|3|2", "ambiguous": False,
                                "answer": ["blue"]}])
    line = _assert_one_line_naming(
        _run("condambig-score", ["abg_coqa", "--outputs", str(path)], tmp_path), path)
    assert "'answer' must be a string" in line


def test_abg_coqa_clarified_qa_reply_index_of_5000_digits(tmp_path):
    path = _outputs(tmp_path, [{"id": f"fxteststoryone|4|2#{HUGE}", "answer": "x"}])
    line = _assert_one_line_naming(
        _run("condambig-score", ["abg_coqa", "--subtask", "clarified_qa", "--outputs",
                                 str(path)], tmp_path), path)
    assert "'reply': k" in line


# ---------------------------------------------------------------------- data files

# (benchmark, its flags, the data file under CONDAMBIG_DATA_DIR, the fixture it replaces)
DATA_FILES = [
    ("condambigqa", [], "condambigqa/condambigqa_2k.json", "condambigqa/condambigqa_fixture.json"),
    ("hotpot_flm", ["--split", "full"], "hotpotqa/hotpot_dev_distractor_v1.json", None),
    ("conditionalqa", [], "conditionalqa/dev.json", None),
    ("conditionalqa", [], "conditionalqa/documents.json", None),
    ("ambignq", [], "ambignq/dev_light.json", None),
    ("abg_coqa", [], "abg_coqa/coqa_abg_test.json", None),
]


def _data_with(tmp_path: Path, relative: str, content: str, replaces: str | None) -> Path:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    if replaces is not None:
        (data / replaces).unlink()
    (data / relative).write_text(content, encoding="utf-8")
    return data


def _huge_literal(relative: str) -> str:
    """The fixture file with a 5,000-digit integer as an extra first value."""
    text = (FIXTURE_DATA / relative).read_text(encoding="utf-8").lstrip()
    if text.startswith("["):
        return "[" + HUGE + ", " + text[1:]
    return '{"count": ' + HUGE + ", " + text[1:]


@pytest.mark.parametrize("kind", ["deep", "huge"])
@pytest.mark.parametrize("benchmark, flags, relative, replaces", DATA_FILES,
                         ids=[f"{b}-{r.split('/')[1]}" for b, _, r, _ in DATA_FILES])
def test_unreadable_data_file(tmp_path, benchmark, flags, relative, replaces, kind):
    content = DEEP if kind == "deep" else _huge_literal(replaces or relative)
    data = _data_with(tmp_path, relative, content, replaces)
    outputs = _outputs(tmp_path, [{"id": "x", "output": "x"}])
    line = _assert_one_line_naming(
        _run("condambig-score", [benchmark, *flags, "--outputs", str(outputs)], tmp_path,
             data), data / relative)
    assert ("nested too deeply" if kind == "deep" else "longer than 4300 digits") in line


def _with_text(relative: str, old: str, new: str) -> str:
    text = (FIXTURE_DATA / relative).read_text(encoding="utf-8")
    assert old in text
    return text.replace(old, new, 1)


@pytest.mark.parametrize("benchmark, relative, replaces, edit", [
    # a 5,000-digit number in a string the loader reads as an integer
    ("abg_coqa", "abg_coqa/coqa_abg_test.json", None,
     lambda r: _with_text(r, '"turn_id": 3', f'"turn_id": "{HUGE}"')),
    ("condambigqa", "condambigqa/condambigqa_2k.json", "condambigqa/condambigqa_fixture.json",
     lambda r: _with_text("condambigqa/condambigqa_fixture.json", '"title": "1. City',
                          f'"title": "{HUGE}. City')),
])
def test_data_file_with_a_5000_digit_number_in_a_string(tmp_path, benchmark, relative,
                                                        replaces, edit):
    data = _data_with(tmp_path, relative, edit(relative), replaces)
    outputs = _outputs(tmp_path, [{"id": "x", "output": "x"}])
    _assert_one_line_naming(
        _run("condambig-score", [benchmark, "--outputs", str(outputs)], tmp_path, data),
        data / relative)


def test_hotpot_flm_tsv_field_over_the_csv_limit(tmp_path):
    relative = "hotpot_flm/gt_dataset_v3_400_of_600.tsv"
    lines = (FIXTURE_DATA / relative).read_text(encoding="utf-8").splitlines(keepends=True)
    fields = lines[2].split("\t")
    fields[3] = "x" * (200 * 1024)  # the incomplete context, 200 KiB
    lines[2] = "\t".join(fields)
    data = _data_with(tmp_path, relative, "".join(lines), None)
    outputs = _outputs(tmp_path, [{"id": "x", "output": "x"}])
    line = _assert_one_line_naming(
        _run("condambig-score", ["hotpot_flm", "--split", "test", "--outputs", str(outputs)],
             tmp_path, data), data / relative)
    assert "line 3" in line and "field larger than field limit" in line


# ---------------------------------------------------------------------- --from-log


def _samples(folder: Path, rows: list[dict | str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_ambignq_{DATE}.jsonl"
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n"
                            for row in rows), encoding="utf-8")
    return path


def _good_row(key: str = "fx-001") -> dict:
    return _row(_doc("ambignq", key), "1958")


def _edited(change: Callable[[dict], None]) -> dict:
    row = _good_row("fx-002")
    change(row)
    return row


BAD_ROWS = {
    "deep line": DEEP,
    "5000-digit number": '{"doc_id": ' + HUGE + "}",
    "options a list": _edited(lambda r: r["doc"].update(options=[1])),
    "judge an object": _edited(lambda r: r["doc"].update(judge={})),
    "options a JSON list": _edited(lambda r: r["doc"].update(options="[1, 2]")),
    "options not JSON": _edited(lambda r: r["doc"].update(options="{not json")),
    "filtered_resps an object": _edited(lambda r: r.update(filtered_resps={"0": "x"})),
    "resps an object": _edited(lambda r: (r.pop("filtered_resps"), r.update(resps={"a": 1}))),
}


@pytest.mark.parametrize("bad", list(BAD_ROWS), ids=[k.replace(" ", "_") for k in BAD_ROWS])
def test_lm_eval_samples_line_of_the_wrong_shape(tmp_path, bad):
    path = _samples(tmp_path / "out", [_good_row(), BAD_ROWS[bad]])
    line = _assert_one_line_naming(
        _run("condambig-score", ["ambignq", "--from-log", str(path)], tmp_path), path)
    assert "line 2" in line


def test_logged_responses_that_are_not_text_are_counted_and_said(tmp_path):
    odd = _good_row("fx-002")
    odd["filtered_resps"] = [5]
    path = _samples(tmp_path / "out", [_good_row(), odd])
    result = _run("condambig-score", ["ambignq", "--from-log", str(path)], tmp_path)
    assert result.returncode == 0, result.stderr
    said = [line for line in result.stderr.splitlines() if "not text" in line]
    assert len(said) == 1 and "1 of 2 logged responses" in said[0] and str(path) in said[0]
    assert json.loads(result.stdout)["non_text_outputs"] == 1


def test_renamed_samples_file_with_options_of_the_wrong_type(tmp_path):
    row = _good_row()
    row["doc"]["options"] = [1]
    path = tmp_path / "renamed.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    _assert_one_line_naming(_run("condambig-score", ["ambignq", "--from-log", str(path)],
                                 tmp_path), path)


def _results_file(folder: Path, content: str) -> Path:
    path = folder / f"results_{DATE}.json"
    path.write_text(content, encoding="utf-8")
    return path


BAD_RESULTS = {
    "deep": DEEP,
    "5000-digit number": '{"results": {}, "configs": {}, "n": ' + HUGE + "}",
    "task results a list": json.dumps({"results": {"ambignq": [1]}, "configs": {}}),
    "provenance data a list": json.dumps({
        "results": {"ambignq": {}},
        "configs": {"ambignq": {"metadata": {"provenance": {"data": [1]}}}}}),
}


@pytest.mark.parametrize("bad", list(BAD_RESULTS), ids=[k.replace(" ", "_") for k in BAD_RESULTS])
def test_lm_eval_results_file_beside_the_samples(tmp_path, bad):
    folder = tmp_path / "out" / "model"
    _samples(folder, [_good_row()])
    results = _results_file(folder, BAD_RESULTS[bad])
    _assert_one_line_naming(
        _run("condambig-score", ["ambignq", "--from-log", str(tmp_path / "out")], tmp_path),
        results)


@pytest.mark.parametrize("metadata", [
    {"benchmark": "ambignq", "options": [1, 2]},
    {"benchmark": "ambignq", "options": {}, "provenance": {"data": [1]}},
], ids=["options_a_list", "provenance_data_a_list"])
def test_inspect_log_with_metadata_of_the_wrong_type(tmp_path, metadata):
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput

    spec = EvalSpec(created="2026-01-02T03:04:05+00:00", task="condambig/ambignq",
                    dataset=EvalDataset(), model="hf/tiny", config=EvalConfig(),
                    metadata=metadata)
    path = tmp_path / "run.eval"
    write_eval_log(EvalLog(eval=spec, status="success", samples=[EvalSample(
        id="fx-001", epoch=1, input="(prompt)", target="",
        output=ModelOutput.from_content("hf/tiny", "1958"))]), str(path))
    _assert_one_line_naming(_run("condambig-score", ["ambignq", "--from-log", str(path)],
                                 tmp_path), path)


# ---------------------------------------------------------------------- condambig-report


@pytest.mark.parametrize("content", [
    DEEP,
    '{"results": {}, "configs": {}, "n": ' + HUGE + "}",
    json.dumps({"results": {"ambignq": [1]}, "configs": {}}),
    json.dumps({"results": {"ambignq": {"f1_answer_all,none": 0.5}}, "configs": [1]}),
], ids=["deep", "5000_digit_number", "task_results_a_list", "configs_a_list"])
def test_report_on_an_unreadable_results_file(tmp_path, content):
    results = _results_file(tmp_path, content)
    _assert_one_line_naming(
        _run("condambig-report", [str(results), "-o", str(tmp_path / "report.md"),
                                  "--no-figures"], tmp_path), results)


def test_report_on_an_inspect_log_with_options_a_list(tmp_path):
    from inspect_ai.log import EvalMetric, EvalResults, EvalScore, write_eval_log

    path = _inspect_log(tmp_path / "run.eval", None)
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    log.eval.metadata = {"benchmark": "ambignq", "options": [1, 2]}
    log.results = EvalResults(total_samples=1, completed_samples=1, scores=[EvalScore(
        name="ambignq", scorer="ambignq",
        metrics={"f1_answer_all": EvalMetric(name="f1_answer_all", value=0.5)})])
    write_eval_log(log, str(path))
    _assert_one_line_naming(
        _run("condambig-report", [str(path), "-o", str(tmp_path / "report.md"),
                                  "--no-figures"], tmp_path), path)


def test_report_skips_an_unreadable_file_in_a_folder_saying_why(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    _results_file(folder, DEEP)
    _write_results(folder, {"ambignq": {"f1_answer_all": 0.5}}, date="2026-01-03T00-00-00")
    result = _run("condambig-report", [str(folder), "-o", str(tmp_path / "report.md"),
                                       "--no-figures"], tmp_path)
    assert "Traceback" not in result.stderr
    skipped = [line for line in result.stderr.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and f"results_{DATE}.json" in skipped[0] \
        and "nested too deeply" in skipped[0], result.stderr


def test_an_output_with_a_lone_surrogate_is_scored_replaced_and_counted(tmp_path):
    """One ``"\\ud800"`` in one output: scored with U+FFFD in its place and counted, with a
    line naming the file (it used to refuse the whole file naming none)."""
    import json

    from tests.conftest import FIXTURE_DATA, executable, subprocess_env

    questions = json.loads((FIXTURE_DATA / "ambignq" / "dev_light.json").read_text())
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": q["id"], "output": '["x\ud800"]' if i == 0 else '["y"]'}
                                   for i, q in enumerate(questions)]))
    per_sample = tmp_path / "per-sample.jsonl"
    done = warm_start.run([executable("condambig-score"), "ambignq", "--outputs", str(outputs),
                           "--per-sample", str(per_sample)], capture_output=True, text=True,
                          env=subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA)), timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["lone_surrogate_outputs"] == 1 and result["metrics"]["parse_rate"] == 1.0
    assert result["n_scored"] == len(questions)
    [line] = [line for line in done.stderr.splitlines() if "surrogate" in line]
    assert str(outputs) in line and "1 of" in line
    assert len(per_sample.read_text().splitlines()) == len(questions)
