"""An Inspect run's epochs combined as the run combined them, for ``--from-log``.

Inspect scores every epoch of a sample, reduces the sample's scores with the task's epoch
reducer, and computes the metrics on the reduced scores. ``condambig-score --from-log``
scores each epoch's logged outputs, turns them into Inspect ``Score``s as the task's scorer
does (:func:`condambig._factory.sample_score`), and reduces them with the reducer the log
names, built from Inspect's own public reducers. A reducer not built here (``pass_at_k``,
``at_least_k``, another package's) is refused in one line naming the ``inspect score``
command that rescores the log with it: the numbers are never those of epoch 1 alone.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from condambig_tasks.benchmark import ScoredSample
from condambig_tasks.errors import PredictionFileError

DEFAULT_REDUCER = "mean"  # Inspect's reducer for a task that names none


class EpochReducerError(PredictionFileError):
    """A run of several epochs whose reduction cannot be reproduced here."""


def reducer(names: Sequence[str], source: str, rescore: str) -> Any:
    """The one reducer the run used (``names``: the log's ``config.epochs_reducer``)."""
    from inspect_ai.scorer import max_score, mean_score, median_score, mode_score

    from condambig.epochs import judged_mean

    # reducer name as Inspect logs it -> its public constructor
    known = {"mean": mean_score, "median": median_score, "mode": mode_score, "max": max_score,
             "condambig/judged_mean": judged_mean}
    names = list(names) or [DEFAULT_REDUCER]
    if len(names) != 1 or names[0] not in known:
        raise EpochReducerError(
            f"{source}: the run reduced its epochs with {', '.join(names)}; condambig-score "
            f"reproduces one of {', '.join(known)} only. Rescore the log with Inspect: "
            f"{rescore}")
    return known[names[0]]()


def reduce_epochs(reduce: Any, epochs: Sequence[Sequence[ScoredSample]],
                  outputs: Sequence[Mapping[str, str]],
                  judge_metrics: set[str]) -> list[ScoredSample]:
    """Each sample's epochs (``epochs[e]``: epoch e+1's scored samples; ``outputs[e]``: id ->
    that epoch's output) reduced to one sample; a sample missing from an epoch (it ended
    in an error there) is reduced over the epochs it has."""
    from condambig._factory import sample_score
    from condambig.run_summary import scored_samples

    by_epoch = [{sample.id: sample for sample in samples} for samples in epochs]
    order = dict.fromkeys(sample.id for samples in epochs for sample in samples)
    reduced = []
    for key in order:
        scores = [sample_score(found[key], outputs[epoch][key], [], judge_metrics)
                  for epoch, found in enumerate(by_epoch) if key in found]
        score = reduce(scores)
        reduced.append((key, score.value, score.metadata))
    return scored_samples(reduced)  # as the task's metric reads the reduced scores
