"""``condambig-score --from-log`` trusts no single copy of what a log says it was scored
with: the run's ``scoring_sha256`` (benchmark, task version, options, outputs digest) must
be given again by the log, the copies of its options and version must agree, and a run of
another task version is named in one line.

The command runs in process (``condambig_tasks.cli.main``, what the console script calls,
its exit status, stdout and stderr kept): what is checked is what it says, not how the
script starts."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import options_to_json, task_version
from condambig_tasks.provenance import outputs_sha256, scoring_sha256
from tests.condambigqa.test_consistency import RAW_OUTPUTS
from tests.conftest import FIXTURE_DATA
from tests.test_rescore_logs import DATE, _doc, _row, _write_results, _write_samples

BENCHMARK = registry.get("condambigqa")
MAIN = options_to_json(BENCHMARK, BENCHMARK.options({"setting": "main"}))
GOLD = options_to_json(BENCHMARK, BENCHMARK.options({"setting": "gold_conditions"}))
OUTPUTS_DIGEST = outputs_sha256(RAW_OUTPUTS.items())


@pytest.fixture
def score(monkeypatch, capsys, tmp_path):
    """``score(*arguments)``: ``condambig-score condambigqa ARGUMENTS`` through the console
    script's ``main()`` in this process, as a completed process (exit status, stdout, stderr)."""
    from condambig_tasks.cli import main

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    for name in [name for name in os.environ if name.startswith("CONDAMBIG_JUDGE_")]:
        monkeypatch.delenv(name)  # no user judge, as tests.conftest.subprocess_env has it
    monkeypatch.chdir(tmp_path)

    def run(*arguments: str) -> subprocess.CompletedProcess:
        capsys.readouterr()
        arguments = ["condambigqa", *arguments]
        code = main(arguments)
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["condambig-score", *arguments], code, out, err)

    return run


def _from_log(score, log: Path) -> subprocess.CompletedProcess:
    return score("--from-log", str(log))


def _provenance(options: dict, version: str = BENCHMARK.version, **extra) -> dict:
    return {"benchmark": "condambigqa", "task_version": version, "options": options,
            "data": {"records_sha256": None}, "outputs_sha256": OUTPUTS_DIGEST, **extra}


def _lm_eval_log(folder: Path, docs_options: dict, provenance: dict) -> Path:
    _write_samples(folder, "condambigqa", [_row(_doc("condambigqa", key, docs_options), output)
                                           for key, output in RAW_OUTPUTS.items()])
    results = _write_results(folder, {"condambigqa": {"parse_rate": 1.0}}, DATE)
    content = json.loads(results.read_text())
    content["configs"]["condambigqa"] = {"metadata": {"provenance": provenance}}
    results.write_text(json.dumps(content))
    return folder


def _inspect_log(path: Path, options: dict, provenance: dict) -> Path:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalResults,
        EvalSample,
        EvalScore,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput

    spec = EvalSpec(created="2026-01-02T03:04:05+00:00", task="condambig/condambigqa",
                    dataset=EvalDataset(), model="hf/tiny", config=EvalConfig(),
                    metadata={"benchmark": "condambigqa", "options": options, "judged": False,
                              "full_task_version": BENCHMARK.version,
                              "provenance": provenance})
    samples = [EvalSample(id=key, epoch=1, input="(prompt)", target="",
                          output=ModelOutput.from_content("hf/tiny", output))
               for key, output in RAW_OUTPUTS.items()]
    results = EvalResults(scores=[EvalScore(name="benchmark_scorer",
                                            scorer="condambig/benchmark_scorer",
                                            metadata={"outputs_sha256": OUTPUTS_DIGEST})])
    write_eval_log(EvalLog(eval=spec, status="success", samples=samples, results=results),
                   str(path))
    return path


def _refused(result: subprocess.CompletedProcess, *parts: str) -> str:
    assert result.returncode == 2 and result.stdout == "", result.stderr[-2000:]
    assert "Traceback" not in result.stderr
    [line] = result.stderr.splitlines()
    for part in parts:
        assert part in line, line
    return line


def test_an_inspect_log_edited_to_another_setting_is_refused(tmp_path, score):
    """The task metadata says gold_conditions, its provenance block (written with it
    before generation) main: the model was asked under one of them only."""
    log = _inspect_log(tmp_path / "run.eval", GOLD, _provenance(MAIN))
    _refused(_from_log(score, log), str(log), "options differ",
             "setting: 'gold_conditions' in the task metadata, 'main' in its provenance block",
             "the log was edited after the run")
    # the log as written: scored, its outputs digest matched
    log = _inspect_log(tmp_path / "kept.eval", MAIN, _provenance(MAIN))
    result = _from_log(score, log)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["source"]["outputs_sha256_matched"] is True


def test_an_lm_eval_log_edited_everywhere_is_refused_by_its_scoring_digest(tmp_path, score):
    """Docs and provenance both edited to gold_conditions: the scoring digest the run
    recorded over main is not given again."""
    recorded = scoring_sha256("condambigqa", BENCHMARK.version, MAIN, OUTPUTS_DIGEST)
    folder = _lm_eval_log(tmp_path / "out", GOLD, _provenance(GOLD, scoring_sha256=recorded))
    _refused(_from_log(score, folder), "samples_condambigqa_", "scoring_sha256",
             recorded[:12], "the log was edited after the run")
    folder = _lm_eval_log(tmp_path / "kept", MAIN, _provenance(MAIN, scoring_sha256=recorded))
    result = _from_log(score, folder)
    assert result.returncode == 0, result.stderr
    source = json.loads(result.stdout)["source"]
    assert (source["scoring_sha256"], source["scoring_sha256_matched"]) == (recorded, True)


def test_an_lm_eval_log_whose_docs_were_edited_is_refused(tmp_path, score):
    """A run recorded before the scoring digest: its docs and its provenance disagree."""
    folder = _lm_eval_log(tmp_path / "out", GOLD, _provenance(MAIN))
    _refused(_from_log(score, folder), "samples_condambigqa_",
             "setting: 'gold_conditions' in the samples' docs, 'main' in the results' "
             "provenance block")


def test_a_run_of_another_task_version_is_named_in_one_line(tmp_path, score):
    comparability = task_version(BENCHMARK).comparability
    for version, words in ((f"{comparability - 1}-A", "its numbers can differ"),
                           (f"{comparability}-Z", "the same scores")):
        folder = _lm_eval_log(tmp_path / version, MAIN, _provenance(MAIN, version=version))
        result = _from_log(score, folder)
        assert result.returncode == 0, result.stderr
        [line] = [line for line in result.stderr.splitlines() if "task version" in line]
        assert f"task version {version}; this is version {BENCHMARK.version}" in line
        assert words in line
        assert json.loads(result.stdout)["source"]["task_version"] == version
    folder = _lm_eval_log(tmp_path / "today", MAIN, _provenance(MAIN))
    assert "task version" not in _from_log(score, folder).stderr


def test_condambig_score_records_the_scoring_digest(tmp_path, score):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    result = score("--outputs", str(outputs))
    assert result.returncode == 0, result.stderr
    provenance = json.loads(result.stdout)["provenance"]
    assert provenance["scoring_sha256"] == scoring_sha256(
        "condambigqa", BENCHMARK.version, provenance["options"], provenance["outputs_sha256"])
    assert provenance["options"] == MAIN and provenance["outputs_sha256"] == OUTPUTS_DIGEST
