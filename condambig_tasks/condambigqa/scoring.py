"""Score one CondAmbigQA output: plan its judge calls, match pairs to gold, score the question.

Pure helpers; ``CondAmbigQA.score_batch`` makes the judge calls. With a judge, matching
maximises the per-setting weighted sum of condition, answer and citation scores (Li et al.,
CondAmbigQA); without one, it matches on citation score, then answer token F1, and the judge
metrics are absent. The closed-book settings score each question by the authors'
closed-book rule (Table 3): every generated answer counts, unmatched ones as 0; the settings
with fragments but without generated conditions by the authors' figure rule (Fig. 4).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from statistics import mean

from condambig_metrics.condambigqa import (
    CombinedInputs,
    MatchWeights,
    balanced_parts,
    citation_score,
    closed_book_balanced_answer,
    figure_balanced_parts,
    greedy_match,
)
from condambig_metrics.judge import (
    DEFAULT_JUDGE_WEIGHTING,
    JudgeCriterion,
    JudgeRequest,
    JudgeResult,
)
from condambig_metrics.text import answer_tokens, f1_from_tokens
from condambig_tasks.condambigqa.parser import GeneratedPair, ParsedResponse
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
    # the balanced parts of ``combined`` (main setting, judged): Table 2's columns; with
    # gold conditions and without conditions balanced_answer / balanced_citation are the
    # authors' figure values (Fig. 4); in the closed-book settings balanced_answer is the
    # authors' closed-book value (Table 3)
    balanced_condition: float | None = None
    balanced_answer: float | None = None
    balanced_citation: float | None = None
    judgements: int = 0  # successful judgements made for this question
    weighted_judgements: int = 0  # of which probability-weighted
    pairs_not_judged: int = 0  # pairs past the judged-pairs cap (never matched)
    output_truncated: bool = False  # the output was cut before parsing

    def to_dict(self) -> dict:
        return asdict(self)

    def explanation(self) -> str:
        if not self.parsed:
            return f"parse failure: {self.parse_error}"
        parts = [f"{self.answer_count} pair(s) for {self.gold_count} gold; matched "
                 f"{list(self.matches)} by {self.matching}"]
        for name in ("condition", "answer", "citation", "combined", "balanced_condition",
                     "balanced_answer", "balanced_citation"):
            value = getattr(self, name)
            if value is not None:
                parts.append(f"{name}={value:.3f}")
        if self.judgements:
            parts.append(f"{self.weighted_judgements} of {self.judgements} judgement(s) "
                         "probability-weighted")
        if self.judge_failed:
            parts.append("judge failed: " + "; ".join(self.judge_errors[:3]))
        return "; ".join(parts)


def plan_judgements(
    setting: Setting, question: CondAmbigQuestion, prompt: str, parsed: ParsedResponse,
    matching: str = JUDGE_MATCHING, weighting: str = DEFAULT_JUDGE_WEIGHTING,
    max_judged_pairs: int | None = None,
) -> dict[JudgeKey, JudgeRequest]:
    """The judgements scoring needs: every (generated, gold) pair for judge matching — of the
    first ``max_judged_pairs`` generated pairs, so a flood of pairs cannot multiply the
    judge's cost — and only the matched pairs for exact matching; ``weighting`` is the
    judge's weighting rule."""
    if matching == JUDGE_MATCHING:
        candidates = [(i, j) for i in range(_judged_pair_count(parsed.pairs, max_judged_pairs))
                      for j in range(len(question.properties))]
    else:
        candidates = _exact_matches(setting, parsed.pairs, question.properties)
    requests: dict[JudgeKey, JudgeRequest] = {}
    for i, j in candidates:
        pair, gold = parsed.pairs[i], question.properties[j]
        if setting.generates_conditions:
            requests[("condition", i, j)] = JudgeRequest(
                CONDITION_CORRECTNESS, prompt, pair.condition, gold.condition, weighting)
        requests[("answer", i, j)] = JudgeRequest(
            ANSWER_CORRECTNESS, prompt, pair.answer, gold.answer, weighting)
    return requests


def score_question(
    setting: Setting,
    question: CondAmbigQuestion,
    parsed: ParsedResponse,
    judgements: Mapping[JudgeKey, JudgeResult] | None,
    matching: str = JUDGE_MATCHING,
    max_judged_pairs: int | None = None,
) -> QuestionScore:
    """Match and score one question. ``judgements=None`` means no judge is configured.

    With judge matching only the first ``max_judged_pairs`` pairs can be matched; the rest
    stay unmatched predictions (they count in ``answer_count`` and the count penalty)."""
    setting = Setting(setting)
    use_judge_matching = matching == JUDGE_MATCHING
    judged = judgements is not None
    pairs, gold = parsed.pairs, question.properties
    common = dict(
        id=question.id, parsed=parsed.parsed, gold_count=len(gold), answer_count=len(pairs),
        count_difference=len(pairs) - len(gold),
        out_of_range_citations=parsed.out_of_range_citations,
        duplicate_citations=parsed.duplicate_citations, parse_error=parsed.error,
        output_truncated=parsed.truncated,
    )
    succeeded = [r for r in (judgements or {}).values() if not r.failed]
    common.update(judgements=len(succeeded),
                  weighted_judgements=sum(r.weighted for r in succeeded))
    zero_if_judged = 0.0 if judged else None
    if not pairs or not gold:  # no usable pair: 0 everywhere (not skipped, see README)
        zero_if_main = zero_if_judged if setting is Setting.MAIN else None
        zero_if_cited = zero_if_judged if setting.cites else None
        return QuestionScore(
            **common,
            citation=0.0 if setting.cites else None,
            condition=zero_if_judged if setting.generates_conditions else None,
            answer=zero_if_judged,
            combined=zero_if_main, balanced_condition=zero_if_main,
            balanced_answer=zero_if_judged, balanced_citation=zero_if_cited,
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
                value += weights.citation * _pair_citation(pairs[i], gold[j])
            return value

        judged_pairs = _judged_pair_count(pairs, max_judged_pairs)
        common["pairs_not_judged"] = len(pairs) - judged_pairs
        matches = greedy_match(judged_pairs, len(gold), objective)
    else:
        matches = _exact_matches(setting, pairs, gold)

    citation = _mean_citation(setting, pairs, gold, matches)
    condition = answer = parts = None
    balanced_answer = balanced_citation = None
    if judged:
        answer = mean(judgements[("answer", i, j)].score for i, j in matches)
        if setting.generates_conditions:
            condition = mean(judgements[("condition", i, j)].score for i, j in matches)
        if setting is Setting.MAIN:
            parts = balanced_parts(CombinedInputs(
                condition=condition, answer=answer, citation=citation,
                gold_count=len(gold), generated_count=len(pairs),
                mean_citations_per_pair=mean(p.cited_entry_count for p in pairs),
            ))
            balanced_answer, balanced_citation = parts.answer, parts.citation
        elif setting.cites:
            figure = _figure_parts(setting, pairs, gold, matches, judgements, answer, citation)
            balanced_answer, balanced_citation = figure.answer, figure.citation
        else:
            balanced_answer = _closed_book_value(pairs, gold, matches, judgements)
    return QuestionScore(**common, citation=citation, condition=condition, answer=answer,
                         combined=parts.combined if parts else None,
                         balanced_condition=parts.condition if parts else None,
                         balanced_answer=balanced_answer,
                         balanced_citation=balanced_citation,
                         judge_failed=False,
                         matching=JUDGE_MATCHING if judged and use_judge_matching
                         else EXACT_MATCHING,
                         matches=tuple(matches))


def _closed_book_value(pairs, gold, matches, judgements) -> float:
    """The authors' closed-book value: each generated answer's judged score against its
    matched gold property, 0 for an answer left unmatched (more answers than gold, or past
    the judged-pairs cap), then :func:`closed_book_balanced_answer`."""
    matched = {i: judgements[("answer", i, j)].score for i, j in matches}
    return closed_book_balanced_answer([matched.get(i, 0.0) for i in range(len(pairs))],
                                       len(gold))


def _figure_parts(setting, pairs, gold, matches, judgements, answer, citation):
    """The authors' figure values (Fig. 4, ``comp_experiment_stats_viz.py``) of a setting
    with fragments and no generated conditions, from the inputs their figure code reads.

    Gold conditions (their ground-truth outputs): a and t are means over every generated
    pair, an unmatched one scoring 0 in both; k is the mean citation-list length as written;
    the expected count is the output's own pair count (no count penalty). Without conditions
    (their compare outputs): a and t are the matched pairs' means (``answer_score``,
    ``citation_score``), the count penalty compares with the gold count, and k is 0: the
    figure code looks for the citation lists under keys these outputs do not have, so no
    citation boost.
    """
    if setting is Setting.GOLD_CONDITIONS:
        matched = dict(matches)
        answers = [judgements[("answer", i, matched[i])].score if i in matched else 0.0
                   for i in range(len(pairs))]
        cited = [_pair_citation(pairs[i], gold[matched[i]]) if i in matched else 0.0
                 for i in range(len(pairs))]
        return figure_balanced_parts(mean(answers), mean(cited),
                                     mean(p.cited_entry_count for p in pairs),
                                     expected_count=len(pairs), generated_count=len(pairs))
    return figure_balanced_parts(answer, citation, 0.0, expected_count=len(gold),
                                 generated_count=len(pairs))


def _judged_pair_count(pairs: Sequence[GeneratedPair], cap: int | None) -> int:
    return len(pairs) if cap is None else min(len(pairs), cap)


def _exact_matches(setting: Setting, pairs: Sequence[GeneratedPair], gold) -> list:
    """Greedy matching on citation score, then answer token F1 (no judge needed); each
    answer normalised once, not once per pair it is compared in."""
    generated = [answer_tokens(pair.answer) for pair in pairs]
    expected = [answer_tokens(prop.answer) for prop in gold]

    def objective(i: int, j: int) -> tuple[float, float]:
        cited = _pair_citation(pairs[i], gold[j]) if setting.cites else 0.0
        return cited, f1_from_tokens(generated[i], expected[j])

    return greedy_match(len(pairs), len(gold), objective)


def _mean_citation(setting, pairs, gold, matches) -> float | None:
    if not setting.cites:
        return None
    if not matches:
        return 0.0
    return mean(_pair_citation(pairs[i], gold[j]) for i, j in matches)


def _pair_citation(pair: GeneratedPair, gold) -> float:
    """Eq. 1 for one generated pair against one gold property (invalid entries counted)."""
    return citation_score(pair.citations, gold.fragments, pair.invalid_citations)
