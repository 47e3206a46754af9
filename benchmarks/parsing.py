"""Parsing speed per benchmark: 1 MB adversarial outputs, and realistic outputs.

    python benchmarks/parsing.py [--size 1000000] [--timeout 30] [--realistic 2000]

For each benchmark's parser and each kind of ``tests.support.adversarial.CORPUS`` (repeated
spaces, fences, brackets, deep nesting, huge numbers, unclosed ``<think>``, surrogates), the
time to parse one output of ``--size`` characters, in a forked child killed after
``--timeout`` seconds. Then the throughput (outputs per second) on realistic well-formed
and truncated replies. Prints the worst case; target: under 1 s per output. Exit status 1
when a parse misses the target.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.adversarial import CORPUS, MEGABYTE, PARSERS, timed_parse  # noqa: E402

TARGET_SECONDS = 1.0

REALISTIC = {
    "conditionalqa": [
        '{"answers": [{"answer": "yes", "conditions": [2, 5]}, {"answer": "no", "conditions": [7]}]}',
        '```json\n{"answers": [["within 10 days", [1]]]}\n```',
        '<think>The element 3 says...</think>{"answers": [{"answer": "yes", "conditions": [3',
    ],
    "ambignq": [
        '[{"question": "Who sang it in 1999?", "answer": "Nora Vale"}, '
        '{"question": "Who sang it in 2004?", "answer": "The Lanterns"}]',
        'Here you go:\n```json\n[{"question": "q1", "answer": ["a1", "a2"]}]\n```',
        '[{"question": "q1", "answer": "a1"}, {"question": "q2", "answer": "a2"}, {"question": "q3", "ans',
    ],
    "abg_coqa": ["AMBIGUOUS", "Answer: the red car", "<think>hmm</think>\nShe went home."],
    "condambigqa": [
        '[{"condition": "If the 2010 final is meant", "answer": "Spain", "citations": '
        '["Fragment 1", "Fragment 3"]}, {"condition": "If the women\'s final", "answer": "Japan", '
        '"citations": ["Fragments 2 and 4"]}]',
        '```json\n{"conditions": [{"condition": "c", "answer": "a", "citations": [1, 2]}]}\n```',
    ],
    "condambigqa_closed_book": ['[{"answer": "Spain"}]', "Spain won the 2010 final."],
    "hotpot_flm": ["What year was the band formed?", "<think>need the year</think>When was it founded?"],
    "judge_reply": ['{"score": 8, "reason": "Covers both readings."}',
                    'The output names the right team.\n```json\n{"score": 6}\n```',
                    '<think>compare the answers</think>{"score": 2, "reason": "wrong year"'],
}


def realistic_throughput(parser: str, count: int) -> float:
    outputs = REALISTIC[parser]
    parse = PARSERS[parser]
    started = time.perf_counter()
    for index in range(count):
        parse(outputs[index % len(outputs)])
    return count / (time.perf_counter() - started)


def main() -> int:
    arguments = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    arguments.add_argument("--size", type=int, default=MEGABYTE)
    arguments.add_argument("--timeout", type=float, default=30.0)
    arguments.add_argument("--realistic", type=int, default=2_000)
    options = arguments.parse_args()

    worst: tuple[float, str, str] = (0.0, "", "")
    failures = 0
    print(f"{'parser':24} {'output kind':28} {'seconds':>8}  status")
    for parser in PARSERS:
        for kind in CORPUS:
            seconds, status, detail = timed_parse(parser, kind, options.size, options.timeout)
            missed = status != "ok" or seconds >= TARGET_SECONDS
            failures += missed
            note = "" if status == "ok" else f" ({detail})"
            print(f"{parser:24} {kind:28} {seconds:8.3f}  {status}{'  MISSED' if missed else ''}{note}",
                  flush=True)
            if seconds > worst[0]:
                worst = (seconds, parser, kind)
    print()
    print(f"{'parser':24} {'realistic outputs/s':>20}")
    for parser in PARSERS:
        PARSERS[parser]("")  # imports outside the timing
        print(f"{parser:24} {realistic_throughput(parser, options.realistic):20,.0f}")
    print()
    print(f"worst case: {worst[0]:.3f} s ({worst[1]} on {worst[2]}, {options.size:,} characters); "
          f"target < {TARGET_SECONDS:.0f} s; {failures} parse(s) missed it")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
