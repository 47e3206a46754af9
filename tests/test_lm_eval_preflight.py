"""What the selected lm-eval tasks need is checked before lm-eval loads the model, and
every missing piece is reported at once.

The model path given does not exist: lm-eval would fail loading it, so a run that gets
to the model at all fails differently (a framework traceback, not our one message).
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start

pytestmark = pytest.mark.e2e


def _lm_eval(tmp_path: Path, env: dict[str, str], tasks: str,
             *extra: str) -> subprocess.CompletedProcess:
    return warm_start.run(
        [executable("lm_eval"), "--model", "hf", "--model_args",
         f"pretrained={tmp_path / 'no-such-model'}", "--tasks", tasks, "--limit", "3", *extra],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)


def _project_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("condambig: ")]


def test_the_suite_on_partial_local_data_reports_every_missing_piece_before_the_model(
        tmp_path):
    """Local data without ConditionalQA's documents or Abg-CoQA's test split, no agent
    checkpoint: one message, a line per piece, each saying what to set."""
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    (data / "conditionalqa" / "documents.json").unlink()
    (data / "abg_coqa" / "coqa_abg_test.json").unlink()
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(data), CONDAMBIG_CACHE_DIR=str(tmp_path / "c"),
                         CONDAMBIG_OFFLINE="1", HF_HOME=str(tmp_path / "hf"))
    result = _lm_eval(tmp_path, env, "condambig")
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    [first] = _project_lines(result.stderr)
    assert "4 things this run needs" in first
    pieces = [line for line in result.stderr.splitlines() if line.startswith("  - ")]
    assert len(pieces) == 4, result.stderr[-4000:]
    answering, downstream, documents, test_split = pieces
    assert "answering agent" in answering and "CONDAMBIG_FLM_ANSWERING_AGENT" in answering
    assert "downstream model" in downstream and "CONDAMBIG_FLM_DOWNSTREAM_MODEL" in downstream
    assert "documents.json" in documents and "CONDAMBIG_DATA_DIR" in documents
    assert "coqa_abg_test.json" in test_split and '"split": "val"' in test_split
    assert "no-such-model" not in result.stderr  # the model was never loaded


def test_a_missing_judge_key_is_reported_with_the_missing_data(tmp_path):
    data = tmp_path / "data"
    shutil.copytree(FIXTURE_DATA, data)
    (data / "condambigqa" / "condambigqa_fixture.json").unlink()
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(data), CONDAMBIG_CACHE_DIR=str(tmp_path / "c"),
                         CONDAMBIG_OFFLINE="1", CONDAMBIG_JUDGE_MODEL="gpt-4o-mini")
    result = _lm_eval(tmp_path, env, "condambigqa")
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-4000:]
    pieces = [line for line in result.stderr.splitlines() if line.startswith("  - ")]
    assert len(pieces) == 2, result.stderr[-4000:]
    assert "needs a key" in pieces[0] and "CONDAMBIG_JUDGE_API_KEY" in pieces[0]
    assert "CONDAMBIG_DATA_DIR" in pieces[1]
    assert "no-such-model" not in result.stderr


def test_a_misspelt_judge_setting_is_an_error_naming_the_right_key_before_the_model(
        tmp_path):
    """``judge_modle`` gave a warning, then a judge-free run that exited 0."""
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "c"))
    result = _lm_eval(tmp_path, env, "ambignq", "--metadata",
                      json.dumps({"judge_modle": "gpt-4o-mini"}))
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr[-4000:]
    [line] = _project_lines(result.stderr)
    assert "'judge_modle'" in line and "'judge_model'" in line
    assert "no-such-model" not in result.stderr
