"""``condambig-score hotpot_flm`` in-process, and the lm-eval glue against it (same scores)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from condambig_tasks.cli import main
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.lm_eval_glue import LmEvalTask

utils = LmEvalTask("hotpot_flm")  # lm-eval's hooks of the benchmark

FULL_SPLIT = 11  # the fixture's full-split examples (a5 is not one)
PIPELINE_METRICS = ("f1_incomplete", "f1_response", "f1_complete", "em_incomplete",
                    "em_response", "em_complete", "f1_recovery", "em_recovery", "mfrr",
                    "improved_rate")


def _score(capsys, *arguments: str) -> tuple[int, dict | str]:
    code = main(["hotpot_flm", *arguments])
    captured = capsys.readouterr()
    return code, (json.loads(captured.out) if code == 0 else captured.err)


def _agents(model) -> list[str]:
    return ["--answering-agent", str(model), "--downstream-model", str(model), "--device", "cpu"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _computed(path: Path) -> dict[str, int]:
    """Downstream answers computed in the run (not from the cache), per context."""
    counts = Counter(context for row in _rows(path) for context in row["details"]["answers_computed"])
    return {context: counts[context] for context in ("incomplete", "complete", "response")}


def test_repeater_baseline_end_to_end_and_cached_second_run(flm_data, tiny_t5, capsys, tmp_path):
    first, second, third = (tmp_path / f"{name}.jsonl" for name in ("first", "second", "third"))
    code, result = _score(capsys, "--questions", "repeater", "--split", "full",
                          "--per-example", str(first), *_agents(tiny_t5))
    assert code == 0
    assert result["n_scored"] == FULL_SPLIT and result["options"]["split"] == "full"
    assert set(result["metrics"]) >= set(PIPELINE_METRICS)
    assert 0.0 <= result["metrics"]["mfrr"] <= 1.0
    assert _computed(first)["incomplete"] == FULL_SPLIT
    assert _computed(first)["complete"] == FULL_SPLIT
    code, again = _score(capsys, "--questions", "repeater", "--per-example", str(second),
                         *_agents(tiny_t5))
    assert _computed(second) == {"incomplete": 0, "complete": 0, "response": 0}
    assert again["metrics"] == result["metrics"]
    code, uncached = _score(capsys, "--questions", "repeater", "--no-cache", "--per-example",
                            str(third), *_agents(tiny_t5))
    assert uncached["options"]["downstream_cache"] is False
    assert _computed(third)["incomplete"] == FULL_SPLIT
    assert uncached["metrics"] == result["metrics"]


def test_human_baseline_needs_the_test_split(flm_data, tiny_t5, capsys):
    code, error = _score(capsys, "--questions", "human", "--split", "full", *_agents(tiny_t5))
    assert code == 2 and "--split test" in error
    code, result = _score(capsys, "--questions", "human", "--split", "test", "--limit", "2",
                          *_agents(tiny_t5))
    assert code == 0 and result["n_scored"] == 2


def test_questions_file_and_per_example_output(flm_data, tiny_t5, capsys, tmp_path):
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps([
        {"id": "fx00000000000000000000a2", "question": "<think>hmm</think> When was Tomas Reyl born?"},
        {"id": "fx00000000000000000000a1", "question": "What was Oskar Velde's job?"},
    ]))
    details = tmp_path / "per_example.jsonl"
    code, result = _score(capsys, "--questions", str(questions), "--per-example", str(details),
                          *_agents(tiny_t5))
    assert code == 0
    assert result["n_scored"] == 2 and result["missing_outputs"] == FULL_SPLIT - 2
    rows = _rows(details)
    # split order, reasoning trace dropped
    assert [row["id"][-2:] for row in rows] == ["a1", "a2"]
    assert rows[1]["details"]["question_asked"] == "When was Tomas Reyl born?"
    assert {"returned_fact", "masked_fact", "answer_incomplete", "answer_response",
            "answer_complete"} <= set(rows[0]["details"])
    assert "f1_response" in rows[0]["values"]


@pytest.mark.parametrize(("entries", "message"), [
    ([{"id": "not-in-the-split", "question": "?"}], "not HotpotQA-FLM item ids"),
    ([{"id": "fx00000000000000000000a1", "question": "?"}] * 2, "more than once"),
])
def test_unknown_or_repeated_ids_exit_2(flm_data, tiny_t5, capsys, tmp_path, entries, message):
    path = tmp_path / "questions.json"
    path.write_text(json.dumps(entries))
    code, error = _score(capsys, "--questions", str(path), *_agents(tiny_t5))
    assert code == 2 and message in error


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
        **{f"fx00000000000000000000c{number}": "Where was it?" for number in range(1, 8)},
    }
    docs = utils.load_docs(
        task_options={"split": "full"}, answering_agent=str(tiny_t5),
        downstream_model=str(tiny_t5), agent_device="cpu", pretrained="ignored-model-arg",
        version=1.0,
    )["test"]
    assert docs[0]["prompt"].startswith(
        "What question can you ask to help you answer the final question?\n\n")
    task_question = json.loads(docs[0]["record"])["question"]
    assert docs[0]["prompt"].endswith(f"\n\n{task_question}\n\nYou can ask:")
    per_doc = [utils.process_results(doc, [outputs[doc["id"]]]) for doc in docs]
    glue = {name: getattr(utils, f"agg_{name}")([m[name] for m in per_doc])
            for name in (*PIPELINE_METRICS, "empty_question_rate")}
    assert glue["empty_question_rate"] == pytest.approx(1 / FULL_SPLIT)
    path = tmp_path / "questions.json"
    path.write_text(json.dumps([{"id": k, "question": v} for k, v in outputs.items()]))
    details = tmp_path / "per_example.jsonl"
    code, cli = _score(capsys, "--questions", str(path), "--per-example", str(details),
                       *_agents(tiny_t5))
    assert code == 0
    assert [row["values"]["empty_question_rate"] for row in _rows(details)] == \
        [0.0, 0.0, 1.0, 0.0] + [0.0] * (FULL_SPLIT - 4)
    for name, value in glue.items():
        expected = cli["metrics"][name]
        assert (value != value and expected is None) or value == pytest.approx(expected), name


def test_test_examples_are_what_the_glue_serves(flm_data, tiny_t5):
    agents = {"answering_agent": str(tiny_t5), "downstream_model": str(tiny_t5)}
    docs = utils.load_docs(task_options={"split": "test"}, **agents)["test"]
    assert [doc["id"] for doc in docs] == [e.id for e in load_examples("test")]
    assert all(json.loads(doc["record"])["split"] == "test" for doc in docs)
    assert all(json.loads(doc["options"])["split"] == "test" for doc in docs)
