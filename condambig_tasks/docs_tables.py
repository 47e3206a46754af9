"""The task, metric and option tables of README.md and docs/tasks.md, rendered from the specs.

Each benchmark declares its variants, metrics, headline order and options once, in
``condambig_tasks/<benchmark>/benchmark.py``; the documents hold the rendered tables between
marker comments, so a table never says something the code does not:

    <!-- generated: tasks; python -m condambig_tasks.docs_tables --write -->
    ...
    <!-- end generated -->

Each lm-eval task folder's README (the task card lm-eval's template asks for) holds its
``### Changelog`` the same way, rendered from that benchmark's section of CHANGELOG.md.

``python -m condambig_tasks.docs_tables --write`` rewrites every block; without ``--write``
it exits 1 naming the documents whose tables differ (tests/test_docs_tables.py runs that
check).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from condambig_tasks import registry
from condambig_tasks.benchmark import (
    SUITE_SPEC,
    Benchmark,
    MetricSpec,
    Variant,
    headline_metric,
    metric_spec,
    uses_judge,
)
from condambig_tasks.errors import command_error
from condambig_tasks.options import option_specs
from condambig_tasks.register import INSPECT_PREFIX, InspectTask, inspect_tasks
from condambig_tasks.report.scales import COUNT, FRACTION, PERCENT, spec_scale
from condambig_tasks.report.tables import markdown_table

COMMAND = "python -m condambig_tasks.docs_tables --write"
ROOT = Path(__file__).resolve().parent.parent  # the checkout holding this package
CHANGELOG = "CHANGELOG.md"
# each lm-eval task folder's README, by its CHANGELOG.md section (a benchmark, the suite)
TASK_READMES = {f"condambig_tasks/lm_eval_tasks/{name}/README.md": name
                for name in (*registry.BENCHMARKS, registry.SUITE)}
# the documents holding generated blocks, relative to the repository root
DOCUMENTS = ("README.md", "docs/tasks.md", *TASK_READMES)
_BLOCK = re.compile(r"(?P<start><!-- generated: (?P<key>[\w-]+)[^>]*-->\n)"
                    r"(?P<body>.*?)(?P<end><!-- end generated -->)", re.S)
_UNCLOSED = re.compile(r"<!-- generated: ")


class DocsTablesError(Exception):
    """A document whose generated blocks cannot be rendered (unknown or unclosed marker)."""


# ---------------------------------------------------------------- the facts, from the specs
def builtin_benchmarks() -> list[Benchmark]:
    """The built-in benchmarks (not ``CONDAMBIG_EXTRA_BENCHMARKS``: the docs describe the
    package, whatever the environment of the run that renders them)."""
    return [registry.get(name) for name in registry.BENCHMARKS]


def installed_inspect_tasks() -> list[InspectTask]:
    """The ``@task`` functions of the ``condambig`` package, as Inspect lists them."""
    return inspect_tasks()


def inspect_command(benchmark: Benchmark, variant: Variant,
                    inspect_tasks: Sequence[InspectTask]) -> str | None:
    """``condambig/<task> -T option=value ...``: the Inspect task named like the variant,
    else the benchmark's, with the variant's fixed options it does not already default to."""
    by_name = {task.name: task for task in inspect_tasks}
    task = by_name.get(variant.task) or by_name.get(benchmark.name)
    if task is None:
        return None
    arguments = [f"-T {key}={_plain(value)}" for key, value in variant.options.items()
                 if key in task.defaults and _plain(task.defaults[key]) != _plain(value)]
    return " ".join([INSPECT_PREFIX + task.name, *arguments])


# ---------------------------------------------------------------- rendering
def _plain(value: Any) -> str:
    value = getattr(value, "value", value)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _code(value: Any) -> str:
    return f"`{_plain(value)}`"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    return "\n".join(markdown_table(header, rows)) + "\n"


_SCALE_NAMES = {FRACTION: "0–1", PERCENT: "0–100", COUNT: "count"}


def _scale(spec: MetricSpec) -> str:
    """The report's scale of the metric, from its spec."""
    return _SCALE_NAMES[spec_scale(spec)]


def _direction(spec: MetricSpec) -> str:
    return {True: "higher", False: "lower", None: "none"}[spec.higher_is_better]


def _task_readme(benchmark: Benchmark, relative_to: str) -> str | None:
    folder = Path(__file__).parent / "lm_eval_tasks" / benchmark.name
    if not (folder / "README.md").is_file():
        return None
    up = "../" * relative_to.count("/")
    return f"{up}condambig_tasks/lm_eval_tasks/{benchmark.name}/README.md"


def _generation(variant: Variant) -> str:
    parts = ["greedy" if variant.temperature is None else f"temperature {variant.temperature:g}"]
    if variant.max_tokens is not None:
        parts.append(f"{variant.max_tokens:,} tokens")
    if variant.judge_model:
        parts.append(f"judge {variant.judge_model}")
    return ", ".join(parts)


def _headline(benchmark: Benchmark, metric: str | None) -> str:
    if metric is None:
        return "none"
    return f"{_code(metric)} ({_scale(metric_spec(benchmark, metric))})"


def render_task_list(benchmarks: Sequence[Benchmark], inspect_tasks: Sequence[InspectTask],
                     document: str) -> str:
    """README's short list: per benchmark its lm-eval tasks and group, Inspect tasks and
    ``condambig-score`` command."""
    rows = []
    for benchmark in benchmarks:
        readme = _task_readme(benchmark, document)
        title = f"[{benchmark.title}]({readme})" if readme else benchmark.title
        tasks = ", ".join(_code(variant.task) for variant in benchmark.variants)
        if benchmark.group:
            tasks += f"; group {_code(benchmark.group)}"
        inspect = ", ".join(_code(INSPECT_PREFIX + task.name) for task in inspect_tasks
                            if task.benchmark == benchmark.name)
        rows.append([title, tasks, inspect, _code(f"condambig-score {benchmark.name}")])
    members = ", ".join(_code(benchmark.suite_member) for benchmark in benchmarks)
    rows.append(["the suite", f"group {_code(registry.SUITE)} ({members})",
                 "an `inspect eval-set` of the tasks", ""])
    return _table(["benchmark", "lm-eval tasks", "Inspect tasks", "saved outputs"], rows)


def render_tasks(benchmarks: Sequence[Benchmark], inspect_tasks: Sequence[InspectTask],
                 document: str) -> str:
    """Every task (one per variant): what it runs, the options it fixes, its Inspect
    command, headline and generation."""
    rows = []
    for benchmark in benchmarks:
        for variant in benchmark.variants:
            options = benchmark.options(dict(variant.options))
            judged = headline_metric(benchmark, options, judged=True)
            judge_free = headline_metric(benchmark, options, judged=False)
            headline = _headline(benchmark, judged)
            if uses_judge(benchmark) and judge_free != judged:
                headline += "; without a judge " + _headline(benchmark, judge_free)
            fixed = ", ".join(f"`{key}={_plain(value)}`" for key, value in variant.options.items())
            command = inspect_command(benchmark, variant, inspect_tasks)
            rows.append([_code(variant.task), benchmark.title, variant.description, fixed or "—",
                         _code(command) if command else "—", headline, _generation(variant)])
    groups = [f"{_code(benchmark.group)} ({benchmark.title})"
              for benchmark in benchmarks if benchmark.group]
    members = ", ".join(_code(benchmark.suite_member) for benchmark in benchmarks)
    text = _table(["lm-eval task", "benchmark", "what it runs", "fixed options", "Inspect",
                   "headline", "generation"], rows)
    return (text + f"\nlm-eval groups: {', '.join(groups)}; {_code(registry.SUITE)}, the "
            f"suite: {members}. A run with a headline also reports {_code(SUITE_SPEC.name)}: "
            f"{SUITE_SPEC.description}.\n")


def render_metrics(benchmark: Benchmark) -> str:
    """One benchmark's metrics in spec order: aggregation, direction, judge, scale."""
    rows = [[_code(spec.name), spec.aggregation, _direction(spec), "yes" if spec.judge else "",
             _scale(spec), spec.description] for spec in benchmark.metric_specs]
    order = ", then ".join(_code(name) for name in benchmark.headline_metrics)
    if len(benchmark.headline_metrics) > 1:
        headline = f"Headline: the first of {order} that the run reports."
    else:
        headline = f"Headline: {order or 'none declared'}."
    return headline + "\n\n" + _table(
        ["metric", "aggregation", "direction", "judge", "scale", "description"], rows)


_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "text"}


def render_options(benchmark: Benchmark) -> str:
    """One benchmark's options: type, default, allowed values and help
    (:func:`~condambig_tasks.options.option_specs`, as every front end reads them)."""
    rows = []
    for option in option_specs(benchmark.options_type):
        kind, allowed = option.kind, option.allowed
        name = "text" if allowed is not None else _TYPE_NAMES.get(
            kind, getattr(kind, "__name__", str(kind)))
        if option.optional:
            name += " or none"
        if kind is bool:
            allowed = (True, False)
        rows.append([_code(option.name), name,
                     _code(option.default_value),
                     ", ".join(_code(value) for value in allowed or ()), option.help])
    return _table(["option", "type", "default", "allowed values", "help"], rows)


def render_reference(benchmarks: Sequence[Benchmark]) -> str:
    """Per benchmark: its metric table and its options table."""
    parts = []
    for benchmark in benchmarks:
        parts.append(f"### {benchmark.title} (`{benchmark.name}`, version {benchmark.version})"
                     f"\n\nMetrics, in the order reported. {render_metrics(benchmark)}\n"
                     f"Options ({benchmark.options_type.__name__}):\n\n"
                     f"{render_options(benchmark)}")
    return "\n".join(parts)


def changelog_section(changelog: str, name: str) -> list[str]:
    """The lines of CHANGELOG.md's ``## <name>`` section (``## condambig (lm-eval group)``
    for the suite)."""
    heading = re.compile(rf"## {re.escape(name)}( \(.*\))?$")
    lines = changelog.splitlines()
    start = next((i for i, line in enumerate(lines) if heading.fullmatch(line)), None)
    if start is None:
        raise DocsTablesError(f"{CHANGELOG} has no '## {name}' section")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    return [line for line in lines[start + 1:end] if line.strip()]


def render_changelog(document: str, root: Path) -> str:
    """A task README's ``### Changelog``: its benchmark's CHANGELOG.md lines, as written."""
    name = TASK_READMES.get(document)
    if name is None:
        raise DocsTablesError(f"{document}: a changelog block belongs in a task README")
    path = root / CHANGELOG
    if not path.is_file():
        raise DocsTablesError(f"{path} is missing")
    up = "../" * document.count("/")
    entries = "\n".join(changelog_section(path.read_text(encoding="utf-8"), name))
    return (f"From [{CHANGELOG}]({up}{CHANGELOG}), section `{name}`. Versions are `N-X` "
            "(lm-eval's `metadata.version` is N, the comparability version; the letter X "
            "changes for changes that leave every score as it was).\n\n" + entries + "\n")


# ---------------------------------------------------------------- documents
def update(text: str, document: str, benchmarks: Sequence[Benchmark],
           inspect_tasks: Sequence[InspectTask], root: Path = ROOT) -> str:
    """The document with every generated block rendered again (the rest unchanged)."""
    render: dict[str, Callable[[], str]] = {
        "task-list": lambda: render_task_list(benchmarks, inspect_tasks, document),
        "tasks": lambda: render_tasks(benchmarks, inspect_tasks, document),
        "reference": lambda: render_reference(benchmarks),
        "changelog": lambda: render_changelog(document, root),
    }
    if len(_BLOCK.findall(text)) != len(_UNCLOSED.findall(text)):
        raise DocsTablesError(f"{document}: a '<!-- generated: ... -->' marker has no "
                              "'<!-- end generated -->'")

    def block(match: re.Match[str]) -> str:
        key = match["key"]
        if key not in render:
            raise DocsTablesError(f"{document}: unknown generated block {key!r}; known: "
                                  f"{', '.join(render)}")
        return match["start"] + render[key]() + match["end"]

    return _BLOCK.sub(block, text)


def stale_documents(root: Path, *, write: bool) -> list[str]:
    """The documents under ``root`` whose generated blocks differ from the specs (rewritten
    when ``write``)."""
    benchmarks, inspect_tasks = builtin_benchmarks(), installed_inspect_tasks()
    stale = []
    for document in DOCUMENTS:
        path = root / document
        text = path.read_text(encoding="utf-8")
        fresh = update(text, document, benchmarks, inspect_tasks, root)
        if fresh != text:
            stale.append(document)
            if write:
                path.write_text(fresh, encoding="utf-8")
    return stale


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m condambig_tasks.docs_tables",
        description="Render the task, metric and option tables of README.md and "
                    "docs/tasks.md from the benchmarks' specs.")
    parser.add_argument("--write", action="store_true",
                        help="rewrite the documents (default: only check them)")
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="the repository checkout (default: the one holding this package)")
    args = parser.parse_args(argv)
    missing = [document for document in DOCUMENTS if not (args.root / document).is_file()]
    if missing:
        print(f"docs_tables: {args.root} has no {', '.join(missing)}; run it in a checkout "
              "of the repository (--root)", file=sys.stderr)
        return 2
    try:
        stale = stale_documents(args.root, write=args.write)
    except DocsTablesError as error:
        return command_error("docs_tables", error)
    if stale and not args.write:
        print(f"docs_tables: the generated tables of {', '.join(stale)} differ from the "
              f"benchmarks' specs; run `{COMMAND}`", file=sys.stderr)
        return 1
    for document in stale:
        print(f"docs_tables: rewrote {document}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
