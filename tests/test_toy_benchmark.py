"""The toy benchmark, written only against the contract, through the real commands.

``lm_eval`` (its task folder via ``--include_path``) and ``inspect eval`` (its task file)
run in subprocesses with the toy registered through ``CONDAMBIG_EXTRA_BENCHMARKS``;
``condambig-score`` (its ``main``, in process, the toy registered the same way) scores
their outputs again. The model under evaluation is a loopback OpenAI-compatible server
scripted to answer every prompt with ``Answer: PARIS`` (lm-eval's
``local-chat-completions``, Inspect's ``openai-api``): right (ignoring case) for France only.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from condambig_tasks.cli import main
from tests.conftest import REPO_ROOT, executable, run_ok, subprocess_env
from tests.support.judge_server import JudgeServer
from tests.test_contract import TOY_LM_EVAL, TOY_TARGET, extra_benchmarks_with_toy

TOY_FOLDER = REPO_ROOT / "tests" / "support" / "toy_benchmark"
REPLY = "Answer: PARIS"
METRICS = ["exact_match", "unanswered", "precision"]
# Four capitals, one reply: France is right when case is ignored, nothing is otherwise.
EXPECTED = {
    "toy": {"exact_match": 0.25, "unanswered": 0.0, "precision": 0.25},
    "toy_case_sensitive": {"exact_match": 0.0, "unanswered": 0.0, "precision": 0.0},
}
CLI_FLAGS = {"toy": [], "toy_case_sensitive": ["--no-ignore-case"]}


@pytest.fixture(autouse=True)
def toy_registered(monkeypatch) -> None:
    monkeypatch.setenv("CONDAMBIG_EXTRA_BENCHMARKS", extra_benchmarks_with_toy())


@pytest.fixture(scope="module")
def scripted_server():
    """The model under evaluation: every prompt answered with REPLY."""
    with JudgeServer({"default": {"reply": REPLY}}) as server:
        yield server


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return subprocess_env(PYTHONPATH=str(REPO_ROOT), CONDAMBIG_EXTRA_BENCHMARKS=f"toy={TOY_TARGET}",
                          CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"), **extra)


def _score_cli(task: str, outputs: dict[str, str], tmp_path: Path,
               capsys) -> dict[str, float | None]:
    path = tmp_path / f"{task}_outputs.json"
    path.write_text(json.dumps([{"id": k, "output": v} for k, v in outputs.items()]))
    capsys.readouterr()
    code = main(["toy", "--outputs", str(path), *CLI_FLAGS[task]])
    captured = capsys.readouterr()
    assert code == 0, captured.err[-3000:]
    return json.loads(captured.out)["metrics"]


def test_cli_in_process_hand_computed(tmp_path, capsys):
    outputs = [{"id": "toy-1", "output": "Answer: paris."}, {"id": "toy-2", "output": "Tokyo"},
               {"id": "toy-3", "output": "answer: Lagos"}, {"id": "toy-4", "output": "Answer: Lima"}]
    path = tmp_path / "outputs.jsonl"
    path.write_text("\n".join(json.dumps(row) for row in outputs))
    assert main(["toy", "--outputs", str(path)]) == 0
    metrics = json.loads(capsys.readouterr().out)["metrics"]
    assert metrics == pytest.approx({"exact_match": 2 / 4, "unanswered": 1.0, "precision": 2 / 3})


@pytest.mark.e2e
def test_lm_eval_and_condambig_score_agree(scripted_server, tmp_path, capsys):
    out = tmp_path / "out"
    run_ok([executable("lm_eval"), "--model", "local-chat-completions", "--apply_chat_template",
          "--model_args", f"model=scripted,base_url={scripted_server.base_url}/chat/completions,"
          "tokenizer_backend=None",
          "--include_path", str(TOY_LM_EVAL), "--tasks", "toy,toy_case_sensitive",
          "--limit", "4", "--output_path", str(out), "--log_samples"], _env(tmp_path), tmp_path)
    results = json.loads(Path(glob.glob(f"{out}/**/results_*.json", recursive=True)[0]).read_text())
    for task, expected in EXPECTED.items():
        metrics = {key.split(",")[0]: value for key, value in results["results"][task].items()
                   if key.endswith(",none") and "_stderr" not in key}
        samples_file = glob.glob(f"{out}/**/samples_{task}_*.jsonl", recursive=True)[0]
        samples = [json.loads(line) for line in Path(samples_file).read_text().splitlines()]
        outputs = {sample["doc"]["id"]: sample["resps"][0][0] for sample in samples}
        assert len(outputs) == 4 and all(o.strip() == REPLY for o in outputs.values()), outputs
        assert {name: metrics[name] for name in METRICS} == pytest.approx(expected), task
        assert _score_cli(task, outputs, tmp_path, capsys) == pytest.approx(expected), task


@pytest.mark.e2e
def test_inspect_and_condambig_score_agree(scripted_server, tmp_path, capsys):
    logs = tmp_path / "logs"
    run_ok([executable("inspect"), "eval", f"{TOY_FOLDER / 'inspect_task.py'}@toy",
          "--model", "openai-api/subject/scripted", "--log-dir", str(logs),
          "--log-format", "json", "--display", "none"],
          _env(tmp_path, SUBJECT_BASE_URL=scripted_server.base_url, SUBJECT_API_KEY="k"),
          tmp_path)
    [log_file] = glob.glob(f"{logs}/*.json")
    log = json.loads(Path(log_file).read_text())
    assert log["status"] == "success", log.get("error")
    [scorer] = log["results"]["scores"]
    metrics = {name: entry["value"] for name, entry in scorer["metrics"].items()
               if not name.endswith("_stderr")}  # each metric's stderr beside it
    assert set(scorer["metrics"]) == set(metrics) | {f"{name}_stderr" for name in metrics}
    outputs = {sample["id"]: sample["output"]["completion"] for sample in log["samples"]}
    per_sample = {sample["id"]: next(iter(sample["scores"].values()))["value"]
                  for sample in log["samples"]}
    assert len(outputs) == 4 and all(o.strip() == REPLY for o in outputs.values()), outputs
    assert metrics == pytest.approx(EXPECTED["toy"])
    assert per_sample["toy-1"] == {"exact_match": 1.0, "unanswered": 0.0}
    assert _score_cli("toy", outputs, tmp_path, capsys) == pytest.approx(EXPECTED["toy"])
