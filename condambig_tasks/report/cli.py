"""``condambig-report``: lm-eval results and Inspect logs of several models and benchmarks ->
one Markdown report beside the papers' numbers, and PNG figures.

    condambig-report results/ logs/ -o report.md
    condambig-report out/qwen/results_*.json logs/*.eval --paper-model my-qwen="Qwen2.5 (7B)"
    condambig-report a.json a.per-sample.jsonl b.json b.per-sample.jsonl --seed 7
    condambig-report runs/ --baseline my-base-model      # each run against the baseline

Exit code 0, or 2 with one ``condambig-report: ...`` line for input it cannot use.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from condambig_tasks.errors import CondambigError, command_error
from condambig_tasks.report.stats import MAX_ALL_PAIRS, NEIGHBOURS, PAIRINGS
from condambig_tasks.uncertainty import (  # noqa: F401  (the defaults, as condambig-score's)
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    add_bootstrap_arguments,
)

PROG = "condambig-report"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description=(
            "Write one Markdown report (and PNG figures) from lm-eval results (results_*.json "
            "or --output_path folders), Inspect logs (.eval / .json) and saved condambig-score "
            "JSON (with its --per-sample file): per benchmark and task, every run's metrics "
            "± standard error beside the papers' published numbers, with Δ = ours − paper on "
            "the same scale, and a paired comparison of the runs of each task (each run "
            "against the next, or against --baseline MODEL)."))
    parser.add_argument("inputs", nargs="+", metavar="PATH",
                        help="result files or folders (searched recursively)")
    parser.add_argument("-o", "--output", default="report.md", type=Path,
                        help="the Markdown file to write (default: report.md)")
    parser.add_argument("--figures-dir", type=Path, default=None,
                        help="where the PNGs go (default: figures/ beside the report)")
    parser.add_argument("--no-figures", action="store_true", help="write the Markdown only")
    parser.add_argument("--paper-model", action="append", default=[], metavar="OURS=PAPER",
                        help="compare our model OURS (as the run names it, or its last path "
                             "part) with the paper's model PAPER, e.g. "
                             "--paper-model my-run=GPT-4o; repeatable")
    parser.add_argument("--title", default="condambig report", help="the report's heading")
    add_bootstrap_arguments(parser, "the standard errors computed from per-sample scores "
                                    "and of the paired comparisons")
    parser.add_argument("--baseline", metavar="MODEL", default=None,
                        help="pair each run of a task with the run(s) of this model (as the "
                             "run names it, or its last path part); tasks without one pair "
                             "as --pairs says")
    parser.add_argument("--pairs", choices=PAIRINGS, default=NEIGHBOURS,
                        help="without a baseline: each run against the next run of its task "
                             "(neighbours, the default) or every pair of runs of a task "
                             f"(all, at most {MAX_ALL_PAIRS} pairs per task)")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        return _run(arguments)
    except CondambigError as error:
        return command_error(PROG, error)


def _run(arguments: argparse.Namespace) -> int:
    from condambig_tasks.report.figures import make_figures
    from condambig_tasks.report.paper import load_paper_data, parse_model_map
    from condambig_tasks.report.sections import build_sections
    from condambig_tasks.report.stats import Settings, attach_statistics
    from condambig_tasks.report.tables import render_report
    from condambig_tasks.run_logs import RunLogError, read_results

    explicit = parse_model_map(arguments.paper_model)
    inputs = read_results(arguments.inputs)
    for notice in inputs.notices:
        print(f"{PROG}: {notice}", file=sys.stderr)
    if not inputs.runs:
        raise RunLogError("no condambig run in the inputs"
                               + (f" ({len(inputs.notices)} skipped)" if inputs.notices else "")
                               + "; give lm-eval results or Inspect logs of condambig tasks.")
    data = load_paper_data()
    sections = build_sections(inputs.runs, data, explicit)
    settings = Settings(arguments.bootstrap_resamples, arguments.seed, arguments.pairs,
                        arguments.baseline)
    attach_statistics(sections, settings)
    output: Path = arguments.output
    output.parent.mkdir(parents=True, exist_ok=True)
    figures, skipped = {}, {}
    if not arguments.no_figures:
        figures, skipped = make_figures(sections,
                                        arguments.figures_dir or output.parent / "figures")
        for benchmark, reason in skipped.items():
            print(f"{PROG}: no {benchmark} figure: {reason}", file=sys.stderr)
    output.write_text(render_report(inputs, sections, data, figures, skipped, output.parent,
                                    title=arguments.title, settings=settings),
                      encoding="utf-8")
    print(f"{PROG}: wrote {output} ({len(inputs.runs)} runs, {len(sections)} tasks) and "
          f"{len(figures)} figures" + (f" in {next(iter(figures.values())).parent}"
                                       if figures else ""), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
