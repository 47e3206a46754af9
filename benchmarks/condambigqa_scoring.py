"""CondAmbigQA scoring at scale: peak memory and CPU of ``condambig-score condambigqa`` (no
judge: citations, then answer token F1) on many outputs, and, side by side, the questions
loaded as the loader reads them (a block at a time, each record its question as it is read)
against the previous way (the whole file parsed, then every record converted).

The questions are the data's (``CONDAMBIG_DATA_DIR`` or the test fixtures) repeated under
new ids, written in the upstream format as the 2K release's local file of a scratch data
folder; each output is a JSON list of the question's gold pairs with the answer's first word
dropped (a partial F1) and its gold citations. Each measure runs in a fresh child process
and reads its own peak resident set (``ru_maxrss``):

- ``whole run``: the whole ``condambig-score`` command (loading, parsing, matching, summary,
  bootstrap, provenance, the printed JSON), whose judge-free load keeps each question
  without its fragments' text (``PredictionFiles.lean_load``);
- ``whole run, whole questions``: the same command with every question kept whole (as
  before the lean load; a judged run still keeps them: the judge reads the prompt); both
  must print the same result;
- ``load, streamed``: the questions through the project's loader, and the outputs file;
- ``load, whole file``: the file parsed whole by ``json.loads``, then each record converted
  (the loader before), and the outputs file.

    python benchmarks/condambigqa_scoring.py [--items 100000] [--setting main]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "data"
_LOAD = """
import json, resource, sys
from pathlib import Path
from condambig_tasks import registry
from condambig_tasks.condambigqa.loader import normalise_record
from condambig_tasks.data import load_items, settings
benchmark = registry.get("condambigqa")
if sys.argv[3] == "streamed":
    items = load_items(benchmark, benchmark.options({"setting": sys.argv[2]}))
else:
    path = settings.data_dir() / "condambigqa" / "condambigqa_2k.json"
    items = [normalise_record(row) for row in json.loads(path.read_text(encoding="utf-8"))]
outputs = json.loads(open(sys.argv[1], encoding="utf-8").read())
print(len(items), len(outputs), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _questions(data: Path) -> list[dict]:
    folder = data / "condambigqa"
    files = sorted(folder.glob("*.json"))
    if not files:
        raise SystemExit(f"no CondAmbigQA file in {folder}")
    return json.loads(files[0].read_text(encoding="utf-8"))


def _output(question: dict) -> str:
    pairs = []
    for number, prop in enumerate(question["properties"], 1):
        answer = prop.get("groundtruth") or prop.get("answer") or ""
        answer = answer if isinstance(answer, str) else " ".join(map(str, answer))
        pairs.append({"condition": prop.get("condition", ""),
                      "answer": " ".join(answer.split()[1:]),
                      "citations": [number, number + 1]})
    return json.dumps(pairs)


def write_inputs(folder: Path, questions: list[dict], count: int) -> tuple[Path, Path]:
    """A data folder's 2K file of ``count`` questions (the data's, repeated under new ids)
    and an outputs file with one output each."""
    reference = folder / "data" / "condambigqa" / "condambigqa_2k.json"
    reference.parent.mkdir(parents=True)
    outputs = folder / "outputs.json"
    with reference.open("w", encoding="utf-8") as ref, outputs.open("w", encoding="utf-8") as out:
        ref.write("[")
        out.write("[")
        for index in range(count):
            question = dict(questions[index % len(questions)], id=f"q{index}")
            separator = "," if index else ""
            ref.write(separator + json.dumps(question))
            out.write(separator + json.dumps({"id": question["id"],
                                              "output": _output(question)}))
        ref.write("]")
        out.write("]")
    return reference, outputs


def _child(command: list[str], env: dict[str, str]) -> tuple[str, float]:
    """Stdout and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed:\n{result.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return result.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


# a command run with its peak resident set written to a file when it exits; "whole" runs it
# with the questions loaded whole (no lean load: every fragment's text kept)
_PEAK = """
import atexit, resource, runpy, sys
peak_file, way, sys.argv = sys.argv[1], sys.argv[2], sys.argv[3:]
if way == "whole":
    from condambig_tasks.benchmark import PredictionFiles
    from condambig_tasks.condambigqa.benchmark import CondAmbigQA
    CondAmbigQA.prediction_files = PredictionFiles()
atexit.register(lambda: open(peak_file, "w").write(
    str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--setting", default="main")
    args = parser.parse_args()
    data = Path(os.environ.get("CONDAMBIG_DATA_DIR", FIXTURES))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("CONDAMBIG_JUDGE_MODEL", None)
    score_command = str(Path(sys.executable).parent / "condambig-score")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        reference, outputs = write_inputs(folder, _questions(data), args.items)
        megabytes = (reference.stat().st_size + outputs.stat().st_size) / 1e6
        env["CONDAMBIG_DATA_DIR"] = str(folder / "data")
        peak_file = folder / "peak.txt"
        runs, printed_by = {}, {}
        for way in ("lean", "whole"):
            command = [sys.executable, "-c", _PEAK, str(peak_file), way, score_command,
                       "condambigqa", "--outputs", str(outputs), "--setting", args.setting]
            printed_by[way], cpu = _child(command, env)
            runs[way] = (int(peak_file.read_text()), cpu)
        if printed_by["lean"] != printed_by["whole"]:
            raise SystemExit("the lean and whole-question runs printed different results")
        result = json.loads(printed_by["lean"])
        loads = {}
        for way in ("streamed", "whole"):
            stdout, cpu = _child([sys.executable, "-c", _LOAD, str(outputs), args.setting, way],
                                 env)
            loads[way] = (int(stdout.split()[2]), cpu)
    print(f"condambigqa ({args.setting}), {args.items:,} outputs, no judge; inputs "
          f"{megabytes:,.0f} MB on disk; parse rate {result['metrics'].get('parse_rate')}")
    for way, label in (("lean", "whole run, lean load".ljust(26)), ("whole", "whole run, whole questions")):
        peak, cpu = runs[way]
        print(f"  {label} : peak {peak / 1024:,.0f} MB, {cpu:.1f} s CPU "
              f"({peak * 1024 / args.items / 1000:.1f} KB per output)")
    print(f"  whole questions / lean peak: {runs['whole'][0] / runs['lean'][0]:.2f}x "
          "(the same printed result)")
    for way, label in (("streamed", "load, streamed".ljust(26)), ("whole", "load, whole file".ljust(26))):
        peak, cpu = loads[way]
        print(f"  {label} : peak {peak / 1024:,.0f} MB, {cpu:.1f} s CPU")
    print(f"  whole file / streamed peak: {loads['whole'][0] / loads['streamed'][0]:.2f}x")


if __name__ == "__main__":
    main()
