"""The two HotpotQA-FLM splits: ``full`` (all of HotpotQA distractor validation) and ``test``."""

from __future__ import annotations

import logging
from enum import Enum

from condambig_tasks.errors import ConfigurationError
from condambig_tasks.hotpot_flm.annotated import build_test_examples, load_rows
from condambig_tasks.hotpot_flm.hotpotqa_source import load_hotpot_examples
from condambig_tasks.hotpot_flm.masking import DEFAULT_MASK_SEED, build_full_example
from condambig_tasks.hotpot_flm.records import FlmExample

logger = logging.getLogger(__name__)


class Split(str, Enum):
    FULL = "full"  # paper n = 7,404, masked here with the documented seed
    TEST = "test"  # the 400 human-annotated rows, with the authors' own masked facts


def parse_split(value: str | Split) -> Split:
    try:
        return Split(str(value.value if isinstance(value, Split) else value).strip().lower())
    except ValueError:
        raise ConfigurationError(
            f"unknown HotpotQA-FLM split {value!r}: use 'full' or 'test'"
        ) from None


def load_examples(split: str | Split = Split.FULL, seed: int = DEFAULT_MASK_SEED) -> list[FlmExample]:
    """The split's examples in source order (``seed`` only affects ``full``)."""
    split = parse_split(split)
    hotpot = load_hotpot_examples()
    if split is Split.FULL:
        built = [build_full_example(example, seed) for example in hotpot]
        examples = [example for example in built if example is not None]
        if len(examples) < len(built):
            logger.warning(
                "HotpotQA-FLM full split: %d example(s) skipped: none of their supporting "
                "facts is a sentence of their context.", len(built) - len(examples),
            )
        return examples
    annotated = [row for row in load_rows() if row.human_question is not None]
    examples, _ = build_test_examples(annotated, {example.id: example for example in hotpot})
    return examples
