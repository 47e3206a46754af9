"""The task, metric and option tables of README.md and docs/tasks.md are the specs, rendered.

A table that says something the code does not fails here with the command that rewrites it.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from condambig_tasks import docs_tables
from condambig_tasks.benchmark import MetricSpec, Variant, find_variant
from tests.support.toy_benchmark.benchmark import Toy

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def inspect_tasks():
    return docs_tables.installed_inspect_tasks()


@pytest.mark.parametrize("document", docs_tables.DOCUMENTS)
def test_the_generated_tables_equal_the_specs(document, inspect_tasks):
    text = (REPO_ROOT / document).read_text(encoding="utf-8")
    assert "<!-- generated: " in text, f"{document} holds no generated table"
    fresh = docs_tables.update(text, document, docs_tables.builtin_benchmarks(), inspect_tasks)
    assert fresh == text, (f"the generated tables of {document} differ from the benchmarks' "
                           f"specs; run `{docs_tables.COMMAND}`")


def test_docs_tasks_lists_every_task_metric_and_option_of_every_benchmark():
    text = (REPO_ROOT / "docs" / "tasks.md").read_text(encoding="utf-8")
    for benchmark in docs_tables.builtin_benchmarks():
        for variant in benchmark.variants:
            assert f"| `{variant.task}` |" in text
        for spec in benchmark.metric_specs:
            assert f"| `{spec.name}` |" in text
        for field in dataclasses.fields(benchmark.options_type):
            assert f"| `{field.name}` |" in text


def test_no_hand_written_task_table_is_left_in_the_docs():
    """The tables a test regenerates are the only task and headline tables in the docs."""
    for path in [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]:
        outside = re.sub(r"<!-- generated: .*?<!-- end generated -->", "",
                         path.read_text(encoding="utf-8"), flags=re.S)
        assert not re.search(r"^\| (task|benchmark|metric|option) \| (headline|lm-eval tasks|"
                             r"aggregation|type) \|", outside, flags=re.M), path.name


def test_a_benchmark_is_rendered_from_its_spec_alone():
    """A benchmark the docs have never seen (the toy one) gets its rows from its spec."""
    toy = Toy()
    tasks = docs_tables.render_tasks([toy], [], "docs/tasks.md")
    assert "| `toy` | " in tasks and "—" in tasks  # no Inspect task known
    metrics = docs_tables.render_metrics(toy)
    assert "| `unanswered` | sum | lower |  | count |" in metrics
    assert "| `precision` | corpus | higher |  | 0–1 |" in metrics
    options = docs_tables.render_options(toy)
    assert re.search(r"\| `ignore_case` \| boolean \| `\w+` \| `true`, `false` \|", options)


def test_a_changed_spec_changes_the_tables(monkeypatch, inspect_tasks):
    """Editing a metric's description or a variant's options in code makes the docs stale."""
    benchmarks = docs_tables.builtin_benchmarks()
    text = (REPO_ROOT / "docs" / "tasks.md").read_text(encoding="utf-8")
    ambignq = next(b for b in benchmarks if b.name == "ambignq")
    changed = (MetricSpec("f1_answer_all", "a new description"), *ambignq.metric_specs[1:])
    monkeypatch.setattr(type(ambignq), "metric_specs", changed)
    monkeypatch.setattr(type(ambignq), "variants",
                        (Variant("ambignq", "every plausible answer", {"hub_revision": "abc"}),))
    fresh = docs_tables.update(text, "docs/tasks.md", benchmarks, inspect_tasks)
    assert "| `f1_answer_all` | mean | higher |  | 0–1 | a new description |" in fresh
    assert "`condambig/ambignq -T hub_revision=abc`" in fresh


def test_inspect_command_names_the_task_and_the_options_it_does_not_default_to(inspect_tasks):
    benchmarks = {b.name: b for b in docs_tables.builtin_benchmarks()}
    condambigqa, abg_coqa = benchmarks["condambigqa"], benchmarks["abg_coqa"]
    assert docs_tables.inspect_command(
        condambigqa, find_variant(condambigqa, "condambigqa"), inspect_tasks) == "condambig/condambigqa"
    closed_book = find_variant(condambigqa, "condambigqa_closed_book")
    assert docs_tables.inspect_command(condambigqa, closed_book, inspect_tasks) \
        == "condambig/condambigqa_closed_book"
    # a variant without a task of its own: the benchmark's task with the options it fixes
    general_only = [task for task in inspect_tasks if task.name != "condambigqa_closed_book"]
    assert docs_tables.inspect_command(condambigqa, closed_book, general_only) \
        == "condambig/condambigqa -T setting=closed_book"
    assert docs_tables.inspect_command(
        abg_coqa, find_variant(abg_coqa, "abg_coqa_clarification"), inspect_tasks
    ) == "condambig/abg_coqa_clarification"


def _checkout(tmp_path: Path, tables: str) -> Path:
    (tmp_path / "docs").mkdir()
    for document in docs_tables.DOCUMENTS:
        (tmp_path / document).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / document).write_text(
            f"# {document}\n\n<!-- generated: {tables} -->\nstale\n<!-- end generated -->\n",
            encoding="utf-8")
    return tmp_path


def test_check_names_the_command_and_write_fixes_the_documents(tmp_path, capsys):
    root = _checkout(tmp_path, "task-list")
    assert docs_tables.main(["--root", str(root)]) == 1
    assert docs_tables.COMMAND in capsys.readouterr().err
    assert docs_tables.main(["--root", str(root), "--write"]) == 0
    assert "stale" not in (root / "README.md").read_text(encoding="utf-8")
    assert docs_tables.main(["--root", str(root)]) == 0


@pytest.mark.parametrize("text, message", [
    ("<!-- generated: nonsense -->\n<!-- end generated -->\n", "unknown generated block"),
    ("<!-- generated: tasks -->\nno end\n", "has no '<!-- end generated -->'"),
])
def test_a_bad_marker_is_one_line(tmp_path, capsys, text, message):
    root = _checkout(tmp_path, "tasks")
    (root / "README.md").write_text(text, encoding="utf-8")
    assert docs_tables.main(["--root", str(root)]) == 2
    assert message in capsys.readouterr().err
