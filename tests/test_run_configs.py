"""The papers' run configurations: Inspect ``--run-config`` files and the lm-eval paper variant.

Every file in ``run_configs/inspect/`` must be accepted by Inspect's own parser, name an
existing task with options the benchmark accepts, and the CondAmbigQA files must carry the
paper's settings (gpt-4o-mini judge with DeepEval's weighting, the authors' sampling). The
end-to-end tests run ``inspect eval --run-config`` and ``lm_eval --tasks condambigqa_paper``
on a scripted model (a loopback OpenAI-compatible server giving one reply) against the
loopback judge: a judge that gives 8 with probability
0.995 and 2 with 0.005 scores 0.8 under DeepEval's rule (alternatives under 1 % dropped) and
0.797 under this project's default rule, so the reported scores show which rule ran.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from condambig_tasks import registry
from condambig_tasks.benchmark import default_grader, task_version
from tests.conftest import FIXTURE_DATA, REPO_ROOT, executable, run_ok, subprocess_env
from tests.support.judge_server import JudgeServer
from tests.test_catalogue import recorded_inspect_tasks  # noqa: F401  (fixture)

RUN_CONFIGS = REPO_ROOT / "run_configs" / "inspect"
CONFIG_FILES = sorted(RUN_CONFIGS.glob("*.yaml"))
INSPECT_PREFIX = "condambig/"
PAPER_SYSTEM_MESSAGE = "You are an AI assistant who answers questions based on given context."
JUDGE_SCRIPT = {"default": {"scores": {"8": 0.995, "2": 0.005}}}
DEEPEVAL_SCORE = 0.8  # 8 / 10: the 0.5 % alternative is below DeepEval's 1 % cut
SCRIPTED_REPLY = json.dumps({"conditions": [
    {"condition": "The question asks about the men's race in 2019.",
     "answer": "Ben Runner won the men's race in 2019.", "citations": ["Fragment 1"]},
    {"condition": "Women's race", "answer": "Ana Runner", "citations": ["Fragment 2"]},
]})


def _config(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def test_every_benchmark_has_a_paper_run_config():
    covered = set()
    for path in CONFIG_FILES:
        assert path.name.endswith("_paper.yaml"), path.name
        task = _config(path)["task"]["task"]
        assert task.startswith(INSPECT_PREFIX), path.name
        covered |= {name for name in registry.BENCHMARKS
                    if task[len(INSPECT_PREFIX):].startswith(name)}
    assert covered == set(registry.BENCHMARKS)


@pytest.mark.parametrize("path", CONFIG_FILES, ids=[p.name for p in CONFIG_FILES])
def test_inspect_accepts_the_run_config(path, monkeypatch, recorded_inspect_tasks):  # noqa: F811
    """Inspect's own ``--run-config`` parser, then the task built from its arguments (its
    options must be valid for the benchmark)."""
    from inspect_ai._cli.eval import parse_run_config

    import condambig._registry as tasks

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # model roles are built here
    params = parse_run_config(str(path))
    assert params["tasks"].startswith(INSPECT_PREFIX)
    function = getattr(tasks, params["tasks"][len(INSPECT_PREFIX):])
    function(**params.get("task_args", {}))
    [(name, values)] = recorded_inspect_tasks
    benchmark = registry.get(name)
    benchmark.options({k: v for k, v in values.items() if v is not None})  # raises if invalid


def test_condambigqa_paper_config_carries_the_papers_settings(monkeypatch):
    from inspect_ai._cli.eval import parse_run_config

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    params = parse_run_config(str(RUN_CONFIGS / "condambigqa_paper.yaml"))
    assert params["task_args"]["judge_weighting"] == "deepeval"
    assert params["task_args"]["setting"] == "main"
    # no grader in the file: the task's default grader is the paper's judge
    assert "model_roles" not in params
    assert default_grader(registry.get("condambigqa")) == "openai/gpt-4o-mini"
    assert (params["temperature"], params["max_tokens"]) == (0.7, 1024)
    assert params["system_message"] == PAPER_SYSTEM_MESSAGE


def test_lm_eval_paper_variant_matches_the_inspect_config():
    """The two front ends' paper settings are the same numbers."""
    from tests.test_contract import lm_eval_variants

    [variant] = [v.config for v in lm_eval_variants("condambigqa")
                 if v.task == "condambigqa_paper"]  # the config lm-eval runs
    inspect_config = _config(RUN_CONFIGS / "condambigqa_paper.yaml")
    generation = variant["generation_kwargs"]
    assert generation["do_sample"] is True
    assert generation["temperature"] == inspect_config["generate_config"]["temperature"]
    assert generation["max_gen_toks"] == inspect_config["generate_config"]["max_tokens"]
    # the Inspect file binds no grader: the task's default grader is the paper's judge
    assert "model_roles" not in inspect_config
    assert variant["metadata"]["judge_model"] == \
        default_grader(registry.get("condambigqa")).split("/", 1)[1]
    options = variant["dataset_kwargs"]["task_options"]
    for key, value in options.items():
        assert inspect_config["task"]["args"][key] == value, key
    assert variant["metadata"]["version"] == \
        task_version(registry.get("condambigqa")).comparability


# ---------------------------------------------------------------------- end to end


@pytest.fixture(scope="module")
def subject():
    """The model under evaluation: every prompt answered with SCRIPTED_REPLY."""
    with JudgeServer({"default": {"reply": SCRIPTED_REPLY}}) as server:
        yield server


@pytest.mark.e2e
def test_inspect_eval_runs_the_paper_run_config(subject, tmp_path):
    """The shipped file with only the models swapped: the main model for the scripted
    loopback one, the grader for the loopback judge. Everything else (task arguments, sampling, budget,
    system message) comes from the file."""
    from inspect_ai.log import read_eval_log

    config = _config(RUN_CONFIGS / "condambigqa_paper.yaml")
    config["model"] = "openai-api/subject/scripted"
    config["model_roles"] = {"grader": {"model": "openai-api/loopback/loopback-judge"}}
    run_config = tmp_path / "condambigqa_paper_test.yaml"
    run_config.write_text(yaml.safe_dump(config), encoding="utf-8")
    with JudgeServer(JUDGE_SCRIPT) as server:
        env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                             CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                             LOOPBACK_BASE_URL=server.base_url, LOOPBACK_API_KEY="test-key",
                             SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k")
        run_ok([executable("inspect"), "eval", "--run-config", str(run_config), "--limit", "2",
              "--log-dir", str(tmp_path / "logs"), "--display", "none"], env, tmp_path)
        stats = server.stats()
    log = read_eval_log(glob.glob(f"{tmp_path}/logs/*.eval")[0])
    assert log.status == "success"
    assert log.eval.task_args["judge_weighting"] == "deepeval"
    assert (log.plan.config.temperature, log.plan.config.max_tokens) == (0.7, 1024)
    assert log.samples and len(log.samples) == 2
    # the system message is added at the model call (generate config), not to the sample
    [call] = [event for event in log.samples[0].events
              if event.event == "model" and event.model == "openai-api/subject/scripted"]
    assert call.input[0].role == "system" and call.input[0].text == PAPER_SYSTEM_MESSAGE
    reported = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert reported["answer_score"] == pytest.approx(DEEPEVAL_SCORE, abs=1e-9)
    assert reported["condition_score"] == pytest.approx(DEEPEVAL_SCORE, abs=1e-9)
    assert stats["requests"] > 0 and stats["last_request"]["model"] == "loopback-judge"


@pytest.mark.e2e
def test_lm_eval_paper_variant_uses_the_papers_judge_and_sampling(subject, tmp_path):
    """No judge model in the environment: the variant's own metadata names gpt-4o-mini
    (served here by the loopback judge at CONDAMBIG_JUDGE_BASE_URL)."""
    with JudgeServer(JUDGE_SCRIPT) as server:
        env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                             CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                             CONDAMBIG_JUDGE_BASE_URL=server.base_url,
                             CONDAMBIG_JUDGE_API_KEY="test-key",
                             CONDAMBIG_JUDGE_CACHE="off")
        out = tmp_path / "out"
        run_ok([executable("lm_eval"), "--model", "local-chat-completions", "--model_args",
              f"model=scripted,base_url={subject.base_url}/chat/completions,"
              "tokenizer_backend=None", "--tasks", "condambigqa_paper", "--limit", "2",
              "--apply_chat_template", "--system_instruction", PAPER_SYSTEM_MESSAGE,
              "--output_path", str(out), "--log_samples"], env, tmp_path)
        stats = server.stats()
    results = json.loads(Path(glob.glob(f"{out}/**/results_*.json", recursive=True)[0])
                         .read_text())
    metrics = {key.split(",")[0]: value
               for key, value in results["results"]["condambigqa_paper"].items()
               if key.endswith(",none") and "_stderr" not in key}
    assert stats["requests"] > 0 and stats["last_request"]["model"] == "gpt-4o-mini"
    assert metrics["answer_score"] == pytest.approx(DEEPEVAL_SCORE, abs=1e-9)
    assert metrics["condition_score"] == pytest.approx(DEEPEVAL_SCORE, abs=1e-9)
    [samples_file] = glob.glob(f"{out}/**/samples_condambigqa_paper_*.jsonl", recursive=True)
    sample = json.loads(Path(samples_file).read_text().splitlines()[0])
    generation = sample["arguments"]["gen_args_0"]["arg_1"]
    assert generation["do_sample"] is True and generation["temperature"] == 0.7
    assert generation["max_gen_toks"] == 1024
    # the chat the API model was sent: the system message first
    [chat] = sample["arguments"]["gen_args_0"]["arg_0"]
    assert json.loads(chat)[0] == {"role": "system", "content": PAPER_SYSTEM_MESSAGE}
