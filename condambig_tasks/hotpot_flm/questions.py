"""Where clarifying questions come from when no model is run: baselines or a file of outputs.

* ``repeater`` asks the task itself (the paper's dummy baseline);
* ``human`` asks the annotator's ``q2_gt`` (test split only);
* a JSON / JSON Lines file ``[{"id": ..., "question": ...}]`` holds a model's questions
  (cleaned of reasoning traces as a raw output is).
"""

from __future__ import annotations

from typing import Any

from condambig_tasks.errors import ConfigurationError, PredictionFileError
from condambig_tasks.hotpot_flm.prompts import clean_question
from condambig_tasks.hotpot_flm.records import AskedQuestion, FlmExample

BASELINES = ("repeater", "human")
QUESTION_FILE_FORMAT = '[{"id": ..., "question": ...}] (a model\'s clarifying questions)'


def repeater_question(example: FlmExample) -> AskedQuestion:
    return AskedQuestion(example.question)


def human_question(example: FlmExample) -> AskedQuestion | None:
    if example.split != "test":
        raise ConfigurationError(
            "human questions exist only in the test split (q2_gt of the annotated TSV): "
            "use --split test with --questions human")
    return AskedQuestion(example.human_question) if example.human_question else None


def read_question_entries(raw: Any, source: str) -> dict[str, AskedQuestion] | None:
    """A question file's questions by example id; None when ``raw`` is not a list."""
    if not isinstance(raw, list):
        return None
    questions: dict[str, AskedQuestion] = {}
    for position, entry in enumerate(raw):
        if not isinstance(entry, dict) or "id" not in entry or "question" not in entry:
            raise PredictionFileError(
                f'{source}: entry {position} is not an object with "id" and "question": '
                f"{entry!r:.120}")
        key = str(entry["id"])
        if key in questions:
            raise PredictionFileError(f"{source}: id {key!r} appears more than once.")
        question = entry["question"]
        questions[key] = AskedQuestion(clean_question(question if isinstance(question, str)
                                                      else ""))
    return questions
