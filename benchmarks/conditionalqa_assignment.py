"""ConditionalQA scoring speed: assignment solver vs the official permutation search.

    python benchmarks/conditionalqa_assignment.py [--budget-seconds 20] [--sizes 3 6 9 12]

For each size m, one question with m reference answers and m predicted answers (random
yes/no/span answers with random condition elements) is scored by
``condambig_metrics.conditionalqa.score_question`` (linear_sum_assignment) and by a brute
force over all m! orderings, as the official evaluate.py does. The brute force here works on
precomputed pair scores, so it is *faster* than the official script, and the ratio is a lower
bound. When it passes the time budget it stops; its full time is then extrapolated from the
orderings per second it reached (marked "est."). Both results are compared when complete.
"""

from __future__ import annotations

import argparse
import itertools
import math
import random
import time

from condambig_metrics.conditionalqa import (
    length_penalty,
    pair_score_matrices,
    score_question,
)

WORDS = "yes no within 10 days the fee is paid by your employer a passport photo quote".split()
ELEMENTS = [f"<li>condition {index}</li>" for index in range(8)]


def random_answers(rng: random.Random, count: int) -> list[tuple[str, list[str]]]:
    answers = []
    for _ in range(count):
        text = rng.choice(["yes", "no", " ".join(rng.sample(WORDS, rng.randint(1, 4)))])
        answers.append((text, rng.sample(ELEMENTS, rng.randint(0, 2))))
    return answers


def time_assignment(predicted, reference, repeats: int = 20) -> tuple[float, tuple[float, ...]]:
    started = time.perf_counter()
    for _ in range(repeats):
        scores = score_question(predicted, reference)
    return (time.perf_counter() - started) / repeats, scores.values()


def time_brute_force(predicted, reference, budget_seconds: float) -> tuple[float, bool, tuple[float, ...] | None]:
    """(seconds, finished, scores): all orderings of the predictions, each metric maximised."""
    started = time.perf_counter()
    matrices = [matrix.tolist() for matrix in pair_score_matrices(predicted, reference)]
    n = len(reference)
    best = [0.0] * 4
    done = 0
    for ordering in itertools.permutations(range(len(predicted))):
        for metric_index, matrix in enumerate(matrices):
            total = sum(matrix[row][column] for column, row in enumerate(ordering[:n]))
            if total > best[metric_index]:
                best[metric_index] = total
        done += 1
        if done % 5000 == 0 and time.perf_counter() - started > budget_seconds:
            elapsed = time.perf_counter() - started
            return elapsed * math.factorial(len(predicted)) / done, False, None
    gamma = length_penalty(len(predicted), n)
    return time.perf_counter() - started, True, tuple(total / n * gamma for total in best)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 6, 9, 12])
    parser.add_argument("--budget-seconds", type=float, default=20.0)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    print(f"{'answers':>7}  {'assignment':>12}  {'brute force':>18}  {'ratio':>12}  same scores")
    for size in args.sizes:
        reference, predicted = random_answers(rng, size), random_answers(rng, size)
        fast_seconds, fast_scores = time_assignment(predicted, reference)
        slow_seconds, finished, slow_scores = time_brute_force(predicted, reference, args.budget_seconds)
        same = (
            "yes" if finished and all(math.isclose(a, b, abs_tol=1e-9) for a, b in zip(fast_scores, slow_scores, strict=True))
            else ("NO" if finished else "n/a (stopped)")
        )
        slow_label = f"{slow_seconds:.3g} s" + ("" if finished else " est.")
        print(f"{size:>7}  {fast_seconds * 1e3:>9.3f} ms  {slow_label:>18}  {slow_seconds / fast_seconds:>11.3g}x  {same}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
