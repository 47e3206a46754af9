"""The run record (``condambig-score --record``): one versioned file holding a scored run,
written from outputs or from any front end's log, read back by ``--from-log`` and the
report (:mod:`condambig_tasks.run_record`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from condambig_tasks import registry, run_logs, run_record
from condambig_tasks.cli import main
from condambig_tasks.data import load_items
from condambig_tasks.provenance import outputs_sha256
from condambig_tasks.register import RegisterError
from condambig_tasks.register import read_run as register_read_run
from tests.ambignq.scripted_outputs import RAW_OUTPUTS as AMBIGNQ_OUTPUTS
from tests.test_rescore_logs import _doc, _row, _write_samples


def _score(argv: list[str], capsys) -> tuple[int, dict | None, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


def _strict_json(path: Path) -> dict:
    """The file as JSON, refusing NaN / Infinity (a record is valid JSON)."""
    def refuse(value: str) -> None:
        raise AssertionError(f"{path} holds {value}")
    return json.loads(path.read_text(encoding="utf-8"), parse_constant=refuse)


def _outputs_file(folder: Path, outputs: dict[str, str]) -> Path:
    path = folder / "outputs.json"
    path.write_text(json.dumps([{"id": k, "output": v} for k, v in outputs.items()]))
    return path


def _judge_free(name: str) -> bool:
    benchmark = registry.get(name)
    return not benchmark.needs_corpus_step(benchmark.options({}), False)


@pytest.mark.parametrize("name", [n for n in registry.available() if _judge_free(n)])
def test_a_record_is_the_printed_json_with_its_outputs_and_samples_and_rescores_to_it(
        name, tmp_path, use_fixture_data, capsys):
    benchmark = registry.get(name)
    items = load_items(benchmark, benchmark.options({}))
    outputs = {benchmark.item_id(item): f"answer {number}" for number, item in
               enumerate(items)}
    record_path, per_sample = tmp_path / "run.json", tmp_path / "run.per-sample.jsonl"
    code, printed, err = _score([name, "--outputs", str(_outputs_file(tmp_path, outputs)),
                                 "--record", str(record_path), "--per-sample",
                                 str(per_sample)], capsys)
    assert code == 0, err
    record = _strict_json(record_path)
    assert next(iter(record)) == run_record.VERSION_KEY
    assert record[run_record.VERSION_KEY] == run_record.RECORD_VERSION
    assert {k: v for k, v in record.items()
            if k not in (run_record.VERSION_KEY, "outputs", "samples")} == printed
    assert record["samples"] == [json.loads(line) for line in per_sample.read_text().splitlines()]
    # the outputs are exactly those the recorded digest names
    assert outputs_sha256((row["id"], row["output"]) for row in record["outputs"]) == \
        printed["provenance"]["outputs_sha256"]
    assert {row["id"]: row["output"] for row in record["outputs"]} == outputs

    code, again, err = _score([name, "--from-log", str(record_path)], capsys)
    assert code == 0, err
    assert again["metrics"] == printed["metrics"]
    assert again["source"]["framework"] == run_logs.CLI
    assert again["source"]["outputs_sha256_matched"] is True
    assert again["source"]["scoring_sha256_matched"] is True
    assert again["reported"] == printed["metrics"]


def test_the_report_reads_a_records_samples_without_a_file_beside_it(tmp_path,
                                                                     use_fixture_data, capsys):
    record_path = tmp_path / "model-a.json"
    code, printed, _ = _score(["ambignq", "--outputs",
                               str(_outputs_file(tmp_path, AMBIGNQ_OUTPUTS)),
                               "--record", str(record_path)], capsys)
    assert code == 0
    for given in ([record_path], [tmp_path]):  # named, or found in a folder
        [run] = run_logs.read_results(given).runs
        assert run.framework == run_logs.CLI and run.per_sample == record_path
        scored = run_logs.read_scored_samples(run)
        assert scored.reason is None
        assert [s.id for s in scored.samples] == list(AMBIGNQ_OUTPUTS)
        assert run.metrics == printed["metrics"]
    from condambig_tasks.report.cli import main as report_main

    page = tmp_path / "report.md"
    assert report_main([str(record_path), "-o", str(page), "--no-figures"]) == 0
    sources = page.read_text().split("## Sources")[1]
    assert sources.count(str(record_path)) == 1  # its samples are in it: no second file


def test_an_lm_eval_log_becomes_a_record_with_its_model_and_outputs(tmp_path,
                                                                    use_fixture_data, capsys):
    folder = tmp_path / "out" / "org__model-x"
    date = "2026-01-02T03-04-05.678901"
    _write_samples(folder, "ambignq", [_row(_doc("ambignq", key), output, raw="raw")
                                       for key, output in AMBIGNQ_OUTPUTS.items()], date)
    (folder / f"results_{date}.json").write_text(json.dumps({
        "results": {"ambignq": {"alias": "ambignq", "f1_answer_all,none": 0.25}},
        "configs": {"ambignq": {}}, "model_name": "org/model-x"}))
    record_path = tmp_path / "record.json"
    code, printed, err = _score(["ambignq", "--from-log", str(tmp_path / "out"), "--record",
                                 str(record_path)], capsys)
    assert code == 0, err
    record = _strict_json(record_path)
    assert record["model"] == "org/model-x"
    # the filtered responses the run scored, not the raw ones
    assert {row["id"]: row["output"] for row in record["outputs"]} == AMBIGNQ_OUTPUTS
    assert record["source"]["framework"] == run_logs.LM_EVAL
    [run] = run_logs.read_results([record_path]).runs
    assert run.model == "org/model-x" and run.n == len(AMBIGNQ_OUTPUTS)
    # a record of a record is the same run
    code, again, err = _score(["ambignq", "--from-log", str(record_path)], capsys)
    assert code == 0, err
    assert again["metrics"] == printed["metrics"]


@pytest.fixture
def saved_record(tmp_path, use_fixture_data, capsys) -> Path:
    path = tmp_path / "saved" / "run.json"
    code, _, err = _score(["ambignq", "--outputs", str(_outputs_file(tmp_path, AMBIGNQ_OUTPUTS)),
                           "--record", str(path)], capsys)
    assert code == 0, err
    return path


def _rewrite(path: Path, change) -> None:
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def test_a_record_of_a_later_version_is_refused_in_one_line(saved_record, capsys):
    _rewrite(saved_record, lambda r: r.update({run_record.VERSION_KEY: 2}))
    code, _, err = _score(["ambignq", "--from-log", str(saved_record)], capsys)
    assert code == 2
    assert err.count("\n") == 1 and "version 2" in err and "upgrade condambig" in err
    with pytest.raises(run_record.RunRecordError, match="upgrade condambig"):
        run_logs.read_results([saved_record])
    # met in a folder: a notice, the other runs still read
    found = run_logs.read_results([saved_record.parent])
    assert found.runs == [] and "upgrade condambig" in found.notices[0]


@pytest.mark.parametrize("change, message", [
    (lambda r: r.update(version="1-A"), "not the ones the run scored"),
    (lambda r: r["outputs"][0].update(output="edited"), None),
    (lambda r: r.pop("samples"), "without its 'samples'"),
    (lambda r: r.update(outputs=[{"id": "fx-001", "output": 3}]), "not [{'id', 'output'}]"),
    (lambda r: r["outputs"].append({"id": "fx-001@2", "output": "x"}), "several epochs"),
])
def test_an_edited_record_is_a_one_line_error_or_warning(saved_record, change, message,
                                                          capsys):
    _rewrite(saved_record, change)
    code, result, err = _score(["ambignq", "--from-log", str(saved_record)], capsys)
    if message is None:  # edited outputs: rescored as given, with the warning the logs get
        assert code == 0 and result["source"]["outputs_sha256_matched"] is False
        assert "are not the ones the run scored" in err
        return
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_a_record_of_an_unknown_benchmark_is_not_read_as_another(saved_record, capsys):
    _rewrite(saved_record, lambda r: r.update(benchmark="sixth_benchmark"))
    code, _, err = _score(["ambignq", "--from-log", str(saved_record)], capsys)
    assert code == 2 and "no condambig run of a known task" in err
    found = run_logs.read_results([saved_record])
    assert found.runs == [] and "not registered" in found.notices[0]


def test_an_inspect_log_becomes_a_record_with_its_model(tmp_path, use_fixture_data, capsys):
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    from tests.test_rescore_logs import _inspect_log

    samples = [EvalSample(id=key, epoch=1, input="(prompt)", target="",
                          output=ModelOutput.from_content("hf/tiny", output))
               for key, output in AMBIGNQ_OUTPUTS.items()]
    log = _inspect_log(tmp_path / "run.eval", samples)
    record_path = tmp_path / "records" / "tiny.json"
    code, printed, err = _score(["ambignq", "--from-log", str(log), "--record",
                                 str(record_path)], capsys)
    assert code == 0, err
    record = _strict_json(record_path)
    assert record["model"] == "hf/tiny" and record["source"]["framework"] == run_logs.INSPECT
    assert {row["id"]: row["output"] for row in record["outputs"]} == AMBIGNQ_OUTPUTS
    [run] = run_logs.read_results([record_path.parent]).runs
    assert (run.model, run.task, run.metrics) == ("hf/tiny", "ambignq", printed["metrics"])
    # condambig-score's numbers, not the Inspect run's: not listed as the run in a register
    assert run.framework == run_logs.CLI and run_record.SCORED_BY not in record["source"]
    with pytest.raises(RegisterError) as refused:
        register_read_run(record_path)
    assert str(refused.value) == (f"{record_path}: a run scored by condambig-score, not an "
                                  "Inspect run; give finished runs of condambig Inspect tasks.")


def test_a_log_that_gives_no_record_says_why_in_one_line(tmp_path, use_fixture_data):
    """What the Inspect task-end hook prints instead of a record: an unfinished run, a log
    whose samples hold no scores."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    from tests.test_rescore_logs import _inspect_log

    samples = [EvalSample(id=key, epoch=1, input="(prompt)", target="",
                          output=ModelOutput.from_content("hf/tiny", output))
               for key, output in AMBIGNQ_OUTPUTS.items()]
    log = _inspect_log(tmp_path / "run.eval", samples)  # no results: did not finish
    with pytest.raises(run_logs.RunLogError) as raised:
        run_logs.record_of_log(log)
    message = str(raised.value)
    assert message.startswith(f"{log}: no run record: the Inspect run did not finish")
    assert "\n" not in message


@pytest.mark.parametrize("writable", [True, False])
def test_lm_eval_aggregation_writes_the_record_or_one_line_and_keeps_the_run(
        writable, tmp_path, use_fixture_data, monkeypatch, caplog):
    """``CONDAMBIG_RECORD_DIR`` in lm-eval's aggregation step: the record of the task, or,
    when it cannot be written, one warning; the metric is aggregated either way."""
    from types import SimpleNamespace

    from condambig_tasks.lm_eval_glue import LmEvalTask

    target = tmp_path / "records"
    if not writable:
        target.write_text("a file where the folder should be")
    monkeypatch.setenv("CONDAMBIG_RECORD_DIR", str(target))
    task = SimpleNamespace(task_name=f"ambignq_record_{writable}",
                           config=SimpleNamespace(metadata={}))
    hooks = LmEvalTask("ambignq", task)
    docs = hooks.load_docs(pretrained="tiny")["test"]
    per_doc = [hooks.process_results(doc, [AMBIGNQ_OUTPUTS[doc["id"]]]) for doc in docs]
    metric = next(name for name, value in per_doc[0].items() if isinstance(value, dict))
    value = hooks.aggregate(metric, [v[metric] for v in per_doc])
    assert value == value
    if writable:
        [path] = target.iterdir()
        assert path.name.startswith(f"{task.task_name}_model_")
        record = _strict_json(path)
        assert len(record["samples"]) == len(docs) and record["source"]["framework"] == "lm_eval"
        assert {row["id"]: row["output"] for row in record["outputs"]} == \
            {doc["id"]: AMBIGNQ_OUTPUTS[doc["id"]] for doc in docs}
        # read back as the lm-eval run it is, its samples inside it
        [run] = run_logs.read_results([path]).runs
        assert (run.framework, run.task, run.per_sample) == ("lm_eval", task.task_name, path)
        assert run_logs.read_scored_samples(run).reason is None
    else:
        said = [r.getMessage() for r in caplog.records if "no run record" in r.getMessage()]
        assert len(said) == 1 and "cannot write" in said[0]


def test_a_run_given_as_its_log_and_its_record_is_read_once_only_when_they_agree():
    """Same framework, task, model, outputs digest and numbers: one run, kept as its record;
    other numbers (another scoring) or no digest: two runs, as before."""
    benchmark = registry.get("ambignq")

    def run(source: str, record: bool, f1: float = 0.5, digest: str | None = "d" * 64):
        return run_logs.RunResult(
            source=Path(source), framework=run_logs.INSPECT, model="hf/m",
            benchmark="ambignq", variant=benchmark.variants[0], task="ambignq",
            metrics={"f1_answer_all": f1}, outputs_sha256=digest,
            per_sample=Path(source) if record else None)

    runs, notices = run_logs.each_run_once([run("log.eval", False), run("rec.json", True)])
    assert [str(r.source) for r in runs] == ["rec.json"]
    assert notices == ["log.eval and rec.json are one inspect run (task ambignq, model "
                       "hf/m, the same outputs and numbers): read once, from rec.json"]
    for other in (run("rec.json", True, f1=0.25), run("rec.json", True, digest=None)):
        runs, notices = run_logs.each_run_once([run("log.eval", False), other])
        assert len(runs) == 2 and not notices


def test_a_file_given_and_also_found_in_a_folder_given_is_read_once(tmp_path,
                                                                    use_fixture_data, capsys):
    record_path = tmp_path / "runs" / "model-a.json"
    code, _, _ = _score(["ambignq", "--outputs", str(_outputs_file(tmp_path, AMBIGNQ_OUTPUTS)),
                         "--record", str(record_path)], capsys)
    assert code == 0
    found = run_logs.read_results([record_path, record_path.parent, record_path])
    assert [run.source for run in found.runs] == [record_path] and not found.notices
