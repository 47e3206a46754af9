"""Where clarifying questions come from when no model is run: baselines or a file of outputs.

* ``repeater`` asks the task itself (the paper's dummy baseline);
* ``human`` asks the annotator's ``q2_gt`` (test split only);
* a JSON / JSON Lines file ``[{"id": ..., "question": ...}]`` holds a model's questions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from condambig_tasks.data import read_json
from condambig_tasks.hotpot_flm.prompts import clean_question
from condambig_tasks.hotpot_flm.records import FlmExample

BASELINES = ("repeater", "human")


def repeater_questions(examples: Sequence[FlmExample]) -> dict[str, str]:
    return {example.id: example.question for example in examples}


def human_questions(examples: Sequence[FlmExample]) -> dict[str, str]:
    found = {e.id: e.human_question for e in examples if e.human_question}
    if not found:
        raise ValueError(
            "human questions exist only in the test split (q2_gt of the annotated TSV): "
            "use --split test with --questions human"
        )
    return found


def baseline_questions(name: str, examples: Sequence[FlmExample]) -> dict[str, str]:
    if name == "repeater":
        return repeater_questions(examples)
    if name == "human":
        return human_questions(examples)
    raise ValueError(f"unknown baseline {name!r}: use one of {', '.join(BASELINES)}")


@dataclass(frozen=True)
class QuestionFile:
    """A model's questions by example id (cleaned of reasoning traces)."""

    questions: dict[str, str]
    source: Path


def read_question_file(path: Path) -> QuestionFile:
    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such questions file (expected a JSON list of "
            '{"id": ..., "question": ...}, or one of the baselines: repeater, human)'
        )
    content = read_json(path)
    if not isinstance(content, list):
        raise ValueError(f'{path}: expected a JSON list of {{"id": ..., "question": ...}}')
    questions: dict[str, str] = {}
    for position, entry in enumerate(content):
        if not isinstance(entry, dict) or "id" not in entry or "question" not in entry:
            raise ValueError(
                f'{path}: entry {position} is not an object with "id" and "question": {entry!r:.120}'
            )
        question = entry["question"]
        questions[str(entry["id"])] = clean_question(question if isinstance(question, str) else "")
    return QuestionFile(questions, path)
