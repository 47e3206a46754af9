"""Same raw outputs, same per-question scores: lm-eval glue, Inspect scorer, condambig-score."""

from __future__ import annotations

import asyncio
import json
import math

import pytest

from condambig_tasks.cli import main
from condambig_tasks.condambigqa import lm_eval_glue
from tests.support.judge_server import JudgeServer

RAW_OUTPUTS = {
    "fx-001": json.dumps({"conditions": [
        {"condition": "women's race 2019", "answer": "Ana Runner", "citations": ["Fragment 2"]},
        {"condition": "men's race 2019", "answer": "Ben Runner", "citations": ["[1]", "F4"]},
        {"condition": "first race", "answer": "Carl Pace in 1980", "citations": [3, 9]},
    ]}),
    "fx-002": "```json\n{\"conditions\": [{\"condition\": \"cars\", \"answer\": \"1925\", "
              "\"citations\": [\"Fragment 2 - Old Bridge\"]},]}\n```",
    "fx-003": "I am not sure.",
}
FIELDS = ("citation", "condition", "answer", "combined", "answer_count", "count_difference")


def _lm_eval_per_question(monkeypatch, judge_env: dict[str, str]) -> dict[str, dict]:
    for key, value in judge_env.items():
        monkeypatch.setenv(key, value)
    docs = lm_eval_glue.load_main_docs(version=1.0, pretrained="tiny")["test"]
    items = [lm_eval_glue.process_results(doc, [RAW_OUTPUTS[doc["id"]]])["citation_score"]
             for doc in docs]
    return {s.id: s.to_dict() for s in lm_eval_glue._question_scores(items)}


def _cli_per_question(tmp_path, capsys, extra: list[str]) -> tuple[dict, dict[str, dict]]:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    per_question = tmp_path / "per_question.json"
    assert main(["condambigqa", "--outputs", str(outputs), "--per-question",
                 str(per_question), *extra]) == 0
    summary = json.loads(capsys.readouterr().out)
    return summary, {row["id"]: row for row in json.loads(per_question.read_text())}


def _inspect_per_question(judged: bool) -> dict[str, dict]:
    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.solver import TaskState

    from condambig.condambigqa import _sample, condambigqa_scorer
    from condambig_tasks.condambigqa.loader import load_questions
    from condambig_tasks.condambigqa.options import CondAmbigQAOptions

    scorer = condambigqa_scorer("main", judged, "judge")
    results = {}
    for question in load_questions():
        sample = _sample(question, CondAmbigQAOptions())
        state = TaskState(
            model=ModelName("test/model"), sample_id=sample.id, epoch=1, input=sample.input,
            messages=[], metadata=sample.metadata,
            output=ModelOutput.from_content("test/model", RAW_OUTPUTS[question.id]),
        )
        score = asyncio.run(scorer(state, sample.target))
        results[question.id] = score.metadata
    return results


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for question_id in a:
        for field in FIELDS:
            x, y = a[question_id][field], b[question_id][field]
            assert (x is None and y is None) or math.isclose(x, y), (question_id, field, x, y)


def test_without_judge_all_three_paths_agree(use_fixture_data, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("CONDAMBIG_JUDGE_MODEL", raising=False)
    glue = _lm_eval_per_question(monkeypatch, {})
    summary, cli = _cli_per_question(tmp_path, capsys, [])
    inspect = _inspect_per_question(judged=False)
    _same(glue, cli)
    _same(inspect, cli)
    assert cli["fx-001"]["citation"] == pytest.approx((1 + 0.5 + 1) / 3)
    assert cli["fx-003"]["parsed"] is False
    assert summary["out_of_range_citations"] == 1 and "answer_score" not in summary


def test_with_judge_glue_and_cli_agree(use_fixture_data, monkeypatch, tmp_path, capsys):
    script = {"rules": [{"contains": "Ana Runner", "scores": {"9": 0.5, "10": 0.5}}],
              "default": {"scores": {"3": 0.5, "4": 0.5}}}
    with JudgeServer(script) as server:
        env = {"CONDAMBIG_JUDGE_MODEL": "loopback", "CONDAMBIG_JUDGE_BASE_URL": server.base_url,
               "CONDAMBIG_JUDGE_API_KEY": "k", "CONDAMBIG_JUDGE_CACHE": str(tmp_path / "j.db")}
        glue = _lm_eval_per_question(monkeypatch, env)
        sent = server.stats()["requests"]
        summary, cli = _cli_per_question(tmp_path, capsys, [])
        assert server.stats()["requests"] == sent  # the second path reads the cache
    _same(glue, cli)
    assert cli["fx-001"]["answer"] is not None and summary["judge_failed"] == 0
    assert 0 < summary["combined_score"] < 1
