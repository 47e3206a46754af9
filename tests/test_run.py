"""The one judge decision of every front end (condambig_tasks.run.resolve_judge)."""

from __future__ import annotations

import pytest

from condambig_tasks import registry
from condambig_tasks.run import BenchmarkRun, EnvironmentJudge, GraderRole, resolve_judge


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
    assert condambigqa.variant("condambigqa_paper").judge_model == condambigqa.paper_judge
    assert condambigqa.default_grader == f"openai/{condambigqa.paper_judge}"


def test_a_run_is_judged_exactly_when_a_judge_is_resolved():
    benchmark = registry.get("condambigqa")
    run, judge = BenchmarkRun.start(benchmark, {"setting": "main"},
                                    judge_source=EnvironmentJudge({"judge_model": "j"}))
    assert run.judged and judge.model == "j"
    assert run.headline == "combined_score"
    run, judge = BenchmarkRun.start(benchmark, {"setting": "main"},
                                    judge_source=EnvironmentJudge())
    assert not run.judged and judge is None and run.headline == "citation_score"
