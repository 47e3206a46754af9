"""``condambig-register``: the entries it writes are inspect_evals register entries.

The real command runs in a subprocess (the unusable-input cases but one call its ``main``
in this process: the same code, without an interpreter start each); every entry it writes
is loaded with inspect_evals' own loader and model (``inspect_evals.metadata``,
inspect-evals 0.26.0: installed with ``--no-deps``, see README "Test"). The logs are
written with Inspect's own ``write_eval_log``; tests/test_report.py checks the same on the
logs of a real run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from condambig_tasks import registry
from condambig_tasks.register import (
    INSPECT_SOURCE_DIR,
    inspect_tasks,
    register_tasks,
    task_options,
)
from tests.conftest import REPO_ROOT, executable, subprocess_env
from tests.support import warm_start

metadata = pytest.importorskip(
    "inspect_evals.metadata",
    reason="inspect-evals is not installed: pip install --no-deps inspect-evals==0.26.0")

REPOSITORY = "https://github.com/example-owner/condambig"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
# the arXiv ids of the papers as cited: the abstract pages of Li et al., Toles et al. and
# Sun et al., and AmbigQA's as Toles et al. cite it; Abg-CoQA (AKBC 2021) has none
ARXIV_IDS = {"condambigqa": "2502.01523", "hotpot_flm": "2310.11571",
             "conditionalqa": "2110.06884", "ambignq": "2004.10645"}


def command() -> list[str]:
    """The console script; an editable install older than it runs the module it names."""
    script = executable("condambig-register")
    return [script] if Path(script).is_file() else [sys.executable, "-m",
                                                    "condambig_tasks.register"]


def run(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return warm_start.run([*command(), *arguments], capture_output=True, text=True,
                          env=subprocess_env(), cwd=cwd, timeout=300)


def register(out: Path, *arguments: str, cwd: Path) -> subprocess.CompletedProcess:
    return run(["--repository-url", REPOSITORY, "--commit", COMMIT, "--out", str(out),
                *arguments], cwd)


def test_the_console_script_runs_this_module():
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert config["project"]["scripts"]["condambig-register"] == "condambig_tasks.register:main"


def load_entries(out: Path) -> dict[str, Any]:
    """The entries as inspect_evals loads a register folder (id = the folder's name)."""
    listing = metadata.load_listing(out)
    assert all(isinstance(e, metadata.ExternalEvalMetadata) for e in listing.evals)
    return {entry.id: entry for entry in listing.evals}


def inspect_log(path: Path, task: str, model: str, metrics: dict[str, float], *,
                headline: str | None, version: str, completed: int = 3,
                benchmark: str | None = None, grader: str | None = None,
                metadata: dict | None = None) -> Path:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalMetric,
        EvalResults,
        EvalScore,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelConfig

    benchmark = benchmark or task.split("/")[-1].split("_detection")[0]
    spec = EvalSpec(created="2026-01-02T03:04:05+00:00", task=task, task_version=version,
                    dataset=EvalDataset(), model=model, config=EvalConfig(),
                    metadata={"benchmark": benchmark, "headline_metric": headline,
                              **(metadata or {})},
                    model_roles={"grader": ModelConfig(model=grader)} if grader else None)
    results = EvalResults(total_samples=completed, completed_samples=completed,
                          scores=[EvalScore(name=benchmark, scorer=benchmark, metrics={
                              name: EvalMetric(name=name, value=value)
                              for name, value in metrics.items()})])
    write_eval_log(EvalLog(eval=spec, status="success", results=results), str(path))
    return path


@pytest.fixture(scope="module")
def plain_register(tmp_path_factory) -> Path:
    """The register folder of one run without logs, read by every test of such a run (one
    subprocess instead of one per test)."""
    tmp = tmp_path_factory.mktemp("plain_register")
    result = register(tmp / "register", cwd=tmp)
    assert result.returncode == 0, result.stderr[-2000:]
    return tmp / "register"


def test_one_valid_entry_per_inspect_task(plain_register):
    entries = load_entries(plain_register)
    tasks = {task.name: task for task in register_tasks()}
    assert set(entries) == set(tasks) and len(tasks) >= 5
    # the task taking its subtask as -T would repeat its subtasks' entries
    assert {task.name for task in inspect_tasks()} - set(tasks) == {"abg_coqa"}
    for name, entry in entries.items():
        [task] = entry.tasks
        assert task.name == name
        assert (REPO_ROOT / task.task_path).is_file(), task.task_path
        assert f"def {name}(" in (REPO_ROOT / task.task_path).read_text()
        assert str(entry.source.repository_url).rstrip("/") == REPOSITORY
        assert entry.source.repository_commit == COMMIT
        assert entry.source.maintainers == ["example-owner"]
        assert entry.contributors == ["example-owner"]
        benchmark = registry.get(tasks[name].benchmark)
        assert entry.common_title.startswith(benchmark.title)
        paper = benchmark.catalogue.paper
        assert benchmark.title in entry.full_title and paper.title in entry.full_title
        assert entry.paper_title == paper.title
        assert "\n" not in entry.description
        assert entry.description.startswith(" ".join(benchmark.catalogue.description.split()))
        assert entry.tags == list(benchmark.catalogue.tags)
        assert entry.runtime_metadata.requires.internet is benchmark.catalogue.requires_internet
        assert task.dataset_samples == benchmark.expected_size(
            task_options(benchmark, tasks[name]))
        assert entry.evaluation_report is None
    assert entries["abg_coqa_detection"].tasks[0].dataset_samples == 1055
    assert entries["abg_coqa_clarified_qa"].tasks[0].dataset_samples is None
    assert entries["ambignq"].tasks[0].dataset_samples == 2002
    assert entries["conditionalqa"].tasks[0].dataset_samples == 285


def test_a_task_sharing_its_file_links_its_line(plain_register):
    """abg_coqa.py holds several @tasks: each entry's source link names its task's line,
    read from the file; a file of one task is linked whole (no comment)."""
    entries = load_entries(plain_register)
    for name, entry in entries.items():
        [task] = entry.tasks
        lines = (REPO_ROOT / task.task_path).read_text().splitlines()
        if sum(line.startswith("@task") for line in lines) == 1:
            assert task.comment is None, name
            continue
        prefix = f"Source: {REPOSITORY}/blob/{COMMIT}/{task.task_path}#L"
        assert task.comment.startswith(prefix), name
        line = int(task.comment.removeprefix(prefix))
        definition = next(text for text in lines[line:] if not text.startswith("@"))
        assert lines[line - 1].startswith("@task") and \
            definition.startswith(f"def {name}("), name
    assert len({entry.tasks[0].comment for name, entry in entries.items()
                if name.startswith("abg_coqa")}) == 3


def test_task_paths_follow_the_package_layout():
    import runpy
    from unittest import mock

    with mock.patch("setuptools.setup") as setup:  # setup.py declares the package folders
        runpy.run_path(str(REPO_ROOT / "setup.py"), run_name="setup_probe")
    assert setup.call_args.kwargs["package_dir"]["condambig"] == INSPECT_SOURCE_DIR


def test_arxiv_links_are_the_papers_as_cited(plain_register):
    entries = load_entries(plain_register)
    tasks = {task.name: task.benchmark for task in inspect_tasks()}
    for name, entry in entries.items():
        arxiv = ARXIV_IDS.get(tasks[name])
        assert (str(entry.arxiv) if entry.arxiv else None) == \
            (arxiv and f"https://arxiv.org/abs/{arxiv}"), name
    assert {tasks[name] for name in entries} >= set(ARXIV_IDS) | {"abg_coqa"}


def test_logs_give_an_evaluation_report_of_the_headline(tmp_path):
    version = registry.get("ambignq").version
    logs = tmp_path / "logs"
    logs.mkdir()
    inspect_log(logs / "a.eval", "condambig/ambignq", "openai/model-a",
                {"f1_answer_all": 0.5, "f1_answer_all_stderr": 0.1, "parse_rate": 1.0},
                headline="f1_answer_all", version=version)
    inspect_log(logs / "b.eval", "condambig/ambignq", "hf/model-b",
                {"f1_answer_all": 0.25, "parse_rate": 0.5},
                headline="f1_answer_all", version=version, completed=2002)
    result = register(tmp_path / "register", str(logs), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    entries = load_entries(tmp_path / "register")
    report = entries["ambignq"].evaluation_report
    assert report is not None and report.commit == COMMIT and report.version == version
    rows = {row.model: row for row in report.results}
    assert set(rows) == {"openai/model-a", "hf/model-b"}
    assert [(m.key, m.value) for m in rows["openai/model-a"].metrics] == \
        [("f1_answer_all", 0.5), ("stderr", 0.1)]
    assert [(m.key, m.value) for m in rows["hf/model-b"].metrics] == [("f1_answer_all", 0.25)]
    assert rows["hf/model-b"].task == "ambignq" and rows["hf/model-b"].provider == "hf"
    assert report.command == "inspect eval condambig/ambignq --model <model>"
    assert report.notes == ["Runs on part of the split: openai/model-a: 3 of 2002 samples."]
    assert all(entry.evaluation_report is None for name, entry in entries.items()
               if name != "ambignq")


def test_the_grader_is_listed_for_a_judged_run_only(tmp_path):
    """The row and its command name the grader of a judged run; a grader role given to a
    run that did not judge (``-T judge=false``) changed no number and is left out."""
    version = registry.get("condambigqa").version
    metrics = {"combined_score": 0.4, "combined_score_stderr": 0.05, "citation_score": 0.5}
    inspect_log(tmp_path / "judged.eval", "condambig/condambigqa", "hf/m", metrics,
                headline="combined_score", version=version, grader="openai/judge",
                metadata={"judged": True})
    inspect_log(tmp_path / "plain.eval", "condambig/condambigqa", "hf/n", metrics,
                headline="citation_score", version=version, grader="openai/judge")
    result = register(tmp_path / "register", str(tmp_path / "judged.eval"),
                      str(tmp_path / "plain.eval"), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = load_entries(tmp_path / "register")["condambigqa"].evaluation_report
    rows = {row.model: row for row in report.results}
    assert [(m.key, m.value) for m in rows["hf/m"].metrics] == \
        [("combined_score", 0.4), ("stderr", 0.05)]
    assert [(m.key, m.value) for m in rows["hf/n"].metrics] == [("citation_score", 0.5)]
    assert rows["hf/m"].command == \
        "inspect eval condambig/condambigqa --model-role grader=openai/judge --model hf/m"
    assert rows["hf/n"].command == "inspect eval condambig/condambigqa --model hf/n"


def test_a_run_by_file_path_is_the_tasks_run(tmp_path):
    """`inspect eval inspect_tasks/ambignq.py@ambignq` logs the task as `ambignq`: the
    benchmark it recorded makes it this package's task; the report's command names the
    task as installed."""
    version = registry.get("ambignq").version
    log = inspect_log(tmp_path / "a.eval", "ambignq", "hf/m", {"f1_answer_all": 0.5},
                      headline="f1_answer_all", version=version)
    result = register(tmp_path / "register", str(log), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    report = load_entries(tmp_path / "register")["ambignq"].evaluation_report
    assert [row.task for row in report.results] == ["ambignq"]
    assert report.command == "inspect eval condambig/ambignq --model <model>"


# the case run as the real command in a subprocess (its whole stderr is the one line, no
# warning of an import before it); the others call main() here, the console script's code
SUBPROCESS_CASE = "other_version"


@pytest.mark.parametrize("case", ["other_version", "no_headline", "nan_headline",
                                  "not_condambig", "bad_commit", "missing_log",
                                  "other_benchmark", "by_subtask", "not_a_log"])
def test_unusable_input_is_one_line(tmp_path, case, capsys, monkeypatch):
    version = registry.get("ambignq").version
    log = tmp_path / "run.eval"
    arguments: list[str] = [str(log)]
    if case == "other_version":
        inspect_log(log, "condambig/ambignq", "hf/m", {"f1_answer_all": 0.5},
                    headline="f1_answer_all", version="0.1")
    elif case == "no_headline":
        inspect_log(log, "condambig/ambignq", "hf/m", {"parse_rate": 0.5}, headline=None,
                    version=version)
    elif case == "nan_headline":
        inspect_log(log, "condambig/ambignq", "hf/m", {"f1_answer_all": float("nan")},
                    headline="f1_answer_all", version=version)
    elif case == "not_condambig":
        inspect_log(log, "other/task", "hf/m", {"accuracy": 0.5}, headline="accuracy",
                    version=version)
    elif case == "other_benchmark":  # a task of that name recording another benchmark
        inspect_log(log, "ambignq", "hf/m", {"f1_answer_all": 0.5}, headline="f1_answer_all",
                    version=version, benchmark="conditionalqa")
    elif case == "by_subtask":  # the task has no entry: its subtasks have theirs
        inspect_log(log, "condambig/abg_coqa", "hf/m", {"f1": 0.5}, headline="f1",
                    version=version, benchmark="abg_coqa")
    elif case == "bad_commit":
        arguments = ["--commit", "main"]
    elif case == "not_a_log":  # JSON of no known kind: said as what the register takes
        log = tmp_path / "notes.json"
        log.write_text('{"a": 1}')
        arguments = [str(log)]
    arguments = ["--repository-url", REPOSITORY, "--commit", COMMIT,
                 "--out", str(tmp_path / "register"), *arguments]
    if case == SUBPROCESS_CASE:
        result = run(arguments, tmp_path)
        returncode, stderr = result.returncode, result.stderr
    else:
        from condambig_tasks.register import main

        monkeypatch.chdir(tmp_path)
        returncode = main(arguments)  # an exception escaping it fails the test here
        stderr = capsys.readouterr().err
    lines = stderr.strip().splitlines()
    assert returncode == 2 and len(lines) == 1, stderr[-2000:]
    assert lines[0].startswith("condambig-register: ")
    assert "Traceback" not in stderr
    if case not in ("bad_commit", "missing_log"):
        assert str(log) in lines[0]
    if case == "not_a_log":
        assert lines[0].endswith(": not an Inspect log (.eval, or .json from --log-format "
                                 "json); give finished runs of condambig Inspect tasks.")
    assert not (tmp_path / "register").exists()  # nothing half-written


def test_entries_are_yaml_inspect_evals_reads_back(plain_register):
    raw = yaml.safe_load((plain_register / "condambigqa" / "eval.yaml").read_text())
    assert "id" not in raw  # inspect_evals takes the id from the folder's name
    [task] = raw["tasks"]  # its file holds its settings' tasks too: linked at its line
    assert task.pop("comment").startswith(
        f"Source: {REPOSITORY}/blob/{COMMIT}/{INSPECT_SOURCE_DIR}/condambigqa.py#L")
    assert task == {"name": "condambigqa", "task_path": f"{INSPECT_SOURCE_DIR}/condambigqa.py",
                    "dataset_samples": 2000}
