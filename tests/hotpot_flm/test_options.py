"""Where agent options come from: explicit values, then CONDAMBIG_FLM_*, then the paper's defaults."""

from __future__ import annotations

import pytest

from condambig_tasks import registry, settings
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.hotpot_flm.benchmark import FlmOptions


def _options(values=None, strict=True) -> FlmOptions:
    return registry.get("hotpot_flm").options(values, strict=strict)


def test_defaults_are_the_papers(flm_data):
    options = _options({})
    assert options.answering_checkpoint == options.downstream_checkpoint == "google/flan-t5-base"
    assert options.answering_agent is None and options.downstream_model is None  # role or default
    assert options.downstream_max_new_tokens == 10 and options.mask_seed == 0
    assert options.downstream_cache is True and options.split == "full"
    assert options.cache_path == settings.cache_dir() / "hotpot_flm" / "downstream_answers.sqlite"


def test_environment_then_explicit_values(flm_data, monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_FLM_ANSWERING_AGENT", "/models/a")
    monkeypatch.setenv("CONDAMBIG_FLM_BATCH_SIZE", "8")
    monkeypatch.setenv("CONDAMBIG_FLM_CACHE", "off")
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path))
    from_environment = _options({})
    assert from_environment.answering_agent == "/models/a"
    assert from_environment.agent_batch_size == 8
    assert from_environment.downstream_cache is False
    assert from_environment.cache_path == tmp_path / "hotpot_flm" / "downstream_answers.sqlite"
    # lm-eval --metadata also carries the model args and the YAML version: ignored
    explicit = _options({"answering_agent": "/models/b", "agent_batch_size": "16",
                         "pretrained": "x", "version": 1.0, "downstream_model": ""},
                        strict=False)
    assert explicit.answering_agent == "/models/b" and explicit.agent_batch_size == 16
    assert explicit.downstream_checkpoint == "google/flan-t5-base"  # empty means unset


@pytest.mark.parametrize(("key", "value", "message"), [
    ("agent_batch_size", "many", "must be int"),
    ("agent_batch_size", 0, ">= 1"),
    ("agent_dtype", "int4", "agent_dtype must be one of float32, auto, bfloat16, float16; "
                            "got 'int4'"),
    ("split", "dev", "split must be one of full, test; got 'dev'"),
])
def test_bad_values_say_which_option(flm_data, key, value, message):
    with pytest.raises(ValueError, match=message):
        _options({key: value})


def test_round_trip_through_a_doc(flm_data):
    benchmark = registry.get("hotpot_flm")
    options = _options({"answering_agent": "/a", "downstream_cache": "false", "split": "test"})
    assert benchmark.options(options_to_json(benchmark, options)) == options


def test_lm_eval_fails_fast_before_generation_when_an_agent_cannot_be_found(flm_data,
                                                                          tmp_path):
    """Before the evaluated model generates anything, not after, in the aggregation step;
    but not while lm-eval builds the task (its docs load without any agent model)."""
    from condambig_tasks.hotpot_flm.hf_models import AgentLoadError
    from condambig_tasks.lm_eval_glue import LmEvalTask

    utils = LmEvalTask("hotpot_flm")

    missing = str(tmp_path / "no-such-checkpoint")
    docs = utils.load_docs(task_options={"split": "full"}, answering_agent=missing,
                           downstream_model=missing)
    assert len(docs["test"]) > 0
    with pytest.raises(AgentLoadError, match="CONDAMBIG_FLM_ANSWERING_AGENT"):
        utils.before_generation()


def test_a_bound_role_spares_the_default_checkpoint_check(flm_data, tiny_t5, monkeypatch):
    """Inspect: the answerer role replaces the unset answering agent, so only the downstream
    checkpoint must exist before generation."""
    from condambig_tasks.benchmark import Runtime
    from condambig_tasks.hotpot_flm.hf_models import AgentLoadError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    benchmark = registry.get("hotpot_flm")
    options = _options({"downstream_model": str(tiny_t5)})
    benchmark.prepare(options, Runtime(roles={"answerer": object()}))
    with pytest.raises(AgentLoadError, match="google/flan-t5-base"):
        benchmark.prepare(options, Runtime())
