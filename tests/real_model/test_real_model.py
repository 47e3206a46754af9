"""Every greedy task of the suite run by a real instruction-tuned model (SmolLM2-135M-Instruct)
through lm-eval ``hf``, Inspect ``hf``, and the served route: the same model served by
``transformers serve`` as an API model, each task through one of its two front ends (lm-eval
``local-chat-completions`` or Inspect ``openai-api``, alternating: :func:`served_route`), so
both served front ends run real outputs at the cost of one route; on the fixture data.

Checked on real generations: each run finishes, every logged output is scored with a parse
outcome, ``condambig-score --from-log`` reproduces what each front end reported, the routes
give the same greedy outputs, and the served model as the judge (which rarely writes the
verdict format) ends the run as the trust rules say. The budget is cut to
:data:`MAX_TOKENS` tokens to keep the tier short; truncated outputs are scored like others.
HotpotQA-FLM's answering agent and downstream model are the tests' tiny random T5 (the
task's own agents are flan-t5 checkpoints, a seq2seq model too, which need the hub): the
real model is the one asking the clarifying questions.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import io
import json
import math
import os
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from condambig_tasks import registry
from tests.conftest import FIXTURE_DATA, subprocess_env
from tests.support import real_model, warm_start
from tests.support.real_model import ROUTES, ServedModel, TaskRun

pytestmark = [pytest.mark.e2e, pytest.mark.realmodel]

LIMIT = 2
MAX_TOKENS = 16
# the judged runs check the trust rules on a real judge, not the outputs again: one item
# each (a 135M judge writes up to its 256-token budget, twice per failed judgement)
JUDGED_LIMIT = 1
BATCH_SIZE = 1  # batch 1 everywhere: padding in a batch changes float32 logits slightly
SPECS = real_model.greedy_tasks()
TASKS = [spec.task for spec in SPECS]
LOCAL_ROUTES = tuple(route for route in ROUTES if not route.served)
SERVED_ROUTES = tuple(route for route in ROUTES if route.served)


def served_route(task: str):
    """The served front end that runs ``task``: lm-eval and Inspect in turn down the task
    list, so each serves half the tasks and every benchmark with several tasks reaches
    both."""
    return SERVED_ROUTES[TASKS.index(task) % len(SERVED_ROUTES)]


def _env(agent: Path, **extra: str) -> dict[str, str]:
    # one thread per model process: the tier runs beside another xdist worker, and two
    # processes of two spinning OpenMP threads each on 2 cores slow both several times
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), OMP_NUM_THREADS="1",
                          **real_model.agent_environment(agent), **extra)


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    result = warm_start.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=1800)
    assert result.returncode == 0, \
        f"{' '.join(command[:3])} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def _specs(route) -> list:
    """The tasks ``route`` runs: every task on a local route, its share on a served one."""
    return [spec for spec in SPECS if not route.served or served_route(spec.task) == route]


def _lm_eval(route, folder: Path, out: Path, env: dict[str, str],
             base_url: str | None = None) -> dict[str, TaskRun]:
    specs = _specs(route)
    _run(real_model.lm_eval_command(route, folder, [spec.task for spec in specs], out,
                                    limit=LIMIT, batch_size=BATCH_SIZE,
                                    max_gen_toks=MAX_TOKENS, base_url=base_url),
         env, out.parent)
    return real_model.lm_eval_runs(route.name, out, specs)


def _inspect(route, folder: Path, out: Path, env: dict[str, str]) -> dict[str, TaskRun]:
    specs = _specs(route)
    log_dirs = {}
    for index, (tasks, options) in enumerate(real_model.inspect_groups(specs)):
        log_dir = out / f"group{index}"
        _run(real_model.inspect_command(route, folder, tasks, log_dir, limit=LIMIT,
                                        batch_size=BATCH_SIZE, max_tokens=MAX_TOKENS,
                                        task_options={**options, "judge": "false"}),
             env, out.parent)
        log_dirs.update({spec.task: log_dir for spec in specs if spec.inspect_task in tasks
                         and dict(spec.inspect_options) == options})
    return real_model.inspect_runs(route.name, log_dirs, specs)


def _judged(folder: Path, tmp: Path, env: dict[str, str], served: ServedModel) -> dict:
    """lm-eval and Inspect runs of the judged tasks with the served model as the judge (the
    `grader` role in Inspect): a real server whose replies the tests do not script."""
    judge_env = {**env, **served.judge_environment(), "CONDAMBIG_CACHE_DIR": str(tmp / "cache")}
    lm_eval = warm_start.run(
        real_model.lm_eval_command(LOCAL_ROUTES[0], folder, list(JUDGED), tmp / "judged_lm_eval",
                                   limit=JUDGED_LIMIT, batch_size=BATCH_SIZE, max_gen_toks=MAX_TOKENS),
        env=judge_env, cwd=tmp, capture_output=True, text=True, timeout=1800)
    grader = f"openai-api/{real_model.INSPECT_SERVICE}/{real_model.SERVED_NAME}"
    inspect = warm_start.run(
        real_model.inspect_command(LOCAL_ROUTES[1], folder, [f"condambig/{task}" for task in JUDGED],
                                   tmp / "judged_inspect", limit=JUDGED_LIMIT, batch_size=BATCH_SIZE,
                                   max_tokens=MAX_TOKENS, grader=grader),
        env=judge_env, cwd=tmp, capture_output=True, text=True, timeout=1800)
    return {"tmp": tmp, "lm_eval": lm_eval, "inspect": inspect}


@pytest.fixture(scope="module")
def tier(smollm2, tiny_t5, tmp_path_factory) -> dict:
    """Every run of the tier: the local routes and the served route over the greedy tasks,
    then the judged runs; one server for the served route and the judge."""
    tmp = tmp_path_factory.mktemp("real_model")
    env = _env(tiny_t5)

    def served_chain() -> tuple[dict[str, dict[str, TaskRun]], dict]:
        # one client of the server at a time: its replies never share a batch
        with ServedModel(smollm2, tmp / "serve.log", env=env) as served:
            served_env = {**env, **served.environment()}
            lm_eval_served, inspect_served = SERVED_ROUTES
            runs = {"lm_eval_served": _lm_eval(lm_eval_served, smollm2,
                                               tmp / "lm_eval_served", served_env,
                                               served.base_url),
                    "inspect_served": _inspect(inspect_served, smollm2,
                                               tmp / "inspect_served", served_env)}
            return runs, _judged(smollm2, tmp, served_env, served)

    # the local routes beside the served chain: each command is one single-threaded process
    # (OMP_NUM_THREADS=1), so the tier's worker keeps a core busy while it would wait
    with concurrent.futures.ThreadPoolExecutor(max_workers=3) as pool:
        lm_eval_hf = pool.submit(_lm_eval, LOCAL_ROUTES[0], smollm2, tmp / "lm_eval_hf", env)
        inspect_hf = pool.submit(_inspect, LOCAL_ROUTES[1], smollm2, tmp / "inspect_hf", env)
        served = pool.submit(served_chain)
        served_runs, judged = served.result()
        runs = {"lm_eval_hf": lm_eval_hf.result(), "inspect_hf": inspect_hf.result(),
                **served_runs}
    return {"runs": runs, "judged": judged}


@pytest.fixture(scope="module")
def runs(tier) -> dict[str, dict[str, TaskRun]]:
    """route name -> task -> run."""
    return tier["runs"]


@pytest.fixture(scope="module")
def judged_runs(tier) -> dict:
    return tier["judged"]


def _rescore(run: TaskRun, agent: Path, tmp: Path, monkeypatch) -> tuple[dict, list[dict]]:
    """``condambig-score BENCHMARK --from-log LOG --per-sample FILE``, through the command's
    own ``main`` in this process: some thirty-six rescorings would otherwise spend most of their
    time starting Python (the command itself runs in subprocesses in tests/test_rescore_logs.py
    and tests/test_cli_judge.py)."""
    from condambig_tasks import cli

    for key in [key for key in os.environ if key.startswith("CONDAMBIG_JUDGE_")]:
        monkeypatch.delenv(key)
    for key, value in {"CONDAMBIG_DATA_DIR": str(FIXTURE_DATA), "HF_HUB_OFFLINE": "1",
                       **real_model.agent_environment(agent)}.items():
        monkeypatch.setenv(key, value)
    per_sample = tmp / f"{run.route}-{run.task}.jsonl"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main([run.benchmark, "--from-log", str(run.log),
                         "--per-sample", str(per_sample)])
    assert code == 0, (run.route, run.task, code)
    return (json.loads(printed.getvalue()),
            [json.loads(line) for line in per_sample.read_text().splitlines()])


def _same(left, right) -> bool:
    if left is None or right is None or (isinstance(left, float) and math.isnan(left)):
        return (left is None or math.isnan(left)) and (right is None or math.isnan(right))
    return left == pytest.approx(right, rel=1e-12, abs=1e-12)


def test_the_model_is_a_plain_hugging_face_folder(smollm2):
    from transformers import AutoConfig, AutoTokenizer

    assert (smollm2 / "model.safetensors").is_file()
    assert getattr(AutoConfig.from_pretrained(smollm2), "quantization_config", None) is None
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False,
                                           add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n") and "<|im_start|>user\nHi" in prompt


@pytest.mark.parametrize("route", [route.name for route in ROUTES])
def test_every_task_finishes_and_from_log_reproduces_it(runs, route, tiny_t5, tmp_path,
                                                        monkeypatch):
    """Every task has its outputs, each scored with a parse outcome, and rescoring the log
    gives the numbers the front end printed, from the same outputs."""

    for task, run in runs[route].items():
        assert 1 <= len(run.outputs) <= LIMIT, (route, task)
        result, samples = _rescore(run, tiny_t5, tmp_path, monkeypatch)
        assert result["source"]["outputs_sha256_matched"] is True, (route, task)
        assert result["n_scored"] == len(run.outputs) == len(samples), (route, task)
        reported = result["reported"]
        assert set(result["metrics"]) <= set(reported), (route, task)
        for name, value in result["metrics"].items():
            assert _same(reported[name], value), (route, task, name, reported[name], value)
        names = {spec.name for spec in registry.get(run.benchmark).metric_specs}
        if "parse_rate" in names:  # every output parsed or a counted failure
            assert all(sample["values"]["parse_rate"] in (0.0, 1.0) for sample in samples), \
                (route, task)


def test_the_routes_give_the_same_greedy_outputs(runs):
    """The same prompts through the same chat template, decoded greedily in float32 at batch
    size 1, in-process or served: the same text, task by task and sample by sample. Every
    task runs on both local routes and on the served route through one of its front ends,
    and each served front end runs tasks of every benchmark that has several (whatever
    the benchmarks registered)."""
    reference = runs["lm_eval_hf"]
    assert set(reference) == set(TASKS) and set(runs["inspect_hf"]) == set(TASKS)
    served = [runs[route.name] for route in SERVED_ROUTES]
    assert sorted(task for by_task in served for task in by_task) == sorted(TASKS)
    counts = Counter(spec.benchmark for spec in SPECS)
    several = {name for name, count in counts.items() if count > 1}
    for by_task in served:
        benchmarks = {spec.benchmark for spec in SPECS if spec.task in by_task}
        assert several <= benchmarks, (several, benchmarks)
    for route, by_task in runs.items():
        for task, run in by_task.items():
            assert run.outputs == reference[task].outputs, (route, task)


JUDGED = ("condambigqa", "abg_coqa_clarification")
# each judged task's judged metric, withheld when judgements fail
JUDGED_METRIC = {"condambigqa": "combined_score", "abg_coqa_clarification": "judge_helpfulness"}


def test_the_served_model_as_judge_follows_the_trust_rules_in_lm_eval(judged_runs):
    """A judgement that fails (the 135M judge seldom writes the verdict format) is never
    scored (or the judge check stops the run before generation, in one line): past judge_max_failed (0) the judged metrics and the headline are withheld with
    their reason, the results and samples are still written, and the command exits 1;
    with no failure the judged metrics are numbers and it exits 0."""
    run = judged_runs["lm_eval"]
    if not list((judged_runs["tmp"] / "judged_lm_eval").rglob("results_*.json")):
        # the judge check before generation gives the judge its timeout to answer one
        # request; a 135M model on a loaded CPU may not: one line, exit 1, nothing generated
        said = [line for line in (run.stdout + run.stderr).splitlines()
                if line.startswith("condambig:")]
        assert run.returncode == 1 and len(said) == 1, run.stderr[-3000:]
        assert "before any generation" in said[0] and real_model.SERVED_NAME in said[0]
        assert not list((judged_runs["tmp"] / "judged_lm_eval").rglob("samples_*.jsonl"))
        return
    [path] = (judged_runs["tmp"] / "judged_lm_eval").rglob("results_*.json")
    results = json.loads(path.read_text())
    assert list((judged_runs["tmp"] / "judged_lm_eval").rglob(
        "samples_abg_coqa_clarification_*.jsonl"))
    withheld = []
    for task, judged_metric in JUDGED_METRIC.items():
        values = results["results"][task]
        failed = values["judge_failed,none"]
        value = values[f"{judged_metric},none"]
        reasons = results["configs"][task]["metadata"].get("null_reasons") or {}
        if failed > 0:
            withheld.append(task)
            assert isinstance(value, float) and math.isnan(value), (task, value)
            assert "judgement" in reasons.get(judged_metric, ""), (task, reasons)
        else:
            assert isinstance(value, float) and math.isfinite(value), (task, value)
    assert run.returncode == (1 if withheld else 0), run.stderr[-3000:]
    if withheld:
        assert "condambig-score" in run.stdout + run.stderr


def test_the_served_model_as_grader_follows_the_trust_rules_in_inspect(judged_runs):
    """The same in Inspect: NaN with the reason in the log, or an `error` status saying why."""
    run = judged_runs["inspect"]
    if run.returncode != 0:
        # the grader check before generation gives the judge 20 s to answer one request; a
        # 135M model on a loaded CPU writing its whole reply may not: one line, nothing
        # generated (docs/faults.md)
        said = [line for line in run.stderr.splitlines() if line.startswith("condambig:")]
        assert run.returncode == 1 and len(said) == 1, run.stderr[-3000:]
        assert "grader=openai-api/" in said[0] and "before any generation" in said[0]
        assert not any(json.loads(path.read_text()).get("samples")
                       for path in (judged_runs["tmp"] / "judged_inspect").glob("*.json"))
        return
    logs = list((judged_runs["tmp"] / "judged_inspect").glob("*.json"))
    assert len(logs) == len(JUDGED)
    for path in logs:
        log = json.loads(path.read_text())
        if log["status"] == "error":  # the judge failed outright: the log says why
            assert log["error"]["message"], path
            continue
        [scores] = log["results"]["scores"]
        metrics = {name: entry["value"] for name, entry in scores["metrics"].items()}
        reasons = scores["metadata"].get("null_reasons") or {}
        judged_metric = JUDGED_METRIC[log["eval"]["task"].split("/")[-1]]
        if metrics["judge_failed"] > 0:
            assert math.isnan(metrics[judged_metric]), (path, metrics)
            assert judged_metric in reasons, (path, reasons)
        else:
            assert math.isfinite(metrics[judged_metric]), (path, metrics)
