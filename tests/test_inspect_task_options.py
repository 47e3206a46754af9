"""``-T`` options scoped to one benchmark (``-T 'abg_coqa={split: val}'``), as lm-eval's
``--metadata`` scopes them: the real ``inspect eval-set`` over several benchmarks' tasks, and
the rules in process (inspect_tasks/task_options.py)."""

from __future__ import annotations

import glob
import logging
from pathlib import Path

import pytest

from condambig_tasks.errors import ConfigurationError
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.judge_server import JudgeServer

TASKS = ["condambig/abg_coqa_detection", "condambig/conditionalqa"]
SETTINGS = ["condambig/condambigqa_closed_book", "condambig/condambigqa_gold_conditions"]


@pytest.fixture(scope="module")
def subject():
    with JudgeServer({"default": {"reply": "AMBIGUOUS"}}) as server:
        yield server


def _eval_set(tmp_path: Path, subject: JudgeServer, *task_args: str,
              tasks: list[str] = TASKS):
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                         SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k")
    command = [executable("inspect"), "eval-set", *tasks, *task_args,
               "--model", "openai-api/subject/m", "--log-dir", str(tmp_path / "logs"),
               "--limit", "2", "--display", "plain"]
    return warm_start.run(command, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=600)


@pytest.fixture(scope="module")
def eval_set_logs(tmp_path_factory, subject) -> dict:
    """Task -> its log, of one eval set that both tests below read: TASKS with an option
    scoped to abg_coqa, and two CondAmbigQA settings (judge-free: ``-T judge=false``, an
    option the other tasks do not use, only warned about)."""
    from inspect_ai.log import read_eval_log

    folder = tmp_path_factory.mktemp("task_options")
    completed = _eval_set(folder, subject, "-T", "abg_coqa={split: val}", "-T", "judge=false",
                          tasks=[*TASKS, *SETTINGS])
    assert completed.returncode == 0, completed.stderr[-3000:]
    return {log.eval.task.removeprefix("condambig/"): log for log in map(
        read_eval_log, glob.glob(f"{folder}/logs/*.eval"))}


@pytest.mark.e2e
def test_an_option_scoped_to_one_benchmark_reaches_its_tasks_only(eval_set_logs):
    logs = eval_set_logs
    assert sorted(logs) == sorted(task.removeprefix("condambig/") for task in TASKS + SETTINGS)
    assert all(log.status == "success" for log in logs.values())
    assert logs["abg_coqa_detection"].eval.metadata["options"]["split"] == "val"
    assert logs["conditionalqa"].eval.metadata["options"]["split"] == "dev"  # its default


@pytest.mark.e2e
def test_a_plain_option_another_task_rejects_names_the_scoped_form(tmp_path, subject):
    before = subject.stats()["requests"]
    completed = _eval_set(tmp_path, subject, "-T", "split=val")
    assert completed.returncode != 0
    lines = [line for line in completed.stderr.splitlines() if line.startswith("condambig:")]
    assert len(lines) == 1, completed.stderr[-3000:]
    assert "conditionalqa option split must be one of dev, train; got 'val'" in lines[0]
    assert "scope it: -T 'abg_coqa={split: val}'" in lines[0]
    assert "Traceback" not in completed.stderr
    assert subject.stats()["requests"] == before  # nothing generated


def test_a_scoped_option_wins_over_the_plain_one(use_fixture_data):
    from condambig.abg_coqa import abg_coqa_detection

    task = abg_coqa_detection(split="test", abg_coqa={"split": "val"})
    assert task.metadata["options"]["split"] == "val"


def test_a_scoped_key_no_task_of_the_benchmark_has_is_an_error(use_fixture_data):
    from condambig.abg_coqa import abg_coqa_detection

    with pytest.raises(ConfigurationError, match=r"-T abg_coqa: 'splt' is not an option "
                                                 r"of abg_coqa's tasks \(did you mean 'split'\?\)"):
        abg_coqa_detection(abg_coqa={"splt": "val"})
    with pytest.raises(ConfigurationError, match="-T abg_coqa must be a mapping"):
        abg_coqa_detection(abg_coqa="val")


def test_other_scopes_are_left_to_their_tasks_and_unused_keys_warned_about(
        use_fixture_data, caplog):
    from condambig.abg_coqa import abg_coqa_detection

    with caplog.at_level(logging.WARNING, logger="condambig"):
        # hotpot_flm's scope (even a value abg_coqa would reject) is not this task's;
        # judge is an option of abg_coqa_clarification, not of this task
        task = abg_coqa_detection(hotpot_flm={"split": "dev"}, abg_coqa={"judge": False},
                                  questioner="human")
    assert task.metadata["options"]["split"] == "test"
    messages = [record.getMessage() for record in caplog.records]
    assert "param 'questioner' not used by task 'abg_coqa_detection'" in messages
    assert "param 'judge' (-T abg_coqa) not used by task 'abg_coqa_detection'" in messages


# ---------------------------------------------------------------- a task per variant
def test_every_declared_variant_is_an_inspect_task_of_its_name():
    """As in lm-eval, each variant runs by its own name (``condambig/<variant>``, no ``-T``):
    one eval set can then hold several variants of a benchmark."""
    from condambig_tasks import docs_tables, registry

    tasks = docs_tables.installed_inspect_tasks()
    for name in registry.BENCHMARKS:  # the built-in ones (a test benchmark may have none)
        benchmark = registry.get(name)
        for variant in benchmark.variants:
            assert docs_tables.inspect_command(benchmark, variant, tasks) \
                == f"condambig/{variant.task}", variant.task


def test_a_variant_task_runs_its_variant(use_fixture_data):
    from condambig.condambigqa import condambigqa_gold_conditions, condambigqa_paper
    from condambig_tasks import registry

    benchmark = registry.get("condambigqa")
    gold = condambigqa_gold_conditions(judge=False, max_conditions=3)
    assert gold.metadata["options"]["setting"] == "gold_conditions"
    assert gold.metadata["options"]["max_conditions"] == 3  # the general task's options
    assert gold.config.temperature is None  # greedy: the command line's
    assert gold.config.max_tokens == benchmark.max_tokens(
        benchmark.options(gold.metadata["options"]))
    paper = condambigqa_paper(judge=False)
    assert (paper.metadata["options"]["setting"],
            paper.metadata["options"]["judge_weighting"]) == ("main", "deepeval")
    assert (paper.config.temperature, paper.config.max_tokens) == (0.7, 1024)
    assert condambigqa_paper(judge=False, max_tokens=64).config.max_tokens == 64


def test_a_variant_task_takes_what_it_fixes_only_at_its_value(use_fixture_data):
    """lm-eval's rule for ``--metadata``: the fixed value again is accepted (plain or
    scoped), another is an error naming the task that runs it, never an option not used."""
    from condambig.condambigqa import condambigqa_gold_conditions, condambigqa_paper

    same = condambigqa_gold_conditions(judge=False, setting="gold_conditions",
                                       condambigqa={"setting": "gold_conditions"})
    assert same.metadata["options"]["setting"] == "gold_conditions"
    with pytest.raises(ConfigurationError, match=r"^condambig/condambigqa_gold_conditions runs "
                       r"setting=gold_conditions; -T setting=closed_book asks for another: "
                       r"run condambig/condambigqa_closed_book$"):
        condambigqa_gold_conditions(judge=False, setting="closed_book")
    with pytest.raises(ConfigurationError, match=r"-T setting=main asks for another: run "
                                                 r"condambig/condambigqa$"):
        condambigqa_gold_conditions(judge=False, condambigqa={"setting": "main"})
    with pytest.raises(ConfigurationError, match=r"run condambig/condambigqa -T "
                                                 r"judge_weighting=condambig$"):
        condambigqa_paper(judge=False, judge_weighting="condambig")


@pytest.mark.e2e
def test_one_eval_set_runs_two_settings_of_a_benchmark(eval_set_logs):
    """Before the variants had tasks of their own, ``-T setting=`` reached every task of a
    command: two CondAmbigQA settings could not be one eval set (here, the eval set of
    the scoped-option test above)."""
    assert {task: (log.status, log.eval.metadata["options"]["setting"], len(log.samples))
            for task, log in eval_set_logs.items() if task.startswith("condambigqa")} == {
        "condambigqa_closed_book": ("success", "closed_book", 2),
        "condambigqa_gold_conditions": ("success", "gold_conditions", 2)}
