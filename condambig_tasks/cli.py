"""``condambig-score BENCHMARK ...``: score a file of model outputs, print metrics as JSON.

Each benchmark contributes a module ``condambig_tasks.<benchmark>.score_cli`` with
``add_arguments(parser)`` and ``run(args) -> dict``; this file only dispatches, so the
same code path serves every benchmark.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys

BENCHMARKS: dict[str, str] = {
    "condambigqa": "condambig_tasks.condambigqa.score_cli",
    "hotpot_flm": "condambig_tasks.hotpot_flm.score_cli",
    "conditionalqa": "condambig_tasks.conditionalqa.score_cli",
    "ambignq": "condambig_tasks.ambignq.score_cli",
    "abg_coqa": "condambig_tasks.abg_coqa.score_cli",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="condambig-score", description="Score model outputs on a condambig benchmark."
    )
    subparsers = parser.add_subparsers(dest="benchmark", required=True, metavar="BENCHMARK")
    for name, module_name in BENCHMARKS.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(name, help=(module.__doc__ or "").strip().splitlines()[0])
        module.add_arguments(sub)
        sub.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    from condambig_tasks.data import CorruptDataError, DataUnavailableError

    args = build_parser().parse_args(argv)
    try:
        result = args._run(args)
    except (DataUnavailableError, CorruptDataError, FileNotFoundError, ValueError) as error:
        print(f"condambig-score {args.benchmark}: {error}", file=sys.stderr)
        return 2
    json.dump(result, sys.stdout, indent=2, ensure_ascii=False, sort_keys=False)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
