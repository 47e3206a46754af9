"""Where the test suite's CPU time goes: every Python process a pytest run starts, by command.

The suite's wall time on 2 cores is its CPU time over the cores, so what to cut is a
question of CPU-seconds. This runs pytest (the arguments after ``--``, README's test command
by default) with a ``sitecustomize`` first on ``PYTHONPATH`` that makes every Python process
of the run (xdist workers, ``lm_eval``, ``inspect``, ``condambig-*``, servers) write its own
CPU time, command line and current test at exit; then it prints them grouped by command and
by test module, beside the total of the whole process tree (``getrusage``).

    CONDAMBIG_DATA_DIR=../shared/data python benchmarks/suite_cost.py [--top N] [-- PYTEST ARGS]

A process that ends by a signal or ``os._exit`` writes nothing (``transformers serve``
stopped by the tests, commands killed by the interrupt tests): the tree's total counts it,
the groups do not, and the difference is printed as ``not attributed``.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.child_site import with_sitecustomize  # noqa: E402

DEFAULT_PYTEST = ["-q", "-p", "no:cacheprovider", "-n", "4", "--dist", "loadgroup"]
OUT_VARIABLE = "CONDAMBIG_SUITE_COST_DIR"

_START = f'''
def _start():
    import os
    folder = os.environ.get("{OUT_VARIABLE}")
    if not folder:
        return
    import atexit

    def write():
        import json, resource, sys
        usage = resource.getrusage(resource.RUSAGE_SELF)
        row = {{"argv": sys.argv[:3], "cpu": usage.ru_utime + usage.ru_stime,
               "test": os.environ.get("PYTEST_CURRENT_TEST", "")}}
        with open(os.path.join(folder, f"{{os.getpid()}}.json"), "w") as file:
            json.dump(row, file)

    atexit.register(write)
'''


def command_name(argv: list[str]) -> str:
    """``lm_eval run``, ``inspect eval``, ``condambig-score``, ``pytest worker``..."""
    if not argv or argv[0] in ("-c", ""):
        return "python -c (xdist worker or inline script)"
    name = Path(argv[0]).name
    if name in ("__main__.py", "-m"):
        name = Path(argv[0]).parent.name
    if name in ("lm_eval", "lm-eval", "inspect") and len(argv) > 1:
        return f"{name} {argv[1]}"
    return name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25, help="rows per table")
    parser.add_argument("pytest", nargs="*", help="pytest arguments (after --)")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-cost-") as temp:
        out = Path(temp) / "rows"
        out.mkdir()
        env = with_sitecustomize(Path(temp) / "site", {**os.environ, OUT_VARIABLE: str(out)},
                                 _START)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        code = subprocess.call([sys.executable, "-m", "pytest",
                                *(arguments.pytest or DEFAULT_PYTEST)], cwd=REPO, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        rows = [json.loads(path.read_text()) for path in out.glob("*.json")]
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    by_command: dict[str, list[float]] = collections.defaultdict(list)
    by_module: dict[str, float] = collections.defaultdict(float)
    for row in rows:
        by_command[command_name(row["argv"])].append(row["cpu"])
        by_module[row["test"].split("::")[0] or "(no test: workers, session fixtures)"] += \
            row["cpu"]
    attributed = sum(row["cpu"] for row in rows)
    print(f"\npytest exit {code}; process tree {total:.0f} CPU-s, {len(rows)} Python processes "
          f"{attributed:.0f} CPU-s, not attributed {total - attributed:.0f}")
    print("\n| command | processes | CPU-s | CPU-s each |\n|---|---|---|---|")
    for name, values in sorted(by_command.items(), key=lambda item: -sum(item[1]))[:arguments.top]:
        print(f"| {name} | {len(values)} | {sum(values):.1f} | {sum(values) / len(values):.2f} |")
    print("\n| test module | CPU-s of its processes |\n|---|---|")
    for name, value in sorted(by_module.items(), key=lambda item: -item[1])[:arguments.top]:
        print(f"| {name} | {value:.1f} |")
    return code


if __name__ == "__main__":
    sys.exit(main())
