"""Same raw outputs, same per-question and corpus scores: lm-eval glue, Inspect scorer and
metric, condambig-score (in-process; the subprocess runs are in test_e2e.py)."""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from inspect_ai.model import ModelName, ModelOutput
from inspect_ai.scorer import SampleScore, Target
from inspect_ai.solver import TaskState

import condambig._factory as inspect_factory
from condambig_tasks import registry, settings
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.cli import main
from condambig_tasks.condambigqa.benchmark import CondAmbigQA
from condambig_tasks.lm_eval_glue import LmEvalTask
from tests.support.judge_server import JudgeServer

lm_eval_utils = LmEvalTask("condambigqa")  # lm-eval's hooks of the benchmark

RAW_OUTPUTS = {
    "fx-001": json.dumps({"conditions": [
        {"condition": "women's race 2019", "answer": "Ana Runner", "citations": ["Fragment 2"]},
        {"condition": "men's race 2019", "answer": "Ben Runner", "citations": ["[1]", "F4"]},
        {"condition": "first race", "answer": "Carl Pace in 1980", "citations": [3, 9]},
    ]}),
    "fx-002": "```json\n{\"conditions\": [{\"condition\": \"cars\", \"answer\": \"1925\", "
              "\"citations\": [\"Fragment 2 - Old Bridge\"]},]}\n```",
    "fx-003": "I am not sure.",
    # the rest of the fixture: one condition each, cited (fx-004 .. fx-010)
    **{f"fx-{number:03d}": json.dumps({"conditions": [
        {"condition": "the first one", "answer": "the first answer", "citations": [1]}]})
       for number in range(4, 11)},
}
PER_QUESTION = ("citation_score", "condition_score", "answer_score", "combined_score",
                "answer_count", "count_difference")
JUDGE_SCRIPT = {"rules": [{"contains": "Ana Runner", "scores": {"9": 0.5, "10": 0.5}}],
                "default": {"scores": {"3": 0.5, "4": 0.5}}}


def _benchmark() -> CondAmbigQA:
    return registry.get("condambigqa")


def _lm_eval(monkeypatch, judged: bool,
             metadata: dict | None = None) -> tuple[dict[str, dict], dict[str, float]]:
    """Per-question values and corpus metrics as lm-eval computes them (the YAML's hooks)."""
    benchmark = _benchmark()
    docs = lm_eval_utils.load_docs(version=1.0, pretrained="tiny", **(metadata or {}),
                                   task_options={"setting": "main"})["test"]
    per_doc = [lm_eval_utils.process_results(doc, [RAW_OUTPUTS[doc["id"]]]) for doc in docs]
    names = list(per_doc[0])
    scored = []  # the judged run is scored in the aggregation step: record what it summarises
    original = type(benchmark).metric_values

    def spy(self, samples, options, judged_run):
        scored.extend(samples)
        return original(self, samples, options, judged_run)

    monkeypatch.setattr(type(benchmark), "metric_values", spy)
    corpus = {name: getattr(lm_eval_utils, f"agg_{name}")([values[name] for values in per_doc])
              for name in names}
    if judged:
        per_question = {s.id: dict(s.values) for s in scored}
    else:
        per_question = {doc["id"]: values for doc, values in zip(docs, per_doc, strict=True)}
    return per_question, corpus


def _cli(tmp_path, capsys, flags: tuple[str, ...] = ()) -> tuple[dict, dict[str, dict]]:
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    per_question = tmp_path / "per_question.jsonl"
    assert main(["condambigqa", "--outputs", str(outputs), "--per-question",
                 str(per_question), *flags]) == 0
    summary = json.loads(capsys.readouterr().out)
    rows = [json.loads(line) for line in per_question.read_text().splitlines()]
    return summary, {row["id"]: row for row in rows}


def _inspect(monkeypatch, judged: bool,
             task_arguments: dict | None = None) -> tuple[dict[str, dict], dict[str, float]]:
    """Per-question Score values and the corpus metric of the Inspect task; the grader role
    is stood in for by the environment's judge. ``task_arguments`` (``-T``) go through the
    task function, whose options reach the scorer."""
    from condambig.condambigqa import condambigqa as inspect_task
    from condambig_metrics.judge import openai_judge_engine

    monkeypatch.setattr(inspect_factory, "grader_judge_engine", lambda **_: openai_judge_engine(
        settings.judge_config_from_environment()))
    # the default grader (openai/gpt-4o-mini) stands in for nothing here: no key needed
    monkeypatch.setattr(inspect_factory, "require_default_grader", lambda *_: None)
    benchmark = _benchmark()
    option_values = {}
    if task_arguments:
        import condambig.condambigqa as inspect_module

        build = inspect_module.benchmark_task

        def capture(name, values, **kwargs):
            option_values.update({k: v for k, v in values.items() if v is not None})
            return build(name, values, **kwargs)

        monkeypatch.setattr(inspect_module, "benchmark_task", capture)
        inspect_task(**task_arguments)
    options = benchmark.options(option_values)
    options_json = options_to_json(benchmark, options)
    score_fn = inspect_factory.benchmark_scorer("condambigqa", options_json, judged)
    sample_scores = []
    for question in benchmark.load(options):
        metadata = {"record": benchmark.to_record(question)}
        state = TaskState(
            model=ModelName("test/model"), sample_id=question.id, epoch=1,
            input=benchmark.prompt(question, options), messages=[], metadata=metadata,
            output=ModelOutput.from_content("test/model", RAW_OUTPUTS[question.id]),
        )
        score = asyncio.run(score_fn(state, Target(benchmark.target(question, options))))
        sample_scores.append(SampleScore(score=score, sample_id=question.id,
                                         sample_metadata=metadata))
    per_question = {str(s.sample_id): s.score.value for s in sample_scores}
    corpus = {name: value for name, value in inspect_factory.benchmark_metrics(
        "condambigqa", options_json, judged)(sample_scores).items()
        if not name.endswith("_stderr")}  # compared with Inspect's stderr elsewhere
    return per_question, corpus


def _value(values: dict, name: str) -> float | None:
    value = values.get(name)
    return None if value is None or math.isnan(value) else value


def _same_questions(a: dict[str, dict], b: dict[str, dict]) -> None:
    assert a.keys() == b.keys()
    for question_id in a:
        for name in PER_QUESTION:
            x, y = _value(a[question_id], name), _value(b[question_id], name)
            assert (x is None and y is None) or math.isclose(x, y), (question_id, name, x, y)


def _same_corpus(a: dict[str, float | None], b: dict[str, float | None]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        x, y = a[name], b[name]
        assert (x is None or math.isnan(x)) == (y is None or math.isnan(y)), name
        if x is not None and not math.isnan(x):
            assert math.isclose(x, y), (name, x, y)


def test_without_judge_all_three_paths_agree(use_fixture_data, monkeypatch, tmp_path, capsys):
    monkeypatch.delenv("CONDAMBIG_JUDGE_MODEL", raising=False)
    glue, glue_corpus = _lm_eval(monkeypatch, judged=False)
    summary, cli = _cli(tmp_path, capsys)
    inspect, inspect_corpus = _inspect(monkeypatch, judged=False)
    cli_values = {key: row["values"] for key, row in cli.items()}
    _same_questions(glue, cli_values)
    _same_questions(inspect, cli_values)
    _same_corpus(glue_corpus, summary["metrics"])
    _same_corpus(inspect_corpus, summary["metrics"])
    # eq. 1 per matched pair: [2] vs {2} = 1; [1, 4] vs {1} = 1/2; [3, 9] vs {3} with
    # fragment 9 of 4 invalid but still cited: |{3}| / |{3, F9}| = 1/2 (it was 1 while
    # invalid entries were dropped) -> (1 + 0.5 + 0.5) / 3
    assert cli["fx-001"]["values"]["citation_score"] == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert cli["fx-003"]["details"]["parsed"] is False
    metrics = summary["metrics"]
    assert metrics["out_of_range_citations"] == 1 and "answer_score" not in metrics
    assert "judge" not in summary


def test_with_judge_all_three_paths_agree(use_fixture_data, monkeypatch, tmp_path, capsys):
    with JudgeServer(JUDGE_SCRIPT) as server:
        env = {"CONDAMBIG_JUDGE_MODEL": "loopback", "CONDAMBIG_JUDGE_BASE_URL": server.base_url,
               "CONDAMBIG_JUDGE_API_KEY": "k", "CONDAMBIG_JUDGE_CACHE": str(tmp_path / "j.db")}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        glue, glue_corpus = _lm_eval(monkeypatch, judged=True)
        sent = server.stats()["requests"]
        assert sent > 0
        summary, cli = _cli(tmp_path, capsys)
        inspect, inspect_corpus = _inspect(monkeypatch, judged=True)
        assert server.stats()["requests"] == sent  # the other paths read the cache
    cli_values = {key: row["values"] for key, row in cli.items()}
    _same_questions(glue, cli_values)
    _same_questions(inspect, cli_values)
    _same_corpus(glue_corpus, summary["metrics"])
    _same_corpus(inspect_corpus, summary["metrics"])
    assert cli["fx-001"]["values"]["answer_score"] is not None
    assert summary["metrics"]["judge_failed"] == 0
    assert 0 < summary["metrics"]["combined_score"] < 1
    assert summary["judge"]["requests"] == 0 and summary["judge"]["cache_hits"] > 0


@pytest.mark.parametrize(("weighting", "weighted_rate", "fx_002_answer"), [
    # The loopback judge writes the score token with a leading space (" 3") and puts
    # log(0.5) on " 3" and " 4" (log(0.5) on " 9" and " 10" where Ana Runner is judged).
    # condambig: the token carrying the score is read (a glued space allowed): every
    # judgement weighted; fx-002's one answer: (0.5*3 + 0.5*4) / 10 = .35.
    ("condambig", 1.0, 0.35),
    # deepeval: no generated token equals the score text "3" exactly, so DeepEval falls
    # back to the reply's integer: nothing weighted; the reply says 3 (the more probable
    # integer, ties to the first listed) -> 3 / 10 = .3.
    ("deepeval", 0.0, 0.3),
])
def test_judge_weighting_reaches_the_judge_in_all_three_front_ends(
        use_fixture_data, monkeypatch, tmp_path, capsys, weighting, weighted_rate,
        fx_002_answer):
    with JudgeServer(JUDGE_SCRIPT) as server:
        env = {"CONDAMBIG_JUDGE_MODEL": "loopback", "CONDAMBIG_JUDGE_BASE_URL": server.base_url,
               "CONDAMBIG_JUDGE_API_KEY": "k", "CONDAMBIG_JUDGE_CACHE": str(tmp_path / "j.db")}
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        if weighting != "condambig":
            # a cache filled under the default rule must not answer for another rule
            _cli(tmp_path, capsys)
            before = server.stats()["requests"]
            assert before > 0
        glue, glue_corpus = _lm_eval(monkeypatch, judged=True,
                                     metadata={"judge_weighting": weighting})
        if weighting != "condambig":
            assert server.stats()["requests"] > before
        summary, cli = _cli(tmp_path, capsys, ("--judge-weighting", weighting))
        inspect, inspect_corpus = _inspect(monkeypatch, judged=True,
                                           task_arguments={"judge_weighting": weighting})
    assert summary["options"]["judge_weighting"] == weighting
    cli_values = {key: row["values"] for key, row in cli.items()}
    _same_questions(glue, cli_values)
    _same_questions(inspect, cli_values)
    for corpus in (glue_corpus, inspect_corpus, summary["metrics"]):
        assert corpus["judge_weighted_rate"] == weighted_rate
    details = cli["fx-001"]["details"]
    assert details["judgements"] > 0
    assert details["weighted_judgements"] == (details["judgements"] if weighted_rate else 0)
    assert cli_values["fx-002"]["answer_score"] == pytest.approx(fx_002_answer)
