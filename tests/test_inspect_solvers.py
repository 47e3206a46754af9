"""The Inspect solvers of this package on a sample, without a model: HotpotQA-FLM's
``question_solver`` (a baseline's question in place of the model's) and the judged tasks'
``grader_guard`` setup step (no grader that can judge: one error before generation)."""

from __future__ import annotations

import asyncio

import pytest

from condambig.grader_preflight import GraderUnavailableError, grader_guard
from condambig.hotpot_flm import question_solver
from condambig.task_items import remember
from condambig_tasks import registry
from tests.conftest import FIXTURE_DATA


@pytest.fixture
def example(monkeypatch):
    """An annotated example of the fixture's test split, kept as a built task keeps it."""
    from condambig_tasks.hotpot_flm.loader import load_examples

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    example = next(e for e in load_examples("test") if e.human_question)
    [metadata] = remember("hotpot_flm", [registry.get("hotpot_flm").to_record(example)])
    return example, metadata


def _state(metadata=None):
    from inspect_ai.model import ModelName
    from inspect_ai.solver import TaskState

    return TaskState(model=ModelName("hf/none"), sample_id="s1", epoch=1, input="prompt",
                     messages=[], metadata=metadata or {})


async def _never(state, **kwargs):  # the model: a baseline never calls it
    raise AssertionError("generate was called")


@pytest.mark.parametrize("questioner, field", [("repeater", "question"),
                                               ("human", "human_question")])
def test_question_solver_puts_the_baselines_question_in_place_of_the_model(questioner, field,
                                                                           example):
    item, metadata = example
    state = asyncio.run(question_solver(questioner)(_state(metadata), _never))
    assert state.output.completion == getattr(item, field) != ""
    assert state.output.model == questioner


def test_question_solver_lets_the_model_ask():
    calls = []

    async def generate(state, **kwargs):
        calls.append(state)
        return state

    asyncio.run(question_solver("model")(_state(), generate))
    assert len(calls) == 1


def test_grader_guard_passes_a_judge_free_task_with_no_grader_bound():
    state = _state()
    assert asyncio.run(grader_guard("ambignq", False, None)(state, _never)) is state


def test_grader_guard_stops_a_judged_task_with_no_grader_before_generation():
    with pytest.raises(GraderUnavailableError, match="no grader role is bound"):
        asyncio.run(grader_guard("abg_coqa_clarification", True, None)(_state(), _never))


@pytest.mark.parametrize("build, said", [
    (lambda tasks: tasks.condambigqa(), "condambig/condambigqa: "),
    (lambda tasks: tasks.condambigqa_gold_conditions(), "condambig/condambigqa_gold_conditions: "),
])
def test_a_judged_task_with_no_usable_grader_is_named_as_the_user_runs_it(build, said,
                                                                          monkeypatch):
    """The one-line error names the Inspect task of the command line, not its dataset
    (``condambigqa_main``)."""
    import condambig._registry as tasks

    for key in ("OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    with pytest.raises(GraderUnavailableError) as raised:
        build(tasks)
    assert str(raised.value).startswith(said + "this task is judged by the `grader` model role")
