"""Judge under a steady rate limit: requests per judgement, wall time, and whether the numbers
equal a clean run's.

One clean pass, then one pass per limit against a loopback server that lets through at most
N requests per second and answers the rest with HTTP 429 and ``Retry-After``; all passes use
the engine as lm-eval and ``condambig-score`` build it (default concurrency, backoff and
retry budget), with no cache. Printed side by side.

    python benchmarks/judge_faults.py [--judgements 100] [--latency-ms 20]

The server runs as a separate process (``python -m tests.support.judge_server``) so its
threads do not compete with the client for the GIL. Target: requests per judgement <= 1.5
and every judgement equal to the clean run's.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from condambig_metrics.judge import JudgeRequest, openai_judge_engine  # noqa: E402
from condambig_metrics.judge.records import JudgeConfig  # noqa: E402
from condambig_tasks.condambigqa.scoring import ANSWER_CORRECTNESS  # noqa: E402
from tests.support.judge_server import judge_server_process  # noqa: E402
from tests.support.judging import judge_blocking  # noqa: E402

SCRIPT = {"default": {"scores": {"7": 0.6, "8": 0.3, "6": 0.1}, "reason": "benchmark"},
          "rules": [{"contains": f"City {i}7", "scores": {"3": 0.7, "4": 0.3}}
                    for i in range(10)]}
# (requests per second, Retry-After seconds, how the header writes it)
LIMITS = [(5, 2, "seconds"), (5, 1, "date"), (20, 1, "seconds"), (20, 2, "date")]


def judge_pass(script: dict, requests: list[JudgeRequest], latency_ms: float
               ) -> tuple[float, int, list]:
    with judge_server_process(script, latency_ms) as base_url:
        engine = openai_judge_engine(JudgeConfig(model="loopback-judge", base_url=base_url,
                                                 api_key="benchmark", cache_enabled=False))
        start = time.perf_counter()
        results = judge_blocking(engine, requests)
        elapsed = time.perf_counter() - start
        return elapsed, engine.stats.requests_sent, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judgements", type=int, default=100)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()

    requests = [
        JudgeRequest(ANSWER_CORRECTNESS, input=f"Question {i}: which city?",
                     actual_output=f"City {i}", expected_output="Paris")
        for i in range(args.judgements)
    ]
    clean_time, clean_requests, clean = judge_pass(SCRIPT, requests, args.latency_ms)
    clean_numbers = [(r.raw_score, r.weighted) for r in clean]
    rows = [("clean (no limit)", clean_time, clean_requests, clean, True)]
    for per_second, retry_after, form in LIMITS:
        script = {**SCRIPT, "rate_limit": {"per_second": per_second,
                                           "retry_after": retry_after, "as": form}}
        elapsed, sent, results = judge_pass(script, requests, args.latency_ms)
        same = [(r.raw_score, r.weighted) for r in results] == clean_numbers
        rows.append((f"{per_second}/s, Retry-After {retry_after} s ({form})", elapsed, sent,
                     results, same))

    print(f"judge under a steady rate limit: {args.judgements} judgements, server latency "
          f"{args.latency_ms:g} ms, default concurrency {JudgeConfig('m').concurrency}")
    print(f"  {'endpoint':36} {'wall s':>7} {'requests':>8} {'req/judgement':>13} "
          f"{'failed':>6}  equal to clean run")
    ok = True
    for label, elapsed, sent, results, same in rows:
        failed = sum(r.failed for r in results)
        ratio = sent / args.judgements
        ok = ok and same and failed == 0 and ratio <= 1.5
        print(f"  {label:36} {elapsed:7.1f} {sent:8d} {ratio:13.2f} {failed:6d}  {same}")
    print(f"  target: <= 1.50 requests per judgement, no failure, equal numbers: "
          f"{'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
