"""Judged lm-eval runs in the report: lm-eval judges in its aggregation step, so its samples
file holds outputs, not scores, and two judged runs cannot be paired as they are. The report
says so once per run with the one command that rescores it (``condambig-score --from-log``,
answered by the judge's cache) and, once that has run, pairs the runs.

Two real ``lm_eval`` runs of CondAmbigQA (two loopback "models" with different answers), a
loopback judge, the printed commands run as printed, and the report read again.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.judge_server import JudgeServer
from tests.test_report import section_tables

pytestmark = pytest.mark.e2e

REPLIES = {
    "model-a": {"conditions": [
        {"condition": "The question asks about the men's race in 2019.",
         "answer": "Ben Runner won the men's race in 2019.", "citations": [1]}]},
    "model-b": {"conditions": [
        {"condition": "The question asks about the men's race in 2019.",
         "answer": "Ben Runner won the men's race in 2019.", "citations": [1]},
        {"condition": "Women's race", "answer": "Ana Runner", "citations": [2]}]},
}
JUDGE = {"rules": [{"contains": "Ana Runner", "scores": {"6": 0.25, "7": 0.75}}],
         "default": {"scores": {"8": 1.0}}}
LIMIT = 3


def _report(inputs: list[Path], output: Path) -> tuple[str, str]:
    done = warm_start.run([executable("condambig-report"), *map(str, inputs), "-o", str(output),
                           "--no-figures", "--bootstrap-resamples", "200"],
                          capture_output=True, text=True, timeout=600,
                          env=subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA)))
    assert done.returncode == 0, done.stderr[-3000:]
    return output.read_text(), done.stderr


def test_judged_lm_eval_runs_are_paired_after_the_printed_rescoring(tmp_path):
    with JudgeServer(JUDGE) as judge:
        env = subprocess_env(
            CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
            OPENAI_API_KEY="subject-key", CONDAMBIG_JUDGE_MODEL="loopback-judge",
            CONDAMBIG_JUDGE_BASE_URL=judge.base_url, CONDAMBIG_JUDGE_API_KEY="test-key")
        outputs = []
        for name, reply in REPLIES.items():
            with JudgeServer({"default": {"reply": json.dumps(reply)}}) as subject:
                out = tmp_path / name
                done = warm_start.run(
                    [executable("lm_eval"), "--model", "local-chat-completions",
                     "--apply_chat_template", "--model_args",
                     f"model={name},base_url={subject.base_url}/chat/completions,"
                     "tokenizer_backend=None", "--tasks", "condambigqa", "--limit", str(LIMIT),
                     "--output_path", str(out), "--log_samples"],
                    env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
                assert done.returncode == 0, done.stderr[-3000:]
                outputs.append(out)

        markdown, _ = _report(outputs, tmp_path / "before.md")
        [pair] = section_tables(markdown, "### Task `condambigqa`")[-1]
        assert pair["Items"] == "not compared: no per-sample scores for A and B (see the notes)"
        notes = [line for line in markdown.splitlines()
                 if line.startswith("- No per-sample scores for ")]
        assert len(notes) == 2  # once per run, each with its own command
        commands = [re.findall(r"`(condambig-score [^`]+)`", note) for note in notes]
        assert all(len(found) == 1 for found in commands)

        requests = judge.stats()["requests"]
        for [command] in commands:
            words = shlex.split(command)
            done = warm_start.run([executable("condambig-score"), *words[1:]], env=env,
                                  cwd=tmp_path, capture_output=True, text=True, timeout=600)
            assert done.returncode == 0, done.stderr[-3000:]
        # the judge's cache answered every judgement the runs had made
        assert judge.stats()["requests"] == requests

    markdown, _ = _report(outputs, tmp_path / "after.md")
    [pair] = section_tables(markdown, "### Task `condambigqa`")[-1]
    assert pair["Items"] == f"paired ({LIMIT} questions)"
    assert pair["Δ (B − A)"] not in ("—", "")
    assert not any(line.startswith("- No per-sample scores for ")
                   for line in markdown.splitlines())
