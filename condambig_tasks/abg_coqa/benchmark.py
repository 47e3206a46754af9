"""Abg-CoQA as a condambig benchmark: options, items, prompt, scoring and metric spec.

Abg-CoQA (Guo et al., AKBC 2021) has three subtasks on CoQA conversations, one run each:
``detection`` (answer the last question or say it is ambiguous: P/R/F1 of the ambiguous
class, answer F1), ``clarification`` (ask a clarification question: corpus BLEU-1..4, and an
optional LLM judge of helpfulness) and ``clarified_qa`` (answer as clarified by the user's
reply: CoQA leave-one-out F1). An item is one scored unit of the subtask
(:class:`~condambig_tasks.abg_coqa.samples.AbgCoQASample`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from condambig_metrics.abg_coqa import bleu_from_statistics, bleu_statistics
from condambig_tasks import settings
from condambig_tasks.abg_coqa.judge import JUDGE_METRICS, clarification_request, judgement_values
from condambig_tasks.abg_coqa.loader import (
    ASSET,
    AbgCoQADataConfig,
    AbgSplit,
    load_turns,
    normalise_record,
    parse_file,
    to_upstream,
)
from condambig_tasks.abg_coqa.parser import read_structured_predictions
from condambig_tasks.abg_coqa.prompts import AMBIGUOUS_LABEL, build_prompt
from condambig_tasks.abg_coqa.records import Subtask
from condambig_tasks.abg_coqa.samples import AbgCoQASample, build_samples
from condambig_tasks.abg_coqa.scoring import (
    BLEU_METRICS,
    DETECTION_METRICS,
    clarification_corpus,
    detection_corpus,
    score_reply,
)
from condambig_tasks.benchmark import (
    CORPUS,
    MEAN,
    SUM,
    Benchmark,
    Catalogue,
    MetricSpec,
    Paper,
    PredictionFiles,
    Runtime,
    ScoredSample,
    Variant,
    finite_number,
    plain_summary,
)
from condambig_tasks.data import DataUnavailableError, read_json

if TYPE_CHECKING:
    from condambig_tasks.uncertainty import CorpusStatistics

MAX_TOKENS = 128
DEFAULT_SUBTASK: Subtask = "detection"
DEFAULT_SPLIT: AbgSplit = "test"
# items per (split, subtask) of the upstream files: every turn (detection), the ambiguous
# turns (clarification), one per (ambiguous turn, reply) (clarified_qa); test's clarified_qa
# and train's are not counted
SPLIT_SIZES = {
    ("test", "detection"): 1055, ("test", "clarification"): 123,
    ("val", "detection"): 1092, ("val", "clarification"): 130, ("val", "clarified_qa"): 266,
}

SUBTASK_METRICS: dict[str, tuple[str, ...]] = {
    "detection": (*DETECTION_METRICS, "answer_f1", "parse_rate", "outputs_truncated"),
    "clarification": (*BLEU_METRICS, *JUDGE_METRICS, "parse_rate", "outputs_truncated"),
    "clarified_qa": ("f1", "parse_rate", "outputs_truncated"),
}


@dataclass(frozen=True)
class AbgCoQAOptions:
    """A run's options; allowed values are the types' (:mod:`condambig_tasks.options`)."""

    subtask: Subtask = field(default=DEFAULT_SUBTASK, metadata={
        "help": "the subtask: answer or flag ambiguity, ask for clarification, or answer "
                "once clarified"})
    split: AbgSplit = field(default=DEFAULT_SPLIT, metadata={
        "help": "data split (the paper reports test)"})


def _reference_file(path: Path, options: AbgCoQAOptions) -> list[AbgCoQASample]:
    return build_samples(parse_file(read_json(path), str(path)), options.subtask)


def _output_id(row: Mapping[str, Any]) -> str:
    """Clarified-QA rows may name their reply as ``"reply": k`` beside the turn id."""
    if "reply" in row and "#" not in str(row["id"]):
        return f"{row['id']}#{row['reply']}"
    return str(row["id"])


def _read_predictions(raw: Any, source: str, options: AbgCoQAOptions) -> dict[str, Any] | None:
    """Structured predictions (see ``prediction_files``); rows with ``output`` are raw
    text. Clarified QA rows name their reply by ``"reply": k`` or an id ``<id>#<k>``."""
    return read_structured_predictions(raw, options.subtask, source)


class AbgCoQA(Benchmark[AbgCoQAOptions, AbgCoQASample]):
    name = "abg_coqa"
    title = "Abg-CoQA"
    # published at AKBC 2021; the paper text names no arXiv version
    catalogue = Catalogue(
        paper=Paper("Abg-CoQA: Clarifying Ambiguity in Conversational Question Answering",
                    ("Meiqi Guo", "Mingda Zhang", "Siva Reddy", "Malihe Alikhani"), 2021,
                    venue="AKBC 2021", url="https://www.akbc.ws/2021/papers/SlDZ1o8FsJU"),
        description=(
            "CoQA conversations in which some questions are ambiguous. Three tasks: detect the "
            "ambiguous turns (answering the others), ask a clarification question on the "
            "ambiguous ones, and answer once the user's reply to the clarification is known."),
        tags=("ambiguity", "clarification-questions", "conversational-qa"),
        category="Reasoning",
        assets=(ASSET,),
        data_folders=("abg_coqa",),
    )
    version = "3-A"
    variants = (
        Variant("abg_coqa_detection", "is the question ambiguous: yes / no (class F1)",
                {"subtask": "detection"}),
        Variant("abg_coqa_clarification", "ask a clarification question (corpus BLEU)",
                {"subtask": "clarification"}),
        Variant("abg_coqa_clarified_qa", "answer the question once clarified (answer F1)",
                {"subtask": "clarified_qa"}),
    )
    group = "abg_coqa"
    options_type = AbgCoQAOptions
    # no paper_judge: Guo et al. rated the clarification questions' helpfulness with people
    # (Table 5); the judge is this project's addition, run only when one is named (Inspect:
    # a bound grader role), so the paper's judge-free BLEU needs no API key
    prediction_files = PredictionFiles(
        format='structured predictions: detection [{"id", "ambiguous": bool, "answer"}], '
               'clarification [{"id", "question"}], clarified_qa [{"id", "reply": k, '
               '"answer"}]',
        read=_read_predictions, reference=_reference_file, output_id=_output_id)
    # a conversation's turns share its story and history (ids ``<story>|<turn>|<n>``, a
    # clarified-QA sample ``...#<reply>``): resampled together
    resampling_unit = "conversation"
    # per subtask: detection F1 of the ambiguous class, clarification BLEU-4 (the
    # judge-free number, so a run ranks the same with or without a judge), clarified QA F1
    headline_metrics = ("f1", "bleu4")
    metric_specs = (
        MetricSpec("precision", "detection: precision of the ambiguous class", CORPUS,
                   plot=True),
        MetricSpec("recall", "detection: recall of the ambiguous class", CORPUS, plot=True),
        MetricSpec("f1", "detection: F1 of the ambiguous class; clarified_qa: CoQA "
                   "leave-one-out F1 averaged over (turn, reply) samples", CORPUS, plot=True),
        MetricSpec("answer_f1", "detection: CoQA F1 of the answer on non-ambiguous turns"),
        *(MetricSpec(name, f"clarification: corpus BLEU-{name[-1]} (sacreBLEU, 0-100) "
                     "against one or two reference questions", CORPUS, scale=100.0)
          for name in BLEU_METRICS),
        MetricSpec("judge_helpfulness", "clarification: the judge's mean helpfulness score "
                   "in [0, 1] (failed judgements left out)", judge=True),
        MetricSpec("judge_helpful_rate", "clarification: share of questions the judge scores "
                   ">= 0.5 (the paper's human accuracy)", judge=True),
        MetricSpec("judge_failed", "clarification: failed judgements (count)", SUM,
                   higher_is_better=False, judge=True),
        MetricSpec("parse_rate", "share of outputs with a non-empty reply line"),
        MetricSpec("outputs_truncated", "outputs longer than the parsing cap, cut before "
                   "parsing", SUM, higher_is_better=False),
    )

    # ------------------------------------------------------------------ items
    def load(self, options: AbgCoQAOptions) -> list[AbgCoQASample]:
        try:
            turns = load_turns(AbgCoQADataConfig(split=options.split))
        except DataUnavailableError as error:
            if options.split == "val":
                raise
            raise DataUnavailableError(
                error.benchmark, error.folder, error.file_names,
                f"no {options.split} split here; with only the validation file at hand run "
                "split=val: lm-eval --metadata '{\"abg_coqa\": {\"split\": \"val\"}}', "
                "Inspect -T split=val, "
                "condambig-score --split val", error.upstream) from None
        return build_samples(turns, options.subtask)

    def expected_size(self, options: AbgCoQAOptions) -> int | None:
        return SPLIT_SIZES.get((options.split, options.subtask))

    def prompt(self, item: AbgCoQASample, options: AbgCoQAOptions) -> str:
        return build_prompt(item)

    def target(self, item: AbgCoQASample, options: AbgCoQAOptions) -> list[str]:
        """The gold label or answer, the reference questions, or the reply's answers."""
        turn = item.turn
        if item.subtask == "detection":
            return [AMBIGUOUS_LABEL if turn.ambiguous else turn.target.answer]
        if item.subtask == "clarification":
            return list(turn.reference_clarification_questions)
        return list(item.reply.answers) if item.reply else []

    def to_record(self, item: AbgCoQASample) -> dict[str, Any]:
        return {"id": item.id, "subtask": item.subtask, "turn": to_upstream(item.turn),
                "reply_index": item.reply_index}

    def from_record(self, record: Mapping[str, Any]) -> AbgCoQASample:
        return AbgCoQASample(id=str(record["id"]), subtask=str(record["subtask"]),
                             turn=normalise_record(record["turn"]),
                             reply_index=record.get("reply_index"))

    def max_tokens(self, options: AbgCoQAOptions) -> int:
        return MAX_TOKENS

    # ------------------------------------------------------------------ scoring
    def score(self, item: AbgCoQASample, output: Any, options: AbgCoQAOptions) -> ScoredSample:
        return score_reply(item, output)

    def judge_applies(self, options: AbgCoQAOptions) -> bool:
        """Only clarification questions are judged."""
        return options.subtask == "clarification"

    async def score_batch(
        self, batch: Sequence[tuple[AbgCoQASample, str]], options: AbgCoQAOptions,
        runtime: Runtime,
    ) -> list[ScoredSample]:
        """The pure scores, plus one judgement per clarification question (concurrently)."""
        samples = [self.score(item, output, options) for item, output in batch]
        if runtime.judge is None or options.subtask != "clarification":
            return samples
        results = await runtime.judge.judge_many([
            clarification_request(item, str(sample.details["question"]))
            for (item, _), sample in zip(batch, samples, strict=True)])
        return [
            ScoredSample(
                id=sample.id, values={**sample.values, **judgement_values(result)},
                details={**sample.details, "judge_reason": result.reason,
                         "judge_error": result.error},
                explanation=f"{sample.explanation}; judge: {result.reason or result.error or ''}")
            for sample, result in zip(samples, results, strict=True)
        ]

    def active_metrics(self, options: AbgCoQAOptions, judged: bool) -> list[MetricSpec]:
        """The subtask's metrics (the judge's only for clarification, with a judge)."""
        names = SUBTASK_METRICS[options.subtask]
        return [spec for spec in super().active_metrics(options, judged) if spec.name in names]

    def corpus_values(
        self, samples: Sequence[ScoredSample], options: AbgCoQAOptions, judged: bool,
    ) -> Mapping[str, float | None]:
        """Detection P/R/F1 of the ambiguous class, corpus BLEU, or clarified QA's F1 (the
        mean over (turn, reply) samples)."""
        if options.subtask == "detection":
            return detection_corpus(samples)
        if options.subtask == "clarification":
            return clarification_corpus(samples)
        return plain_summary(samples, [MetricSpec("f1", "", MEAN)])

    def cluster(self, sample: ScoredSample) -> str:
        """The conversation (CoQA story id) of the sample's turn."""
        return sample.id.partition("|")[0]

    def corpus_statistics(
        self, samples: Sequence[ScoredSample], options: AbgCoQAOptions, judged: bool,
    ) -> CorpusStatistics:
        """:meth:`corpus_values` from totals: the detection counts, sacreBLEU's sufficient
        statistics, or clarified QA's F1 sum and count."""
        from condambig_tasks.uncertainty import CorpusStatistics

        if options.subtask == "detection":
            rows = [[float(predicted and gold), float(predicted), float(gold)]
                    for predicted, gold in ((bool(s.details["predicted_ambiguous"]),
                                             bool(s.details["gold_ambiguous"]))
                                            for s in samples)]
            return CorpusStatistics(("tp", "predicted", "gold"), rows, _detection_totals)
        if options.subtask == "clarification":
            rows = bleu_statistics([str(s.details["question"]) for s in samples],
                                   [list(s.details["references"]) for s in samples])
            columns = tuple(f"bleu:{k}" for k in range(len(rows[0]) if rows else 0))
            return CorpusStatistics(columns, rows, _bleu_totals)
        f1 = [finite_number(s.values.get("f1")) for s in samples]
        return CorpusStatistics(("f1", "n"), [[0.0, 0.0] if v is None else [v, 1.0]
                                              for v in f1], _f1_totals)

    def run_notes(self, options: AbgCoQAOptions, judged: bool) -> list[str]:
        if options.subtask != "clarification" or judged:
            return []
        return [f"{self.name}: no judge configured, so {', '.join(JUDGE_METRICS)} are not "
                f"reported (BLEU is). Set {settings.JUDGE_MODEL_VARIABLE} (and "
                f"{settings.JUDGE_BASE_URL_VARIABLE} for a vLLM/compatible server), lm-eval "
                "--metadata '{\"judge_model\": ...}', condambig-score --judge-model or "
                "Inspect --model-role grader=... to enable them."]

    # ------------------------------------------------------------------ prediction files


def _detection_totals(totals: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`condambig_metrics.abg_coqa.detection_scores` of many resamples (0.0 where a
    ratio is undefined, as there)."""
    import numpy as np

    tp, predicted, gold = totals["tp"], totals["predicted"], totals["gold"]
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(predicted > 0, tp / predicted, 0.0)
        recall = np.where(gold > 0, tp / gold, 0.0)
        both = precision + recall
        f1 = np.where(both > 0, 2 * precision * recall / both, 0.0)
    return {"precision": precision, "recall": recall, "f1": f1}


def _bleu_totals(totals: Mapping[str, Any]) -> dict[str, Any]:
    """Corpus BLEU-1..4 of each resample from its summed sacreBLEU statistics."""
    import numpy as np

    matrix = np.column_stack([totals[column] for column in totals])
    scores = [bleu_from_statistics(row) for row in matrix]
    return {name: np.array([score[name] for score in scores]) for name in BLEU_METRICS}


def _f1_totals(totals: Mapping[str, Any]) -> dict[str, Any]:
    import numpy as np

    count = totals["n"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"f1": np.where(count > 0, totals["f1"] / count, np.nan)}
