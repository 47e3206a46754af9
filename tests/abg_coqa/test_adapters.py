"""The lm-eval glue, the Inspect scorer/metric and ``condambig-score`` give the same numbers
on the same raw outputs (in-process; the subprocess runs are in tests/ambignq/test_e2e.py)."""

from __future__ import annotations

import asyncio
import json

import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import SampleScore, Target
from inspect_ai.solver import TaskState

from condambig.abg_coqa import abg_coqa
from condambig_tasks.cli import main
from condambig_tasks.lm_eval_glue import LmEvalTask
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS

utils = LmEvalTask("abg_coqa")  # lm-eval's hooks of the benchmark

# the headline first, suite_score (the headline on a 0-1 scale) last
METRICS = {
    "detection": ["f1", "precision", "recall", "answer_f1", "parse_rate", "outputs_truncated",
                  "suite_score"],
    "clarification": ["bleu4", "bleu1", "bleu2", "bleu3", "parse_rate", "outputs_truncated",
                      "suite_score"],
    "clarified_qa": ["f1", "parse_rate", "outputs_truncated", "suite_score"],
}


def _lm_eval(subtask: str) -> dict[str, float]:
    docs = utils.load_docs(version=1.0, split="val", task_options={"subtask": subtask})["test"]
    per_doc = [utils.process_results(doc, [RAW_OUTPUTS[subtask][doc["id"]]]) for doc in docs]
    assert all(set(values) == set(METRICS[subtask]) for values in per_doc)
    return {name: float(getattr(utils, f"agg_{name}")([values[name] for values in per_doc]))
            for name in METRICS[subtask]}


def _inspect(subtask: str) -> dict[str, float]:
    task = abg_coqa(subtask=subtask, split="val")
    [scorer], [metric] = task.scorer, task.metrics
    sample_scores = []
    for sample in task.dataset:
        state = TaskState(
            model=ModelName("test/scripted"), sample_id=sample.id, epoch=1, input=sample.input,
            messages=[], output=ModelOutput.from_content("scripted", RAW_OUTPUTS[subtask][sample.id]),
            metadata=sample.metadata,
        )
        score = asyncio.run(scorer(state, Target(sample.target)))
        sample_scores.append(SampleScore(score=score, sample_id=sample.id))
    return {name: value for name, value in metric(sample_scores).items()
            if not name.endswith("_stderr")}  # tested in tests/test_inspect_stderr.py


def _cli(subtask: str, tmp_path, capsys) -> dict:
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS[subtask].items()]))
    assert main(["abg_coqa", "--subtask", subtask, "--pred", str(pred), "--split", "val"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["options"] == {"subtask": subtask, "split": "val"}
    assert result["missing_outputs"] == 0
    return result["metrics"]


@pytest.mark.parametrize("subtask", ["detection", "clarification", "clarified_qa"])
def test_three_paths_agree(subtask, use_fixture_data, tmp_path, capsys):
    cli = _cli(subtask, tmp_path, capsys)
    lm_eval, inspect = _lm_eval(subtask), _inspect(subtask)
    assert set(cli) == set(inspect) == set(METRICS[subtask])
    for name in METRICS[subtask]:
        assert lm_eval[name] == pytest.approx(cli[name]), name
        assert inspect[name] == pytest.approx(cli[name]), name
