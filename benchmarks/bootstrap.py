"""Cost of the uncertainty estimates: one ``uncertainty()`` call per benchmark, timed.

    python benchmarks/bootstrap.py [--resamples 1000] [--plain 20]

Builds scored samples in the shape each benchmark's ``score`` gives them, at the size of its
largest split (HotpotQA-FLM's full split: 7,404 examples; Abg-CoQA's conversations of 1-5
turns; ConditionalQA's 285 questions on 59 documents), and times
``condambig_tasks.uncertainty.uncertainty`` with ``--resamples`` resamples. The call
estimates every reported metric at once; its whole time is compared with the target for ONE
metric (2 s on a 2-core machine), so "per metric" below is an upper bound. ``--plain N``
also times N resamples of the reference path (``metric_values`` on every resample) and
extrapolates it to ``--resamples``. Exit status 1 when a call misses the target.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from condambig_metrics.hotpot_flm import ROW_KEYS  # noqa: E402
from condambig_tasks import registry  # noqa: E402
from condambig_tasks.benchmark import ScoredSample  # noqa: E402
from condambig_tasks.uncertainty import (  # noqa: E402
    DEFAULT_RESAMPLES,
    Units,
    _draws,
    _Resampler,
    uncertainty,
)

TARGET_SECONDS = 2.0
WORDS = "which one do you mean the red blue boat tree were asking about old new house".split()


def hotpot_flm(rng: random.Random, count: int = 7_404) -> list[ScoredSample]:
    samples = []
    for index in range(count):
        incomplete = rng.choice([0.0, 0.0, 0.4, 1.0])
        complete = rng.choice([incomplete, 1.0, 1.0, 0.67])
        response = rng.choice([incomplete, complete])
        row = {}
        for metric in ("f1", "em", "em_raw"):
            exact = metric != "f1"
            for context, value in (("incomplete", incomplete), ("response", response),
                                   ("complete", complete)):
                row[f"{metric}_{context}"] = float(value == 1.0) if exact else value
        row["masked_fact_returned"] = float(rng.random() < 0.4)
        assert set(row) == set(ROW_KEYS)
        samples.append(ScoredSample(
            id=f"5a8b{index:020x}",
            values={**row, "agent_fallback_rate": float(rng.random() < 0.05),
                    "empty_question_rate": float(rng.random() < 0.02)},
            details={"question_asked": "What year was it founded?", "answer_incomplete": "x"}))
    return samples


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(4, 12))) + "?"


def abg_coqa(rng: random.Random, subtask: str, conversations: int) -> list[ScoredSample]:
    samples = []
    for story in range(conversations):
        for turn in range(rng.randint(1, 5)):
            turn_id = f"story{story:05d}|{turn + 2}|{rng.choice([1, 2])}"
            if subtask == "detection":
                gold = rng.random() < 0.3
                predicted = gold if rng.random() < 0.7 else not gold
                samples.append(ScoredSample(
                    turn_id, {"answer_f1": None if gold else rng.random(), "parse_rate": 1.0,
                              "outputs_truncated": 0.0},
                    {"predicted_ambiguous": predicted, "gold_ambiguous": gold}))
            else:
                samples.append(ScoredSample(
                    turn_id, {"parse_rate": 1.0, "outputs_truncated": 0.0},
                    {"question": _sentence(rng),
                     "references": [_sentence(rng) for _ in range(rng.randint(1, 2))]}))
    return samples


def conditionalqa(rng: random.Random) -> list[ScoredSample]:
    benchmark = registry.get("conditionalqa")
    names = [spec.name for spec in benchmark.metric_specs]
    return [ScoredSample(f"dev-{index}", {name: rng.random() for name in names},
                         {"document": f"https://www.gov.uk/page-{index % 59}"})
            for index in range(285)]


def cases(rng: random.Random) -> list[tuple[str, str, dict, list[ScoredSample]]]:
    return [
        ("hotpot_flm (full, 7,404 examples)", "hotpot_flm", {"split": "full"},
         hotpot_flm(rng)),
        ("abg_coqa detection (2,000 conversations)", "abg_coqa", {"subtask": "detection"},
         abg_coqa(rng, "detection", 2_000)),
        ("abg_coqa clarification BLEU (500 conversations)", "abg_coqa",
         {"subtask": "clarification"}, abg_coqa(rng, "clarification", 500)),
        ("conditionalqa (285 questions, 59 documents)", "conditionalqa", {}, conditionalqa(rng)),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--plain", type=int, default=20,
                        help="resamples of the reference path to time (0: skip)")
    args = parser.parse_args()
    rng = random.Random(0)
    worst = 0.0
    print(f"{'case':<50} {'metrics':>7} {'s/call':>8} {'x target':>9} {'plain s (extrap.)':>18}")
    for label, name, values, samples in cases(rng):
        benchmark = registry.get(name)
        options = benchmark.options(values)
        started = time.perf_counter()
        estimates = uncertainty(benchmark, samples, options, False, resamples=args.resamples)
        seconds = time.perf_counter() - started
        worst = max(worst, seconds)
        plain = ""
        if args.plain:
            units = Units.of(benchmark, samples)
            reference = _Resampler(benchmark, samples, units, options, False, list(estimates),
                                   fast=False)
            started = time.perf_counter()
            reference.run(_draws(len(units), args.plain, np.random.default_rng(0)))
            plain = f"{(time.perf_counter() - started) * args.resamples / args.plain:.1f}"
        print(f"{label:<50} {len(estimates):>7} {seconds:>8.3f} "
              f"{seconds / TARGET_SECONDS:>9.3f} {plain:>18}")
    print(f"worst call: {worst:.3f} s for all metrics at once ({args.resamples} resamples); "
          f"target {TARGET_SECONDS} s per metric")
    return 0 if worst <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
