"""Judge throughput: 500 judge calls against a loopback server adding 50 ms per call.

Three passes in one run, printed side by side:
  1. sequential  -- the engine with concurrency 1 (one call at a time), no cache;
  2. engine      -- the engine at its default concurrency (16), writing a fresh cache;
  3. cached      -- the same 500 requests again, served from that cache.

    python benchmarks/judge_throughput.py [--calls 500] [--latency-ms 50] [--concurrency 16]

The server runs as a separate process (``python -m tests.support.judge_server``) so its
threads do not compete with the client for the GIL. Target: engine >= 10x sequential.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from condambig_metrics.judge import (  # noqa: E402
    JudgeRequest,
    JudgeStats,
    openai_judge_engine,
)
from condambig_metrics.judge.records import JudgeConfig  # noqa: E402
from condambig_tasks.condambigqa.scoring import ANSWER_CORRECTNESS  # noqa: E402

CRITERION = ANSWER_CORRECTNESS  # the CondAmbigQA criterion the benchmark exists for
SCRIPT = {"default": {"scores": {"7": 0.6, "8": 0.3, "6": 0.1}, "reason": "benchmark"}}


def server_requests(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as reply:
        return int(json.loads(reply.read())["requests"])


def timed_pass(config: JudgeConfig, requests: list[JudgeRequest]) -> tuple[float, JudgeStats, list]:
    engine = openai_judge_engine(config)
    start = time.perf_counter()
    results = engine.judge_many_sync(requests)
    return time.perf_counter() - start, engine.stats, results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--concurrency", type=int, default=JudgeConfig("m").concurrency)
    args = parser.parse_args()

    requests = [
        JudgeRequest(CRITERION, input=f"Question {i}: which city?", actual_output=f"City {i}",
                     expected_output="Paris")
        for i in range(args.calls)
    ]
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "script.json"
        script.write_text(json.dumps(SCRIPT))
        server = subprocess.Popen(
            [sys.executable, "-m", "tests.support.judge_server", "--port", "0", "--script",
             str(script), "--latency-ms", str(args.latency_ms)],
            cwd=REPO, stdout=subprocess.PIPE, text=True,
        )
        try:
            base_url = json.loads(server.stdout.readline())["base_url"]
            common = dict(model="loopback-judge", base_url=base_url, api_key="benchmark")
            cache = str(Path(scratch) / "judge.sqlite")

            sequential, seq_stats, seq_results = timed_pass(
                JudgeConfig(**common, concurrency=1, cache_enabled=False), requests)
            before = server_requests(base_url)
            engine, eng_stats, eng_results = timed_pass(
                JudgeConfig(**common, concurrency=args.concurrency, cache_path=cache), requests)
            after_engine = server_requests(base_url)
            cached, cached_stats, cached_results = timed_pass(
                JudgeConfig(**common, concurrency=args.concurrency, cache_path=cache), requests)
            after_cached = server_requests(base_url)
        finally:
            server.terminate()
            server.wait(10)

    same = ([r.raw_score for r in seq_results] == [r.raw_score for r in eng_results]
            == [r.raw_score for r in cached_results])
    failures = seq_stats.failures + eng_stats.failures + cached_stats.failures
    print(f"judge throughput: {args.calls} calls, server latency {args.latency_ms:g} ms/call")
    print(f"  sequential (concurrency 1):   {sequential:8.2f} s  "
          f"({args.calls / sequential:7.1f} calls/s)")
    print(f"  engine (concurrency {args.concurrency:>2}):     {engine:8.2f} s  "
          f"({args.calls / engine:7.1f} calls/s)  requests sent {after_engine - before}")
    print(f"  cached rerun:                 {cached:8.2f} s  "
          f"({args.calls / cached:7.1f} calls/s)  requests sent {after_cached - after_engine}, "
          f"cache hits {cached_stats.cache_hits}")
    print(f"  speed-up engine vs sequential: {sequential / engine:.1f}x (target >= 10x)")
    print(f"  speed-up cached vs sequential: {sequential / cached:.0f}x")
    print(f"  identical scores in all passes: {same}; failures: {failures}")
    return 0 if same and failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
