"""``condambig-score --from-log``: rescoring a run from lm-eval's or Inspect's own log.

The unit tests read small hand-made logs (lm-eval sample rows as lm-eval writes them, an
Inspect log written with Inspect's own ``write_eval_log``) in process; the end-to-end tests
run the real ``lm_eval`` / ``inspect eval`` against a loopback chat-completions server
giving scripted replies (the model route is not their point: rescoring is) and check that
rescoring their logs gives every number the run printed, and that re-judging with another
judge changes only the judge metrics.
"""

from __future__ import annotations

import glob
import json
import math
import subprocess
from pathlib import Path

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.cli import main
from condambig_tasks.provenance import outputs_sha256
from tests.ambignq.scripted_outputs import RAW_OUTPUTS as AMBIGNQ_OUTPUTS
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.judge_server import JudgeServer

DATE = "2026-01-02T03-04-05.678901"
# one reply for every AmbigNQ prompt: right for fx-001 (single answer) and half of fx-002
AMBIGNQ_REPLY = json.dumps([
    {"question": "who discovered polonium with her husband?", "answer": "Marie Curie"},
    {"question": "When did the last Harbour Bridge tram run?", "answer": "1958"}])


# ---------------------------------------------------------------------- hand-made logs


def _doc(benchmark: str, item_id: str, options: dict | None = None, judge: dict | None = None):
    bench = registry.get(benchmark)
    return {"benchmark": benchmark, "id": item_id, "prompt": "(prompt)", "target": "",
            "record": "{}",
            "options": json.dumps(options_to_json(bench, bench.options(options or {})),
                                  sort_keys=True),
            "judge": json.dumps(judge or {}, sort_keys=True)}


def _write_samples(folder: Path, task: str, rows: list[dict], date: str = DATE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"samples_{task}_{date}.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _row(doc: dict, output: str, raw: str | None = None) -> dict:
    """A sample row as lm-eval writes it (raw response vs. the filtered one it scored)."""
    return {"doc_id": 0, "doc": doc, "target": "", "resps": [[output if raw is None else raw]],
            "filtered_resps": [output], "filter": "none", "metrics": []}


def _write_results(folder: Path, task_metrics: dict[str, dict], date: str = DATE) -> Path:
    results = {task: {"alias": task, **{f"{k},none": v for k, v in metrics.items()},
                      **{f"{k}_stderr,none": "N/A" for k in metrics}}
               for task, metrics in task_metrics.items()}
    path = folder / f"results_{date}.json"
    path.write_text(json.dumps({"results": results, "configs": {t: {} for t in task_metrics}}))
    return path


def _score(argv: list[str], capsys) -> tuple[int, dict | None, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, json.loads(captured.out) if code == 0 else None, captured.err


@pytest.fixture
def ambignq_log(tmp_path, use_fixture_data) -> Path:
    """An lm-eval run of ambignq over the fixture questions, hand-written."""
    folder = tmp_path / "out" / "model"
    rows = [_row(_doc("ambignq", key), output, raw="no answer")
            for key, output in AMBIGNQ_OUTPUTS.items()]
    _write_samples(folder, "ambignq", rows)
    _write_results(folder, {"ambignq": {"f1_answer_all": 0.5, "f1_answer_multi": math.nan}})
    return tmp_path / "out"


def test_lm_eval_log_scores_the_filtered_outputs_as_the_outputs_file_does(
        ambignq_log, tmp_path, capsys):
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in AMBIGNQ_OUTPUTS.items()]))
    code, expected, _ = _score(["ambignq", "--outputs", str(outputs)], capsys)
    assert code == 0
    code, result, _ = _score(["ambignq", "--from-log", str(ambignq_log)], capsys)
    assert code == 0
    assert result["metrics"] == expected["metrics"] and result["n_scored"] == len(AMBIGNQ_OUTPUTS)
    [samples] = glob.glob(f"{ambignq_log}/**/samples_ambignq_*.jsonl", recursive=True)
    assert result["source"] == {"framework": "lm_eval", "path": samples, "task": "ambignq",
                                "provenance": None, "outputs_sha256": None,
                                "outputs_sha256_matched": None, "task_version": None,
                                "scoring_sha256": None, "scoring_sha256_matched": None}
    # what the run printed, NaN as null; stderr entries are not metrics
    assert result["reported"] == {"f1_answer_all": 0.5, "f1_answer_multi": None}
    # the results file of the run leads to its samples
    [results] = glob.glob(f"{ambignq_log}/**/results_*.json", recursive=True)
    code, by_results, _ = _score(["ambignq", "--from-log", results], capsys)
    assert code == 0 and by_results["metrics"] == expected["metrics"]


def test_unknown_ids_in_a_log_are_an_error(tmp_path, use_fixture_data, capsys):
    _write_samples(tmp_path, "ambignq", [_row(_doc("ambignq", "fx-001"), "x"),
                                         _row(_doc("ambignq", "not-an-id"), "y")])
    code, _, err = _score(["ambignq", "--from-log", str(tmp_path)], capsys)
    assert code == 2
    assert "1 id(s) are not AmbigNQ item ids (first: 'not-an-id')" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "missing", "no such file or folder"),
    (lambda p: _write_results(p, {"ambignq": {"f1_answer_all": 0.1}}).parent,
     "rerun lm_eval with --log_samples"),
    (lambda p: _write_results(p, {"ambignq": {"f1_answer_all": 0.1}}),
     "rerun lm_eval with --log_samples"),
    (lambda p: (p / "notes.json").write_text('{"a": 1}') and p / "notes.json",
     "notes.json: not a run of lm-eval, Inspect or condambig-score; give an lm-eval "
     "--output_path folder"),
    (lambda p: (p / "empty").mkdir() or p / "empty", "holds no framework log"),
    (lambda p: _write_samples(p, "condambigqa", [_row(_doc("condambigqa", "q1"), "x")]),
     "holds no AmbigNQ run, only runs of condambigqa (task condambigqa)"),
    (lambda p: _write_samples(p, "ambignq", [{"doc": {"question": "?"}, "resps": [["x"]]}]),
     "not a condambig lm-eval samples file"),
])
def test_bad_logs_are_one_line_errors(make, message, tmp_path, use_fixture_data, capsys):
    code, _, err = _score(["ambignq", "--from-log", str(make(tmp_path))], capsys)
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def _abg_coqa_folder(folder: Path) -> Path:
    for subtask, key in (("detection", "fxteststoryone|4|2"),
                         ("clarification", "fxteststoryone|4|2")):
        _write_samples(folder, f"abg_coqa_{subtask}",
                       [_row(_doc("abg_coqa", key, {"subtask": subtask}), "AMBIGUOUS")])
    return folder


def test_several_tasks_need_task_and_task_chooses(tmp_path, use_fixture_data, capsys):
    folder = _abg_coqa_folder(tmp_path / "out")
    code, _, err = _score(["abg_coqa", "--from-log", str(folder)], capsys)
    assert code == 2 and "(abg_coqa_clarification, abg_coqa_detection); choose one with " \
                          "--task NAME" in err
    code, _, err = _score(["abg_coqa", "--from-log", str(folder), "--task", "abg_coqa_nope"],
                          capsys)
    assert code == 2 and "no run of task 'abg_coqa_nope'; found: abg_coqa_clarification" in err
    code, result, _ = _score(["abg_coqa", "--from-log", str(folder), "--task",
                              "abg_coqa_detection"], capsys)
    assert code == 0 and result["options"]["subtask"] == "detection"
    assert result["source"]["task"] == "abg_coqa_detection"
    assert result["metrics"]["recall"] == 1.0  # the one turn is ambiguous and was flagged


def test_two_runs_of_one_task_need_a_file(tmp_path, use_fixture_data, capsys):
    for date in (DATE, DATE.replace("01-02", "01-03")):
        _write_samples(tmp_path, "ambignq", [_row(_doc("ambignq", "fx-001"), "x")], date)
    code, _, err = _score(["ambignq", "--from-log", str(tmp_path)], capsys)
    assert code == 2 and "holds 2 runs of task ambignq" in err and "give one file" in err


def test_option_flags_may_not_change_what_the_model_answered(tmp_path, use_fixture_data, capsys):
    folder = _abg_coqa_folder(tmp_path)
    code, _, err = _score(["abg_coqa", "--from-log", str(folder), "--task",
                           "abg_coqa_detection", "--split", "val"], capsys)
    assert code == 2
    assert "--split val (the run: test): changes the items or prompts" in err
    # the same value as the run's is fine, and the run's other options stay
    code, result, _ = _score(["abg_coqa", "--from-log", str(folder), "--task",
                              "abg_coqa_clarification", "--split", "test"], capsys)
    assert code == 0
    assert result["options"] == {"subtask": "clarification", "split": "test"}


def test_a_scoring_only_option_may_differ(tmp_path, use_fixture_data, capsys):
    condambigqa = registry.get("condambigqa")
    [item, *_] = condambigqa.load(condambigqa.options({}))
    reply = json.dumps({"conditions": [{"condition": "c", "answer": "a", "citations": [1]}]})
    _write_samples(tmp_path, "condambigqa", [_row(_doc("condambigqa", item.id), reply)])
    code, result, err = _score(["condambigqa", "--from-log", str(tmp_path), "--matching",
                                "exact"], capsys)
    assert code == 0, err
    assert result["options"]["matching"] == "exact"
    assert "--matching exact (the run: judge): scoring only" in err


def test_hotpot_flm_log_uses_the_runs_agents_and_may_move_them(
        tmp_path, use_fixture_data, monkeypatch, capsys, tiny_t5):
    """HotpotQA-FLM scores through agent models: the run's checkpoints come from the log,
    and the device they run on is a scoring-only option."""
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    agent = str(tiny_t5)
    options = {"split": "full", "answering_agent": agent, "downstream_model": agent}
    questions = {"fx00000000000000000000a1": "What was Oskar Velde's job?",
                 "fx00000000000000000000a2": "When was Tomas Reyl born?"}
    _write_samples(tmp_path / "out", "hotpot_flm",
                   [_row(_doc("hotpot_flm", key, options), text) for key, text in questions.items()])
    code, result, err = _score(["hotpot_flm", "--from-log", str(tmp_path / "out"),
                                "--agent-device", "cpu"], capsys)
    assert code == 0, err
    assert result["options"]["answering_agent"] == agent and result["n_scored"] == 2
    assert "--agent-device cpu (the run: auto): scoring only" in err
    file = tmp_path / "questions.json"
    file.write_text(json.dumps([{"id": k, "output": v} for k, v in questions.items()]))
    code, expected, _ = _score(["hotpot_flm", "--outputs", str(file), "--answering-agent", agent,
                                "--downstream-model", agent, "--agent-device", "cpu"], capsys)
    assert result["metrics"] == expected["metrics"]


def test_task_needs_from_log(tmp_path, use_fixture_data, capsys):
    outputs = tmp_path / "o.json"
    outputs.write_text(json.dumps([{"id": "fx-001", "output": "x"}]))
    code, _, err = _score(["ambignq", "--outputs", str(outputs), "--task", "ambignq"], capsys)
    assert code == 2 and "--task chooses a task of a --from-log log" in err
    with pytest.raises(SystemExit) as exit_info:
        main(["ambignq", "--outputs", str(outputs), "--from-log", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err


def _inspect_log(path: Path, samples: list | None, task: str = "condambig/ambignq") -> Path:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, write_eval_log

    spec = EvalSpec(created="2026-01-02T03:04:05+00:00", task=task, dataset=EvalDataset(),
                    model="hf/tiny", config=EvalConfig(),
                    metadata={"benchmark": "ambignq", "options": {"hub_revision": None},
                              "judged": False})
    write_eval_log(EvalLog(eval=spec, status="success", samples=samples), str(path))
    return path


def test_inspect_log_hand_made(tmp_path, use_fixture_data, capsys):
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ModelOutput

    samples = [EvalSample(id=key, epoch=1, input="(prompt)", target="",
                          output=ModelOutput.from_content("hf/tiny", output))
               for key, output in AMBIGNQ_OUTPUTS.items()]
    path = _inspect_log(tmp_path / "run.eval", samples)
    code, result, _ = _score(["ambignq", "--from-log", str(path)], capsys)
    assert code == 0 and result["n_scored"] == len(AMBIGNQ_OUTPUTS)
    assert result["source"] == {"framework": "inspect", "path": str(path),
                                "task": "condambig/ambignq", "provenance": None,
                                "outputs_sha256": None, "outputs_sha256_matched": None,
                                "task_version": None, "scoring_sha256": None,
                                "scoring_sha256_matched": None}
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in AMBIGNQ_OUTPUTS.items()]))
    assert _score(["ambignq", "--outputs", str(outputs)], capsys)[1]["metrics"] == \
        result["metrics"]


def test_from_log_checks_the_outputs_digest_the_run_recorded(tmp_path, use_fixture_data,
                                                             capsys):
    """Inspect records it beside the benchmark score, lm-eval in its provenance block: the
    same outputs give it (matched), an edited log another (one warning line, matched false)."""
    from inspect_ai.log import EvalResults, EvalSample, EvalScore, read_eval_log, write_eval_log
    from inspect_ai.model import ModelOutput

    run = outputs_sha256(AMBIGNQ_OUTPUTS.items())
    edited = {**AMBIGNQ_OUTPUTS, "fx-003": "edited after the run"}
    path = _inspect_log(tmp_path / "run.eval", [
        EvalSample(id=key, epoch=1, input="(prompt)", target="",
                   output=ModelOutput.from_content("hf/tiny", output))
        for key, output in edited.items()])
    log = read_eval_log(str(path))
    log.results = EvalResults(scores=[EvalScore(name="benchmark_scorer",
                                                scorer="condambig/benchmark_scorer",
                                                metadata={"outputs_sha256": run})])
    write_eval_log(log, str(path))
    _write_samples(tmp_path / "out", "ambignq",
                   [_row(_doc("ambignq", key), output) for key, output in edited.items()])
    results = _write_results(tmp_path / "out", {"ambignq": {"f1_answer_all": 0.5}})
    content = json.loads(results.read_text())
    content["configs"]["ambignq"] = {"metadata": {"provenance": {
        "benchmark": "ambignq", "data": {"records_sha256": None}, "outputs_sha256": run}}}
    results.write_text(json.dumps(content))
    for log_path in (path, tmp_path / "out"):
        code, result, err = _score(["ambignq", "--from-log", str(log_path)], capsys)
        assert code == 0, err
        assert result["provenance"]["outputs_sha256"] == outputs_sha256(edited.items())
        assert result["source"]["outputs_sha256"] == run
        assert result["source"]["outputs_sha256_matched"] is False
        [line] = [line for line in err.splitlines() if "sha256" in line]
        assert line.startswith("condambig-score ambignq: warning: ") and run[:12] in line
        assert "the log was edited or holds another run's outputs" in line
    # the outputs the run scored: matched, nothing said
    _write_samples(tmp_path / "out", "ambignq",
                   [_row(_doc("ambignq", key), output) for key, output in AMBIGNQ_OUTPUTS.items()])
    code, result, err = _score(["ambignq", "--from-log", str(tmp_path / "out")], capsys)
    assert code == 0 and result["source"]["outputs_sha256_matched"] is True
    assert "sha256" not in err


def test_inspect_log_without_samples_is_an_error(tmp_path, use_fixture_data, capsys):
    path = _inspect_log(tmp_path / "run.eval", None)
    code, _, err = _score(["ambignq", "--from-log", str(path)], capsys)
    assert code == 2 and "the Inspect log holds no samples" in err


# ---------------------------------------------------------------------- real runs


def _env(**extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1", **extra)


def _run(command: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    result = warm_start.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, \
        f"{command[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def _rescore(arguments: list[str], env: dict[str, str], cwd: Path) -> dict:
    return json.loads(_run([executable("condambig-score"), *arguments], env, cwd).stdout)


def _lm_eval_metrics(out: Path, task: str) -> dict[str, float]:
    [results] = glob.glob(f"{out}/**/results_*.json", recursive=True)
    task_results = json.loads(Path(results).read_text())["results"][task]
    return {key.split(",")[0]: value for key, value in task_results.items()
            if key.endswith(",none") and "_stderr" not in key}


def _assert_same_numbers(framework: dict[str, float], rescored: dict[str, float | None]) -> None:
    """Every metric the run printed, and no other; NaN there is null here."""
    assert set(framework) == set(rescored)
    for name, value in framework.items():
        if rescored[name] is None:
            assert math.isnan(value), name
        else:
            assert value == pytest.approx(rescored[name]), name


def _nan_as_null(metrics: dict[str, float]) -> dict[str, float | None]:
    return {k: None if math.isnan(v) else v for k, v in metrics.items()}


def _subject_script() -> dict:
    """The model under evaluation: the CondAmbigQA reply to CondAmbigQA prompts, the AmbigNQ
    reply to every other prompt."""
    from tests.condambigqa.test_e2e import SCRIPTED_REPLY

    return {"rules": [{"contains": "Retrieved fragments:", "reply": SCRIPTED_REPLY}],
            "default": {"reply": AMBIGNQ_REPLY}}


@pytest.fixture(scope="module")
def lm_eval_runs(tmp_path_factory):
    """One real lm-eval run, with --log_samples, of ambignq and the abg_coqa group (no judge)
    and of CondAmbigQA judged by loopback judge A, named in --metadata scoped to condambigqa.
    One run shared by the tests of both (each lm-eval start costs seconds of CPU)."""
    from tests.condambigqa.test_e2e import JUDGE_SCRIPT

    root = tmp_path_factory.mktemp("lm_eval_run")
    out = root / "out"
    env = _env(CONDAMBIG_JUDGE_API_KEY="test-key", CONDAMBIG_CACHE_DIR=str(root / "cache"))
    with JudgeServer(_subject_script()) as subject, JudgeServer(JUDGE_SCRIPT) as judge_a:
        metadata = json.dumps({"condambigqa": {"judge_model": "judge-a",
                                               "judge_base_url": judge_a.base_url}})
        _run([executable("lm_eval"), "--model", "local-chat-completions",
              "--apply_chat_template", "--model_args",
              f"model=subject,base_url={subject.base_url}/chat/completions,"
              "tokenizer_backend=None", "--tasks", "ambignq,abg_coqa,condambigqa",
              "--limit", "3", "--metadata", metadata, "--log_samples",
              "--output_path", str(out)], env, root)
        assert judge_a.stats()["requests"] > 0
        yield out, env, judge_a


@pytest.fixture(scope="module")
def lm_eval_run(lm_eval_runs) -> Path:
    return lm_eval_runs[0]


@pytest.mark.e2e
def test_lm_eval_run_rescored_from_its_folder(lm_eval_run):
    result = _rescore(["ambignq", "--from-log", str(lm_eval_run)], _env(), lm_eval_run.parent)
    reported = _lm_eval_metrics(lm_eval_run, "ambignq")
    _assert_same_numbers(reported, result["metrics"])
    assert result["reported"] == pytest.approx(_nan_as_null(reported))
    assert result["metrics"]["f1_answer_all"] > 0 and result["n_scored"] == 3
    assert result["source"]["framework"] == "lm_eval" and result["source"]["task"] == "ambignq"
    # the run's provenance block comes along, and its data is the data here
    assert result["source"]["provenance"]["data"] == result["provenance"]["data"]
    # lm-eval recorded the digest of its version, options and outputs: given again here
    assert result["source"]["scoring_sha256"] == \
        result["source"]["provenance"]["scoring_sha256"] == result["provenance"]["scoring_sha256"]
    assert result["source"]["scoring_sha256_matched"] is True
    assert result["source"]["task_version"] == registry.get("ambignq").version


@pytest.mark.e2e
def test_lm_eval_group_folder_needs_task(lm_eval_run, use_fixture_data, capsys):
    code, _, err = _score(["abg_coqa", "--from-log", str(lm_eval_run)], capsys)
    assert code == 2 and "choose one with --task NAME" in err
    result = _rescore(["abg_coqa", "--from-log", str(lm_eval_run), "--task",
                       "abg_coqa_detection"], _env(), lm_eval_run.parent)
    _assert_same_numbers(_lm_eval_metrics(lm_eval_run, "abg_coqa_detection"), result["metrics"])
    # in process from here on (the console script is exercised above)
    code, result, _ = _score(["abg_coqa", "--from-log", str(lm_eval_run), "--task",
                              "abg_coqa_clarification"], capsys)
    assert code == 0
    _assert_same_numbers(_lm_eval_metrics(lm_eval_run, "abg_coqa_clarification"),
                         result["metrics"])


@pytest.mark.e2e
def test_inspect_log_rescored(tmp_path, use_fixture_data, capsys):
    from inspect_ai.log import read_eval_log

    logs = tmp_path / "logs"
    with JudgeServer({"default": {"reply": AMBIGNQ_REPLY}}) as subject:
        _run([executable("inspect"), "eval", "condambig/ambignq",
              "condambig/abg_coqa_detection", "--model", "openai-api/subject/model",
              "--limit", "3", "--log-dir", str(logs), "--display", "none"],
             _env(CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                  SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k"), tmp_path)
    for benchmark, task in (("ambignq", "ambignq"), ("abg_coqa", "abg_coqa_detection")):
        [path] = glob.glob(f"{logs}/*_{task.replace('_', '-')}_*.eval")
        log = read_eval_log(path)
        assert log.status == "success"
        reported = {name: m.value for s in log.results.scores for name, m in s.metrics.items()
                    if not name.endswith("_stderr")}  # the stderr: tests/test_inspect_stats_e2e.py
        if benchmark == "ambignq":  # the console script once, then in process
            by_file = _rescore([benchmark, "--from-log", path], _env(), tmp_path)
        else:
            by_file = _score([benchmark, "--from-log", path], capsys)[1]
        _assert_same_numbers(reported, by_file["metrics"])
        assert by_file["reported"] == pytest.approx(_nan_as_null(reported))
        run_provenance = by_file["source"].pop("provenance")
        assert by_file["source"] == {
            "framework": "inspect", "path": path, "task": f"condambig/{task}",
            "outputs_sha256": by_file["provenance"]["outputs_sha256"],
            "outputs_sha256_matched": True,
            # the task-end hook writes the scoring digest: benchmark, version, options, outputs
            "task_version": registry.get(benchmark).version,
            "scoring_sha256": log.results.scores[0].metadata["scoring_sha256"],
            "scoring_sha256_matched": True}
        # the log's provenance block: the same data as here
        assert run_provenance["data"] == by_file["provenance"]["data"]
        code, by_folder, _ = _score([benchmark, "--from-log", str(logs)], capsys)
        assert code == 0 and by_folder["metrics"] == by_file["metrics"]
        assert by_folder["n_scored"] == 3
    assert by_file["metrics"]["parse_rate"] == 1.0  # detection: the reply is an answer
    # the options edited in every copy the log holds: the scoring digest refuses the log
    from inspect_ai.log import write_eval_log

    log = read_eval_log(path)
    edited = {**log.eval.metadata["options"], "split": "val"}
    log.eval.metadata["options"] = edited
    log.eval.metadata["provenance"]["options"] = edited
    for scorer in log.eval.scorers or []:
        if scorer.name.endswith("benchmark_scorer"):
            scorer.options["options"] = edited
    write_eval_log(log, path)
    code, _, err = _score(["abg_coqa", "--from-log", path], capsys)
    assert code == 2 and "scoring_sha256" in err and len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------------- re-judging

CONDAMBIGQA_METRICS = registry.get("condambigqa").metric_specs
JUDGE_DEPENDENT = {spec.name for spec in CONDAMBIGQA_METRICS if spec.judge} | {"suite_score"}


@pytest.fixture(scope="module")
def judged_run(lm_eval_runs):
    """The CondAmbigQA run of ``lm_eval_runs``, judged by loopback judge A."""
    return lm_eval_runs


@pytest.mark.e2e
def test_judged_run_rescored_with_its_judge_then_rejudged(judged_run):
    out, env, judge_a = judged_run
    reported = _lm_eval_metrics(out, "condambigqa")
    assert {"condition_score", "answer_score", "citation_score"} <= set(reported)
    # no judge flag and none in the environment: the run's judge (and its URL) is not
    # used with the key from the environment; one line says how to judge as the run did
    before = judge_a.stats()["requests"]
    unjudged = _run([executable("condambig-score"), "condambigqa", "--from-log", str(out)],
                    env, out.parent)
    assert judge_a.stats()["requests"] == before
    assert "judge" not in json.loads(unjudged.stdout)
    [notice] = [line for line in unjudged.stderr.splitlines() if "judged by" in line]
    flags = ["--judge-model", "judge-a", "--judge-base-url", judge_a.base_url]
    assert notice.endswith(f"condambig-score condambigqa --from-log {out} {' '.join(flags)}")
    same = _rescore(["condambigqa", "--from-log", str(out), *flags], env, out.parent)
    _assert_same_numbers(reported, same["metrics"])
    assert same["judge"]["model"] == "judge-a"
    # the run's judge base URL and model are recorded (never the key)
    [results] = glob.glob(f"{out}/**/results_*.json", recursive=True)
    provenance = json.loads(Path(results).read_text())["configs"]["condambigqa"]["metadata"][
        "provenance"]
    assert (provenance["judge"], provenance["judge_base_url"]) == ("judge-a", judge_a.base_url)

    with JudgeServer({"default": {"scores": {"9": 1.0}}}) as judge_b:
        other = _rescore(["condambigqa", "--from-log", str(out), "--judge-model", "judge-b",
                          "--judge-base-url", judge_b.base_url], env, out.parent)
        assert judge_b.stats()["requests"] > 0
    assert other["judge"]["model"] == "judge-b"
    assert set(other["metrics"]) == set(same["metrics"])
    for name, value in other["metrics"].items():
        if name not in JUDGE_DEPENDENT:
            assert value == same["metrics"][name], name
    changed = {name for name in JUDGE_DEPENDENT & set(other["metrics"])
               if other["metrics"][name] != same["metrics"][name]}
    assert {"condition_score", "answer_score", "combined_score"} <= changed
    assert other["reported"] == same["reported"]  # what the run printed does not change


def test_a_run_on_other_data_is_said_so(ambignq_log, capsys):
    """The run's provenance digest differs from the data here: a notice, the numbers stay."""
    [results] = glob.glob(f"{ambignq_log}/**/results_*.json", recursive=True)
    content = json.loads(Path(results).read_text())
    content["configs"]["ambignq"] = {"metadata": {"provenance": {
        "data": {"records": 7, "records_sha256": "0" * 64}}}}
    Path(results).write_text(json.dumps(content))
    code, result, err = _score(["ambignq", "--from-log", str(ambignq_log)], capsys)
    assert code == 0
    assert "the run's data (records sha256 000000000000…, 7 records) differs" in err
    assert result["source"]["provenance"]["data"]["records"] == 7


def test_a_task_the_spec_does_not_name_is_found_by_its_docs(tmp_path, use_fixture_data,
                                                            capsys):
    """A user's own lm-eval task over our glue (samples_my_task_<date>.jsonl): its docs
    name the benchmark, so the run is found and rescored."""
    rows = [_row(_doc("ambignq", key), output) for key, output in AMBIGNQ_OUTPUTS.items()]
    _write_samples(tmp_path / "out", "my_ambiguity_task", rows)
    code, result, err = _score(["ambignq", "--from-log", str(tmp_path / "out")], capsys)
    assert code == 0, err
    assert result["source"]["task"] == "my_ambiguity_task" and result["n_scored"] == len(AMBIGNQ_OUTPUTS)
    # docs that name no benchmark: never worked out from which options they carry
    for row in rows:
        del row["doc"]["benchmark"]
    _write_samples(tmp_path / "out", "my_ambiguity_task", rows)
    code, _, err = _score(["ambignq", "--from-log", str(tmp_path / "out")], capsys)
    assert code == 2 and "holds no condambig run of a known task" in err
