"""lm-eval ``--metadata`` never ignored: invalid values, contradictions with a task's fixed
options, misspelt keys and per-benchmark (scoped) keys in group runs."""

from __future__ import annotations

import logging

import pytest

from condambig_tasks import lm_eval_options, registry, settings
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.hotpot_flm.hf_models import AGENT_VARIABLES
from condambig_tasks.lm_eval_options import resolve_lm_eval_options
from condambig_tasks.options import option_specs

MAIN = {"setting": "main"}
# what lm-eval 0.4.13 adds to every task's metadata: model arguments, the YAML version, the
# config source (lm_eval/config/evaluate_config.py, lm_eval/tasks/_factory.py)
LM_EVAL_KEYS = {"pretrained": "gpt2", "dtype": "float32", "device": "cpu", "revision": "main",
                "batch_size": 4, "version": 1.2, "config_source": "x.yaml"}


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(lm_eval_options, "_warned", set())


def _resolve(name: str, metadata: dict, fixed: dict | None = None):
    return resolve_lm_eval_options(registry.get(name), metadata, fixed or {})


def test_an_invalid_value_is_an_error_listing_the_allowed_values():
    with pytest.raises(ConfigurationError) as error:
        _resolve("condambigqa", {"setting": "gold"}, MAIN)
    message = str(error.value)
    assert "'gold'" in message
    assert all(value in message for value in
               ("main", "gold_conditions", "no_conditions", "closed_book",
                "closed_book_conditions"))
    assert "\n" not in message


def test_a_value_contradicting_the_fixed_option_names_the_task_to_use():
    with pytest.raises(ConfigurationError, match=r"fixes setting='main'; use --tasks "
                       r"condambigqa_gold_conditions\b"):
        _resolve("condambigqa", {"setting": "gold_conditions"}, MAIN)
    # the paper task fixes two options: the task with the asked setting is still named
    with pytest.raises(ConfigurationError, match=r"task condambigqa_paper.*"
                       r"use --tasks condambigqa_gold_conditions"):
        _resolve("condambigqa", {"setting": "gold_conditions"},
                 {"setting": "main", "judge_weighting": "deepeval"})
    with pytest.raises(ConfigurationError, match=r"use --tasks hotpot_flm_test"):
        _resolve("hotpot_flm", {"split": "test"}, {"split": "full"})


def test_a_value_equal_to_the_fixed_option_is_accepted():
    resolved = _resolve("condambigqa", {"setting": "gold_conditions", "max_conditions": 3},
                        {"setting": "gold_conditions"})
    assert resolved.options.setting.value == "gold_conditions"
    assert resolved.options.max_conditions == 3


def test_every_variant_task_keeps_working(monkeypatch):
    monkeypatch.setenv(AGENT_VARIABLES["answering_agent"], "")
    for name in registry.BENCHMARKS:
        benchmark = registry.get(name)
        for variant in benchmark.variants:
            fixed = dict(variant.options)
            resolved = resolve_lm_eval_options(benchmark, dict(LM_EVAL_KEYS), fixed)
            assert resolved.options == benchmark.options(fixed), variant.task


def test_a_key_close_to_ours_is_warned_about_once_with_the_suggestion(caplog):
    with caplog.at_level(logging.WARNING, logger="condambig"):
        for name in ("condambigqa", "hotpot_flm"):
            _resolve(name, {"answering_agnet": "x", **LM_EVAL_KEYS},
                     MAIN if name == "condambigqa" else {})
    warnings = [r.getMessage() for r in caplog.records if "answering_agnet" in r.getMessage()]
    assert len(warnings) == 1
    assert "did you mean 'answering_agent'?" in warnings[0]
    # model arguments and lm-eval's own keys are not typos of agent_device / hub_revision
    assert not any(key in r.getMessage() for r in caplog.records for key in LM_EVAL_KEYS)


@pytest.mark.parametrize("name", ["condambigqa", "ambignq"])
def test_a_key_close_to_a_judge_setting_is_an_error_naming_it(name):
    """Who typed a judge setting asked for a judge: a warning then a judge-free run was
    a quiet wrong answer."""
    with pytest.raises(ConfigurationError) as error:
        _resolve(name, {"judge_modle": "gpt-4o-mini", **LM_EVAL_KEYS},
                 MAIN if name == "condambigqa" else {})
    message = str(error.value)
    assert "'judge_modle'" in message and "'judge_model'" in message
    assert "\n" not in message


def test_unknown_keys_not_close_to_ours_are_no_error(caplog):
    with caplog.at_level(logging.WARNING, logger="condambig"):
        resolved = _resolve("ambignq", {"max_seq_lengths": [4096], "tokenizer": "gpt2"})
    assert resolved.options == registry.get("ambignq").options({})
    assert not caplog.records


def test_known_keys_come_from_the_options_and_the_judge_settings():
    known = lm_eval_options.known_keys()
    assert set(settings.judge_option_keys()) <= known
    agent_keys = {spec.name for spec in option_specs(registry.get("hotpot_flm").options_type)
                  if spec.environment}
    assert {"answering_agent", "downstream_model"} <= agent_keys <= known


def test_a_scoped_key_reaches_only_its_benchmark_and_wins_over_a_plain_key():
    metadata = {"abg_coqa": {"split": "val"}, "split": "train"}
    assert _resolve("abg_coqa", metadata, {"subtask": "detection"}).options.split == "val"
    assert _resolve("conditionalqa", metadata).options.split == "train"
    scoped_only = {"abg_coqa": {"split": "val"}}
    assert _resolve("conditionalqa", scoped_only).options.split == "dev"


def test_a_plain_key_is_ignored_by_a_benchmark_without_that_option():
    metadata = {"setting": "not-a-setting"}
    assert _resolve("ambignq", metadata).options == registry.get("ambignq").options({})
    with pytest.raises(ConfigurationError):
        _resolve("condambigqa", metadata, MAIN)


def test_a_plain_key_invalid_elsewhere_says_how_to_scope_it():
    with pytest.raises(ConfigurationError, match=r"""scope it: --metadata '\{"abg_coqa": """
                       r"""\{"split": "val"\}\}'"""):
        _resolve("conditionalqa", {"split": "val"})


def test_scoped_judge_keys_reach_the_judge_settings():
    resolved = _resolve("condambigqa", {"condambigqa": {"judge_model": "m"},
                                        "judge_model": "plain"}, MAIN)
    assert resolved.judge["judge_model"] == "m"
    assert "condambigqa" not in resolved.judge


@pytest.mark.parametrize(("metadata", "pattern"), [
    ({"condambigqa": {"max_condition": 3}}, r"'max_condition' is not an option of condambigqa "
                                            r"\(did you mean 'max_conditions'\?\)"),
    ({"ambignq": {"judge_model": "m"}}, r"'judge_model' is not an option of ambignq"),
    ({"condambigqa": "main"}, r"--metadata 'condambigqa' must be an object"),
])
def test_a_scoped_key_is_checked_strictly(metadata, pattern):
    name = next(iter(metadata))
    with pytest.raises(ConfigurationError, match=pattern):
        _resolve(name, metadata, MAIN if name == "condambigqa" else {})


def test_the_abg_coqa_split_advice_is_scoped(monkeypatch, tmp_path):
    from condambig_tasks.data import DataUnavailableError

    (tmp_path / "abg_coqa").mkdir()
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    benchmark = registry.get("abg_coqa")
    with pytest.raises(DataUnavailableError) as error:
        benchmark.load(benchmark.options({}))
    assert """--metadata '{"abg_coqa": {"split": "val"}}'""" in str(error.value)


@pytest.mark.parametrize(("metadata", "pattern"), [
    ({"setting": "gold"}, r"one of main, gold_conditions"),
    ({"setting": "gold_conditions"}, r"use --tasks condambigqa_gold_conditions"),
])
def test_the_lm_eval_hook_rejects_what_it_cannot_honour(use_fixture_data, metadata, pattern):
    from tests.test_contract import lm_eval_hooks

    utils = lm_eval_hooks("condambigqa")
    with pytest.raises(ConfigurationError, match=pattern):
        utils.load_docs(version=1.2, pretrained="tiny", task_options=MAIN, **metadata)


def test_the_lm_eval_hook_applies_scoped_options(use_fixture_data):
    from tests.test_contract import lm_eval_hooks

    utils = lm_eval_hooks("abg_coqa")
    scoped = utils.load_docs(version=1.2, task_options={"subtask": "detection"},
                             abg_coqa={"split": "val"}, split="test")["test"]
    default = utils.load_docs(version=1.2, task_options={"subtask": "detection"})["test"]
    assert {doc["options"] for doc in scoped} == {'{"split": "val", "subtask": "detection"}'}
    assert sorted(doc["id"] for doc in scoped) != sorted(doc["id"] for doc in default)
