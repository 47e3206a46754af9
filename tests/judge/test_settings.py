"""Judge configuration from CONDAMBIG_JUDGE_* variables and lm-eval --metadata overrides."""

from __future__ import annotations

import pickle

import pytest

from condambig_metrics.judge import JudgeConfig
from condambig_tasks import settings

VARIABLES = [
    "CONDAMBIG_JUDGE_MODEL", "CONDAMBIG_JUDGE_BASE_URL", "CONDAMBIG_JUDGE_API_KEY",
    "CONDAMBIG_JUDGE_CONCURRENCY", "CONDAMBIG_JUDGE_MAX_RETRIES", "CONDAMBIG_JUDGE_TIMEOUT",
    "CONDAMBIG_JUDGE_CACHE", "CONDAMBIG_JUDGE_RETRY_BUDGET", "OPENAI_API_KEY",
]


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


def test_no_judge_model_means_no_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONDAMBIG_JUDGE_BASE_URL", "http://localhost:8000/v1")
    assert settings.judge_config_from_environment(None) is None
    assert settings.judge_config_from_environment({"judge_model": "  "}) is None


def test_environment_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in [("CONDAMBIG_JUDGE_MODEL", "Qwen/Qwen2.5-7B-Instruct"),
                        ("CONDAMBIG_JUDGE_BASE_URL", "http://gpu-node:8000/v1"),
                        ("CONDAMBIG_JUDGE_API_KEY", "k-env"),
                        ("CONDAMBIG_JUDGE_CONCURRENCY", "64"),
                        ("CONDAMBIG_JUDGE_MAX_RETRIES", "7"),
                        ("CONDAMBIG_JUDGE_TIMEOUT", "12.5"),
                        ("CONDAMBIG_JUDGE_CACHE", "/tmp/j.sqlite")]:
        monkeypatch.setenv(name, value)
    config = settings.judge_config_from_environment()
    assert config == JudgeConfig(model="Qwen/Qwen2.5-7B-Instruct",
                                 base_url="http://gpu-node:8000/v1", api_key="k-env",
                                 concurrency=64, max_retries=7, timeout_seconds=12.5,
                                 cache_path="/tmp/j.sqlite")
    assert pickle.loads(pickle.dumps(config)) == config


def test_metadata_overrides_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CONDAMBIG_JUDGE_MODEL", "env-model")
    monkeypatch.setenv("CONDAMBIG_JUDGE_CONCURRENCY", "8")
    monkeypatch.setenv("CONDAMBIG_JUDGE_BASE_URL", "http://env/v1")
    config = settings.judge_config_from_environment(
        {"judge_model": "gpt-4o-mini", "judge_concurrency": 32, "judge_timeout": 5,
         "judge_max_retries": "0", "unrelated": "x"})
    assert (config.model, config.concurrency, config.timeout_seconds, config.max_retries,
            config.base_url) == ("gpt-4o-mini", 32, 5.0, 0, "http://env/v1")


def test_api_key_falls_back_to_openai_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    config = settings.judge_config_from_environment({"judge_model": "gpt-4o-mini"})
    assert config.api_key == "sk-openai" and config.base_url is None
    monkeypatch.setenv("CONDAMBIG_JUDGE_API_KEY", "sk-judge")
    assert settings.judge_config_from_environment({"judge_model": "m"}).api_key == "sk-judge"
    assert settings.judge_config_from_environment(
        {"judge_model": "m", "judge_api_key": "sk-meta"}).api_key == "sk-meta"


def test_cache_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    config = settings.judge_config_from_environment({"judge_model": "m", "judge_cache": "off"})
    assert config.cache_enabled is False and config.cache_path is None
    default = settings.judge_config_from_environment({"judge_model": "m"})
    assert default.cache_enabled is True and default.cache_path is None


@pytest.mark.parametrize(("key", "value", "variable"), [
    ("judge_concurrency", "many", "CONDAMBIG_JUDGE_CONCURRENCY"),
    ("judge_timeout", "1m", "CONDAMBIG_JUDGE_TIMEOUT"),
    ("judge_max_retries", "2.5", "CONDAMBIG_JUDGE_MAX_RETRIES"),
])
def test_bad_numbers_name_the_setting(key: str, value: str, variable: str) -> None:
    with pytest.raises(ValueError, match=variable):
        settings.judge_config_from_environment({"judge_model": "m", key: value})


def test_out_of_range_values_are_rejected() -> None:
    with pytest.raises(ValueError, match="concurrency"):
        settings.judge_config_from_environment({"judge_model": "m", "judge_concurrency": 0})


def test_openai_without_a_key_says_what_to_set() -> None:
    from condambig_metrics.judge import OpenAIJudgeBackend

    with pytest.raises(ValueError, match="OPENAI_API_KEY"):
        OpenAIJudgeBackend(JudgeConfig(model="gpt-4o-mini"))


def test_lm_eval_metadata_never_carries_the_api_key_into_docs(caplog):
    from condambig_tasks import registry
    from condambig_tasks.lm_eval_options import resolve_lm_eval_options

    metadata = {"judge_model": "m", "judge_api_key": "sk-secret", "judge_concurrency": 4,
                "version": 1.0, "pretrained": "x"}
    with caplog.at_level("WARNING"):
        options = resolve_lm_eval_options(registry.get("condambigqa"), metadata,
                                          {"setting": "main"}).judge
    assert options == {"judge_model": "m", "judge_concurrency": 4}
    assert "CONDAMBIG_JUDGE_API_KEY" in caplog.text and "sk-secret" not in caplog.text


def test_the_default_judge_cache_file_travels_in_the_config(monkeypatch, tmp_path):
    from condambig_metrics.judge import openai_judge_engine

    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path))
    config = settings.judge_config_from_environment({"judge_model": "m", "judge_base_url": "http://x/v1"})
    assert config.default_cache_path == str(tmp_path / "judge.sqlite") == str(settings.judge_cache_file())
    assert openai_judge_engine(config).cache.path == tmp_path / "judge.sqlite"
    chosen = settings.judge_config_from_environment(
        {"judge_model": "m", "judge_base_url": "http://x/v1", "judge_cache": str(tmp_path / "j.sqlite")})
    assert chosen.default_cache_path is None
    assert openai_judge_engine(chosen).cache.path == tmp_path / "j.sqlite"


def test_an_enabled_cache_needs_a_file():
    from condambig_metrics.judge import openai_judge_engine

    with pytest.raises(ValueError, match="cache_path"):
        openai_judge_engine(JudgeConfig(model="m", base_url="http://x/v1"))
    assert openai_judge_engine(JudgeConfig(model="m", base_url="http://x/v1",
                                           cache_enabled=False)).cache is None


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "0", "-3"])
@pytest.mark.parametrize(("variable", "key"), [
    ("CONDAMBIG_JUDGE_TIMEOUT", "judge_timeout"),
    ("CONDAMBIG_JUDGE_RETRY_BUDGET", "judge_retry_budget"),
])
def test_seconds_that_are_not_finite_and_positive_are_rejected(monkeypatch, value, variable,
                                                               key) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValueError, match=f"{variable} / --metadata {key}") as raised:
        settings.judge_config_from_environment({"judge_model": "m"})
    assert "\n" not in str(raised.value) and repr(float(value)) in str(raised.value)
    monkeypatch.delenv(variable)
    with pytest.raises(ValueError, match=variable):
        settings.judge_config_from_environment({"judge_model": "m", key: value})


@pytest.mark.parametrize("base_url", ["notaurl", "localhost:8000/v1", "ftp://host/v1",
                                      "http://", "file:///tmp/x"])
def test_a_base_url_that_is_not_http_is_rejected(monkeypatch, base_url) -> None:
    monkeypatch.setenv("CONDAMBIG_JUDGE_BASE_URL", base_url)
    with pytest.raises(ValueError, match="CONDAMBIG_JUDGE_BASE_URL / --metadata judge_base_url"):
        settings.judge_config_from_environment({"judge_model": "m"})
    for good in ("http://localhost:8000/v1", "HTTPS://api.example.com/v1/"):
        assert JudgeConfig(model="m", base_url=good).base_url == good


def test_the_retry_budget_is_read_and_reaches_the_engine(monkeypatch, tmp_path) -> None:
    from condambig_metrics.judge import openai_judge_engine

    monkeypatch.setenv("CONDAMBIG_JUDGE_RETRY_BUDGET", "90")
    config = settings.judge_config_from_environment({"judge_model": "m",
                                                     "judge_base_url": "http://x/v1",
                                                     "judge_cache": "off"})
    assert config.retry_budget_seconds == 90.0
    assert openai_judge_engine(config).retry_budget_seconds == 90.0
    config = settings.judge_config_from_environment({"judge_model": "m",
                                                     "judge_retry_budget": "1.5"})
    assert config.retry_budget_seconds == 1.5
    monkeypatch.delenv("CONDAMBIG_JUDGE_RETRY_BUDGET")
    assert settings.judge_config_from_environment(
        {"judge_model": "m"}).retry_budget_seconds == JudgeConfig("m").retry_budget_seconds


def test_condambig_score_rejects_a_bad_judge_setting_in_one_line(monkeypatch, tmp_path,
                                                                 capsys) -> None:
    import json

    from condambig_tasks.cli import main
    from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS
    from tests.conftest import FIXTURE_DATA

    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_JUDGE_TIMEOUT", "nan")
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps([{"id": key, "output": value}
                                for key, value in RAW_OUTPUTS["clarification"].items()]))
    code = main(["abg_coqa", "--subtask", "clarification", "--pred", str(pred),
                 "--ref", str(FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json"),
                 "--judge-model", "judge", "--judge-base-url", "http://127.0.0.1:9/v1"])
    err = capsys.readouterr().err
    assert code == 2 and "CONDAMBIG_JUDGE_TIMEOUT" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
