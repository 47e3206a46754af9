"""HotpotQA-FLM fixtures (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA

HOTPOT_FIXTURE = FIXTURE_DATA / "hotpotqa" / "hotpot_dev_distractor_v1.json"
TSV_FIXTURE = FIXTURE_DATA / "hotpot_flm" / "gt_dataset_v3_400_of_600.tsv"


@pytest.fixture
def flm_data(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Hand-written fixtures as CONDAMBIG_DATA_DIR, network off, an empty cache directory."""
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("CONDAMBIG_FLM_ANSWERING_AGENT", "CONDAMBIG_FLM_DOWNSTREAM_MODEL",
                 "CONDAMBIG_FLM_DEVICE", "CONDAMBIG_FLM_DTYPE", "CONDAMBIG_FLM_BATCH_SIZE",
                 "CONDAMBIG_FLM_CACHE"):
        monkeypatch.delenv(name, raising=False)
    return FIXTURE_DATA


def fixture_examples() -> list[dict]:
    return json.loads(HOTPOT_FIXTURE.read_text(encoding="utf-8"))


def repeater_questions(examples) -> dict[str, str]:
    """The repeater baseline's questions by example id (the task itself)."""
    from condambig_tasks.hotpot_flm.questions import repeater_question

    return {example.id: repeater_question(example).text for example in examples}


def run_pipeline_now(*arguments):
    """The async pipeline, run to completion (scripted agents answer synchronously)."""
    import asyncio

    from condambig_tasks.hotpot_flm.pipeline import run_pipeline

    return asyncio.run(run_pipeline(*arguments))
