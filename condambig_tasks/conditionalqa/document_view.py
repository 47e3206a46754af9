"""The document as the model sees it: numbered elements, within a word budget.

Documents reach 9,230 words (16,154 T5 sub-words, paper §4.1). When a document exceeds
``max_words`` (whitespace-separated words of the element strings, tags included), the
view keeps

1. every heading (``<h1>``–``<h6>``) in document order while they fit, so the model
   still sees the whole outline, then
2. the other elements in document order until the first one that no longer fits,

and marks each run of omitted elements with one line. This uses nothing but the document
itself (never the gold evidences), so every model gets the same input for the same budget.
Element numbers are the 1-based positions in the full document, so a citation always maps
back to the same element string whatever the budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from condambig_tasks.conditionalqa.records import PolicyDocument

_HEADING = re.compile(r"^\s*<h[1-6][\s>]", re.IGNORECASE)


def is_heading(element: str) -> bool:
    return bool(_HEADING.match(element))


def word_count(element: str) -> int:
    return len(element.split())


@dataclass(frozen=True)
class DocumentView:
    """The numbered elements shown to the model, and how many were left out."""

    title: str
    shown: tuple[tuple[int, str], ...]
    total_elements: int

    @property
    def omitted_elements(self) -> int:
        return self.total_elements - len(self.shown)

    @property
    def truncated(self) -> bool:
        return self.omitted_elements > 0

    def element_map(self) -> dict[int, str]:
        """Shown element number -> element string (what citations may refer to)."""
        return dict(self.shown)

    def render(self) -> str:
        """One line per shown element, ``[n] <p>...</p>``, plus a marker per omitted run."""
        lines: list[str] = []
        expected = 1
        for number, element in self.shown:
            if number > expected:
                lines.append(_omission_marker(number - expected))
            lines.append(f"[{number}] {element}")
            expected = number + 1
        if expected <= self.total_elements:
            lines.append(_omission_marker(self.total_elements - expected + 1))
        return "\n".join(lines)


def _omission_marker(count: int) -> str:
    noun = "element" if count == 1 else "elements"
    return f"[... {count} {noun} omitted to fit the length limit ...]"


def fit_document(document: PolicyDocument, max_words: int | None) -> DocumentView:
    """The view of ``document`` within ``max_words`` (None or <= 0: the whole document)."""
    contents = document.contents
    counts = [word_count(element) for element in contents]
    if max_words is None or max_words <= 0 or sum(counts) <= max_words:
        kept = set(range(len(contents)))
    else:
        kept = set()
        budget = max_words
        heading_flags = [is_heading(element) for element in contents]
        headings = [index for index, flag in enumerate(heading_flags) if flag]
        others = [index for index, flag in enumerate(heading_flags) if not flag]
        for group in (headings, others):
            for index in group:
                if counts[index] > budget:
                    break
                kept.add(index)
                budget -= counts[index]
    shown = tuple((index + 1, contents[index]) for index in sorted(kept))
    return DocumentView(title=document.title, shown=shown, total_elements=len(contents))
