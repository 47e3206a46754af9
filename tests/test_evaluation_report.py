"""The evaluation report's own logic (benchmarks/evaluation_report.py), without a model:
its records survive a round trip as valid JSON, a plan resumes from the records of another
sitting, failures are sorted by what the text shows, and ConditionalQA's stand-in documents
are read by the project's own loader."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def report():
    spec = importlib.util.spec_from_file_location("evaluation_report",
                                                  REPO / "benchmarks" / "evaluation_report.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluation_report"] = module
    spec.loader.exec_module(module)
    return module


def _record(report, task="ambignq", limit=100, **changes):
    plan = report.PlannedRun("chat", "lm_eval_hf", task, limit, batch_size=32)
    values = dict(plan=plan, benchmark="ambignq", n=limit, headline="f1_answer_all",
                  value=0.25, stderr=0.05, metrics={"f1_answer_all": 0.25, "parse_rate": 0.5},
                  parse_rate=0.5, truncation_rate=0.1,
                  failures={"prose instead of the format asked for": {
                      "count": 3, "examples": ["It was 1948.", "Paris"]}},
                  reproduced=True, digest_matched=True, wall_seconds=100.0, tokens=500,
                  output_digests={"q1": "a" * 16}, prompt_digests={"q1": "b" * 16},
                  options={}, command=["lm_eval"], measured_on="2026-11-26")
    values.update(changes)
    return report.Measured(**values)


def test_a_record_round_trips_and_writes_null_for_nan(report):
    measured = _record(report, value=math.nan, metrics={"f1_answer_all": math.nan,
                                                        "nested": [math.inf, 1.0]})
    text = measured.to_json()
    json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in the record"))
    back = report.Measured.from_json(text)
    assert back.value is None and back.metrics == {"f1_answer_all": None, "nested": [None, 1.0]}
    assert back.plan == measured.plan and back.failures == measured.failures


def test_the_report_lists_what_is_not_yet_measured_and_renders_the_rest(report, tmp_path):
    plans = [report.PlannedRun("chat", "lm_eval_hf", "ambignq", 100, batch_size=32),
             report.PlannedRun("chat", "lm_eval_hf", "conditionalqa", 100, batch_size=32)]
    records = tmp_path / "runs"
    records.mkdir()
    (records / f"{plans[0].name}.json").write_text(_record(report).to_json())
    measured, stopped = report.load_records(plans, records)
    assert list(measured) == [plans[0]] and not stopped
    pending = [plan for plan in plans if plan not in measured]
    text = report.render(list(measured.values()), {}, pending, "full")
    assert "**Not yet measured** (1 runs" in text and "`chat-lm_eval_hf-conditionalqa` (100)" in text
    row = next(line for line in text.splitlines() if line.startswith("| `ambignq`"))
    assert "0.250 ± 0.050" in row and "| 0.50 | 0.10 | 100 | 5.0 | yes |" in row
    assert "| prose instead of the format asked for | 3 | `It was 1948.`<br>`Paris` |" in text


def test_a_run_recorded_midway_keeps_the_sections_an_earlier_sitting_wrote(
        report, tmp_path, monkeypatch):
    """Between runs the report keeps the register entries and condambig-report page already
    built (they are rebuilt only at the plan's end), even where the runs' logs are here."""
    calls = []
    monkeypatch.setattr(report.subprocess, "run", lambda *a, **k: calls.append(a) or
                        pytest.fail("rebuilt midway"))
    runs, out_dir = tmp_path / "runs", tmp_path / "evaluation-report"
    lm_eval = _record(report)
    inspect = _record(report, plan=report.PlannedRun("chat", "inspect_hf", "ambignq", 100,
                                                     batch_size=32))
    for name in ("from-log.json", "per-sample.jsonl"):
        (runs / lm_eval.plan.name).mkdir(parents=True, exist_ok=True)
        (runs / lm_eval.plan.name / name).write_text("{}")
    (runs / inspect.plan.name / "inspect").mkdir(parents=True)
    assert report.report_section([lm_eval], runs, out_dir, {}, rebuild=False) \
        == "written when the plan's runs are done"
    assert report.register_section([inspect], runs, out_dir, {}, rebuild=False) \
        == "written when the plan's runs are done"
    (out_dir / "register" / "ambignq").mkdir(parents=True)
    (out_dir / "register" / "ambignq" / "eval.yaml").write_text(
        "title: x\nevaluation_report:\n  results: []\n")
    (out_dir / "condambig-report.md").write_text("# report\n")
    kept = report.report_section([lm_eval], runs, out_dir, {}, rebuild=False)
    assert "condambig-report.md" in kept and "rebuilt when the plan's runs are done" in kept
    entries = report.register_section([inspect], runs, out_dir, {}, rebuild=False)
    assert "`ambignq/eval.yaml`" in entries and "results: []" in entries
    assert not calls and (out_dir / "register" / "ambignq" / "eval.yaml").is_file()


def test_a_judged_run_stopped_by_the_judge_check_is_read_back_as_such(report, tmp_path):
    plan = report.PlannedRun("judged", "lm_eval_hf", "abg_coqa_clarification", 100, 8)
    records = tmp_path / "runs"
    records.mkdir()
    (records / f"{plan.name}.json").write_text(json.dumps(
        {"plan": plan.__dict__, "command": ["lm_eval"], "returncode": 1,
         "said": ["condambig: abg_coqa: the judge ... did not answer the check request"],
         "measured_on": "2026-11-26"}))
    measured, stopped = report.load_records([plan], records)
    assert not measured and stopped[plan]["returncode"] == 1
    assert "exit 1, nothing generated" in report.judge_section([plan], [], stopped)


@pytest.mark.parametrize(("output", "hit_limit", "category"), [
    ("", False, "empty"),
    ("a\nb\na\nb\na\nb", True, "repeats itself until the token limit"),
    ("one two three", True, "cut at the token limit"),
    ('{"answer": }', False, "JSON (or brackets) without the fields asked for"),
    ("Question: who?\nAnswer:", False,
     "labels (Question: ...) but no answer after an Answer: label"),
    ("It was invented in 1948.", False, "prose instead of the format asked for"),
])
def test_failures_are_sorted_by_what_the_text_shows(report, output, hit_limit, category):
    assert report.failure_category(output, hit_limit) == category


def test_the_stand_in_documents_are_read_by_the_conditionalqa_loader(report, tmp_path):
    from condambig_tasks.conditionalqa.loader import load_documents

    questions = [
        {"url": "https://www.gov.uk/a-benefit", "evidences": ["<p>You can get it.</p>"],
         "answers": [["yes", ["<li>if you are over 18</li>"]]]},
        {"url": "https://www.gov.uk/a-benefit", "evidences": ["<p>You can get it.</p>",
                                                            "<p>It is paid weekly.</p>"],
         "answers": []},
    ]
    path = tmp_path / "documents.json"
    path.write_text(json.dumps(report.stand_in_documents(questions)))
    [document] = load_documents(path).values()
    assert list(document.contents) == ["<h1>A benefit</h1>", "<p>You can get it.</p>",
                                       "<li>if you are over 18</li>", "<p>It is paid weekly.</p>"]


def test_a_short_split_and_a_meaningless_recovery_are_said(report):
    """HotpotQA-FLM's local test set holds 53 rows: "53 of the first 100" would misread; a
    downstream model that does no better with the complete context makes f1_recovery's
    denominator near zero or negative, and the page says the number means nothing."""
    flm = _record(report, task="hotpot_flm_test", n=53, benchmark="hotpot_flm",
                  headline="f1_recovery", value=-128.6, stderr=678.9, parse_rate=None,
                  failures={}, metrics={"f1_recovery": -128.6, "f1_complete": 0.020,
                                        "f1_incomplete": 0.034})
    text = report.render([flm, _record(report)], {}, [], "full")
    row = next(line for line in text.splitlines() if line.startswith("| `hotpot_flm_test`"))
    assert "| 53 (all the local data holds; 100 asked) |" in row
    assert "| 100 (first 100) |" in next(line for line in text.splitlines()
                                         if line.startswith("| `ambignq`"))
    [note] = [line for line in text.splitlines() if line.startswith("`hotpot_flm_test`: ")]
    assert "F1 0.020 with the complete context and 0.034 without" in note
    assert "-128.600 ± 678.900" in note
    gaining = _record(report, task="hotpot_flm_test", benchmark="hotpot_flm",
                      metrics={"f1_complete": 0.72, "f1_incomplete": 0.53})
    assert report._recovery_note(gaining) is None


def test_a_run_printed_at_an_older_version_says_why_it_is_not_reproduced(report):
    """A parser change after the run: --from-log gives the new version's numbers, so the
    printed ones are not reproduced, and the page names both versions."""
    older = _record(report, reproduced=False, run_version="3-A", scored_version="4-A")
    assert report._reproduced(older) == "no: printed at version 3-A, rescored at 4-A (CHANGELOG)"
    assert report._reproduced(_record(report, reproduced=False)) == "NO"
    assert report._reproduced(_record(report)) == "yes"
    back = report.Measured.from_json(older.to_json())
    assert (back.run_version, back.scored_version) == ("3-A", "4-A")


def test_a_run_printed_at_another_comparability_version_is_run_again(report):
    """Today's version of the run's benchmark decides: another N (scores can differ) is run
    again; another interface letter, or an unrecorded version, is not."""
    version = report.registry.get("ambignq").version
    number, letter = version.split("-")
    older = f"{int(number) - 1}-A" if int(number) > 1 else None
    runs = {
        report.PlannedRun("chat", "lm_eval_hf", "ambignq", 100): _record(
            report, run_version=f"{number}-{chr(ord(letter) + 1)}"),
        report.PlannedRun("plain", "lm_eval_hf", "ambignq", 100): _record(
            report, run_version=None),
    }
    assert report.stale_runs(runs) == []
    if older is not None:
        plan = report.PlannedRun("chat", "inspect_hf", "ambignq", 100)
        runs[plan] = _record(report, run_version=older)
        assert report.stale_runs(runs) == [plan]
    plan = report.PlannedRun("chat", "lm_eval_served", "ambignq", 100)
    runs[plan] = _record(report, run_version=f"{int(number) + 1}-A")
    assert plan in report.stale_runs(runs)
    text = report.render(list(runs.values()), {}, [], "full", report.stale_runs(runs))
    assert "**To be run again**" in text and f"`{plan.name}`" in text


class _Template:
    """A chat template stand-in: what the tokenizer's ``apply_chat_template`` does with
    messages, as text."""

    def apply_chat_template(self, messages, tokenize, add_generation_prompt):
        assert tokenize is False and add_generation_prompt is True
        return "".join(f"<{m['role']}>{m['content']}" for m in messages) + "<assistant>"


def test_prompts_are_compared_as_the_model_saw_them(report):
    """lm-eval hf logs the templated text, Inspect the user message, lm-eval's chat API
    route the messages as JSON: all three become the templated text."""
    template = _Template()
    templated = "<user>Which year?<assistant>"
    assert report._as_templated(template, "Which year?", user_message=True) == templated
    assert report._as_templated(template, json.dumps([{"role": "user", "content": "Which year?"}]),
                                user_message=False) == templated
    assert report._as_templated(template, templated, user_message=False) == templated
    assert report._as_templated(template, [{"role": "user", "content": "Which year?"}],
                                user_message=False) == templated
    assert report._as_templated(template, [json.dumps([{"role": "user", "content": "Which year?"}])],
                                user_message=False) == templated
    assert report._as_templated(template, "[not json", user_message=False) == "[not json"


def test_the_consistency_table_counts_prompts_and_outputs_against_lm_eval(report):
    base = _record(report, output_digests={"q1": "a", "q2": "b", "q3": "c"},
                   prompt_digests={"q1": "p1", "q2": "p2", "q3": "p3"})
    plan = report.PlannedRun("chat", "inspect_hf", "ambignq", 100, batch_size=8)
    other = _record(report, plan=plan, output_digests={"q1": "a", "q2": "x", "q3": "y"},
                    prompt_digests={"q1": "p1", "q2": "p2", "q3": "other"})
    [row] = [line for line in report.consistency_section([base, other]).splitlines()
             if line.startswith("| `ambignq`")]
    # 3 items, 2 with the same prompt; 1 same output, 2 different, 1 of them same prompt
    assert row == "| `ambignq` | inspect_hf (batch 8) | 3 | 2 | 1 | 2 | 1 |"


def test_an_interrupted_run_counts_its_sittings_up_to_the_last_kept_generation(report, tmp_path):
    """A long lm-eval run keeps its generations in lm-eval's response cache; the next sitting
    resumes, and the run's wall time is the sittings' sum, an interrupted sitting counted to
    its last write to the cache (what it generated after that was lost)."""
    import os
    cache = tmp_path / "responses"
    first = report._begin_sitting(tmp_path, cache)
    assert first == [{"started": first[0]["started"], "seconds": None}]
    database = tmp_path / "responses_rank0.db"
    database.write_text("generations")
    os.utime(database, (first[0]["started"] + 300, first[0]["started"] + 300))
    second = report._begin_sitting(tmp_path, cache)
    # the seconds come from the cache's modification time set above, not from a clock
    assert second[0] == {"started": first[0]["started"], "seconds": pytest.approx(300.0),
                         "interrupted": True}
    assert second[1]["seconds"] is None and len(second) == 2
    assert json.loads((tmp_path / report.SITTINGS).read_text()) == second
    # a sitting interrupted before its first generation was kept counts nothing
    empty = tmp_path / "empty"
    empty.mkdir()
    report._begin_sitting(empty, empty / "responses")
    assert report._begin_sitting(empty, empty / "responses")[0]["seconds"] == 0


def test_lm_eval_runs_of_the_report_keep_their_generations_in_lm_evals_cache(tmp_path):
    sys.path.insert(0, str(REPO))
    from tests.support import real_model
    hf = next(route for route in real_model.ROUTES if route.name == "lm_eval_hf")
    command = real_model.lm_eval_command(hf, tmp_path, ["ambignq"], tmp_path / "out", limit=2,
                                         batch_size=1, response_cache=tmp_path / "responses")
    assert command[command.index("--use_cache") + 1] == str(tmp_path / "responses")


@pytest.fixture(scope="module")
def checkpoint():
    sys.path.insert(0, str(REPO))
    from benchmarks import report_checkpoint
    return report_checkpoint


_PROMPTS = ["Passages:\nThe first remote control for a television was developed by Zenith "
            "Radio Corporation in 1950, called the Lazy Bones.\nQuestion: who invented the "
            "remote?", "Passages:\nDexter Morgan is a forensic technician.\nQuestion: who is "
            "the doctor in dexter season 1?"]


@given(text=st.text(alphabet="ab Zenith 1950\n{}\"", max_size=300),
       spans=st.lists(st.tuples(st.integers(0, 200), st.integers(1, 80)), max_size=4))
def test_a_checkpointed_generation_decodes_to_itself_and_keeps_no_long_copy_of_a_prompt(
        checkpoint, text, spans):
    reference = checkpoint.reference_text(_PROMPTS)
    # model-like output: free text around spans copied from the prompts
    output = text + "".join(reference[start:start + length] + text[:7] for start, length in spans)
    pieces = checkpoint.encode(output, reference, checkpoint._index(reference))
    assert checkpoint.decode(pieces, reference) == output
    for piece in pieces:
        if isinstance(piece, str):
            assert not any(piece[i:i + checkpoint.SHINGLE] in reference
                           for i in range(len(piece) - checkpoint.SHINGLE + 1))


def test_a_copied_prompt_is_kept_as_one_reference(checkpoint):
    reference = checkpoint.reference_text(_PROMPTS)
    copied = _PROMPTS[1][10:90]
    pieces = checkpoint.encode("Answer: " + copied + " done", reference,
                               checkpoint._index(reference))
    assert pieces == ["Answer: ", [reference.index(copied), len(copied)], " done"]


def test_a_checkpoint_carries_a_run_to_another_machine(checkpoint, tmp_path):
    """Saved from one run's lm-eval cache, restored into an empty folder: the same cache
    entries (what lm-eval reads back), the earlier sittings with their kept seconds; on other
    prompts the restore refuses."""
    from sqlitedict import SqliteDict

    first = tmp_path / "first" / "responses"
    first.parent.mkdir()
    generations = {"9f" * 32: "Answer: " + _PROMPTS[0][10:120], "0a" * 32: "1948"}
    with SqliteDict(str(first.parent / "responses_rank0.db"), autocommit=True) as cache:
        cache.update(generations)
    started = (first.parent / "responses_rank0.db").stat().st_mtime - 30
    saved = tmp_path / "partial" / "run.json"
    plan = {"config": "chat", "task": "ambignq"}
    assert checkpoint.save(saved, first, _PROMPTS, [{"started": started, "seconds": None}],
                           plan) == 2
    text = saved.read_text()
    assert _PROMPTS[0][10:120] not in text and "Zenith Radio Corporation" not in text
    second = tmp_path / "second" / "responses"
    restored, sittings = checkpoint.restore(saved, second, _PROMPTS)
    assert restored == 2
    assert sittings[0]["interrupted"] and sittings[0]["seconds"] == pytest.approx(30, abs=1)
    with SqliteDict(str(second.parent / "responses_rank0.db"), flag="r") as cache:
        assert dict(cache.items()) == generations
    with pytest.raises(SystemExit, match="delete it"):
        checkpoint.restore(saved, tmp_path / "third" / "responses", _PROMPTS[:1])


@pytest.mark.e2e
def test_an_unfinished_run_continues_from_its_checkpoint_on_a_fresh_machine(
        report, tmp_path, monkeypatch):
    """A run's checkpoint, written beside the report while lm-eval runs, is all a fresh
    machine needs: the same run in an empty runs folder restores it into a new response
    cache, lm-eval generates nothing, and the outputs are the first machine's.

    The report's served lm-eval route (``local-chat-completions``), its server a loopback
    stand-in for ``transformers serve`` that answers with a copy of each prompt (each
    output its item's own, long copies a checkpoint keeps as references): the checkpoint
    works the same for every lm-eval route, and an ``hf`` model's start-up would cost both
    runs seconds of CPU."""
    from tests.conftest import FIXTURE_DATA, subprocess_env
    from tests.support.judge_server import JudgeServer

    monkeypatch.setattr(report, "CHECKPOINT_POLL_SECONDS", 0.5)
    plan = report.PlannedRun("chat", "lm_eval_served", "ambignq", 2, batch_size=1)
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), OPENAI_API_KEY="local")
    partial = tmp_path / "report" / "partial"
    folder = tmp_path / "model"  # what the served route reads of the model: its end token
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|im_end|>"}))

    def outputs(runs):
        [samples] = (runs / plan.name / "lm_eval").rglob("samples_*.jsonl")
        return [json.loads(line)["resps"] for line in samples.read_text().splitlines()]

    with JudgeServer({"default": {"reply": "Answer: 1950", "echo": "after"}}) as served:
        first = report.run_one(plan, folder, tmp_path / "first", env, served, partial)
        assert served.stats()["requests"] == 2
        saved = json.loads((partial / f"{plan.name}.json").read_text())
        assert len(saved["generations"]) == 2
        served.reset()
        second = report.run_one(plan, folder, tmp_path / "second", env, served, partial)
        assert served.stats()["requests"] == 0  # the model was asked for nothing
    log = (second / "stderr.txt").read_text()
    assert "Cached requests: 2, Requests remaining: 0" in log
    first_outputs = outputs(tmp_path / "first")
    assert outputs(tmp_path / "second") == first_outputs
    assert len({json.dumps(output) for output in first_outputs}) == 2  # each item its own
    sittings = json.loads((second / report.SITTINGS).read_text())
    assert len(sittings) == 2 and sittings[0]["interrupted"]
    assert json.loads((second / "run.json").read_text())["sittings"] == 2
    assert first != second


@pytest.mark.realdata
def test_the_committed_checkpoints_restore_on_the_upstream_data(
        report, checkpoint, real_data_dir, tmp_path):
    """Each unfinished run kept beside the report restores on the upstream files (its
    prompts rebuilt from them match the digest it was saved with), and no literal of it
    holds a run of ``SHINGLE`` characters of those prompts (no data text is committed)."""
    files = sorted((REPO / "docs" / "evaluation-report" / "partial").glob("*.json"))
    if not files:
        pytest.skip("no unfinished run of the report is checkpointed")
    specs = {spec.task: spec for spec in report.real_model.greedy_tasks()}
    staged = tmp_path / "data"  # as the report runs: ConditionalQA's stand-in documents
    report.stage_data(real_data_dir, staged)
    for file in files:
        saved = json.loads(file.read_text())
        plan = report.PlannedRun(**saved["plan"])
        benchmark = specs[plan.task].benchmark
        scoped = report.split_options(staged).get(benchmark, {})
        prompts = report.item_prompts(benchmark, plan.task, scoped, plan.limit, str(staged))
        restored, _ = checkpoint.restore(file, tmp_path / plan.name / "responses", prompts)
        assert restored == len(saved["generations"])
        index = checkpoint._index(checkpoint.reference_text(prompts))
        for pieces in saved["generations"].values():
            for piece in (piece for piece in pieces if isinstance(piece, str)):
                assert not any(piece[i:i + checkpoint.SHINGLE] in index
                               for i in range(len(piece) - checkpoint.SHINGLE + 1)), file
