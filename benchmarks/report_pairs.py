"""``condambig-report`` on many runs of one task: time and peak memory of the default
pairing (each run against the next) beside every pair (``--pairs all``), side by side.

    python benchmarks/report_pairs.py [--runs 1000] [--side-by-side 120] [--resamples 200]
                                      [--data tests/fixtures/data]

Scores ``--variants`` different output sets of AmbigNQ once with ``condambig-score
--per-sample`` (on ``--data``: the fixture's questions by default, or a
``CONDAMBIG_DATA_DIR`` with the full dev set), copies them to ``--runs`` saved runs (JSON
and per-sample file, one model name each), then times the real report in a child process
and reads its peak resident memory. Every pair of 1,000 runs (499,500 bootstraps) is beyond
``--pairs all``'s bound and refused in one line; at ``--side-by-side`` runs both pairings
are timed and the ratio printed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

CHILD = """
import resource, sys
from condambig_tasks.report.cli import main
code = main(sys.argv[1:])
print(f"maxrss_kb={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


def make_variants(folder: Path, data: Path, count: int) -> list[tuple[Path, Path]]:
    questions = json.loads((data / "ambignq" / "dev_light.json").read_text())
    env = {**os.environ, "CONDAMBIG_DATA_DIR": str(data), "CONDAMBIG_OFFLINE": "1"}
    variants = []
    for number in range(count):
        outputs = folder / f"outputs-{number}.json"
        outputs.write_text(json.dumps([
            {"id": q["id"], "output": '["x"]' if (i + number) % (number + 2) else "no list"}
            for i, q in enumerate(questions)]))
        per_sample = folder / f"variant-{number}.per-sample.jsonl"
        result = subprocess.run([sys.executable, "-m", "condambig_tasks.cli", "ambignq",
                                 "--outputs", str(outputs), "--per-sample", str(per_sample)],
                                env=env, capture_output=True, text=True, check=True)
        saved = folder / f"variant-{number}.json"
        saved.write_text(result.stdout)
        variants.append((saved, per_sample))
    return variants


def make_runs(folder: Path, variants: list[tuple[Path, Path]], runs: int) -> Path:
    target = folder / f"runs-{runs}"
    target.mkdir()
    for index in range(runs):
        saved, per_sample = variants[index % len(variants)]
        shutil.copyfile(saved, target / f"model-{index:05d}.json")
        shutil.copyfile(per_sample, target / f"model-{index:05d}.per-sample.jsonl")
    return target


def report(runs: Path, resamples: int, *flags: str) -> tuple[float, float, str]:
    """Seconds, peak MB and the last stderr line of one report."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", CHILD, str(runs), "-o",
                             str(runs.parent / f"{runs.name}{''.join(flags)}.md"),
                             "--no-figures", "--bootstrap-resamples", str(resamples), *flags],
                            capture_output=True, text=True, cwd=REPO)
    seconds = time.perf_counter() - started
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    peak = next((int(line.split("=")[1]) / 1024 for line in lines
                 if line.startswith("maxrss_kb=")), float("nan"))
    said = next((line for line in lines if line.startswith("condambig-report")), "")
    return seconds, peak, said


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--side-by-side", type=int, default=120)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--variants", type=int, default=4)
    parser.add_argument("--data", type=Path, default=REPO / "tests" / "fixtures" / "data")
    arguments = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        variants = make_variants(Path(folder), arguments.data, arguments.variants)
        small = make_runs(Path(folder), variants, arguments.side_by_side)
        print(f"{arguments.side_by_side} runs, {arguments.resamples} resamples:")
        neighbours = report(small, arguments.resamples)
        every = report(small, arguments.resamples, "--pairs", "all")
        n = arguments.side_by_side
        for name, pairs, (seconds, peak, _) in (("neighbours", n - 1, neighbours),
                                                 ("--pairs all", n * (n - 1) // 2, every)):
            print(f"  {name:12} {pairs:7d} pairs {seconds:8.1f} s  peak {peak:7.0f} MB")
        print(f"  time ratio all / neighbours: {every[0] / neighbours[0]:.1f}x")
        large = make_runs(Path(folder), variants, arguments.runs)
        print(f"{arguments.runs} runs, {arguments.resamples} resamples:")
        seconds, peak, said = report(large, arguments.resamples)
        print(f"  {'neighbours':12} {arguments.runs - 1:7d} pairs {seconds:8.1f} s  "
              f"peak {peak:7.0f} MB")
        seconds, peak, said = report(large, arguments.resamples, "--pairs", "all")
        print(f"  {'--pairs all':12} refused in {seconds:.1f} s: {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
