"""Session-wide fixtures: the hand-written data directory and tiny local models."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURE_DATA = REPO_ROOT / "tests" / "fixtures" / "data"
SHARED_DATA_VARIABLE = "CONDAMBIG_DATA_DIR"


def pytest_configure(config) -> None:
    """Keep judge caches and downloads of the whole run out of the user's ~/.cache."""
    if not os.environ.get("CONDAMBIG_CACHE_DIR"):
        import tempfile

        os.environ["CONDAMBIG_CACHE_DIR"] = tempfile.mkdtemp(prefix="condambig-test-cache-")


@pytest.fixture(scope="session")
def fixture_data_dir() -> Path:
    return FIXTURE_DATA


@pytest.fixture
def use_fixture_data(monkeypatch) -> Path:
    """Point the loaders at tests/fixtures/data (and keep the real cache out of the way)."""
    monkeypatch.setenv(SHARED_DATA_VARIABLE, str(FIXTURE_DATA))
    return FIXTURE_DATA


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    """The upstream files (``CONDAMBIG_DATA_DIR``); tests using it skip when it is not set."""
    value = os.environ.get(SHARED_DATA_VARIABLE, "").strip()
    if not value or Path(value).resolve() == FIXTURE_DATA.resolve():
        pytest.skip(f"real-data tier: set {SHARED_DATA_VARIABLE} to the upstream data folder")
    return Path(value)


def load_from_real_data(real_data_dir: Path, relative_file: str, load):
    """``load()`` with CONDAMBIG_DATA_DIR at the real data; skip when the file is absent."""
    if not (real_data_dir / relative_file).is_file():
        pytest.skip(f"{relative_file} is not in the real data folder {real_data_dir}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SHARED_DATA_VARIABLE, str(real_data_dir))
        return load()


@pytest.fixture(scope="session")
def tiny_causal_lm(tmp_path_factory) -> Path:
    from tests.support.tiny_models import build_tiny_causal_lm

    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny_causal_lm"))


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for CLI subprocesses: offline, quiet, no user judge.

    No PYTHONPATH to the checkout: with it, `inspect eval condambig/...` finds no task
    (Inspect then resolves the package from the path, not from its install record).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONDAMBIG_JUDGE_")}
    env.update({
        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "INSPECT_LOG_LEVEL": "warning", "NO_COLOR": "1",
    })
    env.pop("OPENAI_API_KEY", None)
    env.update(extra)
    return env


def executable(name: str) -> str:
    """A console script installed beside this interpreter."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name
