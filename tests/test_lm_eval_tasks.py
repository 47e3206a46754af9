"""lm-eval's task files are generated from the spec, and the task class owns its config.

The files under ``condambig_tasks/lm_eval_tasks`` (and the toy benchmark's) must equal what
``python -m condambig_tasks.lm_eval_tasks.generate`` writes; :class:`CondambigTask` builds
the config, records provenance and null reasons in it and binds each aggregation to itself;
the retry hint's ``--output_path`` comes from the ``lm_eval`` command as lm-eval parsed it,
not the stack.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from condambig_tasks import exit_status, lm_eval_glue, registry
from condambig_tasks.benchmark import SUITE_SCORE, task_version
from condambig_tasks.lm_eval_tasks import generate, task_folder
from tests.conftest import REPO_ROOT
from tests.test_contract import (
    TASK_CLASS,
    TOY,
    TOY_LM_EVAL,
    read_task_yaml,
    toy_registered,  # noqa: F401 (fixture)
)


def test_the_task_files_are_the_generated_ones():
    found = generate.differences(generate.package_files())
    assert not found, "\n".join([*found, f"run: {generate.COMMAND}"])


def test_the_toy_benchmark_uses_the_same_class_through_generated_files():
    """A benchmark outside the package: its folder holds what the generator writes for it,
    task files naming the same class as the built-in ones."""
    out = TOY_LM_EVAL.relative_to(REPO_ROOT)
    files = generate.outside_files(TOY, out)
    differing = [str(path) for path, text in files.items()
                 if (REPO_ROOT / path).read_text(encoding="utf-8") != text]
    assert not differing, f"run: {generate.outside_command(TOY, out)}"
    assert sorted(path.name for path in TOY_LM_EVAL.glob("*.yaml")) == \
        sorted(path.name for path in files)
    for path in TOY_LM_EVAL.glob("*.yaml"):
        assert read_task_yaml(path)["class"] == TASK_CLASS


def test_no_task_file_names_a_metric():
    metrics = {spec.name for name in registry.BENCHMARKS
               for spec in registry.get(name).metric_specs} | {SUITE_SCORE}
    for path in sorted(Path(task_folder()).glob("*/*.yaml")):
        config = read_task_yaml(path)
        if "group" in config:  # a group names the one metric it averages, suite_score
            assert {entry["metric"] for entry in config.get("aggregate_metric_list") or []} \
                <= {SUITE_SCORE}, path
            continue
        assert set(config) <= {"task", "class", "dataset_kwargs"}, path
        assert config["class"] == TASK_CLASS, path
        words = set(path.read_text(encoding="utf-8").replace(":", " ").split())
        assert not words & metrics, f"{path} names {sorted(words & metrics)}"


def test_a_stale_generated_file_is_reported_and_removed(tmp_path):
    folder = tmp_path / "bench"
    folder.mkdir()
    stale = folder / "gone.yaml"
    stale.write_text(generate.GENERATED + "...`\ntask: gone\n")
    mine = folder / "mine.yaml"  # a user's own file is never touched
    mine.write_text("task: mine\n")
    files = {folder / "kept.yaml": generate.GENERATED + "...`\ntask: kept\n"}
    assert generate.differences(files) == [f"differs: {folder / 'kept.yaml'}",
                                           f"no longer declared: {stale}"]
    generate.write(files)
    assert generate.differences(files) == []
    assert not stale.exists() and mine.read_text() == "task: mine\n"


def test_the_groups_follow_the_spec():
    groups = {config["group"]: config for config in (
        read_task_yaml(path) for path in Path(task_folder()).glob("*/_*.yaml"))}
    suite = groups[registry.SUITE]
    assert suite["task"] == [registry.get(name).suite_member for name in registry.BENCHMARKS]
    for name in registry.BENCHMARKS:
        benchmark = registry.get(name)
        if benchmark.group is None:
            continue
        group = groups[benchmark.group]
        assert group["metadata"]["version"] == task_version(benchmark).comparability
        assert set(group["task"]) <= {variant.task for variant in benchmark.variants}
        averages = [entry["metric"] for entry in group.get("aggregate_metric_list") or []]
        assert averages == ([SUITE_SCORE] if benchmark.suite_member == benchmark.group else [])


# ---------------------------------------------------------------------- the task class


@pytest.fixture
def quiet_glue(monkeypatch):
    """The glue's per-process state, fresh, and no lines printed at this process's exit."""
    monkeypatch.setattr(lm_eval_glue, "_RUNS", {})
    monkeypatch.setattr(exit_status, "_said", [lm_eval_glue.report_lines])


def test_the_task_class_builds_from_the_spec_and_owns_its_metadata(quiet_glue):
    from condambig_tasks.lm_eval_task import CondambigTask

    task = CondambigTask(config={"task": "toy_case_sensitive", "metadata": {"user_key": 1}})
    benchmark = registry.get(TOY)
    metadata = task.config.metadata
    assert metadata["version"] == task.VERSION == task_version(benchmark).comparability
    assert metadata["user_key"] == 1  # --metadata keys stay
    assert metadata["provenance"]["benchmark"] == TOY  # in the task's own config
    assert metadata["provenance"]["options"]["ignore_case"] is False  # the variant's
    assert task.higher_is_better() == {spec.name: spec.higher_is_better
                                       for spec in benchmark.metric_specs}
    docs = list(task.test_docs())
    per_doc = [task.process_results(doc, ["no answer here"]) for doc in docs]
    aggregation = task.aggregation()
    values = {name: aggregation[name]([values[name] for values in per_doc])
              for name in per_doc[0]}
    assert values["unanswered"] == len(docs)
    assert math.isnan(values["precision"])  # nothing answered
    # the aggregation knew its task: the reason is in that task's config
    reasons = task.config.metadata["null_reasons"]
    assert set(reasons) == {"precision"}
    written = task.dump_config()  # what lm-eval writes to configs.<task>
    assert written["metadata"]["null_reasons"] == reasons
    assert "agg_precision" in [entry["aggregation"] for entry in written["metric_list"]
                             if entry["metric"] == "precision"][0]


def test_a_task_name_no_benchmark_declares_is_one_clear_error():
    from condambig_tasks.errors import ConfigurationError
    from condambig_tasks.lm_eval_task import CondambigTask

    with pytest.raises(ConfigurationError, match="no benchmark declares this task"):
        CondambigTask(config={"task": "condambigqa_typo"})


def test_a_task_file_may_override_the_spec(use_fixture_data, quiet_glue):
    """A user's own task file (same class) keeps working: its keys win over the spec's."""
    from condambig_tasks.lm_eval_task import CondambigTask

    task = CondambigTask(config={
        "task": "abg_coqa_detection", "class": TASK_CLASS,
        "generation_kwargs": {"until": [], "do_sample": False, "max_gen_toks": 7},
        "dataset_kwargs": {"task_options": {"split": "val"}}})
    assert task.config.generation_kwargs["max_gen_toks"] == 7
    assert task.config.dataset_kwargs == {"task_options": {"subtask": "detection",
                                                           "split": "val"}}
    assert task.config.metadata["provenance"]["options"]["split"] == "val"


# ---------------------------------------------------------------------- the command line


def _command(monkeypatch, *argv: str):
    """What the ``lm_eval`` command parsed from ``argv`` (lm-eval's own parser and
    ``EvaluatorConfig.from_cli``), kept as the start-up hook keeps it."""
    from lm_eval._cli import HarnessCLI
    from lm_eval.config.evaluate_config import EvaluatorConfig

    from condambig_tasks import lm_eval_command

    monkeypatch.setattr("sys.argv", ["lm_eval", *argv])
    monkeypatch.setattr(lm_eval_command, "_command", [])
    lm_eval_command.remember(EvaluatorConfig.from_cli(HarnessCLI().parse_args()))
    return lm_eval_command


def test_the_output_options_come_from_the_lm_eval_command_line(tmp_path, monkeypatch):
    """The samples' folder, when ``--log_samples`` keeps them (else None)."""
    assert _command(monkeypatch, "run", "--model", "hf", "--tasks", "x", "--output_path",
                    "out", "--log_samples").kept_samples() == "out"
    assert _command(monkeypatch, "-o", "out", "-s", "--tasks", "x").kept_samples() == "out"
    assert _command(monkeypatch, "--output", "out", "--log", "--tasks", "x",
                    ).kept_samples() == "out"  # prefixes
    assert _command(monkeypatch, "--output", "out", "--tasks", "x").kept_samples() is None
    config = tmp_path / "run.yaml"
    config.write_text(yaml.safe_dump({"output_path": "from-yaml", "log_samples": True,
                                      "tasks": ["x"]}))
    assert _command(monkeypatch, "--config", str(config)).kept_samples() == "from-yaml"
    assert _command(monkeypatch, "-C", str(config), "-o", "cli").kept_samples() == "cli"


def test_the_model_comes_from_the_lm_eval_command_line(monkeypatch):
    assert _command(monkeypatch, "--model", "hf", "--model_args",
                    "pretrained=org/m,dtype=float32", "--tasks", "x").model_name() == "org/m"
    assert _command(monkeypatch, "-M", "local-chat-completions", "-a",
                    "model=gpt-x,base_url=http://h/v1", "--tasks", "x").model_name() == "gpt-x"
    assert _command(monkeypatch, "--model", "hf", "--model_args", '{"pretrained": "org/j"}',
                    "--tasks", "x").model_name() == "org/j"
    assert _command(monkeypatch, "--model", "vllm", "--tasks", "x").model_name() == "vllm"


def test_a_program_calling_lm_eval_gets_no_output_options(monkeypatch):
    from types import SimpleNamespace

    monkeypatch.setattr("sys.argv", ["prog", "--output_path", "out", "--log_samples"])
    judge = SimpleNamespace(model="judge", base_url=None, cache_path=None, cache_file=None)
    hint = lm_eval_glue._rerun(registry.get("abg_coqa"), "abg_coqa_clarification", judge)
    assert "--from-log DIR" in hint  # pytest is not the lm_eval command


def test_nothing_walks_the_call_stack():
    package = REPO_ROOT / "condambig_tasks"
    users = [str(path) for path in package.rglob("*.py")
             if "_getframe" in path.read_text(encoding="utf-8")]
    assert not users
