"""Per-question scoring: judge and exact matching, no-usable-pair rule, judge failures."""

from __future__ import annotations

import json

import pytest

from condambig_metrics.condambigqa import CombinedInputs, combined_score
from condambig_metrics.judge import JudgeResult
from condambig_tasks.benchmark import reported_values
from condambig_tasks.condambigqa.benchmark import CondAmbigQA, CondAmbigQAOptions, scored_sample
from condambig_tasks.condambigqa.parser import parse_response
from condambig_tasks.condambigqa.records import (
    CondAmbigQuestion,
    Fragment,
    GoldProperty,
    Setting,
)
from condambig_tasks.condambigqa.scoring import (
    EXACT_MATCHING,
    JUDGE_MATCHING,
    plan_judgements,
    score_question,
)

QUESTION = CondAmbigQuestion(
    id="q1", question="Who won?",
    fragments=tuple(Fragment(f"T{i}", f"text {i}") for i in range(1, 6)),
    properties=(
        GoldProperty("men's race", "Ben won", (1, 2)),
        GoldProperty("women's race", "Ana won", (3,)),
    ),
)


def _ok(score: float) -> JudgeResult:
    return JudgeResult(score=score, raw_score=score * 10, weighted=True, failed=False,
                       error=None, cached=False, reason="")


def _output(*pairs) -> str:
    return json.dumps({"conditions": [
        {"condition": c, "answer": a, "citations": [f"Fragment {n}" for n in cites]}
        for c, a, cites in pairs]})


def summarise(scores, judged: bool) -> dict:
    """Corpus metrics of the main setting, as every front end reports them."""
    samples = [scored_sample(score, judged) for score in scores]
    return reported_values(CondAmbigQA(), samples, CondAmbigQAOptions(), judged)


def _judgements(plan, table):
    return {key: _ok(table[key]) for key in plan}


def test_judge_matching_uses_the_main_weights():
    parsed = parse_response(_output(("women", "Ana", [3, 4]), ("men", "Ben", [1])),
                            Setting.MAIN, 5)
    plan = plan_judgements(Setting.MAIN, QUESTION, "PROMPT", parsed)
    assert len(plan) == 2 * 2 * 2  # condition + answer for every (generated, gold)
    assert all(r.input == "PROMPT" for r in plan.values())
    table = {
        ("condition", 0, 0): 0.2, ("answer", 0, 0): 0.1, ("condition", 0, 1): 0.9,
        ("answer", 0, 1): 0.8, ("condition", 1, 0): 0.7, ("answer", 1, 0): 0.6,
        ("condition", 1, 1): 0.1, ("answer", 1, 1): 0.1,
    }
    score = score_question(Setting.MAIN, QUESTION, parsed, _judgements(plan, table))
    # pair 0 vs gold 1: .3*.9 + .5*.8 + .2*(1/2) = .77 > vs gold 0 (.06+.05+0)
    assert score.matches == ((0, 1), (1, 0))
    assert score.condition == pytest.approx((0.9 + 0.7) / 2)
    assert score.answer == pytest.approx((0.8 + 0.6) / 2)
    assert score.citation == pytest.approx((0.5 + 1.0) / 2)
    expected = combined_score(CombinedInputs(0.8, 0.7, 0.75, 2, 2, 1.5))
    assert score.combined == pytest.approx(expected)
    assert score.matching == JUDGE_MATCHING and not score.judge_failed


def test_without_judge_matches_on_citations_then_answer_f1():
    parsed = parse_response(_output(("x", "Ana won", [5]), ("y", "Ben won", [5])),
                            Setting.MAIN, 5)
    score = score_question(Setting.MAIN, QUESTION, parsed, None)
    # both cite only fragment 5 (citation 0 everywhere): token F1 decides
    assert score.matches == ((0, 1), (1, 0))
    assert score.citation == 0.0
    assert score.condition is None and score.answer is None and score.combined is None
    assert score.matching == EXACT_MATCHING


def test_exact_matching_with_judge_only_judges_matched_pairs():
    parsed = parse_response(_output(("men", "Ben won", [1, 2])), Setting.MAIN, 5)
    plan = plan_judgements(Setting.MAIN, QUESTION, "P", parsed, matching="exact")
    assert set(plan) == {("condition", 0, 0), ("answer", 0, 0)}
    score = score_question(Setting.MAIN, QUESTION, parsed,
                           _judgements(plan, {k: 0.5 for k in plan}), matching="exact")
    assert score.answer == 0.5 and score.citation == 1.0 and score.matching == EXACT_MATCHING


def test_no_usable_pair_scores_zero_everywhere():
    parsed = parse_response("no json here", Setting.MAIN, 5)
    judged = score_question(Setting.MAIN, QUESTION, parsed, {})
    assert (judged.condition, judged.answer, judged.citation, judged.combined) == (0, 0, 0, 0)
    assert judged.count_difference == -2 and not judged.parsed
    unjudged = score_question(Setting.MAIN, QUESTION, parsed, None)
    assert unjudged.citation == 0.0 and unjudged.answer is None


def test_judge_failure_excludes_the_question_instead_of_scoring_zero():
    parsed = parse_response(_output(("men", "Ben", [1])), Setting.MAIN, 5)
    plan = plan_judgements(Setting.MAIN, QUESTION, "P", parsed)
    judgements = {key: _ok(0.9) for key in plan}
    judgements[("answer", 0, 1)] = JudgeResult.failure("HTTP 500 after 4 retries")
    failed = score_question(Setting.MAIN, QUESTION, parsed, judgements)
    assert failed.judge_failed and failed.answer is None and failed.combined is None
    assert failed.citation == 1.0
    good = score_question(Setting.MAIN, QUESTION, parsed, {k: _ok(0.4) for k in plan})
    summary = summarise([failed, good], judged=True)
    assert summary["answer_score"] == pytest.approx(0.4)  # the failed one left out
    assert summary["judge_failed"] == 1
    assert summary["citation_score"] == pytest.approx(1.0)


@pytest.mark.parametrize("setting, has_condition, cites", [
    (Setting.GOLD_CONDITIONS, False, True), (Setting.NO_CONDITIONS, False, True),
    (Setting.CLOSED_BOOK, False, False), (Setting.CLOSED_BOOK_CONDITIONS, True, False),
])
def test_settings_report_their_own_metrics(setting, has_condition, cites):
    parsed = parse_response(_output(("men", "Ben won", [1])), setting, 5)
    plan = plan_judgements(setting, QUESTION, "P", parsed)
    assert any(k[0] == "condition" for k in plan) == has_condition
    score = score_question(setting, QUESTION, parsed, {k: _ok(0.5) for k in plan})
    assert (score.condition is not None) == has_condition
    assert (score.citation is not None) == cites
    assert score.combined is None  # combined is the main setting's score


def test_summary_counts_parse_rate_and_citation_problems():
    good = score_question(Setting.MAIN, QUESTION, parse_response(
        json.dumps({"conditions": [{"condition": "c", "answer": "a",
                                     "citations": ["Fragment 1", "Fragment 9", "1"]}]}),
        Setting.MAIN, 5), None)
    bad = score_question(Setting.MAIN, QUESTION, parse_response("", Setting.MAIN, 5), None)
    summary = summarise([good, bad], judged=False)
    assert summary["parse_rate"] == 0.5
    assert summary["out_of_range_citations"] == 1 and summary["duplicate_citations"] == 1
    assert summary["answer_count"] == 0.5 and summary["count_difference"] == -1.5
    assert "answer_score" not in summary


def _result(score: float, weighted: bool) -> JudgeResult:
    return JudgeResult(score=score, raw_score=score * 10, weighted=weighted, failed=False,
                       error=None, cached=False, reason="")


def test_invalid_citations_k_and_balanced_parts_of_one_question():
    # pair 0 cites fragment 1 twice and fragment 9 (of 5: invalid); pair 1 cites fragment 3
    output = json.dumps({"conditions": [
        {"condition": "men", "answer": "Ben", "citations": ["Fragment 1", "Fragment 1",
                                                            "Fragment 9"]},
        {"condition": "women", "answer": "Ana", "citations": ["Fragment 3"]},
    ]})
    parsed = parse_response(output, Setting.MAIN, 5)
    plan = plan_judgements(Setting.MAIN, QUESTION, "P", parsed)
    score = score_question(Setting.MAIN, QUESTION, parsed, {k: _ok(0.5) for k in plan})
    # equal judgements: eq. 1 decides. Pair 0 vs gold 0 (1, 2): |{1}| / |{1, F9}| = .5
    # (1 while F9 was dropped); pair 1 vs gold 1 (3): 1 -> t = (.5 + 1) / 2 = .75
    assert score.matches == ((0, 0), (1, 1))
    assert score.citation == pytest.approx(0.75)
    assert (score.out_of_range_citations, score.duplicate_citations) == (1, 1)
    # k = mean of the lists' lengths (3, 1) = 2, not of the distinct valid numbers (1, 1)
    # q_cit = .75 * (1 + .3*2) = 1.2; quality = .5*.5 + .5*1.2 = .85; quantity 1
    # F = .6*.85 + .4 = .91 -> parts .5*.91 = .455, .455, clip(1.2*.91 = 1.092) = 1
    assert score.balanced_condition == pytest.approx(0.455)
    assert score.balanced_answer == pytest.approx(0.455)
    assert score.balanced_citation == 1.0
    assert score.combined == pytest.approx((0.455 + 0.455 + 1) / 3)
    values = scored_sample(score, judged=True).values
    assert values["balanced_answer"] == score.balanced_answer
    assert values["combined_score"] == score.combined


def test_balanced_parts_are_means_of_per_question_parts_and_main_only():
    one = parse_response(_output(("men", "Ben", [1])), Setting.MAIN, 5)
    plan = plan_judgements(Setting.MAIN, QUESTION, "P", one)
    single = score_question(Setting.MAIN, QUESTION, one, {k: _ok(1.0) for k in plan})
    # c=a=1, t=1, k=1, one pair for 2 gold: quantity .1; q_cit = 1.3,
    # quality = .5 + .65 = 1.15, F = .69 + .04 = .73 -> parts .73, .73, clip(.949)
    assert (single.balanced_condition, single.balanced_answer,
            single.balanced_citation) == pytest.approx((0.73, 0.73, 0.949))
    none = score_question(Setting.MAIN, QUESTION, parse_response("", Setting.MAIN, 5), {})
    assert (none.balanced_condition, none.balanced_answer, none.balanced_citation) == (0, 0, 0)
    summary = summarise([single, none], judged=True)
    assert summary["balanced_condition"] == pytest.approx(0.73 / 2)
    assert summary["balanced_citation"] == pytest.approx(0.949 / 2)
    assert summary["combined_score"] == pytest.approx((0.73 + 0.73 + 0.949) / 3 / 2)
    gold = parse_response(_output(("men", "Ben", [1])), Setting.GOLD_CONDITIONS, 5)
    options = CondAmbigQAOptions(setting=Setting.GOLD_CONDITIONS)
    names = [spec.name for spec in CondAmbigQA().active_metrics(options, judged=True)]
    assert not {"balanced_condition", "combined_score"} & set(names)
    plan = plan_judgements(Setting.GOLD_CONDITIONS, QUESTION, "P", gold)
    scored = score_question(Setting.GOLD_CONDITIONS, QUESTION, gold,
                            {k: _ok(0.5) for k in plan})
    assert scored.balanced_condition is None and scored.combined is None


def test_judge_weighted_rate_is_the_share_of_weighted_judgements():
    parsed = parse_response(_output(("men", "Ben", [1])), Setting.MAIN, 5)
    plan = plan_judgements(Setting.MAIN, QUESTION, "P", parsed)  # 4 judgements
    keys = sorted(plan)
    first = score_question(Setting.MAIN, QUESTION, parsed,
                           {k: _result(0.5, weighted=k == keys[0]) for k in keys})
    second = score_question(Setting.MAIN, QUESTION, parsed, {k: _result(0.5, True) for k in keys})
    assert (first.judgements, first.weighted_judgements) == (4, 1)
    failed = {k: _result(0.5, True) for k in keys}
    failed[keys[1]] = JudgeResult.failure("HTTP 500")
    third = score_question(Setting.MAIN, QUESTION, parsed, failed)
    # successful judgements only: (1 + 4 + 3) weighted of (4 + 4 + 3)
    assert (third.judgements, third.weighted_judgements) == (3, 3)
    assert summarise([first, second, third], judged=True)["judge_weighted_rate"] == \
        pytest.approx(8 / 11)
    assert "judge_weighted_rate" not in summarise([first], judged=False)


def test_judge_weighting_option_reaches_every_judge_request():
    parsed = parse_response(_output(("men", "Ben", [1])), Setting.MAIN, 5)
    assert {r.weighting for r in plan_judgements(Setting.MAIN, QUESTION, "P", parsed).values()} \
        == {"condambig"}
    plan = plan_judgements(Setting.MAIN, QUESTION, "P", parsed, weighting="deepeval")
    assert {r.weighting for r in plan.values()} == {"deepeval"}
    assert CondAmbigQA().options({"judge_weighting": "deepeval"}).judge_weighting == "deepeval"
    with pytest.raises(Exception, match="judge_weighting"):
        CondAmbigQA().options({"judge_weighting": "geval"})


def _closed_book_output(*answers) -> str:
    return json.dumps({"answers": [{"answer": a} for a in answers]})


@pytest.mark.parametrize("setting", [Setting.CLOSED_BOOK, Setting.CLOSED_BOOK_CONDITIONS])
def test_closed_book_balanced_answer_counts_every_generated_answer(setting):
    """Table 3's closed-book value: each answer in turn takes the best unused gold property,
    the third (no gold left) scores 0, a = (0.9 + 0.6 + 0) / 3 = 0.5; d = 1 of n = 2 gives
    p = min(0.15 * 0.5, 0.075), f = 1, quantity 0.925 -> 0.5 * (0.3 + 0.37)."""
    parsed = parse_response(json.dumps({"answers": [
        {"condition": "c", "answer": a} for a in ("Ana", "Ben", "Cy")]}), setting, 5)
    plan = plan_judgements(setting, QUESTION, "P", parsed)
    answers = {(0, 0): 0.2, (0, 1): 0.9, (1, 0): 0.6, (1, 1): 0.1, (2, 0): 0.8, (2, 1): 0.8}
    table = {key: answers[key[1:]] if key[0] == "answer" else 1.0 for key in plan}
    score = score_question(setting, QUESTION, parsed, _judgements(plan, table))
    assert score.matches == ((0, 1), (1, 0))
    assert score.answer == pytest.approx(0.75)  # the mean over matched pairs, kept
    assert score.balanced_answer == pytest.approx(0.5 * (0.3 + 0.4 * 0.925))
    assert score.combined is None and score.balanced_condition is None
    options = CondAmbigQAOptions(setting=setting)
    summary = reported_values(CondAmbigQA(), [scored_sample(score, True)], options, True)
    assert list(summary)[0] == "balanced_answer"  # the headline
    assert summary["balanced_answer"] == pytest.approx(score.balanced_answer)
    assert summary["answer_score"] == pytest.approx(0.75)


def test_closed_book_answer_without_a_good_gold_still_uses_one_up():
    """The best starts at minus infinity: a wrong first answer takes a gold property (the
    first on ties), so a right second answer can only take the other one."""
    parsed = parse_response(_closed_book_output("Zed", "Ben"), Setting.CLOSED_BOOK, 5)
    plan = plan_judgements(Setting.CLOSED_BOOK, QUESTION, "P", parsed)
    answers = {(0, 0): 0.0, (0, 1): 0.0, (1, 0): 1.0, (1, 1): 0.0}
    score = score_question(Setting.CLOSED_BOOK, QUESTION, parsed,
                           _judgements(plan, {key: answers[key[1:]] for key in plan}))
    assert score.matches == ((0, 0), (1, 1))
    assert score.balanced_answer == 0.0


def test_closed_book_balanced_answer_zero_without_answers_and_absent_without_judge():
    parsed = parse_response("", Setting.CLOSED_BOOK, 5)
    assert score_question(Setting.CLOSED_BOOK, QUESTION, parsed, {}).balanced_answer == 0.0
    unjudged = score_question(Setting.CLOSED_BOOK, QUESTION,
                              parse_response(_closed_book_output("Ben"), Setting.CLOSED_BOOK, 5),
                              None)
    assert unjudged.balanced_answer is None
    for setting in (Setting.GOLD_CONDITIONS, Setting.NO_CONDITIONS):
        names = [s.name for s in CondAmbigQA().active_metrics(
            CondAmbigQAOptions(setting=setting), judged=True)]
        assert "balanced_answer" in names and "answer_score" in names  # Fig. 4's and raw
