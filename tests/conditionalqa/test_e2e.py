"""ConditionalQA through the real ``lm_eval``, ``inspect eval`` and ``condambig-score`` commands.

Two models under evaluation, both loopback OpenAI-compatible servers (lm-eval's
``local-chat-completions``, Inspect's ``openai-api``; the ``hf`` route of every task is run by
tests/real_model/): one spelling each question backwards (junk replies: every metric must
still be reported, parse failures counted) and one replying with scripted answers per
question (the numbers must equal ``condambig-score``, run in process through its ``main``, on
the same replies). Fixture documents only; ``--limit 3`` for the junk model.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest

from tests.conditionalqa.test_score_cli import RAW_OUTPUTS
from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support import warm_start
from tests.support.headline import assert_headline_first
from tests.support.judge_server import JudgeServer
from tests.support.score_in_process import ScoreCli, score_cli_fixture

pytestmark = pytest.mark.e2e

SCORE_NAMES = [
    prefix + key
    for prefix in ("", "yesno_", "extractive_", "conditional_")
    for key in ("em", "em_with_conditions", "f1", "f1_with_conditions")
]
COUNT_NAMES = ["parse_rate", "out_of_range_citations", "truncated_documents"]
QUESTIONS = {q["id"]: q["question"] for q in json.loads((FIXTURE_DATA / "conditionalqa" / "dev.json").read_text())}


@pytest.fixture(scope="module")
def scripted_server():
    """Replies RAW_OUTPUTS[id] to the prompt that asks question ``id``."""
    rules = [{"contains": f"Question: {QUESTIONS[qid]}\n", "reply": reply} for qid, reply in RAW_OUTPUTS.items()]
    with JudgeServer({"rules": rules, "default": {"reply": "unscripted prompt"}}) as server:
        yield server


@pytest.fixture(scope="module")
def junk_server():
    """The junk model: each question spelt backwards (no answer in the asked format)."""
    rules = [{"contains": f"Question: {question}\n", "reply": question[::-1]}
             for question in QUESTIONS.values()]
    with JudgeServer({"rules": rules, "default": {"reply": "unscripted prompt"}}) as server:
        yield server


@pytest.fixture
def score_cli(monkeypatch, capsys) -> ScoreCli:
    return score_cli_fixture(monkeypatch, capsys)


def _env(**extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1", **extra)


def _lm_eval(arguments: list[str], out: Path, env: dict[str, str]) -> tuple[dict[str, float], list[dict]]:
    run_ok([executable("lm_eval"), *arguments, "--tasks", "conditionalqa", "--output_path", str(out),
          "--log_samples"], env, out.parent)
    results = json.loads(Path(glob.glob(f"{out}/**/results_*.json", recursive=True)[0]).read_text())
    metrics = {key.split(",")[0]: value for key, value in results["results"]["conditionalqa"].items()
               if key.endswith(",none") and "_stderr" not in key}
    samples_file = glob.glob(f"{out}/**/samples_conditionalqa_*.jsonl", recursive=True)[0]
    samples = [json.loads(line) for line in Path(samples_file).read_text().splitlines()]
    return metrics, samples


def _inspect(arguments: list[str], log_dir: Path, env: dict[str, str]) -> tuple[dict[str, float], dict]:
    command = [executable("inspect"), "eval", "condambig/conditionalqa", *arguments, "--log-dir",
               str(log_dir), "--log-format", "json", "--display", "plain"]
    result = warm_start.run(command, env=env, cwd=log_dir.parent, capture_output=True, text=True, timeout=600)
    logs = glob.glob(f"{log_dir}/*.json")
    if result.returncode != 0:  # say why: the log holds the error when the run got that far
        error = json.loads(Path(logs[0]).read_text()).get("error") if logs else None
        pytest.fail(f"inspect eval failed ({result.returncode}):\n{result.stdout[-3000:]}\n"
                    f"{result.stderr[-3000:]}\nlog error: {error}")
    log = json.loads(Path(logs[0]).read_text())
    assert log["status"] == "success", log.get("error")
    [scorer] = log["results"]["scores"]
    assert_headline_first(log["eval"]["metadata"], log["eval"]["headline_metric"],
                          list(scorer["metrics"]))
    return {name: entry["value"] for name, entry in scorer["metrics"].items()}, log


def _score_cli(outputs: dict[str, str], tmp: Path, max_document_words: int,
               score_cli: ScoreCli) -> dict:
    pred = tmp / "outputs.json"
    pred.write_text(json.dumps([{"id": qid, "output": text} for qid, text in outputs.items()]))
    result, _ = score_cli(["conditionalqa", "--pred", str(pred),
                           "--ref", str(FIXTURE_DATA / "conditionalqa" / "dev.json"),
                           "--max-document-words", str(max_document_words)])
    return result


def _flatten(report: dict) -> dict[str, float | None]:
    return report["metrics"]


@pytest.fixture
def scripted_cli(tmp_path, score_cli) -> dict[str, float | None]:
    """``condambig-score`` on the scripted replies (the document at full length)."""
    return _flatten(_score_cli(RAW_OUTPUTS, tmp_path, 4000, score_cli))


def _assert_same(framework: dict[str, float], cli: dict[str, float | None]) -> None:
    for name in SCORE_NAMES + COUNT_NAMES:
        expected = cli[name]
        if expected is None:  # empty breakdown: NaN in the frameworks
            assert framework[name] != framework[name], name
        else:
            assert framework[name] == pytest.approx(expected), name


def test_lm_eval_junk_model_reports_everything(junk_server, tmp_path, score_cli):
    metrics, samples = _lm_eval(
        ["--model", "local-chat-completions", "--apply_chat_template", "--model_args",
         f"model=junk,base_url={junk_server.base_url}/chat/completions,tokenizer_backend=None",
         "--limit", "3", "--metadata", '{"max_document_words": 70}'],
        tmp_path / "out", _env(OPENAI_API_KEY="test-key"),
    )
    assert set(SCORE_NAMES + COUNT_NAMES) <= set(metrics)
    assert metrics["truncated_documents"] == 3  # the garden document (92 words) is cut at 70
    outputs = {sample["doc"]["id"]: sample["resps"][0][0] for sample in samples}
    assert len(outputs) == 3
    assert metrics["parse_rate"] < 1  # junk: parse failures counted
    _assert_same(metrics, _flatten(_score_cli(outputs, tmp_path, 70, score_cli)))


def test_lm_eval_scripted_model_equals_condambig_score(scripted_server, scripted_cli,
                                                      tmp_path):
    metrics, samples = _lm_eval(
        ["--model", "local-chat-completions", "--apply_chat_template", "--model_args",
         f"model=scripted,base_url={scripted_server.base_url}/chat/completions,tokenizer_backend=None"],
        tmp_path / "out", _env(OPENAI_API_KEY="test-key"),
    )
    assert {sample["resps"][0][0] for sample in samples} == set(RAW_OUTPUTS.values())
    cli = scripted_cli
    assert cli["em"] == pytest.approx(7.5 / 10) and cli["parse_rate"] == pytest.approx(9 / 10)
    _assert_same(metrics, cli)


def test_inspect_junk_model_reports_everything(junk_server, tmp_path, score_cli):
    metrics, log = _inspect(
        ["--model", "openai-api/subject/junk", "--limit", "3", "-T", "max_document_words=70",
         "-T", "max_tokens=24"],
        tmp_path / "logs", _env(SUBJECT_BASE_URL=junk_server.base_url, SUBJECT_API_KEY="test-key"),
    )
    assert set(SCORE_NAMES + COUNT_NAMES) <= set(metrics)
    assert metrics["truncated_documents"] == 3
    outputs = {sample["id"]: sample["output"]["completion"] for sample in log["samples"]}
    assert len(outputs) == 3 and metrics["parse_rate"] < 1  # junk: parse failures counted
    _assert_same(metrics, _flatten(_score_cli(outputs, tmp_path, 70, score_cli)))


def test_inspect_scripted_model_equals_condambig_score(scripted_server, scripted_cli,
                                                      tmp_path):
    metrics, log = _inspect(
        ["--model", "openai-api/loopback/scripted"], tmp_path / "logs",
        _env(LOOPBACK_BASE_URL=scripted_server.base_url, LOOPBACK_API_KEY="test-key"),
    )
    assert len(log["samples"]) == len(RAW_OUTPUTS) == len(QUESTIONS)
    _assert_same(metrics, scripted_cli)
