"""Options are typed once: the annotation (a Literal or an Enum) is where the allowed values
come from, for every front end — lm-eval ``--metadata``, Inspect ``-T`` and the
``@task`` signatures, ``condambig-score`` flags — and none repeats them."""

from __future__ import annotations

import argparse
import enum
import inspect
import typing
from dataclasses import dataclass, field, fields
from typing import Literal

import pytest

from condambig_tasks import cli, registry
from condambig_tasks.benchmark import Benchmark, options_to_json
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.lm_eval_options import resolve_lm_eval_options
from condambig_tasks.options import allowed_values, option_specs, parse_options

BENCHMARKS = sorted(registry.BENCHMARKS)


class Shade(str, enum.Enum):
    LIGHT = "light"
    DARK = "dark"


@dataclass(frozen=True)
class TypedOptions:
    colour: Literal["red", "green"] = field(default="red", metadata={"help": "a colour"})
    shade: Shade = Shade.LIGHT
    count: int = 1


class Typed(Benchmark[TypedOptions, dict]):
    """A benchmark whose options declare their choices by type only."""

    name = "typed"
    title = "Typed"
    version = "1-A"
    options_type = TypedOptions
    metric_specs = ()


def _choice_options() -> list[tuple[str, str, tuple]]:
    """(benchmark, option, allowed values) for every Literal / Enum option."""
    return [(name, spec.name, spec.allowed) for name in BENCHMARKS
            for spec in option_specs(registry.get(name).options_type) if spec.allowed]


def test_the_allowed_values_are_the_types():
    hints = typing.get_type_hints(TypedOptions)
    assert allowed_values(hints["colour"]) == ("red", "green")
    assert allowed_values(hints["shade"]) == ("light", "dark")
    assert allowed_values(hints["count"]) is None
    assert allowed_values(Literal["a", "b"] | None) == ("a", "b")
    found = {(name, option) for name, option, _ in _choice_options()}
    assert {("condambigqa", "setting"), ("condambigqa", "matching"),
            ("condambigqa", "judge_weighting"), ("hotpot_flm", "split"),
            ("hotpot_flm", "agent_dtype"), ("hotpot_flm", "question_prompt"),
            ("conditionalqa", "split"), ("abg_coqa", "subtask"), ("abg_coqa", "split")} <= found


def test_no_option_repeats_its_choices_in_field_metadata():
    for name in BENCHMARKS:
        for option in fields(registry.get(name).options_type):
            assert "choices" not in option.metadata, f"{name}.{option.name}"


@pytest.mark.parametrize(("name", "option", "allowed"), _choice_options())
def test_a_bad_value_is_refused_with_the_allowed_values(name, option, allowed):
    benchmark = registry.get(name)
    with pytest.raises(ConfigurationError) as error:
        benchmark.options({option: "no-such-value"})
    message = str(error.value)
    assert f"{option} must be one of {', '.join(map(str, allowed))}; got 'no-such-value'" \
        in message
    assert "\n" not in message
    for value in allowed:  # and every allowed value is accepted
        assert options_to_json(benchmark, benchmark.options({option: value}))[option] == value


def test_yaml_numbers_and_case_reach_the_string_choice():
    """``-T release=200`` arrives from Inspect's YAML as the number 200."""
    condambigqa = registry.get("condambigqa")
    assert condambigqa.options({"release": 200}).release.value == "200"
    assert registry.get("hotpot_flm").options({"split": " Test "}).split.value == "test"
    assert parse_options(TypedOptions, {"shade": "DARK", "colour": "Green"}, strict=True,
                         owner="typed") == TypedOptions("green", Shade.DARK)


def test_a_misspelt_value_gets_a_suggestion():
    with pytest.raises(ConfigurationError, match=r"got 'detecton' \(did you mean 'detection'\?\)"):
        registry.get("abg_coqa").options({"subtask": "detecton"})


def test_lm_eval_metadata_refuses_a_bad_value_with_the_allowed_values():
    with pytest.raises(ConfigurationError, match=r"condambigqa option matching must be one of "
                       r"judge, exact; got 'exatc' \(did you mean 'exact'\?\)"):
        resolve_lm_eval_options(registry.get("condambigqa"), {"matching": "exatc"},
                                {"setting": "main"})
    with pytest.raises(ConfigurationError, match=r"split must be one of train, val, test; "
                       r"got 'dev'"):
        resolve_lm_eval_options(registry.get("abg_coqa"), {"abg_coqa": {"split": "dev"}},
                                {"subtask": "detection"})


def test_cli_choices_come_from_the_type(capsys):
    parser = argparse.ArgumentParser()
    cli._add_arguments(parser, Typed())
    actions = {action.dest: action for action in parser._actions}
    assert actions["colour"].choices == ["red", "green"]
    assert actions["shade"].choices == ["light", "dark"]
    assert actions["count"].choices is None
    assert actions["colour"].help == "a colour (default red)"
    assert parser.parse_args(["--outputs", "x", "--shade", "dark"]).shade == "dark"
    with pytest.raises(SystemExit):
        parser.parse_args(["--outputs", "x", "--colour", "blue"])
    assert "choose from red, green" in capsys.readouterr().err.replace("'", "")


def test_every_benchmark_flag_offers_its_types_choices(capsys):
    parser = cli.build_parser(BENCHMARKS)
    for name, option, allowed in _choice_options():
        flag = f"--{option.replace('_', '-')}"
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args([name, "--outputs", "x", flag, "no-such-value"])
        assert exit_.value.code == 2
        error = capsys.readouterr().err.replace("'", "")
        assert f"choose from {', '.join(map(str, allowed))}" in error, error


# --------------------------------------------------------------------- Inspect @task signatures
def _inspect_tasks() -> list[tuple[str, typing.Callable]]:
    import condambig._registry as tasks

    return [(name, value) for name, value in vars(tasks).items()
            if callable(value) and getattr(value, "__module__", "").startswith("condambig.")
            and value.__module__.rsplit(".", 1)[1] in registry.BENCHMARKS]


def test_every_inspect_task_is_checked():
    assert {name for name, _ in _inspect_tasks()} >= {
        "condambigqa", "hotpot_flm", "conditionalqa", "ambignq", "abg_coqa",
        "abg_coqa_detection", "abg_coqa_clarification", "abg_coqa_clarified_qa"}


@pytest.mark.parametrize(("task_name", "function"), _inspect_tasks())
def test_inspect_task_parameters_are_the_options(task_name, function):
    """Names, annotations and defaults of the ``@task`` parameters are the options'; an
    option a task leaves out is one its variant fixes, and an option its environment
    variable fills is unset (None) by default so the variable is not overridden."""
    benchmark = registry.get(function.__module__.rsplit(".", 1)[1])
    hints = typing.get_type_hints(function)
    parameters = inspect.signature(function).parameters
    found = registry.task_variant(task_name)
    fixed = dict(found[1].options) if found else {}
    for spec in option_specs(benchmark.options_type):
        if spec.name not in parameters:
            assert spec.name in fixed, f"{task_name}: option {spec.name} is not a parameter"
            continue
        default = parameters[spec.name].default
        if spec.environment:
            assert hints[spec.name] == spec.kind | None, spec.name
            assert default is None, spec.name
        else:
            assert hints[spec.name] == spec.annotation, spec.name
            assert default == spec.default, spec.name


def test_every_environment_option_is_read_from_its_variable(monkeypatch):
    benchmark = registry.get("hotpot_flm")
    given = {"answering_agent": "/a", "downstream_model": "/d", "agent_device": "cpu",
             "agent_dtype": "bfloat16", "agent_batch_size": "8", "downstream_cache": "off"}
    declared = [spec for spec in option_specs(benchmark.options_type) if spec.environment]
    assert {spec.name for spec in declared} == set(given)
    for spec in declared:
        monkeypatch.setenv(spec.environment, given[spec.name])
    options = benchmark.options({})
    for spec in declared:
        assert getattr(options, spec.name) != spec.default, spec.name


@pytest.mark.parametrize(("task_name", "arguments", "pattern"), [
    ("condambigqa", {"matching": "exatc"}, r"matching must be one of judge, exact; got 'exatc'"),
    ("abg_coqa", {"subtask": "ask"},
     r"subtask must be one of detection, clarification, clarified_qa; got 'ask'"),
    ("hotpot_flm", {"question_prompt": "llama"},
     r"question_prompt must be one of default, llama3_chat; got 'llama'"),
    ("hotpot_flm", {"questioner": "gpt"},
     r"questioner must be one of model, repeater, human; got 'gpt'"),
])
def test_inspect_task_arguments_are_refused_by_the_options(task_name, arguments, pattern):
    function = dict(_inspect_tasks())[task_name]
    with pytest.raises(ConfigurationError, match=pattern):
        function(**arguments)
