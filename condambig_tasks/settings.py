"""Every environment variable the shared code reads, read here and nowhere else (a
benchmark's own variables are read beside it: HotpotQA-FLM's ``CONDAMBIG_FLM_*``).

Code deeper down receives typed values (paths, dataclasses) from these functions.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from condambig_tasks.options import FALSE_WORDS

if TYPE_CHECKING:
    from condambig_metrics.judge.records import JudgeConfig

DATA_DIR_VARIABLE = "CONDAMBIG_DATA_DIR"
CACHE_DIR_VARIABLE = "CONDAMBIG_CACHE_DIR"
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "CONDAMBIG_OFFLINE")

# The judge for lm-eval and condambig-score (Inspect uses its `grader` model role instead).
JUDGE_MODEL_VARIABLE = "CONDAMBIG_JUDGE_MODEL"
JUDGE_BASE_URL_VARIABLE = "CONDAMBIG_JUDGE_BASE_URL"
JUDGE_API_KEY_VARIABLE = "CONDAMBIG_JUDGE_API_KEY"
JUDGE_CONCURRENCY_VARIABLE = "CONDAMBIG_JUDGE_CONCURRENCY"
JUDGE_CACHE_VARIABLE = "CONDAMBIG_JUDGE_CACHE"
JUDGE_MAX_FAILED_VARIABLE = "CONDAMBIG_JUDGE_MAX_FAILED"


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


RECORD_DIR_VARIABLE = "CONDAMBIG_RECORD_DIR"


def record_dir() -> Path | None:
    """``CONDAMBIG_RECORD_DIR``: where the front ends also write each task's run record
    (:mod:`condambig_tasks.run_record`); None when unset."""
    value = os.environ.get(RECORD_DIR_VARIABLE, "").strip()
    return Path(value).expanduser() if value else None


EXTRA_BENCHMARKS_VARIABLE = "CONDAMBIG_EXTRA_BENCHMARKS"


def extra_benchmarks() -> dict[str, str]:
    """``CONDAMBIG_EXTRA_BENCHMARKS=name=module:Class,...``: benchmarks from other packages."""
    found: dict[str, str] = {}
    for entry in (environment_value(EXTRA_BENCHMARKS_VARIABLE) or "").split(","):
        name, _, target = entry.partition("=")
        if name.strip() and ":" in target:
            found[name.strip()] = target.strip()
    return found


def judge_cache_file() -> Path:
    """The judge's sqlite cache when no other file is asked for (shared by every front end)."""
    return cache_dir() / "judge.sqlite"


def judge_cache_choice() -> Path | None:
    """The judge cache as ``CONDAMBIG_JUDGE_CACHE`` sets it for every front end: that file,
    None for ``off`` (no cache), else :func:`judge_cache_file` (lm-eval's ``--metadata
    judge_cache`` wins over it there)."""
    value = environment_value(JUDGE_CACHE_VARIABLE)
    if value is None:
        return judge_cache_file()
    if value.lower() in FALSE_WORDS:
        return None
    return Path(value).expanduser()


def environment_value(name: str) -> str | None:
    """One variable, stripped; None when unset or empty."""
    value = os.environ.get(name, "").strip()
    return value or None


def judge_max_failed() -> int:
    """``CONDAMBIG_JUDGE_MAX_FAILED`` (0 when unset): how many judgements may finally fail
    before the judged metrics are withheld; Inspect's ``-T judge_max_failed`` default."""
    value = environment_value(JUDGE_MAX_FAILED_VARIABLE)
    if value is None:
        from condambig_metrics.judge.records import JudgeConfig

        return JudgeConfig.__dataclass_fields__["max_failed"].default
    return _judge_number("judge_max_failed", value)


BOOTSTRAP_RESAMPLES_VARIABLE = "CONDAMBIG_BOOTSTRAP_RESAMPLES"
DEFAULT_RESAMPLES = 1000  # bootstrap resamples of every standard error (condambig_tasks.uncertainty)


def bootstrap_resamples() -> int:
    """``CONDAMBIG_BOOTSTRAP_RESAMPLES``: bootstrap resamples of the stderr of every metric
    in an Inspect log (unset: :data:`DEFAULT_RESAMPLES`; 0: no
    stderr). ``condambig-score`` takes ``--bootstrap-resamples`` instead."""
    value = environment_value(BOOTSTRAP_RESAMPLES_VARIABLE)
    if value is None:
        return DEFAULT_RESAMPLES
    return checked_number(value, int, BOOTSTRAP_RESAMPLES_VARIABLE,
                          "a whole number >= 0 (0: no stderr)", lambda n: n >= 0)


_WHOLE_FROM_1 = ("a whole number >= 1", lambda n: n >= 1)
_WHOLE_FROM_0 = ("a whole number >= 0", lambda n: n >= 0)
_SECONDS = ("a finite number of seconds > 0", lambda n: math.isfinite(n) and n > 0)
# lm-eval --metadata key -> (environment variable, JudgeConfig field, and for a number its
# type, what it allows and its check: the value is read as text)
_JUDGE_OPTIONS = {
    "judge_model": (JUDGE_MODEL_VARIABLE, "model"),
    "judge_base_url": (JUDGE_BASE_URL_VARIABLE, "base_url"),
    "judge_api_key": (JUDGE_API_KEY_VARIABLE, "api_key"),
    "judge_concurrency": (JUDGE_CONCURRENCY_VARIABLE, "concurrency", int, *_WHOLE_FROM_1),
    "judge_max_retries": ("CONDAMBIG_JUDGE_MAX_RETRIES", "max_retries", int, *_WHOLE_FROM_0),
    "judge_timeout": ("CONDAMBIG_JUDGE_TIMEOUT", "timeout_seconds", float, *_SECONDS),
    "judge_cache": (JUDGE_CACHE_VARIABLE, "cache_path"),
    "judge_max_failed": (JUDGE_MAX_FAILED_VARIABLE, "max_failed", int, *_WHOLE_FROM_0),
    "judge_retry_budget": ("CONDAMBIG_JUDGE_RETRY_BUDGET", "retry_budget_seconds", float,
                           *_SECONDS),
}


def judge_option_keys() -> tuple[str, ...]:
    """The lm-eval ``--metadata`` keys that configure the judge."""
    return tuple(_JUDGE_OPTIONS)


def judge_config_from_environment(overrides: dict | None = None) -> JudgeConfig | None:
    """The judge for lm-eval / condambig-score, or None when no judge model is configured.

    ``overrides`` are lm-eval ``--metadata`` keys (``judge_model``, ``judge_base_url``,
    ``judge_api_key``, ``judge_concurrency``, ``judge_max_retries``, ``judge_timeout``,
    ``judge_cache``, ``judge_max_failed``, ``judge_retry_budget``); they win over the
    ``CONDAMBIG_JUDGE_*`` variables. The API key falls back to ``OPENAI_API_KEY``. ``judge_cache`` is a sqlite path, or ``off`` for no cache;
    unset, the cache is :func:`judge_cache_file` (``default_cache_path``).
    Returns a :class:`condambig_metrics.judge.JudgeConfig`.
    """
    from condambig_metrics.judge.records import JudgeConfig

    overrides = overrides or {}
    raw: dict[str, str] = {}
    for key, (variable, field, *_) in _JUDGE_OPTIONS.items():
        value = overrides.get(key)
        text = str(value).strip() if value is not None else ""
        if not text:
            text = environment_value(variable) or ""
        if text:
            raw[field] = text
    if "model" not in raw:
        return None
    if "api_key" not in raw and environment_value("OPENAI_API_KEY"):
        raw["api_key"] = environment_value("OPENAI_API_KEY") or ""
    cache_enabled = raw.get("cache_path", "").lower() not in FALSE_WORDS
    cache_path = raw.get("cache_path") if cache_enabled else None
    if "base_url" in raw:
        _check_base_url(raw["base_url"])
    try:
        return JudgeConfig(
            model=raw["model"],
            base_url=raw.get("base_url"),
            api_key=raw.get("api_key"),
            # numbers given are parsed; the others keep JudgeConfig's own defaults
            **{field: _judge_number(key, raw[field]) for key, (_, field, *number)
               in _JUDGE_OPTIONS.items() if number and field in raw},
            cache_path=cache_path,
            cache_enabled=cache_enabled,
            default_cache_path=(str(judge_cache_file()) if cache_enabled and not cache_path
                                else None),
        )
    except ValueError as error:  # JudgeConfig's own checks: one line, not a traceback
        from condambig_tasks.errors import ConfigurationError

        raise ConfigurationError(str(error)) from None


def _judge_number(key: str, text: str) -> Any:
    """A numeric judge setting (``key``: its lm-eval --metadata key) read from ``text``."""
    variable, _, kind, allowed, check = _JUDGE_OPTIONS[key]
    return checked_number(text, kind, f"judge setting {variable} / --metadata {key}",
                          allowed, check)


def checked_number(value: Any, kind: type, setting: str, allowed: str,
                   check: Callable[[Any], bool]) -> Any:
    """``value`` (text, or a number from YAML / JSON) as an ``int`` or ``float`` that
    ``check`` accepts, or one line naming the ``setting`` and the values it ``allowed``."""
    from condambig_tasks.errors import ConfigurationError

    try:
        number = kind(value) if isinstance(value, str) or value == kind(value) else None
    except (TypeError, ValueError, OverflowError):
        number = None
    if number is None or not check(number):
        raise ConfigurationError(f"{setting} must be {allowed}, "
                                 f"got {value if number is None else number!r}")
    return number


def _check_base_url(value: str) -> None:
    from urllib.parse import urlsplit

    from condambig_tasks.errors import ConfigurationError

    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in {"http", "https"} or not parts.hostname:
        raise ConfigurationError(
            f"judge setting {JUDGE_BASE_URL_VARIABLE} / --metadata judge_base_url must be an http(s) URL such as "
            f"http://localhost:8000/v1, got {value!r}")


