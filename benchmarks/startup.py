"""What the ``.pth`` hook costs every Python start: ``python -X importtime -c pass`` in a
fresh venv laid out like a regular install of this checkout, with the hook and with the
opt-out (``CONDAMBIG_DISABLE_LM_EVAL_HOOK=1``, a bare start), side by side.

Bytecode is written to a scratch cache first (as ``pip install`` compiles it), so the
times are those of an installed package, not of compiling its source. Also reports the
interpreter running this script as installed (an editable install adds setuptools' own
finder module; a stale ``condambig_lm_eval.pth`` from an earlier install is flagged).

    python benchmarks/startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.fresh_site import PTH_NAME, PTH_SOURCE, venv_with_checkout_pth  # noqa: E402

PROJECT_PREFIXES = ("condambig", "__editable___condambig")


def _import_times(stderr: str) -> tuple[dict[str, int], dict[str, int]]:
    """From ``-X importtime`` output: the self time in µs of every module, and the
    cumulative time (with everything it imported) of each module ``site`` imported while
    running the ``.pth`` files (nesting depth 1)."""
    own, under_site = {}, {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|")
        depth = (len(name) - len(name.lstrip(" ")) - 1) // 2
        own[name.strip()] = int(self_us)
        if depth == 1:
            under_site[name.strip()] = int(cumulative_us)
    return own, under_site


def _measure(python: str, env: dict[str, str], runs: int) -> dict:
    project, total, wall, modules = [], [], [], {}
    for run in range(runs + 1):
        start = time.perf_counter()
        result = subprocess.run([python, "-X", "importtime", "-c", "pass"], env=env,
                                capture_output=True, text=True, check=True, cwd="/")
        elapsed = time.perf_counter() - start
        times, under_site = _import_times(result.stderr)
        if run == 0:  # writes the bytecode cache
            continue
        ours = {name: us for name, us in under_site.items()
                if name.startswith(PROJECT_PREFIXES)}
        for name in times:
            if name.startswith(PROJECT_PREFIXES):
                modules.setdefault(name, []).append(ours.get(name))
        project.append(sum(ours.values()) / 1000)
        total.append(sum(times.values()) / 1000)
        wall.append(elapsed * 1000)
    shown = [name if None in values else f"{name} {statistics.median(values) / 1000:.2f}"
             for name, values in sorted(modules.items())]
    return {"project_ms": statistics.median(project), "imports_ms": statistics.median(total),
            "wall_ms": statistics.median(wall), "modules": shown}


def _env(cache: Path, opt_out: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in {"PYTHONPATH", "PYTHONDONTWRITEBYTECODE"}}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    env["CONDAMBIG_DISABLE_LM_EVAL_HOOK"] = "1" if opt_out else ""
    return env


def _row(label: str, found: dict[str, float]) -> str:
    return (f"{label:<34} {found['project_ms']:>9.2f} {found['imports_ms']:>10.2f} "
            f"{found['wall_ms']:>9.1f}  {', '.join(found['modules']) or '-'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="condambig-startup-") as scratch:
        scratch = Path(scratch)
        fresh = str(venv_with_checkout_pth(scratch / "venv", see_environment=False))
        print(f"median of {args.runs} starts of `python -X importtime -c pass` "
              f"(Python {sys.version.split()[0]})")
        print("ours: what this project's .pth lines import, with everything they import; "
              "all: every import of the start; wall: the whole process;\n"
              "project modules: each one the .pth lines import, with its ms as in 'ours'")
        print(f"{'':<34} {'ours [ms]':>9} {'all [ms]':>10} {'wall [ms]':>9}  project modules")
        print(_row("regular install, opt-out (bare)", _measure(fresh, _env(scratch / "pyc", True),
                                                             args.runs)))
        print(_row("regular install, with the hook", _measure(fresh, _env(scratch / "pyc", False),
                                                            args.runs)))
        print(_row("this environment as installed", _measure(
            sys.executable, _env(scratch / "pyc", False), args.runs)))
    installed = Path(sysconfig.get_paths()["purelib"]) / PTH_NAME
    if installed.exists() and installed.read_text().strip() != PTH_SOURCE.read_text().strip():
        print(f"note: {installed} is not this checkout's (reinstall: pip install -e .)")


if __name__ == "__main__":
    main()
