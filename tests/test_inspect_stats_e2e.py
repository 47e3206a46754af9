"""A real ``inspect eval`` run: the stderr of every metric and the outputs digest in its
log, the same as ``condambig-score`` gives on the same outputs, and ``--from-log`` telling
an edited log.

One run of AmbigNQ (a question per unit) and Abg-CoQA detection (a conversation per unit)
on a scripted model (a loopback OpenAI-compatible server giving one reply), judge-free; the
rest reads the log, and ``condambig-score`` runs in process (its ``main``).
"""

from __future__ import annotations

import glob
import json
import math
from pathlib import Path

import pytest

from condambig_tasks import registry
from condambig_tasks.benchmark import ScoredSample
from condambig_tasks.provenance import outputs_sha256
from condambig_tasks.uncertainty import uncertainty
from tests.conftest import FIXTURE_DATA, executable, run_ok, subprocess_env
from tests.support.judge_server import JudgeServer
from tests.support.score_in_process import ScoreCli, score_cli_fixture
from tests.test_rescore_logs import AMBIGNQ_REPLY

pytestmark = pytest.mark.e2e

TASKS = {"ambignq": ("ambignq", []),
         "abg_coqa_detection": ("abg_coqa", ["--subtask", "detection", "--split", "test"])}


def _env(**extra: str) -> dict[str, str]:
    return subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1", **extra)



@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    """Task -> its .eval log: every fixture item, answered by the scripted model."""
    folder = tmp_path_factory.mktemp("inspect_stats")
    with JudgeServer({"default": {"reply": AMBIGNQ_REPLY}}) as subject:
        run_ok([executable("inspect"), "eval", *(f"condambig/{task}" for task in TASKS),
                "--model", "openai-api/subject/scripted", "--log-dir", str(folder / "logs"),
                "--display", "none"],
               _env(CONDAMBIG_CACHE_DIR=str(folder / "cache"),
                    SUBJECT_BASE_URL=subject.base_url, SUBJECT_API_KEY="k"), folder)
    return {task: Path(path) for task in TASKS
            for path in glob.glob(f"{folder}/logs/*_{task.replace('_', '-')}_*.eval")}


def _read(path: Path):
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    assert log.status == "success"
    return log


def _metrics(log) -> tuple[dict[str, float], dict[str, float]]:
    [score] = log.results.scores
    values = {name: metric.value for name, metric in score.metrics.items()}
    stderr = {name.removesuffix("_stderr"): value for name, value in values.items()
              if name.endswith("_stderr")}
    return {k: v for k, v in values.items() if not k.endswith("_stderr")}, stderr


def _close(framework: float, other: float | None) -> bool:
    if other is None:
        return math.isnan(framework)
    return math.isclose(framework, other, rel_tol=1e-9, abs_tol=1e-12)


@pytest.fixture
def score_cli(monkeypatch, capsys) -> ScoreCli:
    """``condambig-score ARGS`` (its ``main``, in process): its JSON and its stderr."""
    return score_cli_fixture(monkeypatch, capsys)


def test_the_log_has_the_stderr_of_every_metric_from_its_samples(logs):
    assert set(logs) == set(TASKS)
    for task, path in logs.items():
        log = _read(path)
        benchmark = registry.get(TASKS[task][0])
        options = benchmark.options(log.eval.metadata["options"])
        samples = []
        for sample in log.samples:
            [score] = sample.scores.values()
            samples.append(ScoredSample(id=str(sample.id), values=score.value,
                                        details=score.metadata or {}))
        expected = uncertainty(benchmark, samples, options, False)
        metrics, stderr = _metrics(log)
        assert set(stderr) == set(metrics) == set(expected), task
        for name, value in stderr.items():
            assert _close(value, expected[name].stderr), (task, name)
        if task == "ambignq":  # the scripted reply is right on some questions only
            assert any(value > 0 for value in stderr.values())
        # a metric's own form beside it, as the report and the register read it
        assert (log.results.scores[0].metrics[f"{name}_stderr"].group ==
                log.results.scores[0].metrics[name].group)


def test_condambig_score_on_the_same_outputs_gives_the_same_stderr_and_digest(logs, tmp_path,
                                                                           score_cli):
    for task, path in logs.items():
        log = _read(path)
        benchmark, flags = TASKS[task]
        pairs = [(str(sample.id), sample.output.completion) for sample in log.samples]
        recorded = log.results.scores[0].metadata["outputs_sha256"]
        assert recorded == outputs_sha256(pairs)
        outputs = tmp_path / f"{task}.json"
        outputs.write_text(json.dumps([{"id": key, "output": text} for key, text in pairs]))
        result, _ = score_cli([benchmark, *flags, "--outputs", str(outputs)])
        metrics, stderr = _metrics(log)
        assert set(result["stderr"]) == set(stderr), task
        for name, value in stderr.items():
            assert _close(value, result["stderr"][name]), (task, name)
            assert _close(metrics[name], result["metrics"][name]), (task, name)
        assert result["provenance"]["outputs_sha256"] == recorded

        # rescored from the log itself: the digest matches, and says so
        result, errors = score_cli([benchmark, "--from-log", str(path)])
        assert result["source"]["outputs_sha256"] == recorded
        assert result["source"]["outputs_sha256_matched"] is True
        assert result["provenance"]["outputs_sha256"] == recorded
        assert "outputs_sha256" not in errors and "edited" not in errors
        assert {name: result["stderr"][name] for name in stderr} == pytest.approx(
            {name: None if math.isnan(v) else v for name, v in stderr.items()})
        assert set(result["reported"]) == set(metrics)  # the stderr are not metrics


def test_from_log_tells_an_edited_log(logs, tmp_path, score_cli):
    from inspect_ai.log import write_eval_log
    from inspect_ai.model import ModelOutput

    log = _read(logs["ambignq"])
    recorded = log.results.scores[0].metadata["outputs_sha256"]
    log.samples[0].output = ModelOutput.from_content(log.eval.model, "an edited answer")
    edited = tmp_path / "edited.eval"
    write_eval_log(log, str(edited))
    result, errors = score_cli(["ambignq", "--from-log", str(edited)])
    assert result["source"]["outputs_sha256"] == recorded
    assert result["source"]["outputs_sha256_matched"] is False
    assert result["provenance"]["outputs_sha256"] != recorded
    [line] = [line for line in errors.splitlines() if "the log was edited" in line]
    assert str(edited) in line and recorded[:12] in line
    # --limit scores a part of the outputs: nothing to compare
    result, errors = score_cli(["ambignq", "--from-log", str(edited), "--limit", "2"])
    assert result["source"]["outputs_sha256_matched"] is None
    assert "the log was edited" not in errors
