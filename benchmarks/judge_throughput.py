"""Judge throughput: the engine against a loopback judge server that adds a fixed latency.

For each server latency (default 50 ms, a local vLLM judge, and 500 ms, an API judge) and
each concurrency (default 16 / 32 / 64), 500 distinct judgements through the engine, no
cache, printed per client:

  calls/s        judgements per second of wall time;
  % of ideal     calls/s over concurrency / latency (what the bound allows at that latency);
  CPU ms/call    process CPU time of the client per judgement (the server is another
                 process, so none of its time is counted);
  extra          HTTP requests the server received minus judgements (0 when nothing fails).

Clients: ``aiohttp`` is the backend the engine uses (``OpenAIJudgeBackend``); ``sdk`` is
the same engine with requests sent through the OpenAI SDK's ``AsyncOpenAI`` (default pool),
as the backend did before, for comparison (``--clients aiohttp`` leaves it out). Then the
judgements are written to a cache and read back: the cached rerun must send no request.

    python benchmarks/judge_throughput.py [--calls 500] [--latencies-ms 50 500]
        [--concurrency 16 32 64] [--clients aiohttp sdk]

Targets: >= 90 % of concurrency / latency at 500 ms and concurrency 64, <= 1 ms client CPU
per judgement at concurrency 64, 0 extra requests.
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from condambig_metrics.judge import (  # noqa: E402
    JudgeCompletion,
    JudgeEngine,
    JudgeRequest,
    OpenAIJudgeBackend,
    TransientJudgeError,
    openai_judge_engine,
)
from condambig_metrics.judge.openai_backend import _completion  # noqa: E402
from condambig_metrics.judge.records import JudgeConfig  # noqa: E402
from condambig_tasks.condambigqa.scoring import ANSWER_CORRECTNESS  # noqa: E402
from tests.support.judge_server import judge_server_process  # noqa: E402
from tests.support.judging import judge_blocking  # noqa: E402

CRITERION = ANSWER_CORRECTNESS  # the CondAmbigQA criterion the benchmark exists for
SCRIPT = {"default": {"scores": {"7": 0.6, "8": 0.3, "6": 0.1}, "reason": "benchmark"}}


class SdkJudgeBackend(OpenAIJudgeBackend):
    """The same request sent through the OpenAI SDK (``AsyncOpenAI``, its default pool,
    ``max_retries=0``): the comparison. Its errors are all transient (none is expected)."""

    _client: Any = None

    async def complete(self, prompt: str) -> JudgeCompletion:
        import openai

        if self._client is None:
            self._client = openai.AsyncOpenAI(api_key=self.config.api_key,
                                              base_url=self.config.base_url,
                                              timeout=self.config.timeout_seconds, max_retries=0)
        try:
            response = await self._client.chat.completions.create(
                model=self.config.model, messages=[{"role": "user", "content": prompt}],
                temperature=0, max_tokens=self.config.max_tokens, logprobs=True,
                top_logprobs=self.config.top_logprobs)
        except openai.OpenAIError as error:
            raise TransientJudgeError(str(error)) from error
        return _completion(response.model_dump(), self._settings(True))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()


def server_requests(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/stats", timeout=10) as reply:
        return int(json.loads(reply.read())["requests"])


def make_requests(calls: int, tag: str) -> list[JudgeRequest]:
    return [JudgeRequest(CRITERION, input=f"Question {i} ({tag}): which city?",
                         actual_output=f"City {i}", expected_output="Paris")
            for i in range(calls)]


def engine_for(client: str, config: JudgeConfig) -> JudgeEngine:
    if client == "aiohttp":
        return openai_judge_engine(config)
    return JudgeEngine(SdkJudgeBackend(config), None, concurrency=config.concurrency,
                       max_retries=config.max_retries)


def measure(engine: JudgeEngine, requests: list[JudgeRequest],
            base_url: str) -> dict[str, Any]:
    gc.collect()
    before = server_requests(base_url)
    cpu, wall = time.process_time(), time.perf_counter()
    results = judge_blocking(engine, requests)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"wall": wall, "cpu": cpu, "results": results, "failures": engine.stats.failures,
            "extra": server_requests(base_url) - before - len(requests)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--latencies-ms", type=float, nargs="+", default=[50.0, 500.0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 32, 64])
    parser.add_argument("--clients", nargs="+", default=["aiohttp", "sdk"],
                        choices=["aiohttp", "sdk"])
    args = parser.parse_args()
    if "sdk" in args.clients:
        import openai  # noqa: F401  (imported before any row is timed, as aiohttp is)

    scores: set[tuple] = set()
    ok = True
    print(f"judge throughput: {args.calls} judgements per row, loopback judge server in its "
          "own process, no cache")
    print(f"  {'latency':>8} {'conc.':>5} {'client':>8} {'calls/s':>8} {'% of ideal':>10} "
          f"{'CPU ms/call':>11} {'extra':>5}")
    with tempfile.TemporaryDirectory() as scratch:
        for latency_ms in args.latencies_ms:
            with judge_server_process(SCRIPT, latency_ms) as base_url:
                for concurrency in args.concurrency:
                    for client in args.clients:
                        config = JudgeConfig(model="loopback-judge", base_url=base_url,
                                             api_key="benchmark", concurrency=concurrency,
                                             cache_enabled=False)
                        tag = f"{latency_ms:g}-{concurrency}-{client}"
                        run = measure(engine_for(client, config),
                                      make_requests(args.calls, tag), base_url)
                        rate = args.calls / run["wall"]
                        ideal = concurrency / (latency_ms / 1000)
                        print(f"  {latency_ms:>6g}ms {concurrency:>5} {client:>8} {rate:>8.1f} "
                              f"{100 * rate / ideal:>9.1f}% {1000 * run['cpu'] / args.calls:>11.2f} "
                              f"{run['extra']:>5}", flush=True)
                        scores.add(tuple(result.raw_score for result in run["results"]))
                        ok &= run["failures"] == 0 and run["extra"] == 0
        with judge_server_process(SCRIPT, args.latencies_ms[0]) as base_url:
            config = JudgeConfig(model="loopback-judge", base_url=base_url, api_key="benchmark",
                                 cache_path=str(Path(scratch) / "judge.sqlite"))
            requests = make_requests(args.calls, "cached")
            measure(openai_judge_engine(config), requests, base_url)
            cached_engine = openai_judge_engine(config)
            cached = measure(cached_engine, requests, base_url)
    sent = cached["extra"] + args.calls
    print(f"  cached rerun (concurrency {config.concurrency}): {cached['wall']:.2f} s, "
          f"requests sent {sent}, cache hits {cached_engine.stats.cache_hits}")
    same = len(scores) == 1
    print(f"  identical scores in every row: {same}; failures or extra requests: {not ok}")
    return 0 if same and ok and sent == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
