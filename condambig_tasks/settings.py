"""Every environment variable this project reads, read here and nowhere else.

Code deeper down receives typed values (paths, dataclasses) from these functions.
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_VARIABLE = "CONDAMBIG_DATA_DIR"
CACHE_DIR_VARIABLE = "CONDAMBIG_CACHE_DIR"
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "CONDAMBIG_OFFLINE")

# The judge for lm-eval and condambig-score (Inspect uses its `grader` model role instead).
JUDGE_MODEL_VARIABLE = "CONDAMBIG_JUDGE_MODEL"
JUDGE_BASE_URL_VARIABLE = "CONDAMBIG_JUDGE_BASE_URL"
JUDGE_API_KEY_VARIABLE = "CONDAMBIG_JUDGE_API_KEY"
JUDGE_CONCURRENCY_VARIABLE = "CONDAMBIG_JUDGE_CONCURRENCY"
JUDGE_MAX_RETRIES_VARIABLE = "CONDAMBIG_JUDGE_MAX_RETRIES"
JUDGE_TIMEOUT_VARIABLE = "CONDAMBIG_JUDGE_TIMEOUT"
JUDGE_CACHE_VARIABLE = "CONDAMBIG_JUDGE_CACHE"


def data_dir() -> Path | None:
    """The local data directory (``CONDAMBIG_DATA_DIR``), or None when unset/empty."""
    value = os.environ.get(DATA_DIR_VARIABLE, "").strip()
    return Path(value).expanduser() if value else None


def offline() -> bool:
    """True when the user asked for no network (Hugging Face's variables or ours)."""
    return any(
        os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}
        for name in OFFLINE_VARIABLES
    )


def cache_dir() -> Path:
    """Where judge results and agent outputs are cached (``CONDAMBIG_CACHE_DIR``)."""
    value = os.environ.get(CACHE_DIR_VARIABLE, "").strip()
    if value:
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME", "").strip() or os.path.join(Path.home(), ".cache")
    return Path(base) / "condambig"


def environment_value(name: str) -> str | None:
    """One variable, stripped; None when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None
