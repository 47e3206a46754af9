"""The optional judge rate for clarification questions: failures excluded and counted, absent
without a judge, the same through condambig-score (a loopback judge server)."""

from __future__ import annotations

import json

import pytest

from condambig_metrics.judge import JudgeResult
from condambig_tasks import registry
from condambig_tasks.abg_coqa.judge import (
    CLARIFICATION_HELPFULNESS,
    clarification_request,
    judgement_values,
)
from condambig_tasks.abg_coqa.loader import AbgCoQADataConfig, load_turns
from condambig_tasks.abg_coqa.samples import build_samples
from condambig_tasks.benchmark import ScoredSample, reported_values
from condambig_tasks.cli import main
from condambig_tasks.lm_eval_glue import LmEvalTask
from tests.abg_coqa.scripted_outputs import EXPECTED_JUDGE, RAW_OUTPUTS, judge_rules
from tests.conftest import FIXTURE_DATA
from tests.support.judge_server import JudgeServer

utils = LmEvalTask("abg_coqa")  # lm-eval's hooks of the benchmark


def _judged(scores: list[float | None]) -> dict[str, float | None]:
    """The judge metrics of questions judged ``scores`` (None: a failed judgement)."""
    benchmark = registry.get("abg_coqa")
    samples = [
        ScoredSample(id=str(index), values={"parse_rate": 1.0, **judgement_values(
            JudgeResult.failure("boom") if score is None else JudgeResult(
                score=score, raw_score=score * 10, weighted=False, failed=False, error=None,
                cached=False, reason=""))},
            details={"question": "Which boat?", "references": ["Which boat?"]})
        for index, score in enumerate(scores)]
    summary = reported_values(benchmark, samples, benchmark.options({"subtask": "clarification"}), True)
    return {name: summary[name] for name in ("judge_helpfulness", "judge_helpful_rate", "judge_failed")}


def test_summary_excludes_and_counts_failures():
    summary = _judged([0.8, None, 0.3, 1.0])
    assert summary == pytest.approx({"judge_helpfulness": 2.1 / 3, "judge_helpful_rate": 2 / 3,
                                     "judge_failed": 1.0})
    nothing = _judged([None, None])
    assert nothing["judge_helpfulness"] is None and nothing["judge_failed"] == 2.0


def test_request_shows_the_prompt_the_question_and_the_references(use_fixture_data):
    sample = build_samples(load_turns(AbgCoQADataConfig(split="val")), "clarification")[0]
    request = clarification_request(sample, "Which boat?")
    assert request.criterion is CLARIFICATION_HELPFULNESS
    assert "Mira kept two boats" in request.input and request.actual_output == "Which boat?"
    assert request.expected_output == ("Do you mean the red boat or the blue boat? / "
                                       "Are you asking about the old boat?")


def test_lm_eval_emits_no_judge_metric_without_a_judge(use_fixture_data, monkeypatch):
    for name in ("CONDAMBIG_JUDGE_MODEL", "CONDAMBIG_JUDGE_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    clarification = {"subtask": "clarification"}
    doc = utils.load_docs(split="val", task_options=clarification)["test"][0]
    values = utils.process_results(doc, ["Which boat?"])
    assert set(values) == {"bleu1", "bleu2", "bleu3", "bleu4", "parse_rate", "outputs_truncated",
                           "suite_score"}
    # a configured judge is checked once before any generation: a loopback one answers
    with JudgeServer() as server:
        judged_doc = utils.load_docs(split="val", judge_model="judge",
                                     judge_base_url=server.base_url,
                                     task_options=clarification)["test"][0]
    assert {"judge_helpfulness", "judge_failed"} <= set(utils.process_results(judged_doc, ["Which boat?"]))
    # the other subtasks never use the judge (and never check it)
    detection_doc = utils.load_docs(split="val", judge_model="judge")["test"][0]
    assert set(utils.process_results(detection_doc, ["blue"])) == {
        "precision", "recall", "f1", "answer_f1", "parse_rate", "outputs_truncated",
        "suite_score"}


def _cli(tmp_path, capsys, *extra: str) -> tuple[int, dict | None, str]:
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS["clarification"].items()]))
    code = main(["abg_coqa", "--subtask", "clarification", "--pred", str(pred),
                 "--ref", str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"), *extra])
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if captured.out.strip() else None, captured.err


@pytest.fixture
def judge_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_JUDGE_API_KEY", "test-key")
    monkeypatch.setenv("CONDAMBIG_JUDGE_MAX_RETRIES", "1")
    monkeypatch.delenv("CONDAMBIG_JUDGE_MODEL", raising=False)


def test_condambig_score_without_judge_says_so(judge_environment, tmp_path, capsys):
    code, result, err = _cli(tmp_path, capsys)
    assert code == 0 and "judge_helpfulness" not in result["metrics"] and "no judge configured" in err
    assert "judge" not in result


def test_condambig_score_detection_never_mentions_a_judge(judge_environment, tmp_path, capsys):
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS["detection"].items()]))
    code = main(["abg_coqa", "--pred", str(pred), "--ref",
                 str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json")])
    captured = capsys.readouterr()
    assert code == 0 and "judge" not in captured.err
    assert not any(name.startswith("judge") for name in json.loads(captured.out)["metrics"])


def test_condambig_score_with_a_judge_server(judge_environment, tmp_path, capsys):
    with JudgeServer({"rules": judge_rules()}) as server:
        code, result, err = _cli(tmp_path, capsys, "--judge-model", "judge", "--judge-base-url", server.base_url)
        assert code == 0, err
        assert {k: result["metrics"][k] for k in EXPECTED_JUDGE} == pytest.approx(EXPECTED_JUDGE)
        assert result["judge"]["requests"] == 3  # the endpoint check, then 2 judgements
        # a rerun is answered from the cache
        _, again, _ = _cli(tmp_path, capsys, "--judge-model", "judge", "--judge-base-url", server.base_url)
        assert again["judge"]["cache_hits"] == 2 and again["judge"]["requests"] == 0


def test_failed_judgement_is_excluded_and_counted(judge_environment, tmp_path, capsys):
    script = {"rules": judge_rules(), "faults": [{"kind": "400", "contains": "Which tree are you asking about?"}]}
    with JudgeServer(script) as server:
        # the default judge_max_failed=0: the judged metrics are withheld, exit 2
        code, withheld, err = _cli(tmp_path, capsys, "--judge-model", "judge",
                                   "--judge-base-url", server.base_url)
        assert code == 2
        assert withheld["metrics"]["judge_helpfulness"] is None
        assert withheld["metrics"]["judge_failed"] == 1.0
        assert withheld["null_reasons"]["judge_helpfulness"].startswith(
            "1 judgement(s) failed (judge_max_failed=0); run the same command again")
        assert err.strip().splitlines()[-1] == (
            "condambig-score abg_coqa: 1 judgement(s) failed (more than "
            "judge_max_failed=0), so the judged metrics are null; run the same command again "
            "(or allow failures with --judge-max-failed N): the judgements already made are "
            "cached and only the missing judgements are sent")
        code, result, err = _cli(tmp_path, capsys, "--judge-model", "judge", "--judge-base-url",
                                 server.base_url, "--judge-max-failed", "1")
    assert code == 0, err
    metrics = result["metrics"]
    assert metrics["judge_failed"] == 1.0
    assert metrics["judge_helpfulness"] == pytest.approx(0.35) and metrics["judge_helpful_rate"] == 0.0
