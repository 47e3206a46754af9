"""Typed options of the HotpotQA-FLM pipeline and where their values come from.

Precedence: explicit values (lm-eval ``--metadata``, Inspect ``-T``, condambig-score flags)
over the ``CONDAMBIG_FLM_*`` environment variables over the defaults (the paper's
``google/flan-t5-base`` for both agents).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from condambig_tasks import settings
from condambig_tasks.hotpot_flm.hf_models import DTYPES
from condambig_tasks.hotpot_flm.masking import DEFAULT_MASK_SEED

# The authors' downstream model generates at most 10 new tokens (short answers).
DEFAULT_DOWNSTREAM_MAX_NEW_TOKENS = 10
_OFF = {"0", "off", "false", "no", "none", "disabled"}


@dataclass(frozen=True)
class FlmOptions:
    """Everything that configures a run besides the data split.

    ``downstream_cache``: keep downstream answers in ``cache_dir`` (``on``/``off``).
    """

    answering_agent: str = settings.FLM_DEFAULT_AGENT
    downstream_model: str = settings.FLM_DEFAULT_AGENT
    agent_device: str = "auto"
    agent_dtype: str = "auto"
    agent_batch_size: int = 32
    downstream_max_new_tokens: int = DEFAULT_DOWNSTREAM_MAX_NEW_TOKENS
    downstream_cache: bool = True
    mask_seed: int = DEFAULT_MASK_SEED

    def __post_init__(self) -> None:
        if self.agent_dtype not in DTYPES:
            raise ValueError(
                f"agent_dtype {self.agent_dtype!r} is not one of {', '.join(DTYPES)}"
            )
        if self.agent_batch_size < 1 or self.downstream_max_new_tokens < 1:
            raise ValueError("agent_batch_size and downstream_max_new_tokens must be >= 1")

    @property
    def cache_path(self) -> Path:
        return settings.cache_dir() / "hotpot_flm" / "downstream_answers.sqlite"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def resolve(cls, overrides: Mapping[str, Any] | None = None) -> FlmOptions:
        """Options from explicit values (unknown keys ignored), then the environment."""
        raw: dict[str, Any] = dict(settings.flm_agent_environment())
        for key, value in (overrides or {}).items():
            if value is not None and str(value).strip() != "":
                raw[key] = value
        values: dict[str, Any] = {}
        for field in fields(cls):
            if field.name not in raw:
                continue
            value = raw[field.name]
            try:
                if field.type in ("int", int):
                    values[field.name] = int(value)
                elif field.type in ("bool", bool):
                    values[field.name] = (value if isinstance(value, bool)
                                          else str(value).strip().lower() not in _OFF)
                else:
                    values[field.name] = str(value).strip()
            except (TypeError, ValueError):
                raise ValueError(
                    f"HotpotQA-FLM option {field.name} must be {field.type}, got {value!r}"
                ) from None
        return cls(**values)
