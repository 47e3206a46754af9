"""An Inspect task's own scorer run on scripted outputs, in process (no model, no eval)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any


def scripted_scores(task: Any, outputs: Mapping[str, str]) -> list[Any]:
    """The task's scorer on each sample's output (``outputs`` by sample id), as Inspect's
    ``SampleScore``s in dataset order."""
    from inspect_ai.model import ModelName, ModelOutput
    from inspect_ai.scorer import SampleScore, Target
    from inspect_ai.solver import TaskState

    [scorer] = task.scorer
    scores = []
    for sample in task.dataset:
        state = TaskState(
            model=ModelName("test/scripted"), sample_id=sample.id, epoch=1, input=sample.input,
            messages=[], metadata=sample.metadata,
            output=ModelOutput.from_content("test/scripted", outputs[str(sample.id)]))
        score = asyncio.run(scorer(state, Target(sample.target)))
        scores.append(SampleScore(score=score, sample_id=sample.id))
    return scores
