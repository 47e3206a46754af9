"""AmbigNQ and Abg-CoQA through the real ``lm_eval``, ``inspect eval`` and ``condambig-score``.

Both benchmarks run in the same command to keep CI time down. Two models under evaluation,
both loopback OpenAI-compatible servers (lm-eval's ``local-chat-completions``, Inspect's
``openai-api``; the ``hf`` route of every task is run by tests/real_model/): one parroting
each prompt (junk replies, a different one per item, judge-free: every metric is still
reported and equals ``condambig-score`` on the same outputs) and one replying with scripted
outputs (hand-computed numbers). ``condambig-score`` runs in process (its ``main``).
"""

from __future__ import annotations

import glob
import json
import math
import subprocess
from pathlib import Path

import pytest
import yaml
from lm_eval.api.metrics import unweighted_mean_stderr

from condambig_tasks import registry
from tests.abg_coqa.scripted_outputs import EXPECTED, EXPECTED_JUDGE, judge_rules
from tests.abg_coqa.scripted_outputs import RAW_OUTPUTS as ABG_OUTPUTS
from tests.ambignq.scripted_outputs import RAW_OUTPUTS as AMBIGNQ_OUTPUTS
from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support import lm_eval_results, warm_start
from tests.support.headline import assert_headline_first
from tests.support.judge_server import JudgeServer
from tests.support.score_in_process import ScoreCli, score_cli_fixture

pytestmark = pytest.mark.e2e

AMBIGNQ_METRICS = ["f1_answer_all", "f1_answer_multi", "f1_bleu1", "f1_bleu2", "f1_bleu3",
                   "f1_bleu4", "f1_edit_f1", "parse_rate"]
ABG_METRICS = {
    "detection": ["precision", "recall", "f1", "answer_f1", "parse_rate"],
    "clarification": ["bleu1", "bleu2", "bleu3", "bleu4", "parse_rate"],
    "clarified_qa": ["f1", "parse_rate"],
}
TASKS = ["ambignq", *(f"abg_coqa_{subtask}" for subtask in ABG_METRICS)]


def _env(**extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1", **extra)


@pytest.fixture(scope="module")
def junk_server():
    """The junk model: each prompt copied back as the reply (nothing a task asks for)."""
    with JudgeServer({"default": {"echo": "only"}}) as server:
        yield server


@pytest.fixture
def score_cli(monkeypatch, capsys) -> ScoreCli:
    return score_cli_fixture(monkeypatch, capsys)


@pytest.fixture(scope="module")
def scripted_server():
    """Answers each fixture prompt (AmbigNQ dev, Abg-CoQA val) with its scripted output, and
    judges the clarification questions (judge rules first: judge prompts quote the task prompt)."""
    questions = json.loads((FIXTURE_DATA / "ambignq" / "dev_light.json").read_text())
    rules = judge_rules()
    rules += [{"contains": f"Question: {q['question']}", "reply": AMBIGNQ_OUTPUTS[q["id"]]} for q in questions]
    abg_coqa = registry.get("abg_coqa")
    for subtask, outputs in ABG_OUTPUTS.items():
        options = abg_coqa.options({"subtask": subtask, "split": "val"})
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
            items = abg_coqa.load(options)
        rules += [{"contains": abg_coqa.prompt(item, options).strip(),
                   "reply": outputs[abg_coqa.item_id(item)]} for item in items]
    with JudgeServer({"rules": rules, "default": {"reply": "unscripted prompt"}}) as server:
        yield server


def _lm_eval(arguments: list[str], out: Path, env: dict[str, str],
             judge: str | None = None) -> tuple[dict, dict, dict]:
    """Runs lm_eval (stdout and stderr in one stream, as ``2>&1`` gives it) and checks what
    every run of ours gives besides the metrics: a stderr per metric (N/A only where undefined), the
    outputs digest, and each headline's line after the table (``judge``: its model)."""
    command = [executable("lm_eval"), *arguments, "--tasks", "ambignq,abg_coqa",
               "--output_path", str(out), "--log_samples"]
    env = {key: value for key, value in env.items() if key != "PYTHONUNBUFFERED"}
    run = warm_start.run(command, env=env, cwd=out.parent, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=600)
    assert run.returncode == 0, f"lm_eval failed:\n{run.stdout[-8000:]}"
    results = json.loads(Path(glob.glob(f"{out}/**/results_*.json", recursive=True)[0]).read_text())
    lm_eval_results.assert_stderrs_are_numbers(results, out, TASKS)
    lm_eval_results.assert_outputs_digest(results, out, TASKS)
    lm_eval_results.assert_after_the_table(run.stdout, [
        *(lm_eval_results.headline_line(results, task,
                                        judge if task == "abg_coqa_clarification" else None)
          for task in TASKS),
        lm_eval_results.group_line(results, "abg_coqa", TASKS[1:])])
    if judge is None:
        lm_eval_results.assert_stderrs_are_uncertainty(results, out, TASKS)
    leaf_stderrs = [results["results"][task]["suite_score_stderr,none"] for task in TASKS[1:]]
    group_stderr = results["results"]["abg_coqa"]["suite_score_stderr,none"]
    if "N/A" not in leaf_stderrs:  # lm-eval's own combination of the leaves' numbers
        assert group_stderr == pytest.approx(unweighted_mean_stderr(leaf_stderrs))
    metrics, outputs = {}, {}
    for task in TASKS:
        metrics[task] = {key.split(",")[0]: value for key, value in results["results"][task].items()
                         if key.endswith(",none") and "_stderr" not in key}
        samples_file = glob.glob(f"{out}/**/samples_{task}_*.jsonl", recursive=True)[0]
        samples = [json.loads(line) for line in Path(samples_file).read_text().splitlines()]
        outputs[task] = {sample["doc"]["id"]: sample["resps"][0][0] for sample in samples}
    return metrics, outputs, results


def _assert_records(records: Path, metrics: dict, outputs: dict, results: dict) -> None:
    """``CONDAMBIG_RECORD_DIR``: one run record per task, holding the run's numbers, its
    outputs and its samples, the judged ones included (lm-eval's samples file holds only
    the outputs of a task judged in its aggregation step), which give the numbers again."""
    from condambig_tasks.run_logs import read_results, read_scored_samples

    found = read_results([records])
    assert sorted(run.task for run in found.runs) == sorted(TASKS) and not found.notices
    for run in found.runs:
        record = json.loads(Path(run.source).read_text())
        assert run.model == "scripted" and record["source"]["task"] == run.task
        assert {row["id"]: row["output"] for row in record["outputs"]} == outputs[run.task]
        provenance = dict(results["configs"][run.task]["metadata"]["provenance"])
        # the standard errors lm-eval printed are the record's, computed the same way
        assert record["uncertainty"] == provenance.pop("uncertainty")
        assert record["provenance"] == provenance
        for name, value in metrics[run.task].items():
            assert (value != value and run.metrics[name] is None) or \
                run.metrics[name] == pytest.approx(value), (run.task, name)
            printed = results["results"][run.task][f"{name}_stderr,none"]
            assert run.stderr.get(name, "N/A") == pytest.approx(printed), (run.task, name)
        scored = read_scored_samples(run)
        assert scored.reason is None and len(scored.samples) == len(outputs[run.task])
    judged = next(run for run in found.runs if run.task == "abg_coqa_clarification")
    assert judged.judge == "judge" and "judge_helpfulness" in judged.metrics


def _assert_inspect_records(records: Path, metrics: dict, outputs: dict,
                            score_cli: ScoreCli) -> None:
    """``CONDAMBIG_RECORD_DIR`` in Inspect: one record per task, made from its log, with the
    numbers the run printed, its outputs and samples; rescored, a record gives them again.
    It is read as the Inspect run: the register lists it as it lists the run's log."""
    from condambig_tasks import register
    from condambig_tasks.run_logs import INSPECT, read_results, read_scored_samples

    found = read_results([records])
    assert sorted(run.task for run in found.runs) == sorted(TASKS) and not found.notices
    for run in found.runs:
        assert run.model == "openai-api/loopback/scripted" and run.framework == INSPECT
        log = Path(json.loads(Path(run.source).read_text())["source"]["path"])
        from_record, from_log = register.read_run(run.source), register.read_run(log)
        assert (register.report_row(from_record), register.eval_command(from_record),
                from_record.version, from_record.task) == \
            (register.report_row(from_log), register.eval_command(from_log), from_log.version,
             from_log.task), run.task
        for name, value in metrics[run.task].items():
            if not name.endswith("_stderr") and name != "stderr":
                assert (value != value and run.metrics[name] is None) or \
                    run.metrics[name] == pytest.approx(value), (run.task, name)
        assert read_scored_samples(run).reason is None
        record = json.loads(Path(run.source).read_text())
        assert {row["id"]: row["output"] for row in record["outputs"]} == outputs[run.task]
    # a judge-free task's record rescored: the same numbers, its digests checked
    record = next(run.source for run in found.runs if run.task == "ambignq")
    again, _ = score_cli(["ambignq", "--from-log", str(record)])
    assert again["source"]["outputs_sha256_matched"] is True
    assert again["source"]["scoring_sha256_matched"] is True
    _assert_same(metrics["ambignq"], again["metrics"], AMBIGNQ_METRICS)


def _assert_read_once(records: Path, framework_output: Path) -> None:
    """The records and the framework's own output given together: each task's run is read
    once, from its record, and a notice per task says so (a run compared with itself)."""
    from condambig_tasks.run_logs import read_results

    found = read_results([framework_output, records])
    assert sorted(run.task for run in found.runs) == sorted(TASKS)
    assert all(run.per_sample == run.source and records in run.source.parents
               for run in found.runs)
    assert sum(" run (task " in notice and "read once, from" in notice
               for notice in found.notices) == len(TASKS), found.notices


def _inspect(arguments: list[str], log_dir: Path, env: dict[str, str]) -> tuple[dict, dict]:
    run_ok([executable("inspect"), "eval", *(f"condambig/{task}" for task in TASKS), *arguments,
          "--log-dir", str(log_dir), "--log-format", "json", "--display", "none"], env, log_dir.parent)
    metrics, outputs = {}, {}
    for path in glob.glob(f"{log_dir}/*.json"):
        log = json.loads(Path(path).read_text())
        assert log["status"] == "success", log.get("error")
        task = log["eval"]["task"].split("/")[-1]
        [scorer] = log["results"]["scores"]
        metrics[task] = {name: entry["value"] for name, entry in scorer["metrics"].items()}
        assert_headline_first(log["eval"]["metadata"], log["eval"]["headline_metric"],
                              list(metrics[task]))
        outputs[task] = {sample["id"]: sample["output"]["completion"] for sample in log["samples"]}
    assert set(metrics) == set(TASKS)
    return metrics, outputs


# condambig-score's numbers per (task, outputs, split): the same command gives the same
# numbers, so it runs once per module (the scripted lm_eval and Inspect runs give the same
# outputs to most tasks)
_CLI_METRICS: dict[tuple[str, str, str], dict] = {}


def _score_cli(task: str, outputs: dict[str, str], tmp: Path, split: str,
               score_cli: ScoreCli) -> dict:
    rows = json.dumps([{"id": key, "output": value} for key, value in outputs.items()])
    if (task, rows, split) in _CLI_METRICS:
        return _CLI_METRICS[task, rows, split]
    pred = tmp / f"{task}.json"
    pred.write_text(rows)
    if task == "ambignq":
        arguments = ["ambignq"]
    else:
        arguments = ["abg_coqa", "--subtask", task.removeprefix("abg_coqa_"), "--split", split]
    # items the run did not generate for (--limit) are left out of condambig-score's numbers
    result, _ = score_cli([*arguments, "--pred", str(pred)])
    _CLI_METRICS[task, rows, split] = result["metrics"]
    return _CLI_METRICS[task, rows, split]


def _names(task: str) -> list[str]:
    return AMBIGNQ_METRICS if task == "ambignq" else ABG_METRICS[task.removeprefix("abg_coqa_")]


def _assert_same(framework: dict[str, float], cli: dict[str, float], names: list[str]) -> None:
    for name in names:
        if cli[name] is None:  # no sample has a value: null in JSON, NaN in the frameworks
            assert math.isnan(framework[name]), name
        else:
            assert framework[name] == pytest.approx(cli[name]), name


def _check_all(metrics: dict, outputs: dict, tmp: Path, split: str, score_cli: ScoreCli,
               judged: bool = False) -> dict[str, dict]:
    judge_names = set(EXPECTED_JUDGE)
    if judged:
        clarification = metrics["abg_coqa_clarification"]
        assert {name: clarification[name] for name in judge_names} == pytest.approx(EXPECTED_JUDGE)
    else:  # no judge configured: no judge metric at all, not a stand-in value
        assert not judge_names & set(metrics["abg_coqa_clarification"])
    cli_results = {}
    for task in TASKS:
        assert set(_names(task)) <= set(metrics[task]), task
        cli_results[task] = _score_cli(task, outputs[task], tmp, split, score_cli)
        _assert_same(metrics[task], cli_results[task], _names(task))
    return cli_results


def test_lm_eval_junk_model(junk_server, tmp_path, score_cli):
    metrics, outputs, _ = _lm_eval(
        ["--model", "local-chat-completions", "--apply_chat_template", "--model_args",
         f"model=junk,base_url={junk_server.base_url}/chat/completions,tokenizer_backend=None",
         "--limit", "2"], tmp_path / "out", _env(OPENAI_API_KEY="test-key"))
    assert all(1 <= len(outputs[task]) <= 2 for task in TASKS)  # the test fixture has 1 ambiguous turn
    assert len({output for task in TASKS for output in outputs[task].values()}) > 1  # junk varies
    _check_all(metrics, outputs, tmp_path, "test", score_cli)


def test_lm_eval_scripted_model_equals_hand_computed_numbers(scripted_server, tmp_path, score_cli):
    judge = {"CONDAMBIG_JUDGE_MODEL": "judge", "CONDAMBIG_JUDGE_BASE_URL": scripted_server.base_url,
             "CONDAMBIG_JUDGE_API_KEY": "test-key", "CONDAMBIG_CACHE_DIR": str(tmp_path / "cache")}
    records = tmp_path / "records"
    metrics, outputs, results = _lm_eval(
        ["--model", "local-chat-completions", "--apply_chat_template", "--model_args",
         f"model=scripted,base_url={scripted_server.base_url}/chat/completions,tokenizer_backend=None",
         "--metadata", '{"split": "val"}'],
        tmp_path / "out", _env(OPENAI_API_KEY="test-key", CONDAMBIG_RECORD_DIR=str(records),
                               **judge), judge="judge")
    assert outputs["ambignq"] == AMBIGNQ_OUTPUTS
    _check_all(metrics, outputs, tmp_path, "val", score_cli, judged=True)
    _assert_records(records, metrics, outputs, results)
    _assert_read_once(records, tmp_path / "out")
    # every leaf of the group has two conversations or more: the group's stderr is a number
    assert isinstance(results["results"]["abg_coqa"]["suite_score_stderr,none"], float)
    for subtask, expected in EXPECTED.items():
        for name, value in expected.items():
            assert metrics[f"abg_coqa_{subtask}"][name] == pytest.approx(value), (subtask, name)


def test_inspect_junk_model(junk_server, tmp_path, score_cli):
    metrics, outputs = _inspect(["--model", "openai-api/subject/junk", "--limit", "2", "-T", "max_tokens=16"],
                                tmp_path / "logs",
                                _env(SUBJECT_BASE_URL=junk_server.base_url, SUBJECT_API_KEY="test-key"))
    assert len({output for task in TASKS for output in outputs[task].values()}) > 1  # junk varies
    _check_all(metrics, outputs, tmp_path, "test", score_cli)


def test_inspect_scripted_model_equals_hand_computed_numbers(scripted_server, tmp_path, score_cli):
    records = tmp_path / "records"
    metrics, outputs = _inspect(
        ["--model", "openai-api/loopback/scripted", "--model-role", "grader=openai-api/loopback/judge",
         "-T", "split=val"], tmp_path / "logs",
        _env(LOOPBACK_BASE_URL=scripted_server.base_url, LOOPBACK_API_KEY="test-key",
             CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"), CONDAMBIG_RECORD_DIR=str(records)))
    # Inspect's OpenAI provider moves a <think> block into the reasoning content
    assert outputs["ambignq"] == {key: value.split("</think>")[-1] for key, value in AMBIGNQ_OUTPUTS.items()}
    _check_all(metrics, outputs, tmp_path, "val", score_cli, judged=True)
    _assert_inspect_records(records, metrics, outputs, score_cli)
    _assert_read_once(records, tmp_path / "logs")
    # the register given the logs and the records: one row per run
    from condambig_tasks import register

    written = register.write_entries(tmp_path / "register", "https://example.org/r", "0" * 40,
                                     [str(tmp_path / "logs"), str(records)], [], [])
    rows = {path.parent.name: yaml.safe_load(path.read_text()).get("evaluation_report")
            for path in written}
    assert all(len(rows[task]["results"]) == 1 for task in TASKS), rows
    for subtask, expected in EXPECTED.items():
        for name, value in expected.items():
            assert metrics[f"abg_coqa_{subtask}"][name] == pytest.approx(value), (subtask, name)
