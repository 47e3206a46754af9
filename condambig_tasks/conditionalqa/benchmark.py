"""ConditionalQA as a condambig benchmark: options, items, prompt, scoring and metric spec.

ConditionalQA (Sun et al., ACL 2022): questions about UK policy documents asked from a
user's scenario; an answer ("yes", "no" or a span) may hold only under conditions, the
document elements the scenario does not settle. The model sees the document as numbered
elements and replies in JSON, citing condition elements by number; scores are those of the
official ``evaluate.py`` (EM / F1, with and without conditions, overall and on the yes/no,
extractive and conditional questions), computed by ``condambig_metrics.conditionalqa``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from condambig_metrics.conditionalqa import BREAKDOWNS, question_categories, score_question
from condambig_tasks.benchmark import (
    SUM,
    Benchmark,
    Catalogue,
    MetricSpec,
    Paper,
    PredictionFiles,
    ScoredSample,
    Variant,
)
from condambig_tasks.conditionalqa.document_view import DocumentView, fit_document
from condambig_tasks.conditionalqa.loader import (
    ASSET,
    join_documents,
    load_questions,
    load_split,
    parse_question,
    reference_documents,
)
from condambig_tasks.conditionalqa.parser import parse_model_output, parse_official_answers
from condambig_tasks.conditionalqa.prompts import build_prompt
from condambig_tasks.conditionalqa.records import ConditionalQAItem
from condambig_tasks.conditionalqa.scoring import (
    READING_METRICS,
    SCORE_METRICS,
    question_values,
    reading_values,
    score_parsed,
)
from condambig_tasks.errors import ConfigurationError, PredictionFileError

MAX_TOKENS = 512

DEFAULT_MAX_DOCUMENT_WORDS = 4000
"""Word budget per document: with tags and numbering about 6-7k tokens, so the prompt fits
an 8k-token context window; 0 shows whole documents (up to 9,230 words, paper §4.1)."""

TaskSplit = Literal["dev", "train"]
# questions per split (Sun et al., 2022, §4.5)
SPLIT_SIZES = {"train": 2338, "dev": 285}
"""Splits with public answers (``test_no_answer`` has none to score against)."""

WHOLE_DOCUMENT_WORDS = frozenset({"", "none", "all"})
"""Other spellings of ``max_document_words=0`` (lm-eval metadata, Inspect ``-T``)."""

_SCORE_DESCRIPTIONS = {
    "em": "exact match of the answers",
    "em_with_conditions": "exact match x F1 of the condition elements",
    "f1": "token F1 of the answers",
    "f1_with_conditions": "token F1 x F1 of the condition elements",
}
_BREAKDOWN_DESCRIPTIONS = {
    "yesno": "questions with a yes/no reference answer",
    "extractive": "answerable questions without a yes/no answer",
    "conditional": "questions with a conditional reference answer",
}


@dataclass(frozen=True)
class ConditionalQAOptions:
    """A run's options; allowed values are the types' (:mod:`condambig_tasks.options`)."""

    split: TaskSplit = field(
        default="dev",
        metadata={"help": "question split (test_no_answer has no public answers)"})
    max_document_words: int | None = field(
        default=DEFAULT_MAX_DOCUMENT_WORDS,
        metadata={"help": "word budget per document, 0 = whole documents; raw outputs are "
                          "scored with the budget they were produced with"})

    def __post_init__(self) -> None:
        # the one range a type cannot say
        if self.max_document_words is not None and self.max_document_words < 0:
            raise ConfigurationError("max_document_words must be >= 0 (0 = whole documents)")
        if self.max_document_words == 0:
            object.__setattr__(self, "max_document_words", None)


@dataclass(frozen=True)
class OfficialPrediction:
    """A prediction from the official file format: ``[answer, [condition elements]]`` pairs."""

    answers: tuple[tuple[str, tuple[str, ...]], ...]


def _reference_file(path: Path, options: ConditionalQAOptions) -> list[ConditionalQAItem]:
    """Questions in the upstream format; documents.json beside them, else the data source."""
    path = Path(path)
    if not path.is_file():
        raise ConfigurationError(f"reference file {path} does not exist")
    questions = load_questions(path=path)
    documents = reference_documents(path)
    if documents is None:
        return [ConditionalQAItem(question, None) for question in questions]
    return [ConditionalQAItem(entry.question,
                              fit_document(entry.document, options.max_document_words))
            for entry in join_documents(questions, documents)]


def read_official_predictions(raw: Any, source: str,
                     options: ConditionalQAOptions) -> dict[str, OfficialPrediction] | None:
    """The official prediction file ``[{"id": ..., "answers": [[answer, [conditions]]]}]``."""
    if not isinstance(raw, list):
        return None
    if not all(isinstance(row, dict) for row in raw):
        return None
    if not all("answers" in row for row in raw):
        if any("answers" in row or "output" in row for row in raw):
            raise PredictionFileError(
                f"{source}: every record needs either 'answers' (official format) or "
                "'output' (raw model output), the same throughout.")
        return None
    predictions: dict[str, OfficialPrediction] = {}
    for row in raw:
        if "id" not in row:
            raise PredictionFileError(f"{source}: every prediction needs an 'id'.")
        key = str(row["id"])
        if key in predictions:
            raise PredictionFileError(f"{source}: id {key!r} appears more than once.")
        try:
            pairs = parse_official_answers(row["answers"], f"{source} ({key})")
        except ValueError as error:
            raise PredictionFileError(str(error)) from None
        predictions[key] = OfficialPrediction(
            tuple((text, tuple(conditions)) for text, conditions in pairs))
    return predictions


class ConditionalQA(Benchmark[ConditionalQAOptions, ConditionalQAItem]):
    """ConditionalQA (Sun et al., 2022): answers with the document elements that condition them."""

    name = "conditionalqa"
    title = "ConditionalQA"
    catalogue = Catalogue(
        paper=Paper("ConditionalQA: A Complex Reading Comprehension Dataset with Conditional "
                    "Answers", ("Haitian Sun", "William W. Cohen", "Ruslan Salakhutdinov"), 2022,
                    venue="ACL 2022", arxiv="2110.06884"),
        description=(
            "Questions about UK public-policy documents asked from a user scenario. Each answer "
            "(\"yes\"/\"no\" or a span) comes with the document elements that are its unmet "
            "conditions, or the question is not answerable. Scored with the official evaluate.py "
            "metrics."),
        tags=("conditional-answers", "reading-comprehension", "long-context",
              "question-answering"),
        category="Reasoning",
        assets=(ASSET,),
        data_folders=("conditionalqa",),
    )
    version = "4-A"
    variants = (Variant("conditionalqa", "answers with their conditions over the dev set"),)
    options_type = ConditionalQAOptions
    # evaluate.py gives a reference question without a prediction no score at all (it is
    # appended to none of the lists it averages), so it is left out, not scored as wrong
    prediction_files = PredictionFiles(
        format='the official file: [{"id": ..., "answers": [[answer, [condition elements]], '
               '...]}]',
        read=read_official_predictions, reference=_reference_file)
    # the questions on one policy document (285 dev questions on 59 documents) share it:
    # resampled together
    resampling_unit = "document"
    # Table 2 (Sun et al., 2022): overall F1 with conditions
    headline_metrics = ("f1_with_conditions",)
    metric_specs = (
        *(MetricSpec(name, f"{_SCORE_DESCRIPTIONS[name]}, all questions (official 'total')",
                     plot=True, figure=name)
          for name in SCORE_METRICS),
        *(MetricSpec(f"{breakdown}_{name}",
                     f"{_SCORE_DESCRIPTIONS[name]}, {_BREAKDOWN_DESCRIPTIONS[breakdown]}",
                     plot=True, figure=name)
          for breakdown in BREAKDOWNS for name in SCORE_METRICS),
        MetricSpec("parse_rate", "share of raw replies read as answers"),
        MetricSpec("out_of_range_citations", "cited condition numbers not shown to the model "
                   "(dropped)", aggregation=SUM, higher_is_better=False),
        MetricSpec("truncated_documents", "questions whose document was cut to "
                   "max_document_words", aggregation=SUM, higher_is_better=None),
        MetricSpec("outputs_truncated", "outputs longer than the parsing cap, cut before "
                   "parsing", SUM, higher_is_better=False),
    )

    # ------------------------------------------------------------------ options and items
    def options(self, values: Mapping[str, Any] | None = None, *,
                strict: bool = True) -> ConditionalQAOptions:
        """Also accepts ``max_document_words`` "none" / "all" for whole documents."""
        values = dict(values or {})
        budget = values.get("max_document_words")
        if isinstance(budget, str) and budget.strip().lower() in WHOLE_DOCUMENT_WORDS:
            values["max_document_words"] = None
        return super().options(values, strict=strict)

    def load(self, options: ConditionalQAOptions) -> list[ConditionalQAItem]:
        return [ConditionalQAItem(entry.question,
                                  fit_document(entry.document, options.max_document_words))
                for entry in load_split(options.split)]

    def expected_size(self, options: ConditionalQAOptions) -> int:
        return SPLIT_SIZES[options.split]

    def prompt(self, item: ConditionalQAItem, options: ConditionalQAOptions) -> str:
        return build_prompt(item.question, _view(item))

    def target(self, item: ConditionalQAItem, options: ConditionalQAOptions) -> str:
        """The reference answers in the official format (scoring reads the question)."""
        return json.dumps(item.question.official_answers(), ensure_ascii=False)

    def to_record(self, item: ConditionalQAItem) -> dict[str, Any]:
        """The question in the upstream format, and the document view."""
        question = item.question
        view = item.view
        return {
            "question": {"id": question.id, "url": question.url, "scenario": question.scenario,
                         "question": question.question,
                         "not_answerable": question.not_answerable,
                         "answers": [[text, conditions] for text, conditions
                                     in question.official_answers()],
                         "evidences": list(question.evidences)},
            "view": None if view is None else {
                "title": view.title, "total_elements": view.total_elements,
                "shown": [[number, element] for number, element in view.shown]},
        }

    def from_record(self, record: Mapping[str, Any]) -> ConditionalQAItem:
        view = record.get("view")
        return ConditionalQAItem(
            question=parse_question(record["question"], "ConditionalQA record"),
            view=None if view is None else DocumentView(
                title=view["title"], total_elements=int(view["total_elements"]),
                shown=tuple((int(number), element) for number, element in view["shown"])))

    def max_tokens(self, options: ConditionalQAOptions) -> int:
        return MAX_TOKENS

    # ------------------------------------------------------------------ scoring
    def score(self, item: ConditionalQAItem, output: Any,
              options: ConditionalQAOptions) -> ScoredSample:
        references = item.question.official_answers()
        categories = question_categories(references)
        if isinstance(output, OfficialPrediction):
            answers = [(text, list(conditions)) for text, conditions in output.answers]
            scores = score_question(answers, references)
            values = {**question_values(scores, categories),
                      **{name: None for name in READING_METRICS}}
            explanation = f"{len(answers)} answer(s); EM {scores.em:.3f}"
        else:
            view = _view(item)
            parsed = parse_model_output(output, view.element_map())
            scores = score_parsed(parsed, references)
            values = {**question_values(scores, categories),
                      **reading_values(parsed, view.truncated)}
            answers = parsed.official_answers()
            explanation = (
                f"parse failure: {parsed.failure}" if not parsed.parsed
                else f"parsed {len(parsed.answers)} answer(s); "
                     f"{parsed.out_of_range_citations} citation(s) out of range")
        return ScoredSample(
            id=item.id, values=values, explanation=explanation,
            details={"answers": answers, "document": item.question.url,
                     "yesno": categories.yesno,
                     "extractive": categories.extractive,
                     "conditional": categories.conditional})

    def cluster(self, sample: ScoredSample) -> str:
        """The question's document (its url); a sample scored before the url was recorded
        is its own unit."""
        return str(sample.details.get("document") or sample.id)



def _view(item: ConditionalQAItem) -> DocumentView:
    """The item's document view; raw outputs cite element numbers, so they need it."""
    if item.view is None:
        raise PredictionFileError(
            f"ConditionalQA question {item.id}: raw outputs cite document elements by number, "
            "so scoring them needs documents.json (upstream v1_0/): put it beside the --ref "
            "file or in $CONDAMBIG_DATA_DIR/conditionalqa/, or give predictions in the "
            "official format.")
    return item.view
