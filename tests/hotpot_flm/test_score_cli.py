"""``condambig-score hotpot_flm`` in-process, and the lm-eval glue against it (same scores)."""

from __future__ import annotations

import json

import pytest

from condambig_tasks.cli import main
from condambig_tasks.hotpot_flm import lm_eval_glue
from condambig_tasks.hotpot_flm.dataset import load_examples


def _score(capsys, *arguments: str) -> tuple[int, dict | str]:
    code = main(["hotpot_flm", *arguments])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else captured.err)


def _agents(model) -> list[str]:
    return ["--answering-agent", str(model), "--downstream-model", str(model), "--device", "cpu"]


def test_repeater_baseline_end_to_end_and_cached_second_run(flm_data, tiny_t5, capsys):
    code, result = _score(capsys, "--questions", "repeater", "--split", "full", *_agents(tiny_t5))
    assert code == 0
    assert result["n_examples"] == 4 and result["split"] == "full"
    assert set(result["metrics"]) >= {
        "f1_incomplete", "f1_response", "f1_complete", "em_incomplete", "em_response",
        "em_complete", "f1_recovery", "em_recovery", "mfrr", "improved_rate"}
    assert 0.0 <= result["metrics"]["mfrr"] <= 1.0
    assert result["downstream_answers_computed"]["incomplete"] == 4
    assert result["downstream_answers_computed"]["complete"] == 4
    code, again = _score(capsys, "--questions", "repeater", *_agents(tiny_t5))
    assert again["downstream_answers_computed"] == {"incomplete": 0, "complete": 0, "response": 0}
    assert again["metrics"] == result["metrics"]
    code, uncached = _score(capsys, "--questions", "repeater", "--no-cache", *_agents(tiny_t5))
    assert uncached["downstream_answers_computed"]["incomplete"] == 4
    assert uncached["metrics"] == result["metrics"]


def test_human_baseline_needs_the_test_split(flm_data, tiny_t5, capsys):
    code, error = _score(capsys, "--questions", "human", "--split", "full", *_agents(tiny_t5))
    assert code == 2 and "--split test" in error
    code, result = _score(capsys, "--questions", "human", "--split", "test", "--limit", "2",
                          *_agents(tiny_t5))
    assert code == 0 and result["n_examples"] == 2


def test_questions_file_and_per_example_output(flm_data, tiny_t5, capsys, tmp_path):
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps([
        {"id": "fx00000000000000000000a2", "question": "<think>hmm</think> When was Tomas Reyl born?"},
        {"id": "fx00000000000000000000a1", "question": "What was Oskar Velde's job?"},
        {"id": "not-in-the-split", "question": "?"},
    ]))
    details = tmp_path / "per_example.jsonl"
    code, result = _score(capsys, "--questions", str(questions), "--per-example", str(details),
                          *_agents(tiny_t5))
    assert code == 0
    assert result["n_examples"] == 2 and result["ids_not_in_split"] == 1
    rows = [json.loads(line) for line in details.read_text().splitlines()]
    # split order, reasoning trace dropped
    assert [row["id"][-2:] for row in rows] == ["a1", "a2"]
    assert rows[1]["question_asked"] == "When was Tomas Reyl born?"
    assert {"returned_fact", "masked_fact", "answer_incomplete", "answer_response",
            "answer_complete", "f1_response"} <= set(rows[0])


@pytest.mark.parametrize("content", ['{"id": 1}', '[{"question": "no id"}]'])
def test_malformed_questions_file_exits_2(flm_data, tiny_t5, capsys, tmp_path, content):
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, error = _score(capsys, "--questions", str(path), *_agents(tiny_t5))
    assert code == 2 and '"id"' in error


def test_missing_questions_file_exits_2(flm_data, tiny_t5, capsys, tmp_path):
    code, error = _score(capsys, "--questions", str(tmp_path / "nope.json"), *_agents(tiny_t5))
    assert code == 2 and "repeater, human" in error


def test_lm_eval_glue_scores_equal_condambig_score(flm_data, tiny_t5, capsys, tmp_path):
    outputs = {
        "fx00000000000000000000a1": "You can ask: what did Oskar Velde do?",
        "fx00000000000000000000a2": "<think>the founder</think>When was Tomas Reyl born?",
        "fx00000000000000000000a3": "",
        "fx00000000000000000000a4": "Who sang Blue Lanterns?",
    }
    docs = lm_eval_glue.load_full_docs(
        answering_agent=str(tiny_t5), downstream_model=str(tiny_t5), agent_device="cpu",
        pretrained="ignored-model-arg", version=1.0,
    )["test"]
    assert docs[0]["prompt"].startswith(
        "What question can you ask to help you answer the final question?\n\n")
    assert docs[0]["prompt"].endswith(f"\n\n{docs[0]['question']}\n\nYou can ask:")
    per_doc = [lm_eval_glue.process_results(doc, [outputs[doc["id"]]]) for doc in docs]
    assert [m["empty_question_rate"] for m in per_doc] == [0.0, 0.0, 1.0, 0.0]
    glue = {name: getattr(lm_eval_glue, f"agg_{name}")([m[name] for m in per_doc])
            for name in lm_eval_glue.PIPELINE_METRICS}
    path = tmp_path / "questions.json"
    path.write_text(json.dumps([{"id": k, "question": v} for k, v in outputs.items()]))
    code, cli = _score(capsys, "--questions", str(path), *_agents(tiny_t5))
    assert code == 0
    for name, value in glue.items():
        expected = cli["metrics"][name]
        assert (value != value and expected is None) or value == pytest.approx(expected), name


def test_full_examples_are_what_the_glue_serves(flm_data, tiny_t5):
    agents = {"answering_agent": str(tiny_t5), "downstream_model": str(tiny_t5)}
    docs = lm_eval_glue.load_test_docs(**agents)["test"]
    assert [doc["id"] for doc in docs] == [e.id for e in load_examples("test")]
    assert all(doc["split"] == "test" for doc in docs)
