"""Total extraction of a JSON value from free model text (shared by the benchmarks' parsers).

Handles reasoning traces (``<think>...</think>``), Markdown fences, prose around the JSON,
trailing commas and truncated output (through the maintained ``json-repair`` package).
Never raises: returns ``ExtractedJson(value=None, error=...)`` when nothing usable is there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

# Longer outputs are cut before parsing: no benchmark answer needs more, and repairing
# megabytes of junk would cost seconds per sample.
MAX_PARSED_CHARACTERS = 100_000
# json-repair is linear on normal text but slow on pathological nesting ("{" * 20_000 takes
# ~1.5 s): only this much of a candidate is handed to it.
MAX_REPAIRED_CHARACTERS = 20_000

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```(?:json|JSON|javascript)?\s*\n?(.*?)(?:```|$)", re.DOTALL)


@dataclass(frozen=True)
class ExtractedJson:
    value: Any
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def strip_reasoning(text: str) -> str:
    """Drop ``<think>`` blocks; an unclosed one hides everything after it (no answer yet)."""
    text = _THINK_BLOCK.sub("", text)
    if "</think>" in text.lower():  # a closing tag whose opener was part of the prompt
        text = re.split(r"</think>", text, flags=re.IGNORECASE)[-1]
    opened = re.search(r"<think>", text, flags=re.IGNORECASE)
    if opened:
        text = text[: opened.start()]
    return text.strip()


def extract_json(text: object) -> ExtractedJson:
    """The first JSON object or array found in ``text``, repaired when needed."""
    if not isinstance(text, str):
        return ExtractedJson(None, f"output is {type(text).__name__}, not text")
    answer = strip_reasoning(text)[:MAX_PARSED_CHARACTERS]
    if not answer:
        return ExtractedJson(None, "empty output")
    candidates = [block for block in _FENCE.findall(answer) if block.strip()]
    candidates.append(answer)
    for candidate in candidates:
        value = _decode(candidate)
        if isinstance(value, (dict, list)) and value:
            return ExtractedJson(value)
    return ExtractedJson(None, "no JSON object or array in the output")


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
