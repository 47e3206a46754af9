"""Inspect log samples as ``condambig-score --from-log`` and ``condambig-report`` read them:
doctored members, deep nesting, badly typed fields and repeated ids are one line naming the
log, never a traceback; memory stays bounded (the child runs under an address-space limit)."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from condambig_tasks.inspect_samples import InspectSampleError, read_samples
from tests.ambignq.scripted_outputs import RAW_OUTPUTS as AMBIGNQ_OUTPUTS
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start

MEMORY_LIMIT = 3 * 2**30  # bytes of address space the rescoring may take
FORKED_SCORE = Path(__file__).parent / "support" / "forked_score.py"


def _write_log(path: Path, outputs: dict[str, str]) -> Path:
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
                    metadata={"benchmark": "ambignq", "options": {"hub_revision": None},
                              "judged": False})
    samples = [EvalSample(id=key, epoch=1, input="(prompt)", target="",
                          output=ModelOutput.from_content("hf/tiny", output))
               for key, output in outputs.items()]
    write_eval_log(EvalLog(eval=spec, status="success", samples=samples), str(path))
    return path


def _replace_member(path: Path, name: str, content: bytes | None, extra: dict | None = None):
    """Rewrite the zip with ``name`` replaced by ``content`` (None: kept) and members added."""
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    if content is not None:
        members[name] = content
    members.update(extra or {})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members.items():
            archive.writestr(member, data)


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def _rescore_all(logs: list[Path], cwd: Path) -> list[subprocess.CompletedProcess]:
    """``condambig-score ambignq --from-log LOG`` for each log: one child process under the
    address-space limit, each command in a process forked from it (the imports done once;
    tests/support/forked_score.py)."""
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1")
    commands = [["ambignq", "--from-log", str(log)] for log in logs]
    child = subprocess.run([sys.executable, str(FORKED_SCORE)], input=json.dumps(commands),
                           env=env, cwd=cwd, capture_output=True, text=True, timeout=600,
                           preexec_fn=_limit_memory)
    assert child.returncode == 0, child.stderr[-3000:]
    return [subprocess.CompletedProcess(command, **result)
            for command, result in zip(commands, json.loads(child.stdout), strict=True)]


def _one_line_error(result: subprocess.CompletedProcess, *parts: str) -> str:
    assert result.returncode == 2, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and result.stdout == ""
    [line] = [line for line in result.stderr.splitlines() if line.strip()]
    for part in parts:
        assert part in line, line
    return line


SAMPLE = "samples/fx-001_epoch_1.json"
DOCTORED = {  # short keys: the test id is in PYTEST_CURRENT_TEST, and an environment
    # string over 128 KB stops every subprocess
    "not-json": (b"{not json at all", "is not JSON"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "not-utf8": (b"\xff\xfe junk", "is not UTF-8 text"),
    "completion-int": (json.dumps({"id": "fx-001", "epoch": 1,
                                   "output": {"completion": 5}}).encode(),
                       "'output.completion' is an integer, not a string"),
    "id-list": (json.dumps({"id": ["fx-001"], "epoch": 1}).encode(), "'id' is a list"),
}
REPEATED = "repeated-id"


@pytest.fixture(scope="module")
def rescored(tmp_path_factory) -> dict[str, tuple[Path, subprocess.CompletedProcess]]:
    """Case -> its log and what ``condambig-score --from-log`` did with it: every doctored
    log of DOCTORED, and one whose sample fx-001 appears twice, all rescored by one child."""
    folder = tmp_path_factory.mktemp("log_samples")
    logs = {}
    for case, (content, _) in DOCTORED.items():
        logs[case] = _write_log(folder / f"{case}.eval", AMBIGNQ_OUTPUTS)
        _replace_member(logs[case], SAMPLE, content)
    logs[REPEATED] = _write_log(folder / f"{REPEATED}.eval", AMBIGNQ_OUTPUTS)
    with zipfile.ZipFile(logs[REPEATED]) as archive:
        copy = archive.read(SAMPLE)
    _replace_member(logs[REPEATED], SAMPLE, None, {"samples/fx-001_epoch_1_copy.json": copy})
    results = _rescore_all(list(logs.values()), folder)
    return {case: (log, result) for (case, log), result in zip(logs.items(), results,
                                                                strict=True)}


@pytest.mark.parametrize("case", list(DOCTORED))
def test_a_doctored_sample_member_is_one_line_naming_the_log(rescored, case):
    log, result = rescored[case]
    line = _one_line_error(result, str(log), DOCTORED[case][1])
    assert line.startswith("condambig-score ambignq: ") and "give the log Inspect wrote" in line


def test_a_repeated_sample_id_is_refused_by_from_log(rescored):
    log, result = rescored[REPEATED]
    _one_line_error(result, str(log), "'fx-001' appears more than once")


def test_samples_read_as_inspect_reads_them(tmp_path):
    """The fields kept are Inspect's own: completion (also from the first choice when the
    completion was not written), epoch, error, scores."""
    from inspect_ai.log import read_eval_log

    log = _write_log(tmp_path / "run.eval", AMBIGNQ_OUTPUTS)
    sample = json.loads(zipfile.ZipFile(log).read(SAMPLE))
    sample["output"]["completion"] = ""  # Inspect fills it from choices[0]
    sample["scores"] = {"benchmark_scorer": {"value": {"f1": 0.5}, "metadata": {"k": 1},
                                             "explanation": "why"}}
    _replace_member(log, SAMPLE, json.dumps(sample).encode())
    theirs = {str(s.id): s for s in read_eval_log(str(log)).samples}
    mine = read_samples(log)
    assert [s.id for s in mine] == list(theirs)
    for sample in mine:
        assert sample.completion == theirs[sample.id].output.completion
        assert sample.epoch == 1 and not sample.failed
    [scored] = [s for s in mine if s.id == "fx-001"]
    assert scored.completion == AMBIGNQ_OUTPUTS["fx-001"]
    assert scored.scores["benchmark_scorer"].value == {"f1": 0.5}
    assert scored.scores["benchmark_scorer"].metadata == {"k": 1}
    assert scored.scores["benchmark_scorer"].explanation == "why"
    assert scored.error is None and scored.store == {}


def test_an_errored_sample_keeps_its_message_and_store(tmp_path):
    """What the task-end hook counts for a sample the grader ended in error: its error's
    message and its store (the failed judgements it recorded), as Inspect reads them."""
    from inspect_ai.log import read_eval_log

    log = _write_log(tmp_path / "run.eval", AMBIGNQ_OUTPUTS)
    sample = json.loads(zipfile.ZipFile(log).read(SAMPLE))
    sample["error"] = {"message": "JudgeFailedError: the grader refused", "traceback": "",
                       "traceback_ansi": ""}
    sample["store"] = {"condambig_failed_judgements": 3}
    _replace_member(log, SAMPLE, json.dumps(sample).encode())
    theirs = {str(s.id): s for s in read_eval_log(str(log)).samples}
    [errored] = [s for s in read_samples(log) if s.failed]
    assert errored.error == theirs[errored.id].error.message
    assert errored.store == theirs[errored.id].store == {"condambig_failed_judgements": 3}
    sample["store"] = ["not", "an", "object"]
    _replace_member(log, SAMPLE, json.dumps(sample).encode())
    with pytest.raises(InspectSampleError, match="its 'store' is a list, not an object"):
        read_samples(log)


# ---------------------------------------------------------------------- the report's reading


def test_a_per_sample_file_in_a_folder_goes_with_its_json(use_fixture_data, tmp_path, capsys):
    """A folder holding b.json and b.per-sample.jsonl is read as both were given."""
    from condambig_tasks.report.cli import main as report_main
    from condambig_tasks.run_logs import read_results
    from tests.test_report import _score_with_per_sample

    folder = tmp_path / "runs"
    folder.mkdir()
    saved, per_sample = _score_with_per_sample(use_fixture_data, folder, capsys, "model-x")
    [run] = read_results([folder]).runs
    assert run.per_sample == per_sample
    assert [run.per_sample for run in read_results([folder, per_sample]).runs] == [per_sample]
    assert report_main([str(folder), "-o", str(tmp_path / "r.md"), "--no-figures"]) == 0
    assert "give its --per-sample file" not in (tmp_path / "r.md").read_text()


def _lm_eval_run_with_samples(folder: Path, ids: list[str]) -> Path:
    """lm-eval results of ambignq with its samples file, one parse_rate per doc."""
    from tests.test_rescore_logs import DATE, _doc, _write_results, _write_samples

    rows = [{"doc_id": index, "doc": _doc("ambignq", key), "target": "", "resps": [["x"]],
             "filtered_resps": ["x"], "metrics": ["parse_rate"], "parse_rate": 1.0}
            for index, key in enumerate(ids)]
    _write_samples(folder, "ambignq", rows, DATE)
    return _write_results(folder, {"ambignq": {"parse_rate": 1.0}}, DATE)


def test_a_repeated_sample_id_is_refused_by_the_report(use_fixture_data, tmp_path):
    results = _lm_eval_run_with_samples(tmp_path / "out", ["fx-001", "fx-002", "fx-001"])
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1")
    result = warm_start.run([executable("condambig-report"), str(results), "-o",
                             str(tmp_path / "r.md"), "--no-figures"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    [line] = result.stderr.splitlines()
    assert line.startswith("condambig-report: ") and "samples_ambignq_" in line
    assert "'fx-001' appears more than once" in line
    # the same run without the repeat is reported
    _lm_eval_run_with_samples(tmp_path / "out", ["fx-001", "fx-002"])
    assert warm_start.run([executable("condambig-report"), str(results), "-o",
                           str(tmp_path / "r.md"), "--no-figures"], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=600).returncode == 0


def test_a_runs_samples_file_is_read_once_for_its_scores_and_its_outputs(use_fixture_data,
                                                                         tmp_path,
                                                                         monkeypatch):
    """The report's per-sample scores and the outputs --from-log rescores come from one
    reading of the run's samples (run_logs.Logged), not one reader each."""
    from condambig_tasks import json_files
    from condambig_tasks.run_logs import read_results, read_scored_samples

    results = _lm_eval_run_with_samples(tmp_path / "out", ["fx-001", "fx-002"])
    reads = []
    real = json_files.loads_lines

    def counted(text: str):
        reads.append(text)
        return real(text)

    monkeypatch.setattr(json_files, "loads_lines", counted)
    [run] = read_results([results]).runs
    scored = read_scored_samples(run)
    assert scored.reason is None and [s.id for s in scored.samples] == ["fx-001", "fx-002"]
    assert run.logged().outputs == [{"id": "fx-001", "output": "x"},
                                    {"id": "fx-002", "output": "x"}]
    assert len(reads) == 1


def test_a_log_inspect_wrote_is_read_in_a_process_that_had_not_imported_inspect(tmp_path):
    """Inspect compresses a .eval log's members with zstd, which the stdlib's zipfile reads
    only once Inspect has patched it: the reader must not depend on its caller having
    imported Inspect first."""
    path = _write_log(tmp_path / "log.eval", {"q1": "[]", "q2": "Answer: Ann"})
    with zipfile.ZipFile(path) as archive:
        assert any(member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)
                   for member in archive.infolist())
    read = subprocess.run(
        [sys.executable, "-c",
         "import sys\nfrom condambig_tasks.inspect_samples import read_samples\n"
         "assert 'inspect_ai' not in sys.modules\n"
         "print([(s.id, s.completion) for s in read_samples(sys.argv[1])])", str(path)],
        capture_output=True, text=True, env=subprocess_env())
    assert read.returncode == 0, read.stderr
    assert read.stdout.strip() == str([("q1", "[]"), ("q2", "Answer: Ann")])
