"""``condambig-inspect-score LOG [inspect score options]``: Inspect's own ``inspect score``
on a condambig log, judge included, with every scorer argument taken from the log.

Inspect logs a scorer by its unqualified name (``benchmark_scorer``) and resolves that name
among its own scorers only, so a bare ``inspect score LOG`` cannot find this package's
scorer. The scorer is named here with its package (``condambig/benchmark_scorer``) and
given the arguments the run logged (``-S benchmark_name=... -S options=... -S
judged=...``), the grader the run bound (``--model-role grader=...``, unless given) and
``--action overwrite`` (the scores are replaced, not appended). Works on ``--no-score``
runs too. :func:`command_for_log` is the same command as text, printed where a user needs it.

Exit code: ``inspect score``'s, or 2 with one ``condambig-inspect-score: ...`` line.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from condambig_tasks.errors import CondambigError, PredictionFileError, command_error

PROG = "condambig-inspect-score"
PACKAGE = "condambig"  # the import name the Inspect scorer is registered under
GRADER_ROLE = "grader"


class RescoreError(PredictionFileError):
    """A file that is not a condambig Inspect log."""


def arguments(scorer_name: str, scorer_options: Mapping[str, Any],
              grader: str | None) -> list[str]:
    """``inspect score`` arguments after the log: the scorer named with its package, each
    logged argument as ``-S key=value``, the grader."""
    words = ["--action", "overwrite", "--scorer", f"{PACKAGE}/{scorer_name}"]
    for key, value in scorer_options.items():
        words += ["-S", f"{key}={_cli_value(value)}"]
    if grader:
        words += ["--model-role", f"{GRADER_ROLE}={grader}"]
    return words


def _cli_value(value: Any) -> str:
    """``value`` as ``-S`` reads it back (YAML; a plain string without commas as itself)."""
    if isinstance(value, str) and "," not in value and yaml.safe_load(value) == value:
        return value
    return json.dumps(value, ensure_ascii=False)


def logged_arguments(path: str | Path) -> tuple[str, dict[str, Any], str | None]:
    """The scorer's logged name and arguments, and the grader the run bound (None: none,
    or a run without a judge)."""
    from inspect_ai.log import read_eval_log

    try:
        header = read_eval_log(str(path), header_only=True)
    except Exception:  # noqa: BLE001 - anything unreadable is "not an Inspect log"
        raise RescoreError(f"{path}: cannot be read as an Inspect log; give the .eval "
                           "(or .json) log of a condambig Inspect run.") from None
    scorers = [scorer for scorer in header.eval.scorers or []
               if scorer.name.endswith("benchmark_scorer")]
    if len(scorers) != 1:
        raise RescoreError(f"{path}: task {header.eval.task!r} was not scored by a "
                           "condambig scorer; rescore it with inspect score --scorer ....")
    [scorer] = scorers
    options = dict(scorer.options or {})
    grader = (header.eval.model_roles or {}).get(GRADER_ROLE) if options.get("judged") else None
    return scorer.name.split("/")[-1], options, getattr(grader, "model", None)


def command_for_log(path: str | Path) -> str:
    """The whole ``inspect score`` command of the log, quoted for a POSIX shell."""
    return shlex.join(["inspect", "score", str(path), *arguments(*logged_arguments(path))])


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        print(f"{PROG}: give the Inspect log to rescore: {PROG} LOG [inspect score options]",
              file=sys.stderr)
        return 2
    if argv[0] in {"-h", "--help"}:
        print(__doc__.split("\n\n")[0].replace("``", "`"))
        print("\nAny further option is passed to inspect score (e.g. --output-file FILE, "
              "--model-role grader=MODEL, --overwrite).")
        return 0
    log, rest = argv[0], argv[1:]
    try:
        scorer_name, options, grader = logged_arguments(log)
    except CondambigError as error:
        return command_error(PROG, error)
    if any(word == "--model-role" or word.startswith("--model-role=") for word in rest):
        grader = None  # the user's binding replaces the run's
    inspect = shutil.which("inspect", path=os.pathsep.join(
        [str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    if inspect is None:
        print(f"{PROG}: the inspect command is not installed; pip install "
              "'condambig[inspect]'.", file=sys.stderr)
        return 2
    return subprocess.call([inspect, "score", log, *arguments(scorer_name, options, grader),
                            *rest])


if __name__ == "__main__":
    sys.exit(main())
