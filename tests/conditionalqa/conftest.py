"""ConditionalQA fixtures (the shared ones are in tests/conftest.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA

FIXTURE_FOLDER = FIXTURE_DATA / "conditionalqa"


@pytest.fixture
def fixture_data(monkeypatch: pytest.MonkeyPatch) -> Path:
    """CONDAMBIG_DATA_DIR pointing at the hand-written fixtures, network off."""
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    return FIXTURE_FOLDER


@pytest.fixture
def isolated_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty download cache, so no earlier download can satisfy a loader."""
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"
