"""What an interrupted run says it has cached: judgements obtained, never failed ones."""

from __future__ import annotations

from condambig_metrics.judge import JudgeCache
from condambig_tasks.interrupts import cached_summary
from condambig_tasks.progress import Progress
from tests.judge.conftest import request
from tests.support.judging import judge_blocking


def test_failed_judgements_are_not_counted_as_cached(judge_server, make_engine, tmp_path):
    server = judge_server({"faults": [{"kind": "400", "contains": "refused"}]})
    engine = make_engine(server, cache=JudgeCache(tmp_path / "judge.sqlite"),
                         model="tally-judge", max_retries=0)
    engine.progress_factory = Progress
    results = judge_blocking(engine,
        [request(f"answer {i}") for i in range(3)] +
        [request(f"refused answer {i}") for i in range(2)])
    assert [result.failed for result in results] == [False] * 3 + [True] * 2
    assert "judge tally-judge 3/5" in cached_summary()
