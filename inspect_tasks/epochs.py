"""Epoch reduction that keeps every epoch's judge accounting.

Inspect's reducers average a sample's values over its epochs but keep the first epoch's
``Score.metadata``, where the judge's calls are: failed judgements of a later epoch would
not be counted, and the judged metrics would be a mean over the judgements that happened
to succeed. :func:`judged_mean` is Inspect's ``mean`` for the values, with every epoch's
``judge_calls`` in the metadata and the failure counts summed over the epochs; condambig
tasks reduce with it unless ``--epochs-reducer`` names another reducer (then the task-end
hook counts the failures from the logged samples: :mod:`condambig.null_reasons`).
"""

from __future__ import annotations

from inspect_ai.scorer import Score, ScoreReducer, mean_score, score_reducer

from condambig_tasks.benchmark import finite_number

JUDGE_CALLS = "judge_calls"
FAILURE_COUNT = "judge_failed"  # a sample's count of failed judgements: summed


@score_reducer(name="condambig/judged_mean")
def judged_mean() -> ScoreReducer:
    """Inspect's ``mean`` over epochs, keeping every epoch's judge calls and failures."""
    mean = mean_score()

    def reduce(scores: list[Score]) -> Score:
        if len(scores) == 1:  # one epoch: the score as it is (Inspect's mean of one value)
            return scores[0]
        reduced = mean(scores)
        metadata = dict(reduced.metadata or {})
        calls = [call for score in scores
                 for call in (score.metadata or {}).get(JUDGE_CALLS) or []]
        if calls:
            metadata[JUDGE_CALLS] = calls
        value = reduced.value
        if isinstance(value, dict):
            value = dict(value)
            counts = [score.value[FAILURE_COUNT] for score in scores
                      if isinstance(score.value, dict)
                      and finite_number(score.value.get(FAILURE_COUNT)) is not None]
            if counts:
                value[FAILURE_COUNT] = float(sum(counts))
        return Score(value=value, answer=reduced.answer, explanation=reduced.explanation,
                     reason=reduced.reason, metadata=metadata)

    return reduce
