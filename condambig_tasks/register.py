"""``condambig-register``: one inspect_evals register entry per Inspect task.

inspect_evals lists evaluations hosted elsewhere as register entries,
``register/<id>/eval.yaml``, validated by ``inspect_evals.metadata.ExternalEvalMetadata``
(inspect-evals 0.26.0): one task per entry (its issue #1645), each with the path of its
``@task`` file in the upstream repository and, optionally, an ``evaluation_report`` of
runs. Everything here is read from the code: the Inspect tasks as Inspect lists them
(name, file; docstring and defaults from the function) and, from the benchmark's spec in
:mod:`condambig_tasks.registry`, its title, paper, description, tags, version, whether it
needs the internet and the size of the split the task runs on (``expected_size``).

    condambig-register --repository-url https://github.com/OWNER/condambig \\
        --commit <40-hex sha> --out register/ [logs/*.eval ...]

Exit code 0, or 2 with one ``condambig-register: ...`` line for input it cannot use.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import re
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml

from condambig_tasks import registry, run_logs
from condambig_tasks.benchmark import Benchmark, Variant, find_variant, headline_metric
from condambig_tasks.errors import CondambigError, command_error

PROG = "condambig-register"
INSPECT_PREFIX = registry.INSPECT_PREFIX
# the repository folder installed as the ``condambig`` package ([tool.setuptools] package-dir)
INSPECT_SOURCE_DIR = "inspect_tasks"
ENTRY_FILE = "eval.yaml"
LOG_SUFFIXES = (".eval", ".json")
_COMMIT = re.compile(r"[0-9a-f]{40}")


class RegisterError(CondambigError):
    """An argument or a run log the register entries cannot be written from."""


@dataclass(frozen=True)
class InspectTask:
    """One ``@task`` of this package, as Inspect registers it."""

    name: str  # the function name, e.g. ``abg_coqa_detection``
    benchmark: str  # its file, ``inspect_tasks/<benchmark>.py``
    task_path: str  # the ``@task`` file in the repository
    line: int  # the line of its ``@task`` decorator in that file
    shares_file: bool  # its file holds other ``@task``s too
    summary: str  # the docstring's first paragraph, on one line
    defaults: Mapping[str, Any]  # ``-T`` parameters and their defaults


def inspect_tasks() -> list[InspectTask]:
    """Every ``@task`` in the ``condambig`` package, as ``inspect list tasks`` finds them."""
    import importlib

    from inspect_ai import list_tasks

    import condambig

    package_dir = Path(condambig.__file__).resolve().parent
    listed = list_tasks(root_dir=package_dir)
    per_file = Counter(Path(info.file).as_posix() for info in listed)
    found = []
    for info in listed:
        relative = Path(info.file)
        function = getattr(importlib.import_module(f"condambig.{relative.stem}"), info.name)
        found.append(InspectTask(
            name=info.name, benchmark=relative.stem,
            task_path=(Path(INSPECT_SOURCE_DIR) / relative).as_posix(),
            line=task_line(package_dir / relative, info.name),
            shares_file=per_file[relative.as_posix()] > 1,
            summary=one_line((inspect.getdoc(function) or "").split("\n\n")[0]),
            defaults={key: parameter.default for key, parameter
                      in inspect.signature(function).parameters.items()}))
    return sorted(found, key=lambda task: task.name)


def task_line(path: Path, name: str) -> int:
    """The line of the decorator (else the ``def``) of function ``name`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    raise RegisterError(f"{path}: defines no function {name} at module level.")


def register_tasks() -> list[InspectTask]:
    """The tasks with an entry: each runs one variant of its benchmark. A task that takes
    its variant as a parameter (``abg_coqa -T subtask=...``) runs the samples and metrics
    of those variants' own tasks: an entry of its own would list them twice."""
    return [task for task in inspect_tasks() if _own_variant(task) is not None]


def _own_variant(task: InspectTask) -> Variant | None:
    """The variant of its benchmark the task runs (None: it takes its variant as a
    parameter, ``abg_coqa -T subtask=...``)."""
    try:
        return find_variant(registry.get(task.benchmark), task.name)
    except KeyError:
        return None


def source_url(task: InspectTask, repository_url: str, commit: str) -> str:
    """The task's source at the commit; in a file of several tasks, at its line."""
    url = f"{repository_url}/blob/{commit}/{task.task_path}"
    return f"{url}#L{task.line}" if task.shares_file else url


def task_options(benchmark: Benchmark, task: InspectTask) -> Any:
    """The options ``inspect eval condambig/<task>`` runs with no ``-T``: the function's
    defaults for the benchmark's options over those the variant of that name fixes."""
    fields = {field.name for field in dataclasses.fields(benchmark.options_type)}
    variant = _own_variant(task)  # None: a task taking its variant as a parameter
    defaults = {key: value for key, value in task.defaults.items()
                if key in fields and value is not None}
    return benchmark.options({**(variant.options if variant is not None else {}), **defaults})


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def build_entry(task: InspectTask, repository_url: str, commit: str,
                contributors: Sequence[str], maintainers: Sequence[str]) -> dict[str, Any]:
    """The register entry of one Inspect task (the fields of ``ExternalEvalMetadata``)."""
    benchmark = registry.get(task.benchmark)
    paper = benchmark.catalogue.paper
    variant = task.name.removeprefix(task.benchmark).strip("_").replace("_", " ")
    title = benchmark.title if paper is None else paper.title \
        if benchmark.title in paper.title else f"{benchmark.title} ({paper.title})"
    description = one_line(benchmark.catalogue.description)
    if variant:
        description += f" This task: {task.summary}"
    source: dict[str, Any] = {"repository_url": repository_url, "repository_commit": commit}
    if maintainers:
        source["maintainers"] = list(maintainers)
    entry: dict[str, Any] = {
        "full_title": title + (f" ({variant})" if variant else ""),
        "common_title": benchmark.title + (f" {variant}" if variant else ""),
    }
    if paper is not None:
        entry["paper_title"] = paper.title
    entry |= {"description": description, "contributors": list(contributors),
              "tasks": [{"name": task.name, "task_path": task.task_path}]}
    if task.shares_file:  # the file's link alone would not say which of its tasks
        entry["tasks"][0]["comment"] = f"Source: {source_url(task, repository_url, commit)}"
    samples = benchmark.expected_size(task_options(benchmark, task))
    if samples:
        entry["tasks"][0]["dataset_samples"] = samples
    if paper is not None and paper.arxiv_url:
        entry["arxiv"] = paper.arxiv_url
    if benchmark.catalogue.tags:
        entry["tags"] = list(benchmark.catalogue.tags)
    entry["metadata"] = {"requires": {"internet": benchmark.catalogue.requires_internet}}
    entry["source"] = source
    return entry


# ---------------------------------------------------------------------- run logs


def log_files(paths: Sequence[str]) -> list[Path]:
    """The logs named, a folder standing for the logs in it (recursively)."""
    found: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            inside = sorted(p for p in path.rglob("*")
                            if p.is_file() and p.suffix in LOG_SUFFIXES)
            if not inside:
                raise RegisterError(f"{path}: holds no Inspect log (.eval or .json).")
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise RegisterError(f"{path}: no such file or folder; give Inspect logs "
                                "(.eval, or .json from --log-format json).")
    return found


def read_run(path: Path) -> run_logs.RunResult:
    """One log's Inspect run, with a headline value, read by the project's one reader of
    finished runs (:func:`run_logs.read_results`). The run record an Inspect run wrote
    (``CONDAMBIG_RECORD_DIR``) is read as its log."""
    try:
        found = run_logs.read_results([path])
    except run_logs.NotARunFile:
        raise RegisterError(f"{path}: not an Inspect log (.eval, or .json from --log-format "
                            "json); give finished runs of condambig Inspect tasks.") from None
    except CondambigError as error:
        raise RegisterError(str(error)) from None
    runs = [run for run in found.runs if run.framework == run_logs.INSPECT]
    if not runs:
        why = found.notices[0].removeprefix(f"skipped {path}: ") if found.notices else \
            f"a run scored by {found.runs[0].framework}, not an Inspect run" if found.runs \
            else "not an Inspect log"
        raise RegisterError(f"{path}: {why}; give finished runs of condambig Inspect tasks.")
    [run] = runs
    headline = _headline(run)
    if headline is None:
        raise RegisterError(f"{path}: the run has no headline metric (a setting that needs "
                            "a judge, run without one); report runs with a headline.")
    if run.metrics.get(headline) is None:
        raise RegisterError(f"{path}: headline {headline} has no value; see the log's "
                            "null_reasons.")
    return run


def _headline(run: run_logs.RunResult) -> str | None:
    benchmark = registry.get(run.benchmark)
    return headline_metric(benchmark, benchmark.options(dict(run.options)),
                           run.judge is not None)


def eval_command(run: run_logs.RunResult) -> str:
    """The ``inspect eval`` command of the run, ``{model}`` for its model."""
    flags = "".join(f" -T {key}={value}" for key, value in run.task_args.items())
    if run.judge:
        flags += f" --model-role grader={run.judge}"
    return f"inspect eval {INSPECT_PREFIX}{run.task}{flags} --model {{model}}"


def report_row(run: run_logs.RunResult) -> dict[str, Any]:
    """The run's row: the model, its headline metric (and stderr), what the run used."""
    headline = _headline(run)
    reported = [{"key": headline, "value": float(run.metrics[headline])}]
    if headline in run.stderr:
        reported.append({"key": "stderr", "value": float(run.stderr[headline])})
    row: dict[str, Any] = {"model": run.model, "provider": run.model.split("/", 1)[0],
                           "task": run.task, "metrics": reported,
                           "date": (run.created or "")[:10], "samples": run.n}
    if run.task_args:
        row["task_args"] = dict(run.task_args)
    if run.judge:
        row["grader"] = run.judge
    return row


def evaluation_report(task: InspectTask, runs: Sequence[run_logs.RunResult], commit: str,
                      dataset_samples: int | None) -> dict[str, Any]:
    """The ``evaluation_report`` block of one task's runs (all at the code's version)."""
    version = registry.get(task.benchmark).version
    for run in runs:
        if str(run.version) != version:
            raise RegisterError(
                f"{run.source}: a run of {task.name} version {run.version}, but this code is "
                f"version {version}; its numbers are not those of commit {commit}. Leave it "
                "out or rerun it.")
    rows = [report_row(run) for run in runs]
    report: dict[str, Any] = {"results": rows, "commit": commit, "version": version}
    commands = {eval_command(run) for run in runs}
    if len(commands) == 1:
        report["command"] = next(iter(commands)).replace("{model}", "<model>")
    else:
        for row, run in zip(rows, runs, strict=True):
            row["command"] = eval_command(run).format(model=row["model"])
    partial = [f"{row['model']}: {row['samples']} of {dataset_samples} samples" for row in rows
               if dataset_samples and (row["samples"] or 0) < dataset_samples]
    if partial:
        report["notes"] = ["Runs on part of the split: " + "; ".join(partial) + "."]
    return report


# ---------------------------------------------------------------------- command


def write_entries(out: Path, repository_url: str, commit: str, logs: Sequence[str],
                  contributors: Sequence[str], maintainers: Sequence[str]) -> list[Path]:
    """Write ``<out>/<task>/eval.yaml`` for every registered task; returns the files."""
    tasks = register_tasks()
    runs = run_logs.each_run_once([read_run(path) for path in log_files(logs)])[0]
    known = {task.name: task for task in tasks}
    for run in runs:
        if run.task not in known:
            raise RegisterError(f"{run.source}: task condambig/{run.task} is not one of "
                                f"this package's Inspect tasks ({', '.join(sorted(known))}).")
        if known[run.task].benchmark != run.benchmark:
            raise RegisterError(f"{run.source}: task {run.task} recorded benchmark "
                                f"{run.benchmark}, but this package's {run.task} is "
                                f"{known[run.task].benchmark}: not a run of this task.")
    entries = {}
    for task in tasks:  # every entry before any file: bad input writes nothing
        entry = build_entry(task, repository_url, commit, contributors, maintainers)
        own = [run for run in runs if run.task == task.name]
        if own:
            entry["evaluation_report"] = evaluation_report(
                task, own, commit, entry["tasks"][0].get("dataset_samples"))
        entries[task.name] = entry
    written = []
    for name, entry in entries.items():
        path = out / name / ENTRY_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(entry, allow_unicode=True, sort_keys=False,
                                       default_flow_style=False, width=100),
                        encoding="utf-8")
        written.append(path)
    return written


def repository_owner(url: str) -> str:
    parsed = urlparse(url)
    owner = parsed.path.strip("/").split("/", 1)[0]
    if parsed.scheme not in ("http", "https") or not parsed.netloc or not owner:
        raise RegisterError(f"--repository-url {url!r}: give the repository's web address, "
                            "e.g. https://github.com/OWNER/condambig.")
    return owner


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description=(
            "Write one inspect_evals register entry (<out>/<task>/eval.yaml) per Inspect task "
            "of this package, with an evaluation_report of the headline metric when Inspect "
            "logs are given (runs of the code at --commit)."))
    parser.add_argument("--repository-url", required=True,
                        help="the repository holding this code, e.g. https://github.com/OWNER/condambig")
    parser.add_argument("--commit", required=True,
                        help="the full 40-character commit sha the entries point at")
    parser.add_argument("--out", required=True, type=Path,
                        help="folder for the entries (inspect_evals' register/)")
    parser.add_argument("--contributor", action="append", default=[], metavar="NAME",
                        help="GitHub user who wrote the evaluation; repeatable (default: "
                             "the repository's owner)")
    parser.add_argument("--maintainer", action="append", default=[], metavar="NAME",
                        help="GitHub user who maintains it; repeatable (default: the "
                             "repository's owner, as inspect_evals does)")
    parser.add_argument("logs", nargs="*", metavar="LOG",
                        help="Inspect logs (.eval / .json) or folders of them")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        owner = repository_owner(arguments.repository_url)
        if not _COMMIT.fullmatch(arguments.commit):
            raise RegisterError(f"--commit {arguments.commit!r}: give the full 40-character "
                                "lower-case sha (git rev-parse HEAD).")
        written = write_entries(arguments.out, arguments.repository_url.rstrip("/"),
                                arguments.commit, arguments.logs,
                                arguments.contributor or [owner], arguments.maintainer)
    except CondambigError as error:
        return command_error(PROG, error)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
