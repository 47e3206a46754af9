"""HotpotQA-FLM through the real ``lm_eval``, ``inspect eval`` and ``condambig-score`` commands.

Agents are a tiny random T5 (local checkpoints) or, for Inspect's model roles, a loopback
OpenAI-compatible server with scripted replies; the model under evaluation is a tiny random
Llama (gibberish questions: the pipeline must still score them). Numbers from lm-eval and
Inspect must equal ``condambig-score`` on the same questions. Fixture data only.

The lm-eval run and the Inspect run with local agents are made once, by a module fixture,
and ``condambig-score`` scores the questions of both in one interpreter (its console
script's ``main`` once per question file): each start-up loads torch and the agents.
"""

from __future__ import annotations

import functools
import glob
import json
import sys
from pathlib import Path

import pytest

from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.prompts import candidate_order, clean_question
from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

PIPELINE_METRICS = ("f1_incomplete", "f1_response", "f1_complete", "em_incomplete",
                    "em_response", "em_complete", "f1_recovery", "em_recovery", "mfrr",
                    "improved_rate")


def _env(cache: Path, **extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1",
                          CONDAMBIG_CACHE_DIR=str(cache), **extra)


_run = functools.partial(run_ok, timeout=900)  # the agents load two models


# condambig-score's console script (condambig_tasks.cli:main) once per argument list in one
# interpreter, each printed JSON result saved to the file named last
_SCORE_RUNS = """
import contextlib, io, json, sys
from condambig_tasks.cli import main
printed = []
for arguments in json.loads(sys.argv[1]):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(arguments)
    assert code == 0, (arguments, code)
    printed.append(json.loads(out.getvalue()))
with open(sys.argv[2], "w") as file:
    json.dump(printed, file)
"""


def _score_cli(runs: list[tuple[str, dict[str, str]]], agent: Path, tmp: Path) -> list[dict]:
    """condambig-score on each (split, questions), in one interpreter (see _SCORE_RUNS)."""
    arguments = []
    for index, (split, questions) in enumerate(runs):
        path = tmp / f"questions_{index}_{split}.json"
        path.write_text(json.dumps([{"id": k, "question": v} for k, v in questions.items()]))
        arguments.append(["hotpot_flm", "--questions", str(path), "--split", split,
                          "--answering-agent", str(agent), "--downstream-model", str(agent),
                          "--device", "cpu"])
    printed = tmp / "scored.json"
    _run([sys.executable, "-c", _SCORE_RUNS, json.dumps(arguments), str(printed)],
         _env(tmp / "cli-cache"), tmp)
    return json.loads(printed.read_text())


def _assert_same(framework: dict[str, float], cli: dict) -> None:
    for name in PIPELINE_METRICS:
        expected = cli["metrics"][name]
        value = framework[name]
        if expected is None:
            assert value is None or value != value, name  # NaN: recovery undefined
        else:
            assert value == pytest.approx(expected), name


def _inspect(arguments: list[str], tmp: Path, env: dict[str, str]) -> dict:
    logs = tmp / "logs"
    _run([executable("inspect"), "eval", "condambig/hotpot_flm", *arguments, "--log-dir",
          str(logs), "--log-format", "json", "--display", "none"], env, tmp)
    return _inspect_log(logs)


def _inspect_log(logs: Path) -> dict:
    log = json.loads(Path(glob.glob(f"{logs}/*.json")[0]).read_text())
    assert log["status"] == "success", log.get("error")
    return log


def _metrics(log: dict) -> dict[str, float]:
    [scorer] = log["results"]["scores"]
    return {name: entry["value"] for name, entry in scorer["metrics"].items()}


@pytest.fixture(scope="module")
def local_agent_runs(tiny_causal_lm, tiny_t5, tmp_path_factory) -> dict:
    """The lm-eval run of both tasks and the Inspect run with local agents (shared by the
    two tests comparing them with condambig-score, which scores the questions of both runs
    in one process)."""
    tmp = tmp_path_factory.mktemp("hotpot_runs")
    out, logs = tmp / "out", tmp / "logs"
    metadata = json.dumps({"answering_agent": str(tiny_t5), "downstream_model": str(tiny_t5),
                           "agent_device": "cpu"})
    commands = {
        "lm_eval": [executable("lm_eval"), "--model", "hf", "--model_args",
                    f"pretrained={tiny_causal_lm},dtype=float32", "--device", "cpu",
                    "--tasks", "hotpot_flm,hotpot_flm_test", "--limit", "3", "--gen_kwargs",
                    "max_gen_toks=16", "--metadata", metadata, "--output_path", str(out),
                    "--log_samples"],
        "inspect": [executable("inspect"), "eval", "condambig/hotpot_flm",
                    "--model", f"hf/{tiny_causal_lm}", "--limit", "3", "--max-tokens", "16",
                    "-T", f"answering_agent={tiny_t5}", "-T", f"downstream_model={tiny_t5}",
                    "-T", "agent_device=cpu", "--log-dir", str(logs), "--log-format", "json",
                    "--display", "none"],
    }
    for name, command in commands.items():
        _run(command, _env(tmp / f"cache-{name}"), tmp)
    results = json.loads(Path(glob.glob(f"{out}/**/results_*.json", recursive=True)[0])
                         .read_text())
    lm_eval_samples = {}
    for task in ("hotpot_flm", "hotpot_flm_test"):
        samples_file = glob.glob(f"{out}/**/samples_{task}_*.jsonl", recursive=True)[0]
        lm_eval_samples[task] = [json.loads(line)
                                 for line in Path(samples_file).read_text().splitlines()]
    log = _inspect_log(logs)
    inspect_questions = {s["id"]: clean_question(s["output"]["completion"])
                         for s in log["samples"]}
    scored = _score_cli(
        [("full", {s["doc"]["id"]: s["resps"][0][0] for s in lm_eval_samples["hotpot_flm"]}),
         ("test", {s["doc"]["id"]: s["resps"][0][0]
                   for s in lm_eval_samples["hotpot_flm_test"]}),
         ("full", inspect_questions)], tiny_t5, tmp)
    return {"lm_eval": results, "lm_eval_samples": lm_eval_samples, "inspect": log,
            "cli": {"hotpot_flm": scored[0], "hotpot_flm_test": scored[1],
                    "inspect": scored[2]}}


def test_lm_eval_both_tasks_equal_condambig_score(local_agent_runs):
    results = local_agent_runs["lm_eval"]
    for task in ("hotpot_flm", "hotpot_flm_test"):
        metrics = {key.split(",")[0]: value for key, value in results["results"][task].items()
                   if key.endswith(",none") and "_stderr" not in key}
        assert set(PIPELINE_METRICS) | {"empty_question_rate"} <= set(metrics)
        samples = local_agent_runs["lm_eval_samples"][task]
        assert len(samples) == 3
        assert all(s["arguments"]["gen_args_0"]["arg_0"].endswith("You can ask:") for s in samples)
        # condambig-score on {id: the sample's response} of this task's split
        _assert_same(metrics, local_agent_runs["cli"][task])


def test_inspect_local_agents_equal_condambig_score(local_agent_runs):
    log = local_agent_runs["inspect"]
    metrics = _metrics(log)
    assert set(PIPELINE_METRICS) <= set(metrics)
    samples = log["samples"]
    assert len(samples) == 3
    score = next(iter(samples[0]["scores"].values()))
    assert {"question_asked", "returned_fact", "masked_fact", "answer_incomplete",
            "answer_response", "answer_complete"} <= set(score["metadata"])
    questions = {s["id"]: clean_question(s["output"]["completion"]) for s in samples}
    assert questions[samples[0]["id"]] == score["metadata"]["question_asked"]
    # condambig-score on these questions, on the full split
    _assert_same(metrics, local_agent_runs["cli"]["inspect"])


def test_inspect_roles_run_the_generative_agent(tmp_path, monkeypatch):
    """Repeater questions; the `answerer` role names the masked fact's number and the
    `downstream` role answers right exactly when the masked fact is in its context."""
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    examples = load_examples("full")
    rules = []
    for example in examples:
        shown = candidate_order(example.id, len(example.candidates)).index(example.masked_index)
        rules.append({"contains": f"Question: {example.question}\n\n", "reply": str(shown)})
    for example in examples:
        rules.append({"contains": example.masked_fact.sentence, "reply": example.answer})
    with JudgeServer({"rules": rules, "default": {"reply": "unknown"}}) as server:
        log = _inspect(
            ["--model", "none", "-T", "questioner=repeater",
             "--model-role", "answerer=openai-api/loopback/answerer",
             "--model-role", "downstream=openai-api/loopback/downstream"],
            tmp_path, _env(tmp_path / "cache", LOOPBACK_BASE_URL=server.base_url,
                           LOOPBACK_API_KEY="test-key"),
        )
    metrics = _metrics(log)
    assert metrics["mfrr"] == 1.0
    assert metrics["f1_complete"] == 1.0 and metrics["f1_response"] == 1.0
    assert metrics["f1_incomplete"] == 0.0
    assert metrics["f1_recovery"] == pytest.approx(100.0)
    assert metrics["improved_rate"] == 1.0
    score = next(iter(log["samples"][0]["scores"].values()))
    assert score["metadata"]["answering_agent"] == "role answerer: openai-api/loopback/answerer"
    # the provenance block names the models the roles put in place of the checkpoints
    models = log["eval"]["metadata"]["provenance"]["models"]
    assert models["answering_agent"] == "role answerer: openai-api/loopback/answerer"
    assert models["downstream_model"] == "role downstream: openai-api/loopback/downstream"
    assert log["eval"]["headline_metric"]["metric"] == "f1_recovery"
    # the repeater asks the example's own question, found by the sample's record digest
    # (the sample carries no record: condambig.task_items)
    questions = {example.id: example.question for example in examples}
    assert score["metadata"]["question_asked"] == questions[log["samples"][0]["id"]]
    assert set(log["samples"][0]["metadata"]) == {"record_sha256"}


def test_repeater_baseline_through_the_cli(tiny_t5, tmp_path):
    record = tmp_path / "repeater.json"
    result = _run([executable("condambig-score"), "hotpot_flm", "--questions", "repeater",
                   "--split", "test", "--answering-agent", str(tiny_t5), "--downstream-model",
                   str(tiny_t5), "--record", str(record)], _env(tmp_path / "cache"), tmp_path)
    output = json.loads(result.stdout)
    assert output["n_scored"] == 10 and output["options"]["split"] == "test"
    assert set(PIPELINE_METRICS) <= set(output["metrics"])
    assert "1 of 11 annotated rows skipped" in result.stderr
    # the run record of a run scored in the corpus step (agents): its samples give the
    # printed numbers again, which is what the report checks before using them
    from condambig_tasks.run_logs import read_results, read_scored_samples

    [run] = read_results([record]).runs
    scored = read_scored_samples(run)
    assert scored.reason is None and len(scored.samples) == 10
    assert run.metrics == output["metrics"]
