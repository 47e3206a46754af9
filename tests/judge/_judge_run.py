"""A judge run in its own process, for the kill-and-resume test.

    python -m tests.judge._judge_run BASE_URL CACHE_PATH N
"""

from __future__ import annotations

import sys

from condambig_metrics.judge import JudgeConfig, openai_judge_engine
from tests.judge.conftest import request
from tests.support.judging import judge_blocking


def main() -> int:
    base_url, cache_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    config = JudgeConfig(model="loopback-judge", base_url=base_url, api_key="test-key",
                         concurrency=1, cache_path=cache_path)
    results = judge_blocking(openai_judge_engine(config),
                             [request(f"answer number {i}") for i in range(count)])
    print(sum(not r.failed for r in results), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
