"""The judge against endpoints that refuse, reject or differ: log-probability fallback for
every request in flight, request counts equal to the server's, cache keys per endpoint and
setting, lone surrogates, progress, and ``condambig-score``'s exit status."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging

import pytest

from condambig_metrics.judge import (
    JudgeCache,
    JudgeConfig,
    JudgeEngine,
    OpenAIJudgeBackend,
    cache_key,
    render_prompt,
)
from condambig_tasks.cli import main
from condambig_tasks.progress import Progress
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS, judge_rules
from tests.conftest import FIXTURE_DATA
from tests.judge.conftest import request
from tests.support.judging import judge_blocking

SCRIPT = {
    "rules": [
        {"contains": "Lyon", "scores": {"6": 0.5, "9": 0.3, "2": 0.2}},
        {"contains": "Marseille", "scores": {"3": 0.8, "4": 0.2}},
    ],
    "default": {"scores": {"5": 1.0}},
}


# ---- log-probability fallback ------------------------------------------------------------

def test_every_request_in_flight_follows_the_logprob_fallback(judge_server, make_engine) -> None:
    # 8 distinct prompts sent at once; the server refuses logprobs after 200 ms, so all 8
    # are in flight when the first refusal comes back. The engine's start allows one request
    # in flight and doubles that every 25 ms: warm it up first.
    server = judge_server({**SCRIPT, "latency_ms": 200})
    engine = make_engine(server, concurrency=8, max_retries=0)
    judge_blocking(engine, [request(f"warm-up {i}") for i in range(8)])
    server.set_script({**SCRIPT, "refuse_logprobs": True, "latency_ms": 200})
    server.reset()
    results = judge_blocking(engine, [request(f"Lyon {i}") for i in range(8)])
    assert not any(r.failed for r in results)
    # without logprobs the score is the reply's integer (6, the most probable), unweighted
    assert {(r.raw_score, r.weighted) for r in results} == {(6.0, False)}
    stats = server.stats()
    assert stats["outcomes"] == {"refused-logprobs": 8, "ok": 8}
    # 8 refused + 8 asked again = 16 HTTP requests, all counted; a fallback is not a retry
    assert stats["requests"] == engine.stats.requests_sent - 8 == 16
    assert engine.stats.logprob_fallbacks == 8 and engine.stats.retries == 0
    # later requests go without logprobs at once
    [later] = judge_blocking(engine, [request("Marseille")])
    assert later.raw_score == 3.0 and server.stats()["requests"] == 17
    assert server.stats()["last_request"].get("logprobs") is None


# ---- request counts ----------------------------------------------------------------------

@pytest.mark.parametrize("script", [
    {"faults": [{"kind": "429", "first": 3}, {"kind": "unparseable", "first": 2}]},
    {"faults": [{"kind": "500", "contains": "Lyon 1"}]},  # fails after every retry
    {"faults": [{"kind": "disconnect", "first": 2}, {"kind": "malformed", "first": 2}]},
    {"refuse_logprobs": True, "faults": [{"kind": "503", "first": 2}]},
    {"faults": [{"kind": "401", "contains": "Lyon 5"}]},  # the endpoint fails mid-run
], ids=["transient", "persistent", "broken-bodies", "fallback-and-503", "401-mid-run"])
def test_reported_requests_equal_what_the_server_received(judge_server, make_engine,
                                                          script) -> None:
    server = judge_server({**SCRIPT, **script, "latency_ms": 20})
    engine = make_engine(server, concurrency=3, max_retries=2)
    judge_blocking(engine, [request(f"Lyon {i}") for i in range(10)])
    assert engine.stats.requests_sent == server.stats()["requests"]


# ---- cache keys --------------------------------------------------------------------------

def test_two_endpoints_serving_one_model_name_keep_their_own_judgements(
    judge_server, make_engine, tmp_path
) -> None:
    endpoint_a = judge_server({"default": {"scores": {"5": 0.5, "6": 0.5}}})
    endpoint_b = judge_server({"default": {"scores": {"5": 0.5, "7": 0.5}}})
    path = tmp_path / "judge.sqlite"
    [a] = judge_blocking(make_engine(endpoint_a, cache=JudgeCache(path)), [request("Lyon")])
    [b] = judge_blocking(make_engine(endpoint_b, cache=JudgeCache(path)), [request("Lyon")])
    # A: 5*.5 + 6*.5 = 5.5; B asks its own server: 5*.5 + 7*.5 = 6.0
    assert (a.raw_score, b.raw_score) == (pytest.approx(5.5), pytest.approx(6.0))
    assert not b.cached and endpoint_b.stats()["requests"] == 1
    [a_again] = judge_blocking(make_engine(endpoint_a, cache=JudgeCache(path)), [request("Lyon")])
    assert a_again.cached and a_again.raw_score == pytest.approx(5.5)
    assert endpoint_a.stats()["requests"] == 1


def test_logprob_and_length_settings_are_in_the_key(judge_server, tmp_path) -> None:
    server = judge_server(SCRIPT)
    path = tmp_path / "judge.sqlite"

    def judge(**settings):
        config = JudgeConfig(model="loopback-judge", base_url=server.base_url, api_key="k",
                             **settings)
        engine = JudgeEngine(OpenAIJudgeBackend(config), JudgeCache(path))
        return judge_blocking(engine, [request("Lyon")])[0]

    full, top2, none, short = judge(), judge(top_logprobs=2), judge(top_logprobs=0), \
        judge(max_tokens=64)
    # 20 alternatives: .5*6 + .3*9 + .2*2 = 6.1; top 2: (3 + 2.7) / .8 = 7.125; none: 6
    assert (full.raw_score, top2.raw_score, none.raw_score) == (
        pytest.approx(6.1), pytest.approx(7.125), 6.0)
    assert not any(r.cached for r in (full, top2, none, short))
    assert server.stats()["requests"] == 4
    assert judge(top_logprobs=2).cached and server.stats()["requests"] == 4


def test_judgements_made_without_logprobs_are_not_served_to_a_weighted_run(
    judge_server, make_engine, tmp_path
) -> None:
    # one endpoint URL: first it refuses log-probabilities, later it returns them
    server = judge_server({**SCRIPT, "refuse_logprobs": True})
    path = tmp_path / "judge.sqlite"
    requests = [request(f"Lyon {i}") for i in range(4)]
    unweighted = judge_blocking(make_engine(server, cache=JudgeCache(path)), requests)
    assert {(r.raw_score, r.weighted) for r in unweighted} == {(6.0, False)}
    # a rerun against the refusing endpoint finds them once the refusal came back
    server.reset()
    rerun = judge_blocking(make_engine(server, cache=JudgeCache(path)), requests)
    assert all(r.cached for r in rerun)
    # only refusals were sent: those started before the first came back (one on a quiet
    # machine; the engine's start lets a second go after 25 ms, which a loaded one takes)
    outcomes = server.stats()["outcomes"]
    assert set(outcomes) == {"refused-logprobs"} and 1 <= outcomes["refused-logprobs"] <= 4
    # the endpoint now returns log-probabilities: judged again, weighted, as a clean run
    server.set_script(SCRIPT)
    server.reset()
    weighted = judge_blocking(make_engine(server, cache=JudgeCache(path)), requests)
    assert server.stats()["requests"] == 4 and not any(r.cached for r in weighted)
    clean = judge_blocking(make_engine(server), requests)
    assert [(r.raw_score, r.weighted) for r in weighted] == [
        (r.raw_score, r.weighted) for r in clean] == [(pytest.approx(6.1), True)] * 4


def test_a_backend_without_logprobs_keys_like_top_logprobs_zero(judge_server) -> None:
    server = judge_server({**SCRIPT, "refuse_logprobs": True})
    backend = OpenAIJudgeBackend(JudgeConfig(model="m", base_url=server.base_url, api_key="k"))
    before = backend.cache_settings
    judge_blocking(JudgeEngine(backend, None), [request("Lyon")])
    off = OpenAIJudgeBackend(JudgeConfig(model="m", base_url=server.base_url, api_key="k",
                                         top_logprobs=0))
    assert "top_logprobs" not in before
    assert backend.cache_settings == off.cache_settings == {**before, "top_logprobs": "0"}


def test_default_endpoint_and_settings_keep_the_plain_key() -> None:
    prompt = render_prompt(request("Lyon"))
    plain = hashlib.sha256(b"gpt-4o-mini\x00" + prompt.encode()).hexdigest()
    for base_url in (None, "https://api.openai.com/v1", "HTTPS://API.OPENAI.COM/v1/"):
        backend = OpenAIJudgeBackend(JudgeConfig(model="gpt-4o-mini", base_url=base_url,
                                                 api_key="k"))
        assert backend.cache_settings == {}
        assert cache_key("gpt-4o-mini", prompt, settings=backend.cache_settings) == plain
    local = OpenAIJudgeBackend(JudgeConfig(model="gpt-4o-mini", base_url="http://Node:8000/v1/",
                                           api_key="k", top_logprobs=5))
    assert local.cache_settings == {"endpoint": "http://node:8000/v1", "top_logprobs": "5"}
    assert cache_key("gpt-4o-mini", prompt, settings=local.cache_settings) != plain


# ---- lone surrogates ---------------------------------------------------------------------

def test_lone_surrogates_are_judged_not_a_crash(judge_server, make_engine, tmp_path) -> None:
    server = judge_server(SCRIPT)
    engine = make_engine(server, cache=JudgeCache(tmp_path / "judge.sqlite"))
    [result] = judge_blocking(engine, [request("Lyon \ud800 and \udfff")])
    assert not result.failed and result.raw_score == pytest.approx(6.1)
    [sent] = server.stats(with_prompts=True)["prompts"]
    assert "Lyon \ufffd and \ufffd" in sent
    assert len(cache_key("m", "\ud800")) == 64  # the key itself never raises


# ---- progress ----------------------------------------------------------------------------

class _Recorder:
    made: list[tuple[str, int]] = []
    advanced: list[int] = []

    def __init__(self, label: str, total: int) -> None:
        _Recorder.made.append((label, total))

    def advance(self, count: int = 1) -> None:
        _Recorder.advanced.append(count)


def test_progress_counts_distinct_judgements(judge_server, make_engine, tmp_path) -> None:
    server = judge_server(SCRIPT)
    _Recorder.made, _Recorder.advanced = [], []
    engine = make_engine(server, cache=JudgeCache(tmp_path / "judge.sqlite"))
    engine.progress_factory = _Recorder
    judge_blocking(engine, [request("Lyon"), request("Rome"), request("Lyon")])
    judge_blocking(engine, [request("Lyon"), request("Marseille")])  # a cache hit counts too
    # 3 requests, 2 distinct; then 2 distinct (one from the cache)
    assert _Recorder.made == [("judge loopback-judge", 2), ("judge loopback-judge", 2)]
    assert _Recorder.advanced == [1, 1, 1, 1]


def test_the_project_progress_class_is_a_progress_factory(judge_server, make_engine) -> None:
    server = judge_server(SCRIPT)
    engine = make_engine(server)
    engine.progress_factory = Progress
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    project_logger = logging.getLogger("condambig")
    handler, level = Collect(), project_logger.level
    project_logger.addHandler(handler)
    project_logger.setLevel(logging.INFO)
    try:
        asyncio.run(engine.judge_many([request(f"answer {i}") for i in range(3)]))
    finally:
        project_logger.removeHandler(handler)
        project_logger.setLevel(level)
    # the last unit always logs: "judge <model>: done/total (rate/s, elapsed, done)"
    assert any(line.startswith("judge loopback-judge: 3/3 (") for line in lines), lines


# ---- endpoint failures and condambig-score's exit status ---------------------------------

@pytest.mark.parametrize(("script", "failure"), [
    ({"require_api_key": "another-key"}, "HTTP 401"),
    ({"faults": [{"kind": "404"}]}, "HTTP 404"),
    ({"faults": [{"kind": "500"}]}, "all 3 judgement(s) failed"),
    ({"faults": [{"kind": "500", "contains": "Rome"}]}, None),  # one prompt, not the endpoint
])
def test_endpoint_failure_is_told_apart_from_a_failed_prompt(judge_server, make_engine,
                                                             script, failure) -> None:
    server = judge_server({**SCRIPT, **script})
    engine = make_engine(server, max_retries=1)
    judge_blocking(engine, [request("Lyon"), request("Rome"), request("Marseille")])
    if failure is None:
        assert engine.endpoint_failure is None and engine.stats.failures == 1
    else:
        assert failure in engine.endpoint_failure


@pytest.fixture
def cli_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_JUDGE_API_KEY", "test-key")
    monkeypatch.setenv("CONDAMBIG_JUDGE_MAX_RETRIES", "1")
    monkeypatch.delenv("CONDAMBIG_JUDGE_MODEL", raising=False)


def _score(tmp_path, capsys, base_url: str) -> tuple[int, dict | None, str]:
    """condambig-score on the two abg_coqa clarification outputs of the fixture."""
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": key, "output": value}
                                for key, value in RAW_OUTPUTS["clarification"].items()]))
    code = main(["abg_coqa", "--subtask", "clarification", "--pred", str(pred),
                 "--ref", str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"),
                 "--judge-model", "judge", "--judge-base-url", base_url])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


@pytest.mark.parametrize(("script", "message"), [
    ({"require_api_key": "another-key"}, "CONDAMBIG_JUDGE_API_KEY"),
    ({"faults": [{"kind": "403"}]}, "HTTP 403"),
    # the endpoint check fails after its two tries; no judgement is sent after it
    ({"faults": [{"kind": "503"}]}, "cannot be reached at the first judgement: judge endpoint returned HTTP 503"),
])
def test_condambig_score_exits_non_zero_when_the_endpoint_fails(
    judge_server, cli_environment, tmp_path, capsys, script, message
) -> None:
    server = judge_server({"rules": judge_rules(), **script})
    code, _, err = _score(tmp_path, capsys, server.base_url)
    assert code != 0
    assert "judge endpoint failed" in err and message in err


def test_condambig_score_prints_what_it_scored_when_the_endpoint_fails(
    judge_server, cli_environment, tmp_path, capsys
) -> None:
    """The finished scoring is not thrown away: the JSON is printed, the judged metric null
    with how to finish it, the exit status 2."""
    server = judge_server({"rules": judge_rules(), "faults": [{"kind": "403"}]})
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": key, "output": value}
                                for key, value in RAW_OUTPUTS["clarification"].items()]))
    code = main(["abg_coqa", "--subtask", "clarification", "--pred", str(pred),
                 "--ref", str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"),
                 "--judge-model", "judge", "--judge-base-url", server.base_url])
    result = json.loads(capsys.readouterr().out)
    assert code == 2 and result["metrics"]["bleu4"] is not None
    assert result["metrics"]["judge_helpfulness"] is None
    # a 403 is the key's or the model's: fix it first (not "run the same command again")
    reason = result["null_reasons"]["judge_helpfulness"]
    assert "the key in CONDAMBIG_JUDGE_API_KEY or OPENAI_API_KEY: it may not use the model" \
        in reason
    assert "fix that setting, then run the command again" in reason


def test_condambig_score_reports_the_requests_the_server_received(
    judge_server, cli_environment, tmp_path, capsys
) -> None:
    server = judge_server({"rules": judge_rules(), "refuse_logprobs": True,
                           "faults": [{"kind": "429", "first": 1}]})
    code, result, err = _score(tmp_path, capsys, server.base_url)
    assert code == 0, err
    # the endpoint check is refused log-probabilities (which switches them off), then the
    # 2 questions are asked without them; one gets a 429 and is retried
    assert result["judge"]["requests"] == server.stats()["requests"] == 4
    assert result["judge"]["logprob_fallbacks"] == 0 and result["judge"]["retries"] == 1
