"""Where agent options come from: explicit values, then CONDAMBIG_FLM_*, then the paper's defaults."""

from __future__ import annotations

import pytest

from condambig_tasks import settings
from condambig_tasks.hotpot_flm.options import FlmOptions


def test_defaults_are_the_papers(flm_data):
    options = FlmOptions.resolve({})
    assert options.answering_agent == options.downstream_model == "google/flan-t5-base"
    assert options.downstream_max_new_tokens == 10 and options.mask_seed == 0
    assert options.downstream_cache is True
    assert options.cache_path == settings.cache_dir() / "hotpot_flm" / "downstream_answers.sqlite"


def test_environment_then_explicit_values(flm_data, monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_FLM_ANSWERING_AGENT", "/models/a")
    monkeypatch.setenv("CONDAMBIG_FLM_BATCH_SIZE", "8")
    monkeypatch.setenv("CONDAMBIG_FLM_CACHE", "off")
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path))
    from_environment = FlmOptions.resolve({})
    assert from_environment.answering_agent == "/models/a"
    assert from_environment.agent_batch_size == 8
    assert from_environment.downstream_cache is False
    assert from_environment.cache_path == tmp_path / "hotpot_flm" / "downstream_answers.sqlite"
    # lm-eval --metadata also carries the model args and the YAML version: ignored
    explicit = FlmOptions.resolve({"answering_agent": "/models/b", "agent_batch_size": "16",
                                   "pretrained": "x", "version": 1.0, "downstream_model": ""})
    assert explicit.answering_agent == "/models/b" and explicit.agent_batch_size == 16
    assert explicit.downstream_model == "google/flan-t5-base"  # empty means unset


@pytest.mark.parametrize(("key", "value", "message"), [
    ("agent_batch_size", "many", "must be int"),
    ("agent_batch_size", 0, ">= 1"),
    ("agent_dtype", "int4", "not one of"),
])
def test_bad_values_say_which_option(flm_data, key, value, message):
    with pytest.raises(ValueError, match=message):
        FlmOptions.resolve({key: value})


def test_round_trip_through_a_doc(flm_data):
    options = FlmOptions.resolve({"answering_agent": "/a", "downstream_cache": "false"})
    assert FlmOptions(**options.to_dict()) == options


def test_lm_eval_docs_fail_fast_when_an_agent_cannot_be_found(flm_data, tmp_path):
    """Before the evaluated model generates anything, not after, in the aggregation step."""
    from condambig_tasks.hotpot_flm import lm_eval_glue
    from condambig_tasks.hotpot_flm.hf_models import AgentLoadError

    missing = str(tmp_path / "no-such-checkpoint")
    with pytest.raises(AgentLoadError, match="CONDAMBIG_FLM_ANSWERING_AGENT"):
        lm_eval_glue.load_full_docs(answering_agent=missing, downstream_model=missing)
