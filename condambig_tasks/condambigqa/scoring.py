"""Score CondAmbigQA outputs: plan judge calls, match pairs to gold, per-question and corpus.

One code path for every front end (``condambig-score``, lm-eval, Inspect), so the same raw
outputs get the same numbers everywhere. With a judge, matching maximises the per-setting
weighted sum of condition, answer and citation scores (BENCHMARKS.md §1); without one, it
matches on citation score, then answer token F1, and the judge metrics are absent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from statistics import mean

from condambig_metrics.condambigqa import (
    CombinedInputs,
    MatchWeights,
    citation_score,
    combined_score,
    greedy_match,
)
from condambig_metrics.judge import JudgeCriterion, JudgeEngine, JudgeRequest, JudgeResult
from condambig_metrics.text import token_f1
from condambig_tasks.condambigqa.parser import GeneratedPair, ParsedResponse, parse_response
from condambig_tasks.condambigqa.records import CondAmbigQuestion, Setting

CONDITION_CORRECTNESS = JudgeCriterion(
    name="Condition Correctness",
    criteria="Determine whether the actual condition is factually correct based on the "
    "expected condition.",
    evaluation_steps=(
        "Check whether the facts in 'actual condition' contradict any facts in 'expected "
        "condition'.",
        "Heavily penalise omission of critical details in the condition.",
        "Ensure that the condition is clear and unambiguous.",
    ),
)
ANSWER_CORRECTNESS = JudgeCriterion(
    name="Answer Correctness",
    criteria="Determine whether the actual answer is factually correct based on the "
    "expected answers.",
    evaluation_steps=(
        "Check whether the facts in 'actual answer' contradict any facts in 'expected "
        "answers'.",
        "Heavily penalise omission of critical details in the answer.",
        "Ensure that the answer directly addresses the question without irrelevant "
        "information.",
    ),
)

MATCH_WEIGHTS: Mapping[Setting, MatchWeights] = {
    Setting.MAIN: MatchWeights(condition=0.3, answer=0.5, citation=0.2),
    Setting.GOLD_CONDITIONS: MatchWeights(answer=0.6, citation=0.4),
    Setting.NO_CONDITIONS: MatchWeights(answer=0.7, citation=0.3),
    # closed book: no citations; the main setting's 0.3/0.5 renormalised
    Setting.CLOSED_BOOK: MatchWeights(answer=1.0),
    Setting.CLOSED_BOOK_CONDITIONS: MatchWeights(condition=0.375, answer=0.625),
}

JUDGE_MATCHING = "judge"
EXACT_MATCHING = "citations_then_answer_f1"

JudgeKey = tuple[str, int, int]  # ("condition" | "answer", generated index, gold index)


@dataclass(frozen=True)
class QuestionScore:
    """Everything one question contributes; None means "not applicable / not judged"."""

    id: str
    parsed: bool
    gold_count: int
    answer_count: int
    count_difference: int
    citation: float | None
    condition: float | None
    answer: float | None
    combined: float | None
    judge_failed: bool
    matching: str
    matches: tuple[tuple[int, int], ...]
    out_of_range_citations: int
    duplicate_citations: int
    parse_error: str | None = None
    judge_errors: tuple[str, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict:
        return asdict(self)

    def explanation(self) -> str:
        if not self.parsed:
            return f"parse failure: {self.parse_error}"
        parts = [f"{self.answer_count} pair(s) for {self.gold_count} gold; matched "
                 f"{list(self.matches)} by {self.matching}"]
        for name in ("condition", "answer", "citation", "combined"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value:.3f}")
        if self.judge_failed:
            parts.append("judge failed: " + "; ".join(self.judge_errors[:3]))
        return "; ".join(parts)


def plan_judgements(
    setting: Setting, question: CondAmbigQuestion, prompt: str, parsed: ParsedResponse,
    matching: str = JUDGE_MATCHING,
) -> dict[JudgeKey, JudgeRequest]:
    """The judgements scoring needs: every (generated, gold) pair for judge matching, only
    the matched pairs for exact matching."""
    if matching == JUDGE_MATCHING:
        candidates = [(i, j) for i in range(len(parsed.pairs))
                      for j in range(len(question.properties))]
    else:
        candidates = _exact_matches(setting, parsed.pairs, question.properties)
    requests: dict[JudgeKey, JudgeRequest] = {}
    for i, j in candidates:
        pair, gold = parsed.pairs[i], question.properties[j]
        if setting.generates_conditions:
            requests[("condition", i, j)] = JudgeRequest(
                CONDITION_CORRECTNESS, prompt, pair.condition, gold.condition)
        requests[("answer", i, j)] = JudgeRequest(
            ANSWER_CORRECTNESS, prompt, pair.answer, gold.answer)
    return requests


def score_question(
    setting: Setting,
    question: CondAmbigQuestion,
    parsed: ParsedResponse,
    judgements: Mapping[JudgeKey, JudgeResult] | None,
    matching: str = JUDGE_MATCHING,
) -> QuestionScore:
    """Match and score one question. ``judgements=None`` means no judge is configured."""
    setting = Setting(setting)
    use_judge_matching = matching == JUDGE_MATCHING
    judged = judgements is not None
    pairs, gold = parsed.pairs, question.properties
    common = dict(
        id=question.id, parsed=parsed.parsed, gold_count=len(gold), answer_count=len(pairs),
        count_difference=len(pairs) - len(gold),
        out_of_range_citations=parsed.out_of_range_citations,
        duplicate_citations=parsed.duplicate_citations, parse_error=parsed.error,
    )
    zero_if_judged = 0.0 if judged else None
    if not pairs or not gold:  # no usable pair: 0 everywhere (not skipped, see README)
        return QuestionScore(
            **common,
            citation=0.0 if setting.cites else None,
            condition=zero_if_judged if setting.generates_conditions else None,
            answer=zero_if_judged,
            combined=zero_if_judged if setting is Setting.MAIN else None,
            judge_failed=False, matching=JUDGE_MATCHING if judged else EXACT_MATCHING,
            matches=(),
        )

    failures = sorted({r.error or "judge failed" for r in (judgements or {}).values() if r.failed})
    if judged and failures:
        # without every judgement the matching itself is unknown: exclude, never score 0
        matches = _exact_matches(setting, pairs, gold)
        citation = _mean_citation(setting, pairs, gold, matches)
        return QuestionScore(**common, citation=citation, condition=None, answer=None,
                             combined=None, judge_failed=True, matching=EXACT_MATCHING,
                             matches=tuple(matches), judge_errors=tuple(failures))

    if judged and use_judge_matching:
        weights = MATCH_WEIGHTS[setting]

        def objective(i: int, j: int) -> float:
            value = weights.answer * judgements[("answer", i, j)].score
            if setting.generates_conditions:
                value += weights.condition * judgements[("condition", i, j)].score
            if setting.cites:
                value += weights.citation * citation_score(pairs[i].citations, gold[j].fragments)
            return value

        matches = greedy_match(len(pairs), len(gold), objective)
    else:
        matches = _exact_matches(setting, pairs, gold)

    citation = _mean_citation(setting, pairs, gold, matches)
    condition = answer = combined = None
    if judged:
        answer = mean(judgements[("answer", i, j)].score for i, j in matches)
        if setting.generates_conditions:
            condition = mean(judgements[("condition", i, j)].score for i, j in matches)
        if setting is Setting.MAIN:
            combined = combined_score(CombinedInputs(
                condition=condition, answer=answer, citation=citation,
                gold_count=len(gold), generated_count=len(pairs),
                mean_citations_per_pair=mean(len(p.citations) for p in pairs),
            ))
    return QuestionScore(**common, citation=citation, condition=condition, answer=answer,
                         combined=combined, judge_failed=False,
                         matching=JUDGE_MATCHING if judged and use_judge_matching
                         else EXACT_MATCHING,
                         matches=tuple(matches))


def _exact_matches(setting: Setting, pairs: Sequence[GeneratedPair], gold) -> list:
    """Greedy matching on citation score, then answer token F1 (no judge needed)."""

    def objective(i: int, j: int) -> tuple[float, float]:
        cited = citation_score(pairs[i].citations, gold[j].fragments) if setting.cites else 0.0
        return cited, token_f1(pairs[i].answer, gold[j].answer)

    return greedy_match(len(pairs), len(gold), objective)


def _mean_citation(setting, pairs, gold, matches) -> float | None:
    if not setting.cites:
        return None
    if not matches:
        return 0.0
    return mean(citation_score(pairs[i].citations, gold[j].fragments) for i, j in matches)


# ---------------------------------------------------------------- whole runs


@dataclass(frozen=True)
class ScoringInput:
    question: CondAmbigQuestion
    prompt: str
    output: str


async def score_one_async(
    setting: Setting, item: ScoringInput, engine: JudgeEngine | None,
    matching: str = JUDGE_MATCHING,
) -> QuestionScore:
    """Parse, judge (when an engine is given) and score one output (Inspect's scorer)."""
    parsed = parse_response(item.output, setting, len(item.question.fragments))
    if engine is None:
        return score_question(setting, item.question, parsed, None)
    plan = plan_judgements(setting, item.question, item.prompt, parsed, matching)
    results = await engine.judge_many(list(plan.values()))
    return score_question(setting, item.question, parsed, dict(zip(plan, results, strict=True)), matching)


def score_all(
    setting: Setting, items: Sequence[ScoringInput], engine: JudgeEngine | None,
    matching: str = JUDGE_MATCHING,
) -> list[QuestionScore]:
    """All questions at once: every judge call of the run goes out concurrently."""
    setting = Setting(setting)
    parsed = [parse_response(it.output, setting, len(it.question.fragments)) for it in items]
    if engine is None:
        return [score_question(setting, it.question, p, None) for it, p in zip(items, parsed, strict=True)]
    plans = [plan_judgements(setting, it.question, it.prompt, p, matching)
             for it, p in zip(items, parsed, strict=True)]
    flat = [request for plan in plans for request in plan.values()]
    results = iter(engine.judge_many_sync(flat))
    scores = []
    for item, parse, plan in zip(items, parsed, plans, strict=True):
        judgements = {key: next(results) for key in plan}
        scores.append(score_question(setting, item.question, parse, judgements, matching))
    return scores


METRIC_FIELDS: Mapping[str, str] = {
    "condition_score": "condition",
    "answer_score": "answer",
    "citation_score": "citation",
    "combined_score": "combined",
    "answer_count": "answer_count",
    "count_difference": "count_difference",
}


def summarise(scores: Sequence[QuestionScore]) -> dict[str, float | int | str]:
    """Corpus metrics: means over questions (judge metrics over judged questions only)."""
    summary: dict[str, float | int | str] = {"questions": len(scores)}
    for metric, attribute in METRIC_FIELDS.items():
        values = [getattr(s, attribute) for s in scores if getattr(s, attribute) is not None]
        if values:
            summary[metric] = mean(values)
    summary["parse_rate"] = mean(float(s.parsed) for s in scores) if scores else 0.0
    summary["judge_failed"] = sum(s.judge_failed for s in scores)
    summary["out_of_range_citations"] = sum(s.out_of_range_citations for s in scores)
    summary["duplicate_citations"] = sum(s.duplicate_citations for s in scores)
    rules = sorted({s.matching for s in scores if not s.judge_failed})
    summary["matching"] = ",".join(rules) if rules else EXACT_MATCHING
    return summary
