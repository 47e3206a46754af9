"""What the Inspect front end costs on top of Inspect itself: ``condambig/ambignq`` against a
minimal Inspect task (the same prompts as a ``MemoryDataset``, ``generate()``, ``match()``)
over the same samples, both answered by an in-process model that returns one fixed
AmbigNQ reply at once (so no model time is counted).

Each run is a fresh ``python`` process (imports included, as a user's ``inspect eval``
pays them) and its CPU time (user + system, from ``os.wait4``) is what is compared. Each
round starts the two tasks at the same time, one per core, so that whatever else slows the
machine in that round (a neighbour on the host, its memory bandwidth) slows both alike: run
one after the other, the same task's CPU time moved by up to 55 % between runs here (14.5 to 22.7 s), more
than the difference measured. The round's ratio is task / minimal; the median of the rounds'
ratios is the result, printed with each round's, the median CPU times, and the share of the
task's CPU spent importing (a process that imports the task module and exits, alone).

    CONDAMBIG_DATA_DIR=DATA python benchmarks/inspect_overhead.py [--samples 1000] [--rounds 3]
        [--profile]   # also: cProfile of one run of the task, the 25 costliest functions

Target (issue 28): the task at most 1.10x the minimal task's CPU.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPLY = ('[{"question": "Who sang the song in 1999?", "answer": "Ann Lee"}, '
         '{"question": "Who sang the song in 2005?", "answer": "Bo Grant"}]')


def _canned_model() -> None:
    """Register ``canned/reply``: every generation is :data:`REPLY`, at once."""
    from inspect_ai.model import ModelAPI, ModelOutput, modelapi

    @modelapi(name="canned")
    def canned():
        class Canned(ModelAPI):
            async def generate(self, input, tools, tool_choice, config):  # noqa: A002
                return ModelOutput.from_content(model=self.model_name, content=REPLY)

        return Canned


def _minimal_task(samples: int):
    """The same prompts as ``condambig/ambignq``, in the plainest Inspect task."""
    from inspect_ai import Task
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    from condambig_tasks import registry
    from condambig_tasks.data import load_items

    benchmark = registry.get("ambignq")
    options = benchmark.options({})
    items = load_items(benchmark, options)[:samples]
    return Task(dataset=MemoryDataset([Sample(input=benchmark.prompt(item, options),
                                              target=item.question) for item in items]),
                solver=generate(), scorer=match())


def run_once(which: str, samples: int, log_dir: str) -> None:
    """One eval in this process (the child side)."""
    from inspect_ai import eval as inspect_eval

    _canned_model()
    if which == "task":
        from condambig.ambignq import ambignq

        task = ambignq()
    else:
        task = _minimal_task(samples)
    [log] = inspect_eval(task, model="canned/reply", limit=samples, log_dir=log_dir,
                         display="none", log_samples=True)
    assert log.status == "success", log.error


def _children_cpu(*argument_lists: list[str]) -> list[float]:
    """Start one child per argument list at once; each one's CPU seconds (user + system).
    Their output is kept out of the table (Inspect's banner) and shown if one fails."""
    outputs = [tempfile.TemporaryFile() for _ in argument_lists]
    children = [subprocess.Popen([sys.executable, __file__, *arguments], stdout=output,
                                 stderr=subprocess.STDOUT)
                for arguments, output in zip(argument_lists, outputs, strict=True)]
    times = {}
    for child, output in zip(children, outputs, strict=True):
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            output.seek(0)
            sys.stderr.write(output.read().decode(errors="replace"))
            sys.exit(f"{child.args} failed (wait status {status})")
        times[child.pid] = usage.ru_utime + usage.ru_stime
    return [times[child.pid] for child in children]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", choices=["task", "minimal", "import"], help=argparse.SUPPRESS)
    parser.add_argument("--log-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child == "import":
        import condambig.ambignq  # noqa: F401
        return
    if args.child:
        if args.profile:
            import cProfile
            import pstats

            profiler = cProfile.Profile()
            profiler.runcall(run_once, args.child, args.samples, args.log_dir)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
        else:
            run_once(args.child, args.samples, args.log_dir)
        return
    if "CONDAMBIG_DATA_DIR" not in os.environ:
        sys.exit("set CONDAMBIG_DATA_DIR to the upstream data folder (AmbigNQ's dev_light.json)")
    task_times, minimal_times, ratios = [], [], []
    with tempfile.TemporaryDirectory() as logs:
        def arguments(which: str) -> list[str]:
            return ["--child", which, "--samples", str(args.samples), "--log-dir", logs]

        for round_number in range(args.rounds):
            task, minimal = _children_cpu(arguments("task"), arguments("minimal"))
            task_times.append(task)
            minimal_times.append(minimal)
            ratios.append(task / minimal)
            print(f"round {round_number + 1}: condambig/ambignq {task:.2f}, minimal {minimal:.2f}"
                  f": {task / minimal:.3f}x", flush=True)
        [imports] = _children_cpu(arguments("import"))
        task = statistics.median(task_times)
        print(f"{args.samples} AmbigNQ samples, CPU seconds per process (median of "
              f"{args.rounds} rounds, the two tasks side by side): condambig/ambignq "
              f"{task:.2f}, minimal Inspect task {statistics.median(minimal_times):.2f}; "
              f"median ratio {statistics.median(ratios):.3f}x (rounds {min(ratios):.3f} to "
              f"{max(ratios):.3f}); importing the task module {imports:.2f} "
              f"({imports / task:.0%} of the task's)")
        if args.profile:
            subprocess.run([sys.executable, __file__, "--child", "task", "--samples",
                            str(args.samples), "--log-dir", logs, "--profile"], check=True)


if __name__ == "__main__":
    main()
