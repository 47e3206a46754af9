"""Reading an Inspect log's samples for ``condambig-score --from-log``: Inspect's own
``read_eval_log(..., exclude_fields={"events", "messages"})`` against
:func:`condambig_tasks.inspect_samples.read_samples`, side by side on the same logs.

    python benchmarks/inspect_log_reading.py [--megabytes 4 8 16] [--samples 1] [--skip-inspect]

Writes one ``.eval`` log per size (``--samples`` samples sharing the size: one long
completion is the worst case, a model that never stops), then times each reader on it.
Prints seconds, MB/s and the ratio Inspect / ours. Ours stays linear (MB/s about constant
as the log doubles); Inspect's streaming reader grows with the square of a completion's
length (4, 8, 16 MB: 0.5, 1.6, 5.7 s on a busy 2-core machine; ours 0.06, 0.11, 0.20 s),
so pass --skip-inspect for hundreds of MB.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MEGABYTE = 1_000_000


def write_log(path: Path, megabytes: float, samples: int) -> Path:
    from inspect_ai.log import (
        EvalConfig,
        EvalDataset,
        EvalLog,
        EvalSample,
        EvalSpec,
        write_eval_log,
    )
    from inspect_ai.model import ModelOutput

    each = int(megabytes * MEGABYTE / samples)
    words = ("the answer depends on which year you mean, " * (each // 43 + 1))[:each]
    spec = EvalSpec(created="2026-01-02T03:04:05+00:00", task="condambig/ambignq",
                    dataset=EvalDataset(), model="hf/big", config=EvalConfig(),
                    metadata={"benchmark": "ambignq", "options": {}, "judged": False})
    logged = [EvalSample(id=f"q{index}", epoch=1, input="(prompt)", target="",
                         output=ModelOutput.from_content("hf/big", f"{index} {words}"))
              for index in range(samples)]
    write_eval_log(EvalLog(eval=spec, status="success", samples=logged), str(path))
    return path


def timed(read) -> float:
    started = time.perf_counter()
    read()
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, nargs="+", default=[4.0, 8.0, 16.0])
    parser.add_argument("--samples", type=int, default=1)
    parser.add_argument("--skip-inspect", action="store_true")
    arguments = parser.parse_args(argv)

    from inspect_ai.log import read_eval_log

    from condambig_tasks.inspect_samples import read_samples

    print(f"{'MB':>6} {'ours s':>8} {'ours MB/s':>10} {'Inspect s':>10} {'Inspect MB/s':>13} "
          f"{'ratio':>7}")
    with tempfile.TemporaryDirectory() as folder:
        for megabytes in arguments.megabytes:
            path = write_log(Path(folder) / f"log-{megabytes}.eval", megabytes,
                             arguments.samples)
            mine = read_samples(path)
            assert len(mine) == arguments.samples
            ours = timed(lambda path=path: read_samples(path))
            if arguments.skip_inspect:
                print(f"{megabytes:6.1f} {ours:8.3f} {megabytes / ours:10.1f}")
                continue
            theirs_log = read_eval_log(str(path), exclude_fields={"events", "messages"})
            assert {str(s.id): s.output.completion for s in theirs_log.samples} == \
                {s.id: s.completion for s in mine}
            theirs = timed(lambda path=path: read_eval_log(
                str(path), exclude_fields={"events", "messages"}))
            print(f"{megabytes:6.1f} {ours:8.3f} {megabytes / ours:10.1f} {theirs:10.3f} "
                  f"{megabytes / theirs:13.2f} {theirs / ours:7.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
