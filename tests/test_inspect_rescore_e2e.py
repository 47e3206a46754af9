"""Rescoring Inspect runs: ``condambig-inspect-score`` (Inspect's own ``inspect score`` with the
logged scorer arguments and grader), ``condambig-score --from-log`` on a run of several
epochs (every epoch, reduced as the run reduced them), and logs of by-path runs
(``inspect eval inspect_tasks/<file>.py@<task>``, whose task has no ``condambig/``).

Real ``inspect eval`` runs against loopback servers: a subject model that always gives the
same reply and, for Abg-CoQA clarification, a judge as the ``grader`` role.
"""

from __future__ import annotations

import json
import math
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from condambig_tasks.inspect_rescore import command_for_log
from tests.conftest import FIXTURE_DATA, REPO_ROOT, executable, subprocess_env
from tests.support import warm_start
from tests.support.judge_server import JudgeServer
from tests.test_rescore_logs import AMBIGNQ_REPLY

pytestmark = pytest.mark.e2e

GRADER = "openai-api/judge/grader"
# an epoch-2 reply that scores differently from AMBIGNQ_REPLY on every question
OTHER_REPLY = json.dumps([{"question": "which one?", "answer": "Pierre Curie"}])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Folder -> its one log: ``epochs`` (AmbigNQ and Abg-CoQA clarification, 2 epochs,
    judged by the grader) and ``no_score`` (clarification run by its file, --no-score)."""
    folder = tmp_path_factory.mktemp("inspect_rescore")
    with JudgeServer({"default": {"reply": AMBIGNQ_REPLY}}) as subject, \
            JudgeServer({"default": {"scores": {"3": 0.5, "4": 0.5}}}) as judge:
        env = _env(folder, SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k",
                   JUDGE_BASE_URL=judge.base_url, JUDGE_API_KEY="k")
        common = ["--model", "openai-api/subject/model", "--display", "none",
                  "--max-retries", "1", "--model-role", f"grader={GRADER}"]
        _run([executable("inspect"), "eval", "condambig/ambignq",
              "condambig/abg_coqa_clarification", "--epochs", "2",
              "--log-dir", str(folder / "epochs"), *common], env, folder)
        _run([executable("inspect"), "eval",
              f"{REPO_ROOT}/inspect_tasks/abg_coqa.py@abg_coqa_clarification", "--no-score",
              "--log-dir", str(folder / "no_score"), *common], env, folder)
        yield {"folder": folder, "env": env, "judge": judge,
               **{name: sorted((folder / name).glob("*.eval")) for name in
                  ("epochs", "no_score")}}


def _env(folder: Path, **extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1",
                          CONDAMBIG_CACHE_DIR=str(folder / "cache"), **extra)


def _run(command: list[str], env: dict[str, str], cwd: Path,
         ok: bool = True) -> subprocess.CompletedProcess:
    result = warm_start.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=600, stdin=subprocess.DEVNULL)
    if ok:
        assert result.returncode == 0, \
            f"{command[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def _log(path: Path):
    from inspect_ai.log import read_eval_log

    return read_eval_log(str(path))


def _metrics(log) -> dict[str, float]:
    return {name: metric.value for score in log.results.scores
            for name, metric in score.metrics.items() if not name.endswith("_stderr")}


def _of_task(paths: list[Path], task: str) -> Path:
    [path] = [path for path in paths if _log(path).eval.task.endswith(task)]
    return path


def _same(theirs: dict[str, float], ours: dict[str, float | None]) -> None:
    assert set(theirs) <= set(ours)
    for name, value in theirs.items():
        if math.isnan(value):
            assert ours[name] is None, name
        else:
            assert ours[name] == pytest.approx(value, rel=1e-9, abs=1e-12), name


def _inspect_score(log: Path, out: Path, runs, *extra: str,
                   **env: str) -> dict[str, float]:
    _run([executable("condambig-inspect-score"), str(log), "--output-file", str(out),
          *extra], {**runs["env"], **env}, runs["folder"])
    return _rescored(out)


def _inspect_score_in_process(log: Path, out: Path, runs, monkeypatch) -> dict[str, float]:
    """``_inspect_score`` with ``condambig-inspect-score``'s ``main`` in this process (its
    console script costs seconds of CPU to start; it is run by ``_inspect_score``); the
    ``inspect score`` it starts is a process of its own, as ever."""
    from condambig_tasks.inspect_rescore import main

    for name, value in runs["env"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(runs["folder"])
    assert main([str(log), "--output-file", str(out)]) == 0
    return _rescored(out)


def _rescored(out: Path) -> dict[str, float]:
    rescored = _log(out)
    assert rescored.status == "success" and rescored.results is not None
    return _metrics(rescored)


def _from_log(benchmark: str, log: Path, runs, ok: bool = True,
              *extra: str) -> subprocess.CompletedProcess:
    env = {**runs["env"], "CONDAMBIG_JUDGE_MODEL": "grader",
           "CONDAMBIG_JUDGE_BASE_URL": runs["judge"].base_url, "CONDAMBIG_JUDGE_API_KEY": "k"}
    return _run([executable("condambig-score"), benchmark, "--from-log", str(log), *extra],
                env, runs["folder"], ok=ok)


def _from_log_in_process(benchmark: str, log: Path, runs, monkeypatch,
                         capsys) -> tuple[int, str, str]:
    """``_from_log`` in this process (the console script costs seconds of CPU to start; it
    is run by ``_from_log``): exit code, stdout, stderr."""
    from condambig_tasks.cli import main

    for name in ("CONDAMBIG_DATA_DIR", "CONDAMBIG_OFFLINE", "CONDAMBIG_CACHE_DIR"):
        monkeypatch.setenv(name, runs["env"][name])
    monkeypatch.setenv("CONDAMBIG_JUDGE_MODEL", "grader")
    monkeypatch.setenv("CONDAMBIG_JUDGE_BASE_URL", runs["judge"].base_url)
    monkeypatch.setenv("CONDAMBIG_JUDGE_API_KEY", "k")
    return _in_process(main, [benchmark, "--from-log", str(log)], capsys)


def _in_process(main, argv: list[str], capsys) -> tuple[int, str, str]:
    """A project console script's ``main(argv)`` in this process: exit code, stdout,
    stderr."""
    capsys.readouterr()
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _inspect_score_itself(log: Path, out: Path, runs) -> dict[str, float]:
    """Inspect's own ``inspect score``, run with the command condambig prints for the log
    (``condambig-inspect-score`` runs the same one, from a process of its own)."""
    [inspect, *words] = shlex.split(command_for_log(log))
    assert inspect == "inspect"
    _run([executable("inspect"), *words, "--output-file", str(out)], runs["env"],
         runs["folder"])
    rescored = _log(out)
    assert rescored.status == "success" and rescored.results is not None
    return _metrics(rescored)


def test_inspect_score_command_rescores_a_judged_run_with_its_grader(runs, tmp_path):
    path = _of_task(runs["epochs"], "abg_coqa_clarification")
    command = command_for_log(path)
    assert command.startswith(f"inspect score {path} --action overwrite --scorer "
                              "condambig/benchmark_scorer -S benchmark_name=abg_coqa ")
    assert f"--model-role grader={GRADER}" in command
    before = runs["judge"].stats()["requests"]
    # the judge cache off: every judgement is the grader's again
    rescored = _inspect_score(path, tmp_path / "rescored.eval", runs,
                              CONDAMBIG_JUDGE_CACHE="off")
    logged = _metrics(_log(path))
    assert "judge_helpfulness" in logged and not math.isnan(logged["judge_helpfulness"])
    assert rescored == pytest.approx(logged)
    assert runs["judge"].stats()["requests"] > before


def test_inspect_score_scores_a_no_score_run_of_a_task_run_by_its_file(runs, tmp_path,
                                                                      monkeypatch, capsys):
    from condambig_tasks.register import main as register

    [path] = runs["no_score"]
    log = _log(path)
    assert log.eval.task == "abg_coqa_clarification"
    assert log.results is None or not log.results.scores
    rescored = _inspect_score_in_process(path, tmp_path / "scored.eval", runs, monkeypatch)
    judged = _metrics(_log(_of_task(runs["epochs"], "abg_coqa_clarification")))
    assert rescored == pytest.approx(judged)  # one reply every time: the epochs agree

    # the register takes the log of a run by file path as the task's (its main in this
    # process: tests/test_register.py runs its console script)
    out = tmp_path / "register"
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = _in_process(register, [
        "--repository-url", "https://github.com/example/condambig", "--commit", "a" * 40,
        "--out", str(out), str(tmp_path / "scored.eval")], capsys)
    assert code == 0, stderr
    assert str(out / "abg_coqa_clarification" / "eval.yaml") in stdout
    import yaml

    entry = yaml.safe_load((out / "abg_coqa_clarification" / "eval.yaml").read_text())
    [row] = entry["evaluation_report"]["results"]
    assert row["task"] == "abg_coqa_clarification"
    assert row["metrics"][0] == {"key": "bleu4", "value": pytest.approx(rescored["bleu4"])}


def test_from_log_scores_every_epoch_as_the_run_reduced_them(runs, tmp_path, monkeypatch,
                                                            capsys):
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import ModelOutput

    path = _of_task(runs["epochs"], "ambignq")
    result = json.loads(_from_log("ambignq", path, runs).stdout)
    _same(_metrics(_log(path)), result["metrics"])
    assert result["source"]["outputs_sha256_matched"] is True  # every epoch's outputs

    # epochs that differ: Inspect's own rescoring of the log is the reference
    log = _log(path)
    for sample in log.samples:
        if sample.epoch == 2:
            sample.output = ModelOutput.from_content(log.eval.model, OTHER_REPLY)
    edited = tmp_path / "edited.eval"
    write_eval_log(log, str(edited))
    theirs = _inspect_score_itself(edited, tmp_path / "edited-scored.eval", runs)
    code, stdout, stderr = _from_log_in_process("ambignq", edited, runs, monkeypatch, capsys)
    assert code == 0, stderr
    ours = json.loads(stdout)["metrics"]
    _same(theirs, ours)
    assert ours["f1_answer_all"] != pytest.approx(result["metrics"]["f1_answer_all"])
    assert "2 epochs are scored" in stderr
    assert json.loads(stdout)["source"]["outputs_sha256_matched"] is False
    assert "the log was edited" in stderr


def test_from_log_refuses_a_reducer_it_cannot_reproduce_in_one_line(runs, tmp_path,
                                                                    monkeypatch, capsys):
    from inspect_ai.log import write_eval_log

    log = _log(_of_task(runs["epochs"], "ambignq"))
    log.eval.config.epochs_reducer = ["pass_at_2"]
    doctored = tmp_path / "pass_at.eval"
    write_eval_log(log, str(doctored))
    code, stdout, stderr = _from_log_in_process("ambignq", doctored, runs, monkeypatch,
                                                capsys)
    assert code == 2 and stdout == ""
    [line] = stderr.strip().splitlines()
    assert "pass_at_2" in line and f"condambig-inspect-score {doctored}" in line


def test_inspect_score_of_a_file_that_is_not_a_condambig_log_is_one_line(tmp_path, capsys):
    """(``condambig-inspect-score``'s ``main`` in this process: the console script is run
    by ``test_inspect_score_command_rescores_a_judged_run_with_its_grader``.)"""
    from condambig_tasks.inspect_rescore import main

    other = tmp_path / "other.eval"
    other.write_text("not a log")
    code, stdout, stderr = _in_process(main, [str(other)], capsys)
    assert code == 2 and stdout == ""
    [line] = stderr.strip().splitlines()
    assert line.startswith(f"condambig-inspect-score: {other}: cannot be read as an Inspect log")


def test_inspect_score_on_other_data_stops_instead_of_scoring_it(runs, tmp_path):
    """A sample carries its item's digest, not the item: ``inspect score`` loads the data
    again, and a question edited since the run is one line naming the data, never a score
    of the edited question (condambig.task_items)."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    questions = data / "ambignq" / "dev_light.json"
    records = json.loads(questions.read_text(encoding="utf-8"))
    records[0]["question"] += " (edited)"
    questions.write_text(json.dumps(records), encoding="utf-8")
    log = _of_task(runs["epochs"], "ambignq")
    result = _run([executable("condambig-inspect-score"), str(log), "--output-file",
                   str(tmp_path / "rescored.eval")],
                  {**runs["env"], "CONDAMBIG_DATA_DIR": str(data)}, runs["folder"], ok=False)
    assert result.returncode != 0
    lines = [line for line in result.stderr.splitlines() if line.startswith("condambig: ")]
    assert lines == [
        f"condambig: ambignq: the item of sample {records[0]['id']} is not among this "
        "process's tasks nor among the 10 items loaded with options {\"hub_revision\": null}: "
        "the data differs from the data the run read; score the log with that data "
        "(CONDAMBIG_DATA_DIR, or the hub revision the options name)."]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "rescored.eval").exists()
