"""Total extraction of a JSON value from free model text (shared by the benchmarks' parsers).

Handles reasoning traces (``<think>...</think>``), Markdown fences, prose around the JSON,
trailing commas and truncated output (through the maintained ``json-repair`` package).
Never raises: returns ``ExtractedJson(value=None, error=...)`` when nothing usable is there.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from condambig_metrics.text import code_fences, strip_reasoning, without_language_tag

__all__ = ["MAX_PARSED_CHARACTERS", "ExtractedJson", "extract_json", "strip_reasoning"]

# Longer outputs are cut before parsing: no benchmark answer needs more, and repairing
# megabytes of junk would cost seconds per sample.
MAX_PARSED_CHARACTERS = 100_000
# json-repair is linear on normal text but slow on pathological nesting ("{" * 20_000 takes
# ~1.5 s): only this much of a candidate is handed to it.
MAX_REPAIRED_CHARACTERS = 20_000

# Language tags dropped from a fence's first line; any other tag stays part of the block.
_FENCE_TAGS = ("json", "JSON", "javascript")


@dataclass(frozen=True)
class ExtractedJson:
    value: Any
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def extract_json(text: object) -> ExtractedJson:
    """The first JSON object or array found in ``text``, repaired when needed."""
    if not isinstance(text, str):
        return ExtractedJson(None, f"output is {type(text).__name__}, not text")
    answer = strip_reasoning(text)[:MAX_PARSED_CHARACTERS]
    if not answer:
        return ExtractedJson(None, "empty output")
    candidates = [block for block in _fenced_blocks(answer) if block.strip()]
    candidates.append(answer)
    for candidate in candidates:
        value = _decode(candidate)
        if isinstance(value, (dict, list)) and value:
            return ExtractedJson(value)
    return ExtractedJson(None, "no JSON object or array in the output")


def _fenced_blocks(text: str) -> list[str]:
    """Each fence's content after its language tag and leading whitespace; an unclosed last
    fence runs to the end of the text (less one final newline)."""
    blocks = []
    for fence in code_fences(text):
        block = without_language_tag(fence.body, _FENCE_TAGS).lstrip()
        if not fence.closed and block.endswith("\n"):
            block = block[:-1]
        blocks.append(block)
    return blocks


def _decode(candidate: str) -> Any:
    start = _first_bracket(candidate)
    if start is None:
        return None
    body = candidate[start:]
    try:
        value, _ = json.JSONDecoder().raw_decode(body)
        return value
    except (json.JSONDecodeError, RecursionError):
        pass
    try:
        import json_repair

        return json_repair.loads(body[:MAX_REPAIRED_CHARACTERS])
    except Exception:  # json-repair is lenient, but any failure here is just "no JSON"
        return None


def _first_bracket(text: str) -> int | None:
    positions = [p for p in (text.find("{"), text.find("[")) if p >= 0]
    return min(positions) if positions else None
