"""CondAmbigQA as a condambig benchmark: options, items, prompt, scoring and metric spec.

Li et al., *CondAmbigQA*: for an ambiguous question and 20 retrieved fragments the model
returns condition-answer-citation triples. Generated pairs are matched to the gold
properties (with a judge: the paper's weighted matching; without: citations, then answer
token F1); conditions and answers are judged G-Eval style, citations scored by eq. 1, and
the main setting also reports the authors' balanced parts and combined score (Table 2), the
other settings their balanced answer (and citation) scores (Fig. 4, Table 3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from condambig_metrics.judge import DEFAULT_JUDGE_WEIGHTING, JudgeWeighting
from condambig_tasks import settings
from condambig_tasks.benchmark import (
    CORPUS,
    SUM,
    Benchmark,
    Catalogue,
    MetricSpec,
    Paper,
    PredictionFiles,
    Runtime,
    ScoredSample,
    Variant,
    json_safe,
)
from condambig_tasks.condambigqa.loader import ASSETS, Release, load_questions
from condambig_tasks.condambigqa.parser import parse_response
from condambig_tasks.condambigqa.prompts import PromptOptions, build_prompt
from condambig_tasks.condambigqa.records import CondAmbigQuestion, Setting
from condambig_tasks.condambigqa.scoring import QuestionScore, plan_judgements, score_question

if TYPE_CHECKING:
    from condambig_tasks.uncertainty import CorpusStatistics

logger = logging.getLogger("condambig.condambigqa")

# "judge": maximise the per-setting weighted judge/citation score (the paper's rule);
# "exact": match on citation score, then answer token F1 (the rule used without a judge)
Matching = Literal["judge", "exact"]
DEFAULT_SETTING = Setting.MAIN
DEFAULT_RELEASE = Release.TWO_K
DEFAULT_MAX_CONDITIONS = 5  # the paper's "up to FIVE conditions"
MAX_CONDITIONS_RANGE = range(1, 11)  # the prompt spells 1..10 as words (prompts.NUMBER_WORDS)
DEFAULT_MATCHING: Matching = "judge"

# Generation budget: five conditions with detailed answers run to ~1,000 tokens; lm-eval's
# default of 256 would truncate them into parse failures.
MAX_GENERATION_TOKENS: Mapping[Setting, int] = {
    Setting.MAIN: 1536,
    Setting.GOLD_CONDITIONS: 1536,
    Setting.NO_CONDITIONS: 1024,
    Setting.CLOSED_BOOK: 512,
    Setting.CLOSED_BOOK_CONDITIONS: 1024,
}

# metrics that exist only in some settings
# Judge matching judges every (generated, gold) pair; only the first
# MAX_JUDGED_PAIRS_PER_CONDITION * max_conditions generated pairs are judged (10 by default),
# the rest stay unmatched (counted in pairs_not_judged and in the count penalty).
MAX_JUDGED_PAIRS_PER_CONDITION = 2
_CITATION_METRICS = ("citation_score", "balanced_citation", "out_of_range_citations",
                     "duplicate_citations")
_MAIN_ONLY_METRICS = ("combined_score", "balanced_condition")


@dataclass(frozen=True)
class CondAmbigQAOptions:
    """A run's options; allowed values are the types' (:mod:`condambig_tasks.options`)."""

    setting: Setting = field(default=DEFAULT_SETTING, metadata={
        "help": "the paper's experimental setting (one lm-eval task each)"})
    release: Release = field(default=DEFAULT_RELEASE, metadata={
        "help": "2k (2,000 questions) or 200 (the original release); a local "
                "CONDAMBIG_DATA_DIR/condambigqa/ folder takes precedence"})
    max_conditions: int = field(default=DEFAULT_MAX_CONDITIONS, metadata={
        "help": f"the N in 'up to N conditions' of the prompt ({MAX_CONDITIONS_RANGE.start}.."
                f"{MAX_CONDITIONS_RANGE.stop - 1})"})
    matching: Matching = field(default=DEFAULT_MATCHING, metadata={
        "help": "judge: the paper's weighted matching; exact: citations, then answer token "
                "F1 (always used without a judge)"})
    # "condambig" (default): this project's rule; "deepeval": DeepEval's G-Eval rule, the
    # paper's judge (see condambig_metrics.judge.scoring)
    judge_weighting: JudgeWeighting = field(default=DEFAULT_JUDGE_WEIGHTING, metadata={
        "help": "how judge scores are weighted by token probabilities: condambig (the "
                "expectation over the 0-10 alternatives at the score token) or deepeval "
                "(DeepEval's G-Eval rule, as in the paper)"})
    hub_revision: str | None = field(default=None, metadata={
        "help": "Hugging Face commit sha to pin the dataset (default: the revision in "
                "loader.HUB_SOURCES)"})

    def __post_init__(self) -> None:
        # the one range a type cannot say
        if self.max_conditions not in MAX_CONDITIONS_RANGE:
            raise ValueError(f"max_conditions must be {MAX_CONDITIONS_RANGE.start}.."
                             f"{MAX_CONDITIONS_RANGE.stop - 1}, got {self.max_conditions}")

    @property
    def prompt_options(self) -> PromptOptions:
        return PromptOptions(max_conditions=self.max_conditions)


# the paper's judge: gpt-4o-mini through DeepEval's G-Eval (Li et al.; innovation64/
# CondAmbigQA, experiment_code/core/models.py)
PAPER_JUDGE = "gpt-4o-mini"

# questions per release (Li et al.; the 200-question release is the original one)
RELEASE_SIZES = {Release.TWO_K: 2000, Release.ORIGINAL: 200}


def _lean_load(options: CondAmbigQAOptions,
               seen: Callable[[CondAmbigQuestion], None]) -> list[CondAmbigQuestion]:
    """Judge-free scoring reads a question's gold and how many fragments it has: each
    question is given whole to ``seen`` (the provenance digest) and kept without its
    fragments' text (1.5 GB at 100,000 questions)."""
    def keep(question: CondAmbigQuestion) -> CondAmbigQuestion:
        seen(question)
        return question.without_fragment_text()

    return load_questions(options.release, options.hub_revision, keep)


class CondAmbigQA(Benchmark[CondAmbigQAOptions, CondAmbigQuestion]):
    """CondAmbigQA (Li et al.): conditions, answers and citations for ambiguous questions."""

    name = "condambigqa"
    title = "CondAmbigQA"
    catalogue = Catalogue(
        paper=Paper("CondAmbigQA: A Benchmark and Dataset for Conditional Ambiguous Question "
                    "Answering", ("Zongxi Li", "Yang Li", "Haoran Xie", "S. Joe Qin"), 2025,
                    arxiv="2502.01523"),
        description=(
            "Ambiguous questions from AmbigNQ, each with 20 retrieved Wikipedia fragments: the "
            "model lists up to five conditions (interpretations), the answer under each and the "
            "fragments that support it. Conditions and answers are scored by an LLM judge "
            "(G-Eval), citations by eq. 1, and the authors' combined score balances them against "
            "the number of pairs."),
        tags=("ambiguity", "question-answering", "retrieval-augmented-generation", "citations",
              "llm-judge"),
        category="Reasoning",
        assets=ASSETS,
        data_folders=("condambigqa",),
    )
    version = "4-A"
    variants = (
        Variant("condambigqa", "the main setting: conditions, answers and citations from 20 "
                "fragments (Table 2)", {"setting": "main"}),
        Variant("condambigqa_gold_conditions", "answers and citations for the given gold "
                "conditions (Fig. 4)", {"setting": "gold_conditions"}),
        Variant("condambigqa_no_conditions", "answers and citations without conditions, "
                "standard RAG (Fig. 4)", {"setting": "no_conditions"}),
        Variant("condambigqa_closed_book", "answers from the question alone (Table 3)",
                {"setting": "closed_book"}),
        Variant("condambigqa_closed_book_conditions", "conditions and answers from the "
                "question alone", {"setting": "closed_book_conditions"}),
        Variant("condambigqa_paper", "the main setting as Li et al. ran it: sampled at "
                "temperature 0.7 with 1,024 tokens, judged by gpt-4o-mini with DeepEval's "
                "weighting (innovation64/CondAmbigQA, experiment_code/core/models.py)",
                {"setting": "main", "judge_weighting": "deepeval"}, temperature=0.7,
                max_tokens=1024, judge_model=PAPER_JUDGE),
    )
    group = "condambigqa_all"
    suite_member = "condambigqa"
    options_type = CondAmbigQAOptions
    paper_judge = PAPER_JUDGE
    prediction_files = PredictionFiles(lean_load=_lean_load)
    # Table 2 ranks on Combined; Fig. 4's answer scores (gold conditions, no conditions) and
    # Table 3's closed-book column are balanced_answer; without a judge only the citation
    # score is judge-free
    headline_metrics = ("combined_score", "balanced_answer", "citation_score")
    metric_specs = (
        MetricSpec("combined_score", "the authors' balanced score of condition, answer, "
                   "citation and pair count (main setting; Table 2 Combined)", judge=True, plot=True),
        MetricSpec("balanced_condition", "balanced part clip(condition*F) of the combined "
                   "score (main setting; Table 2 Condition Score)", judge=True, plot=True),
        MetricSpec("balanced_answer", "main setting: balanced part clip(answer*F) of the "
                   "combined score (Table 2 Answer Score); gold_conditions / no_conditions: "
                   "the authors' figure value clip(a*F) with condition 0 (Fig. 4 Answer "
                   "Score); closed-book settings: the authors' clip(a*(0.6a + "
                   "0.4*quantity)), a the mean over every generated answer (unmatched = 0) "
                   "(Table 3 Closed-book)", judge=True, plot=True),
        MetricSpec("balanced_citation", "balanced part clip(citation*boost*F) of the "
                   "combined score (main setting; Table 2 Citation Score); gold_conditions / "
                   "no_conditions: the authors' figure value (Fig. 4 Citation Score)",
                   judge=True, plot=True),
        MetricSpec("condition_score", "judged condition correctness of the matched pairs "
                   "(settings that generate conditions)", judge=True),
        MetricSpec("answer_score", "judged answer correctness of the matched pairs", judge=True),
        MetricSpec("citation_score", "eq. 1: cited gold fragments / cited entries (invalid "
                   "ones included), per matched pair"),
        MetricSpec("judge_failed", "questions whose judgements failed (left out of the judge "
                   "means)", SUM, higher_is_better=None, judge=True),
        MetricSpec("judge_weighted_rate", "share of successful judgements that were "
                   "probability-weighted (the rest are the parsed integer)", CORPUS,
                   higher_is_better=None, judge=True),
        MetricSpec("answer_count", "generated pairs per question", higher_is_better=None,
                   count=True),
        MetricSpec("count_difference", "generated minus gold pairs per question (signed: "
                   "negative = too few)", higher_is_better=None, count=True),
        MetricSpec("count_error", "|generated - gold| pairs per question (the absolute count "
                   "error)", higher_is_better=False, count=True),
        MetricSpec("parse_rate", "share of outputs that parse into pairs"),
        MetricSpec("out_of_range_citations", "cited entries naming no existing fragment "
                   "(counted as wrong in eq. 1)", SUM, higher_is_better=False),
        MetricSpec("duplicate_citations", "citations repeated within a pair (merged)", SUM,
                   higher_is_better=False),
        MetricSpec("pairs_not_judged", "generated pairs past the judged-pairs cap "
                   "(2 x max_conditions), left unmatched", SUM, higher_is_better=False,
                   judge=True),
        MetricSpec("outputs_truncated", "outputs longer than the parsing cap, cut before "
                   "parsing", SUM, higher_is_better=False),
    )

    def load(self, options: CondAmbigQAOptions) -> list[CondAmbigQuestion]:
        return load_questions(options.release, options.hub_revision)

    def prompt(self, item: CondAmbigQuestion, options: CondAmbigQAOptions) -> str:
        return build_prompt(item, options.setting, options.prompt_options)

    def target(self, item: CondAmbigQuestion, options: CondAmbigQAOptions) -> list[str]:
        return [prop.answer for prop in item.properties]

    def from_record(self, record: Mapping[str, Any]) -> CondAmbigQuestion:
        return CondAmbigQuestion.from_dict(dict(record))

    def expected_size(self, options: CondAmbigQAOptions) -> int:
        return RELEASE_SIZES[options.release]

    def max_tokens(self, options: CondAmbigQAOptions) -> int:
        return MAX_GENERATION_TOKENS[options.setting]

    # ------------------------------------------------------------------ scoring
    def score(self, item: CondAmbigQuestion, output: Any,
              options: CondAmbigQAOptions) -> ScoredSample:
        """Without a judge: exact matching, citation and count metrics only."""
        parsed = parse_response(output, options.setting, len(item.fragments))
        return scored_sample(score_question(options.setting, item, parsed, None), judged=False)

    async def score_batch(
        self, batch: Sequence[tuple[CondAmbigQuestion, str]], options: CondAmbigQAOptions,
        runtime: Runtime,
    ) -> list[ScoredSample]:
        """Every judge call of the batch at once; each judge input is the prompt the model saw."""
        engine = runtime.judge
        if engine is None:
            return [self.score(item, output, options) for item, output in batch]
        setting, matching = options.setting, options.matching
        parsed = [parse_response(output, setting, len(item.fragments)) for item, output in batch]
        cap = MAX_JUDGED_PAIRS_PER_CONDITION * options.max_conditions
        plans = [plan_judgements(setting, item, self.prompt(item, options), answer, matching,
                                 options.judge_weighting, cap)
                 for (item, _), answer in zip(batch, parsed, strict=True)]
        results = iter(await engine.judge_many(
            [request for plan in plans for request in plan.values()]))
        scores = [score_question(setting, item, answer, {key: next(results) for key in plan},
                                 matching, cap)
                  for (item, _), answer, plan in zip(batch, parsed, plans, strict=True)]
        failed = sum(score.judge_failed for score in scores)
        if failed:
            logger.warning("condambigqa: %d question(s) judge-failed, left out of the judge "
                           "metrics (see judge_failed)", failed)
        return [scored_sample(score, judged=True) for score in scores]

    def active_metrics(self, options: CondAmbigQAOptions, judged: bool) -> list[MetricSpec]:
        """Citations (balanced_citation too) only where fragments are shown, condition_score
        only where conditions are generated, combined_score and balanced_condition only in
        the main setting; balanced_answer in every setting."""
        setting = options.setting
        return [
            spec for spec in super().active_metrics(options, judged)
            if (spec.name not in _CITATION_METRICS or setting.cites)
            and (spec.name != "condition_score" or setting.generates_conditions)
            and (spec.name not in _MAIN_ONLY_METRICS or setting is Setting.MAIN)
        ]

    def corpus_values(self, samples: Sequence[ScoredSample], options: CondAmbigQAOptions,
                      judged: bool) -> dict[str, float | None]:
        """judge_weighted_rate: weighted judgements / successful judgements over the run."""
        total = sum(int(sample.details.get("judgements") or 0) for sample in samples)
        weighted = sum(int(sample.details.get("weighted_judgements") or 0)
                       for sample in samples)
        return {"judge_weighted_rate": weighted / total if total else None}

    def corpus_statistics(self, samples: Sequence[ScoredSample], options: CondAmbigQAOptions,
                          judged: bool) -> CorpusStatistics:
        """judge_weighted_rate from the totals of judgements and weighted judgements."""
        from condambig_tasks.uncertainty import CorpusStatistics

        rows = [[int(sample.details.get("judgements") or 0),
                 int(sample.details.get("weighted_judgements") or 0)] for sample in samples]
        return CorpusStatistics(("judgements", "weighted"), rows, _weighted_rate)

    def null_reasons(self, samples: Sequence[ScoredSample], options: CondAmbigQAOptions,
                     judged: bool, summary: Mapping[str, float | None]) -> dict[str, str]:
        reasons = super().null_reasons(samples, options, judged, summary)
        if "judge_weighted_rate" in reasons and samples:
            reasons["judge_weighted_rate"] = "no successful judgement in the run"
        return reasons

    def run_notes(self, options: CondAmbigQAOptions, judged: bool) -> list[str]:
        if judged:
            return []
        skipped = [spec.name for spec in self.active_metrics(options, judged=True)
                   if spec.judge and spec.name not in ("judge_failed", "judge_weighted_rate",
                                                      "pairs_not_judged")]
        listed = (", ".join(skipped[:-1]) + " and " + skipped[-1] if len(skipped) > 1
                  else skipped[0])
        return [
            f"condambigqa ({options.setting.value}): no judge configured, so {listed} "
            f"{'are' if len(skipped) > 1 else 'is'} skipped and pairs are matched on "
            f"citations, then answer token F1. Set {settings.JUDGE_MODEL_VARIABLE} (and "
            f"{settings.JUDGE_BASE_URL_VARIABLE} for a vLLM/compatible server) or --metadata "
            "'{\"judge_model\": ...}' (lm-eval), --judge-model (condambig-score) or "
            "--model-role grader=<model> (Inspect) to enable them."
        ]


def scored_sample(score: QuestionScore, judged: bool) -> ScoredSample:
    """A question's score as per-sample numbers (None: not applicable or not judged)."""
    return ScoredSample(
        id=score.id,
        values={
            "condition_score": score.condition,
            "answer_score": score.answer,
            "combined_score": score.combined,
            "balanced_condition": score.balanced_condition,
            "balanced_answer": score.balanced_answer,
            "balanced_citation": score.balanced_citation,
            "judge_failed": float(score.judge_failed) if judged else None,
            "citation_score": score.citation,
            "answer_count": float(score.answer_count),
            "count_difference": float(score.count_difference),
            "count_error": float(abs(score.count_difference)),
            "parse_rate": float(score.parsed),
            "out_of_range_citations": float(score.out_of_range_citations),
            "duplicate_citations": float(score.duplicate_citations),
            "pairs_not_judged": float(score.pairs_not_judged) if judged else None,
            "outputs_truncated": float(score.output_truncated),
        },
        details=json_safe(score.to_dict()),
        explanation=score.explanation(),
    )


def _weighted_rate(totals: Mapping[str, Any]) -> dict[str, Any]:
    import numpy as np

    total = totals["judgements"]
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"judge_weighted_rate": np.where(total > 0, totals["weighted"] / total, np.nan)}
