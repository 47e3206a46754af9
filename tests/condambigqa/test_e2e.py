"""CondAmbigQA through the real `lm_eval`, `inspect eval` and `condambig-score` commands.

The model under evaluation is a loopback OpenAI-compatible server giving one fixed reply
(lm-eval's ``local-chat-completions``, Inspect's ``openai-api``: the model's route is not the
point here, and tests/real_model/ runs every task's ``hf`` route) or lm-eval's ``dummy``
model (junk replies, judge-free); the judge is a loopback OpenAI-compatible server whose
scores the test sets. The same raw outputs must get the same numbers through all three
front ends (``condambig-score`` run in process, through its ``main``).
"""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support import warm_start
from tests.support.headline import assert_headline_first
from tests.support.judge_server import JudgeServer
from tests.support.score_in_process import ScoreCli, score_cli_fixture

pytestmark = pytest.mark.e2e

SCRIPTED_REPLY = json.dumps({"conditions": [
    {"condition": "The question asks about the men's race in 2019.",
     "answer": "Ben Runner won the men's race in 2019.", "citations": ["Fragment 1", "Fragment 9"]},
    {"condition": "Women's race", "answer": "Ana Runner", "citations": ["[2]", "3"]},
]})
JUDGE_SCRIPT = {
    "rules": [{"contains": "Ben Runner won the men", "scores": {"8": 0.5, "9": 0.5}},
              {"contains": "Ana Runner", "scores": {"6": 0.25, "7": 0.75}}],
    "default": {"scores": {"2": 1.0}},
}
JUDGE_METRICS = {"condition_score", "answer_score", "combined_score"}
EXACT_METRICS = {"citation_score", "answer_count", "count_difference", "parse_rate"}
SKIP_MESSAGE = "no judge configured"


@pytest.fixture(scope="module")
def subject():
    """The model under evaluation: SCRIPTED_REPLY to every prompt."""
    with JudgeServer({"default": {"reply": SCRIPTED_REPLY}}) as server:
        yield server


@pytest.fixture
def score_cli(monkeypatch, capsys) -> ScoreCli:
    return score_cli_fixture(monkeypatch, capsys)


@pytest.fixture(scope="module")
def judge_server():
    with JudgeServer(JUDGE_SCRIPT) as server:
        yield server


def _judge_env(server: JudgeServer, cache: Path) -> dict[str, str]:
    return {"CONDAMBIG_JUDGE_MODEL": "loopback-judge", "CONDAMBIG_JUDGE_BASE_URL": server.base_url,
            "CONDAMBIG_JUDGE_API_KEY": "test-key", "CONDAMBIG_JUDGE_CACHE": str(cache)}


def _lm_eval(model: list[str], tasks: str, out: Path, env: dict[str, str],
             *extra: str) -> tuple[dict, list[dict], str]:
    """The run's results (all its tasks), condambigqa's samples and the run's output."""
    result = run_ok([executable("lm_eval"), *model, "--tasks", tasks, "--limit", "3",
                     "--gen_kwargs", "max_gen_toks=48", "--output_path", str(out),
                     "--log_samples", *extra], env, out.parent)
    results = json.loads(Path(glob.glob(f"{out}/**/results_*.json", recursive=True)[0]).read_text())
    # samples_condambigqa_<date>.jsonl, not those of the group's other settings
    [samples_file] = [path for path in glob.glob(f"{out}/**/samples_condambigqa_*.jsonl",
                                                 recursive=True)
                      if re.fullmatch(r"samples_condambigqa_\d.*", Path(path).name)]
    samples = [json.loads(line) for line in Path(samples_file).read_text().splitlines()]
    return results["results"], samples, result.stderr + result.stdout


@pytest.fixture(scope="module")
def judged_group_run(subject, judge_server, tmp_path_factory):
    """One judged lm_eval run of the group (the five settings, condambigqa among them) on
    the scripted model, shared by the tests of the judged scores and of the group."""
    tmp = tmp_path_factory.mktemp("judged_group")
    judge_server.reset()
    subject.reset()
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp / "cache"), OPENAI_API_KEY="subject-key",
                         **_judge_env(judge_server, tmp / "judge.sqlite"))
    results, samples, log = _lm_eval(
        ["--model", "local-chat-completions", "--model_args",
         f"model=scripted,base_url={subject.base_url}/chat/completions,tokenizer_backend=None"],
        "condambigqa_all", tmp / "out", env, "--apply_chat_template")
    return {"results": results, "samples": samples, "log": log, "env": env, "tmp": tmp,
            "sent": judge_server.stats()["requests"], "generated": subject.stats()["requests"]}


def _metrics(task_results: dict) -> dict[str, float]:
    return {k.split(",")[0]: v for k, v in task_results.items()
            if k.endswith(",none") and "_stderr" not in k}


def _score_cli(outputs: list[dict], tmp: Path, env: dict[str, str],
               score_cli: ScoreCli) -> tuple[dict, list[dict]]:
    (tmp / "outputs.json").write_text(json.dumps(outputs))
    result, _ = score_cli(["condambigqa", "--outputs", str(tmp / "outputs.json"),
                           "--per-question", str(tmp / "per_question.jsonl")], env)
    rows = (tmp / "per_question.jsonl").read_text().splitlines()
    return result, [json.loads(row) for row in rows]


def test_lm_eval_without_judge_reports_exact_metrics_and_says_so_once(tmp_path):
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"))
    # lm-eval's dummy model: the point is the judge-free scoring, not the model's route
    results, samples, log = _lm_eval(["--model", "dummy"], "condambigqa", tmp_path / "out", env)
    metrics = _metrics(results["condambigqa"])
    assert EXACT_METRICS <= set(metrics)
    assert not JUDGE_METRICS & set(metrics)
    assert log.count(SKIP_MESSAGE) == 1
    assert len(samples) == 3
    # the dummy model writes junk ("lol"): counted parse failures, zero pairs, never a crash
    assert metrics["parse_rate"] == 0.0 and metrics["citation_score"] == 0.0


def test_lm_eval_with_judge_matches_condambig_score(judged_group_run, judge_server, score_cli):
    metrics = _metrics(judged_group_run["results"]["condambigqa"])
    samples, env, tmp = judged_group_run["samples"], judged_group_run["env"], judged_group_run["tmp"]
    assert JUDGE_METRICS | EXACT_METRICS <= set(metrics)
    # chat template used: the prompt went out as a chat, one generation per sample
    [chat] = samples[0]["arguments"]["gen_args_0"]["arg_0"]  # lm-eval's JsonChatStr
    [message] = json.loads(chat)
    assert message["role"] == "user" and "Question:" in message["content"]
    assert judged_group_run["generated"] == 5 * len(samples)  # the five settings, --limit 3
    assert SKIP_MESSAGE not in judged_group_run["log"]
    assert metrics["parse_rate"] == 1.0 and metrics["judge_failed"] == 0
    assert metrics["out_of_range_citations"] == 4  # Fragment 9 (x3) and 3 on a 2-fragment question
    assert judged_group_run["sent"] > 0

    outputs = [{"id": s["doc"]["id"], "output": s["resps"][0][0]} for s in samples]
    sent = judge_server.stats()["requests"]
    summary, _ = _score_cli(outputs, tmp, env, score_cli)
    for name in JUDGE_METRICS | EXACT_METRICS:
        assert summary["metrics"][name] == pytest.approx(metrics[name]), name
    assert judge_server.stats()["requests"] == sent  # the CLI was served from the cache


def test_inspect_with_grader_role_matches_condambig_score(subject, judge_server, tmp_path,
                                                          score_cli):
    from inspect_ai.log import read_eval_log

    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                         LOOPBACK_BASE_URL=judge_server.base_url, LOOPBACK_API_KEY="test-key",
                         SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="subject-key")
    run_ok([executable("inspect"), "eval", "condambig/condambigqa", "--model",
            "openai-api/subject/scripted",
          "--model-role", "grader=openai-api/loopback/loopback-judge", "--limit", "3",
          "--log-dir", str(tmp_path / "logs"), "--display", "plain"], env, tmp_path)
    log = read_eval_log(glob.glob(f"{tmp_path}/logs/*.eval")[0])
    assert log.status == "success"
    reported = {name: m.value for s in log.results.scores for name, m in s.metrics.items()}
    assert JUDGE_METRICS | EXACT_METRICS <= set(reported)
    assert assert_headline_first(log.eval.metadata, log.eval.headline_metric,
                                 list(reported)) == "combined_score"
    per_sample = {}
    for sample in log.samples:
        score = next(iter(sample.scores.values()))
        assert "matched" in score.explanation and "answer=" in score.explanation
        per_sample[str(sample.id)] = score.value
    outputs = [{"id": str(s.id), "output": s.output.completion} for s in log.samples]

    cli_env = {**env, **_judge_env(judge_server, tmp_path / "judge.sqlite")}
    summary, per_question = _score_cli(outputs, tmp_path, cli_env, score_cli)
    for name in JUDGE_METRICS | EXACT_METRICS:
        assert summary["metrics"][name] == pytest.approx(reported[name]), name
    for row in per_question:
        inspect_value = per_sample[row["id"]]
        for key in ("condition_score", "answer_score", "citation_score", "combined_score"):
            assert row["values"][key] == pytest.approx(inspect_value[key]), (row["id"], key)


def test_lm_eval_group_runs_the_five_settings(judged_group_run):
    results = judged_group_run["results"]
    settings = ("", "_gold_conditions", "_no_conditions", "_closed_book",
                "_closed_book_conditions")
    for suffix in settings:
        metrics = _metrics(results[f"condambigqa{suffix}"])
        assert metrics["parse_rate"] == 1.0
        cites = "closed_book" not in suffix
        assert ("citation_score" in metrics) == cites, suffix
        assert ("out_of_range_citations" in metrics) == cites, suffix


GRADED_TASK = '''
from inspect_ai import task, task_with

from condambig.condambigqa import condambigqa


@task
def graded():
    return task_with(condambigqa(), model_roles={"grader": "openai-api/loopback/loopback-judge"})
'''


def _without_openai_key(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in {"OPENAI_API_KEY", "AZUREAI_OPENAI_API_KEY"}}


def test_inspect_uses_a_grader_bound_with_task_with(tmp_path):
    """inspect_evals' pattern: the grader role bound on the task, not on the command line.
    The default grader's provider can be built (a key is set, never used): the bound one
    judges. The model under evaluation is a loopback server giving the scripted reply."""
    from inspect_ai.log import read_eval_log

    (tmp_path / "graded.py").write_text(GRADED_TASK)
    with JudgeServer(JUDGE_SCRIPT) as grader, \
            JudgeServer({"default": {"reply": SCRIPTED_REPLY}}) as subject:
        env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                             CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                             LOOPBACK_BASE_URL=grader.base_url, LOOPBACK_API_KEY="test-key",
                             SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k",
                             OPENAI_API_KEY="never-used")
        run_ok([executable("inspect"), "eval", "graded.py@graded", "--model",
                "openai-api/subject/scripted", "--limit", "2", "--log-dir", str(tmp_path / "logs"),
                "--display", "plain"], env, tmp_path)
        judged = grader.stats()["requests"]
        assert subject.stats()["requests"] == 2  # the two samples, none of the judgements
    log = read_eval_log(glob.glob(f"{tmp_path}/logs/*.eval")[0])
    assert log.status == "success"
    reported = {name for s in log.results.scores for name in s.metrics}
    assert JUDGE_METRICS <= reported
    assert log.eval.headline_metric.metric == "combined_score"
    assert judged > 1  # the check request and the judgements went to the bound grader


def test_inspect_without_a_reachable_grader_fails_before_generation(tmp_path):
    """No grader role and no key for the default grader (the paper's gpt-4o-mini): one line
    saying what to do, exit non-zero, nothing generated; -T judge=false runs judge-free."""
    with JudgeServer({}) as subject:
        env = _without_openai_key(subprocess_env(
            CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
            SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k"))
        command = [executable("inspect"), "eval", "condambig/condambigqa", "--model",
                   "openai-api/subject/m", "--limit", "2", "--log-dir", str(tmp_path / "logs"),
                   "--display", "plain"]
        failed = warm_start.run(command, env=env, cwd=tmp_path, capture_output=True,
                                text=True, timeout=600)
        assert failed.returncode != 0
        lines = [line for line in failed.stderr.splitlines() if line.startswith("condambig:")]
        assert len(lines) == 1, failed.stderr[-3000:]
        assert "--model-role grader=<model>" in lines[0] and "-T judge=false" in lines[0]
        assert "openai/gpt-4o-mini" in lines[0] and "OPENAI_API_KEY" in lines[0]
        assert "Traceback" not in failed.stderr
        assert subject.stats()["requests"] == 0  # nothing generated

        run_ok([*command, "-T", "judge=false"], env, tmp_path)
        assert subject.stats()["requests"] == 2
    from inspect_ai.log import read_eval_log

    [path] = glob.glob(f"{tmp_path}/logs/*.eval")
    log = read_eval_log(path)
    assert log.status == "success" and log.eval.headline_metric.metric == "citation_score"
