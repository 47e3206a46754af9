"""The one judge decision (condambig_tasks.run.resolve_judge) and the one retry hint
(condambig_tasks.run.retry_hint) of every front end."""

from __future__ import annotations

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import default_grader, find_variant
from condambig_tasks.run import (
    BenchmarkRun,
    EnvironmentJudge,
    GraderRole,
    engine_retry_hint,
    resolve_judge,
)


@pytest.fixture(autouse=True)
def _no_judge_in_environment(monkeypatch):
    for name in ("CONDAMBIG_JUDGE_MODEL", "CONDAMBIG_JUDGE_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _options(name: str, **values):
    return registry.get(name).options(values)


def test_lm_eval_metadata_and_cli_flags_name_the_judge():
    benchmark = registry.get("condambigqa")
    options = _options("condambigqa")
    assert resolve_judge(benchmark, options, EnvironmentJudge()) is None
    config = resolve_judge(benchmark, options, EnvironmentJudge({"judge_model": "j"}))
    assert config.model == "j"


def test_the_environment_names_the_judge(monkeypatch):
    monkeypatch.setenv("CONDAMBIG_JUDGE_MODEL", "from-env")
    benchmark = registry.get("condambigqa")
    assert resolve_judge(benchmark, _options("condambigqa"),
                         EnvironmentJudge()).model == "from-env"
    # --metadata / flags win over the environment
    assert resolve_judge(benchmark, _options("condambigqa"),
                         EnvironmentJudge({"judge_model": "flag"})).model == "flag"


def test_no_judge_where_none_applies(monkeypatch):
    monkeypatch.setenv("CONDAMBIG_JUDGE_MODEL", "from-env")
    assert resolve_judge(registry.get("ambignq"), _options("ambignq"),
                         EnvironmentJudge()) is None  # the benchmark uses no judge
    abg = registry.get("abg_coqa")
    assert resolve_judge(abg, _options("abg_coqa", subtask="detection"),
                         EnvironmentJudge()) is None  # not on this subtask
    assert resolve_judge(abg, _options("abg_coqa", subtask="clarification"),
                         EnvironmentJudge()).model == "from-env"


def test_inspect_grader_role_bound_default_and_turned_off():
    condambigqa = registry.get("condambigqa")
    options = _options("condambigqa")
    # no role bound: the paper's judge is the default grader
    assert resolve_judge(condambigqa, options, GraderRole()) == "openai/gpt-4o-mini"
    assert resolve_judge(condambigqa, options, GraderRole(bound="bound-grader")) == \
        "bound-grader"
    assert resolve_judge(condambigqa, options, GraderRole(enabled=False,
                                                          bound="bound-grader")) is None
    # Abg-CoQA's judge is optional (the paper rated with people): only a bound grader
    abg = registry.get("abg_coqa")
    clarification = _options("abg_coqa", subtask="clarification")
    assert resolve_judge(abg, clarification, GraderRole()) is None
    assert resolve_judge(abg, clarification, GraderRole(bound="g")) == "g"


def test_the_paper_variant_names_the_papers_judge():
    condambigqa = registry.get("condambigqa")
    assert find_variant(condambigqa, "condambigqa_paper").judge_model == condambigqa.paper_judge
    assert default_grader(condambigqa) == f"openai/{condambigqa.paper_judge}"


def test_a_run_is_judged_exactly_when_a_judge_is_resolved():
    benchmark = registry.get("condambigqa")
    run, judge = BenchmarkRun.start(benchmark, {"setting": "main"},
                                    judge_source=EnvironmentJudge({"judge_model": "j"}))
    assert run.judged and judge.model == "j"
    assert run.headline == "combined_score"
    run, judge = BenchmarkRun.start(benchmark, {"setting": "main"},
                                    judge_source=EnvironmentJudge())
    assert not run.judged and judge is None and run.headline == "citation_score"


# ---------------------------------------------------------------------- the retry hint


def _hints(monkeypatch, cache: str | None) -> dict[str, str]:
    """Each front end's hint after failed judgements, with CONDAMBIG_JUDGE_CACHE=``cache``."""
    from types import SimpleNamespace

    from condambig_tasks import cli, lm_eval_glue
    from inspect_tasks.run_summary import rescore_hint

    if cache is None:
        monkeypatch.delenv("CONDAMBIG_JUDGE_CACHE", raising=False)
    else:
        monkeypatch.setenv("CONDAMBIG_JUDGE_CACHE", cache)
    enabled = cache != "off"
    path = cache if enabled else None
    judge = SimpleNamespace(model="judge", base_url=None, cache_path=path,
                            cache_file=path, cache_enabled=enabled)
    # the engine after judging: its endpoint failed with HTTP 503 (not a refusal)
    engine = SimpleNamespace(cache=object() if enabled else None, endpoint_failure="HTTP 503",
                             endpoint_refused=False)
    lm_eval = lm_eval_glue._rerun(registry.get("abg_coqa"), "abg_coqa_clarification", judge)
    return {"condambig-score": engine_retry_hint(engine, cli._rerun(False)),
            "lm-eval": engine_retry_hint(engine, lm_eval),
            "inspect": rescore_hint("abg_coqa")}


def test_every_front_end_words_its_retry_hint_with_the_one_template(monkeypatch, tmp_path):
    """What failed, the front end's own way to judge again, then what the judge cache keeps
    (``run.retry_hint``); a cache the user chose is named in the commands of another
    process, and a cache turned off is said."""
    cache = str(tmp_path / "judge cache.sqlite")
    for hint in _hints(monkeypatch, cache).values():
        assert hint.endswith(": the judgements already made are cached and only the missing "
                             "judgements are sent"), hint
    chosen = _hints(monkeypatch, cache)
    assert chosen["condambig-score"].startswith("the judge endpoint failed (HTTP 503); run "
                                                "the same command again")
    assert chosen["lm-eval"].startswith("the judge endpoint failed (HTTP 503); this run kept "
                                        "no samples")
    assert chosen["lm-eval"].count(f"CONDAMBIG_JUDGE_CACHE='{cache}' condambig-score") == 1
    assert chosen["inspect"].count(f"CONDAMBIG_JUDGE_CACHE='{cache}' condambig-") == 2
    assert "CONDAMBIG_JUDGE_CACHE=" not in _hints(monkeypatch, None)["inspect"]
    for front_end, hint in _hints(monkeypatch, "off").items():
        assert hint.endswith("the judge cache is off, so every judgement is sent again (set "
                             "CONDAMBIG_JUDGE_CACHE to a file to send only the missing ones)"), \
            front_end


def test_a_refused_endpoint_is_fixed_before_running_again():
    from condambig_tasks.run import retry_hint

    hint = retry_hint("run the command again", endpoint_failure="HTTP 401: bad key.",
                      refused=True)
    assert hint == ("the judge endpoint failed (HTTP 401: bad key); fix that setting, then run "
                    "the command again: the judgements already made are cached and only the "
                    "missing judgements are sent")
