"""AmbigNQ as a condambig benchmark: options, items, prompt, scoring and metric spec.

Closed-book AmbigQA (Min et al., 2020) on the ``light`` development set: the model lists
every plausible answer with a minimally edited disambiguated question; scores are those of
the official ``ambigqa_evaluate_script.py`` (answer F1 on all and on multi-answer
questions, BLEU and edit-F1 of the questions on multi-answer questions).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condambig_metrics.ambignq import QUESTION_METRICS, score_question
from condambig_tasks.ambignq.loader import (
    ASSET,
    HUB_REVISION,
    annotations_to_json,
    load_questions,
    normalise_record,
    parse_records,
)
from condambig_tasks.ambignq.parser import parse_reply
from condambig_tasks.ambignq.prompts import build_prompt
from condambig_tasks.ambignq.records import AmbigNQQuestion, PredictedPair, SingleAnswer
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
from condambig_tasks.data import read_json
from condambig_tasks.errors import PredictionFileError

MAX_TOKENS = 512
DEV_LIGHT_SIZE = 2002  # questions of the light development set (dev_light.json)


@dataclass(frozen=True)
class AmbigNQOptions:
    hub_revision: str | None = field(
        default=HUB_REVISION,
        metadata={"help": "commit of sewon/ambig_qa on the hub (ignored with CONDAMBIG_DATA_DIR)"})


@dataclass(frozen=True)
class OfficialPrediction:
    """A prediction from the official file format: pairs, or bare answers (no questions)."""

    pairs: tuple[PredictedPair, ...]
    with_questions: bool


def _reference_file(path: Path, options: AmbigNQOptions) -> list[AmbigNQQuestion]:
    return parse_records(read_json(path), str(path))


def read_official_predictions(raw: Any, source: str,
                              options: AmbigNQOptions) -> dict[str, OfficialPrediction] | None:
    """The official prediction file; a bare string is one answer, as officially."""
    if not isinstance(raw, dict):
        return None
    predictions: dict[str, list[PredictedPair]] = {}
    kinds: set[str] = set()
    for key, value in raw.items():
        items = [value] if isinstance(value, (str, dict)) else value
        if not isinstance(items, list):
            raise PredictionFileError(
                f"{source}: prediction for {key} must be a list, got {type(value).__name__}.")
        pairs: list[PredictedPair] = []
        for entry in items:
            if isinstance(entry, str):
                kinds.add("answers")
                pairs.append(PredictedPair(answer=entry))
            elif isinstance(entry, dict) and isinstance(entry.get("answer"), str) \
                    and isinstance(entry.get("question"), str):
                kinds.add("pairs")
                pairs.append(PredictedPair(answer=entry["answer"], question=entry["question"]))
            else:
                raise PredictionFileError(
                    f"{source}: prediction for {key} has an item that is neither an answer "
                    "string nor an object with string fields 'question' and 'answer'.")
        predictions[str(key)] = pairs
    if len(kinds) > 1:
        raise PredictionFileError(
            f"{source}: mixes answer strings and question-answer objects; use one format "
            "throughout, as the official script requires.")
    # only bare answer strings mean "no questions" (all-empty predictions score 0 anyway)
    with_questions = kinds != {"answers"}
    return {key: OfficialPrediction(tuple(pairs), with_questions)
            for key, pairs in predictions.items()}


class AmbigNQ(Benchmark[AmbigNQOptions, AmbigNQQuestion]):
    name = "ambignq"
    title = "AmbigNQ"
    # the arXiv id as Toles et al. cite it
    catalogue = Catalogue(
        paper=Paper("AmbigQA: Answering Ambiguous Open-domain Questions",
                    ("Sewon Min", "Julian Michael", "Hannaneh Hajishirzi", "Luke Zettlemoyer"),
                    2020, venue="EMNLP 2020", arxiv="2004.10645",
                    url="https://aclanthology.org/2020.emnlp-main.466/"),
        description=(
            "Closed-book AmbigNQ: for each NQ-open question the model lists every plausible "
            "answer, each with a minimally edited disambiguated question. Scored as the official "
            "ambigqa_evaluate_script.py (answer F1 on all and on multi-answer questions, BLEU and "
            "EDIT-F1 of the disambiguated questions)."),
        tags=("ambiguity", "open-domain-qa", "question-rewriting", "closed-book"),
        category="Knowledge",
        assets=(ASSET,),
        data_folders=("ambignq",),
    )
    version = "3-A"
    variants = (Variant("ambignq", "every plausible answer of an ambiguous question"),)
    options_type = AmbigNQOptions
    prediction_files = PredictionFiles(
        format="the official file: {id: [answer, ...]} or {id: [{question, answer}, ...]}",
        read=read_official_predictions, reference=_reference_file)
    # the paper's F1_ans (all) column
    headline_metrics = ("f1_answer_all",)
    metric_specs = (
        MetricSpec("f1_answer_all", "answer F1 (max over annotations), all questions",
                   plot=True),
        MetricSpec("f1_answer_multi", "answer F1 on questions every annotator found "
                   "multi-answer (the official 'multi' subset)", plot=True),
        *(MetricSpec(name, f"{name[3:]} of the disambiguated questions, weighted into an "
                     "F1 over answers (multi questions; official script)")
          for name in QUESTION_METRICS),
        MetricSpec("parse_rate", "share of outputs with at least one question-answer pair"),
        MetricSpec("outputs_truncated", "outputs longer than the parsing cap, cut before "
                   "parsing", SUM, higher_is_better=False),
    )

    def load(self, options: AmbigNQOptions) -> list[AmbigNQQuestion]:
        from condambig_tasks.ambignq.loader import AmbigNQDataConfig

        return load_questions(AmbigNQDataConfig(hub_revision=options.hub_revision))

    def expected_size(self, options: AmbigNQOptions) -> int:
        return DEV_LIGHT_SIZE

    def prompt(self, item: AmbigNQQuestion, options: AmbigNQOptions) -> str:
        return build_prompt(item)

    def target(self, item: AmbigNQQuestion, options: AmbigNQOptions) -> list[str]:
        """Every acceptable answer string (scoring reads the annotations)."""
        answers: list[str] = []
        for annotation in item.annotations:
            groups = [annotation.answers] if isinstance(annotation, SingleAnswer) else [
                pair.answers for pair in annotation.pairs]
            answers += [a for group in groups for a in group if a not in answers]
        return answers

    def to_record(self, item: AmbigNQQuestion) -> dict[str, Any]:
        return {"id": item.id, "question": item.question,
                "annotations": annotations_to_json(item.annotations)}

    def from_record(self, record: dict[str, Any]) -> AmbigNQQuestion:
        return normalise_record(record)

    def max_tokens(self, options: AmbigNQOptions) -> int:
        return MAX_TOKENS

    def score(self, item: AmbigNQQuestion, output: Any, options: AmbigNQOptions) -> ScoredSample:
        if isinstance(output, OfficialPrediction):
            pairs, with_questions, parsed, error = (output.pairs, output.with_questions,
                                                    None, None)
            truncated = None
        else:
            reply = parse_reply(output if isinstance(output, str) else "")
            pairs, with_questions = reply.pairs, True
            parsed, error = float(reply.parsed), reply.error
            truncated = float(reply.truncated)
        scores = score_question(item.question, item.annotations, pairs, with_questions)
        values: dict[str, float | None] = {
            "f1_answer_all": scores.f1_answer,
            "f1_answer_multi": scores.f1_answer if scores.is_multi else None,
            **{name: scores.question_metric(name) if scores.is_multi else None
               for name in QUESTION_METRICS},
            "parse_rate": parsed,
            "outputs_truncated": truncated,
        }
        explanation = f"answer F1 {scores.f1_answer:.3f}" + (
            f" (output did not parse: {error})" if error else "")
        return ScoredSample(
            id=item.id, values=values, explanation=explanation,
            details={"is_multi": scores.is_multi,
                     "pairs": [{"question": p.question, "answer": p.answer} for p in pairs]})
