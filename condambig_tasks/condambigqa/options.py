"""The typed options every CondAmbigQA front end accepts (lm-eval metadata, Inspect -T, CLI)."""

from __future__ import annotations

from dataclasses import dataclass

from condambig_tasks.condambigqa.loader import Release
from condambig_tasks.condambigqa.prompts import PromptOptions
from condambig_tasks.condambigqa.records import Setting

MATCHING_RULES = ("judge", "exact")

# Generation budget: five conditions with detailed answers run to ~1,000 tokens; lm-eval's
# default of 256 would truncate them into parse failures.
MAX_GENERATION_TOKENS: dict[Setting, int] = {
    Setting.MAIN: 1536,
    Setting.GOLD_CONDITIONS: 1536,
    Setting.NO_CONDITIONS: 1024,
    Setting.CLOSED_BOOK: 512,
    Setting.CLOSED_BOOK_CONDITIONS: 1024,
}


@dataclass(frozen=True)
class CondAmbigQAOptions:
    setting: Setting = Setting.MAIN
    release: Release = Release.TWO_K
    max_conditions: int = 5
    # "judge": maximise the per-setting weighted judge/citation score (the paper's rule);
    # "exact": match on citation score, then answer token F1 (the rule used without a judge)
    matching: str = "judge"
    # a Hugging Face commit sha to pin the dataset (default: the revision in loader.HUB_SOURCES)
    hub_revision: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "setting", _choice(Setting, self.setting, "setting"))
        object.__setattr__(self, "release", _choice(Release, self.release, "release"))
        if not 1 <= int(self.max_conditions) <= 10:
            raise ValueError(f"max_conditions must be 1..10, got {self.max_conditions}")
        object.__setattr__(self, "max_conditions", int(self.max_conditions))
        if self.matching not in MATCHING_RULES:
            raise ValueError(f"CondAmbigQA matching must be one of {', '.join(MATCHING_RULES)}; "
                             f"got {self.matching!r}")

    @property
    def prompt_options(self) -> PromptOptions:
        return PromptOptions(max_conditions=self.max_conditions)


def _choice(kind, value, name: str):
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(member.value for member in kind)
        raise ValueError(f"CondAmbigQA {name} must be one of {allowed}; got {value!r}") from None
