"""``condambig-report``: lm-eval results and Inspect logs -> one Markdown report and PNGs.

The end-to-end test makes two real runs of a scripted model on a loopback OpenAI-compatible
server (``lm_eval`` and ``inspect eval`` on AmbigNQ and Abg-CoQA detection, ``--limit 3``),
then adds a second model by copying those files with the model name and the numbers changed
(the copies are marked as such below), runs the real ``condambig-report`` and parses the
Markdown back. Unit tests check
the paper data file, the input reading, the model matching and every figure.
"""

from __future__ import annotations

import dataclasses
import glob
import json
import math
import subprocess
from pathlib import Path

import pytest
import yaml

from condambig_tasks import registry
from condambig_tasks.benchmark import find_variant, headline_metric
from condambig_tasks.report.cli import main
from condambig_tasks.report.figures import HEIGHT_PX, WIDTH_PX, make_figures
from condambig_tasks.report.paper import (
    load_paper_data,
    paper_file,
    paper_model_for,
    parse_model_map,
    same_or_narrower,
)
from condambig_tasks.report.scales import (
    COUNT,
    FRACTION,
    PERCENT,
    SCALES,
    metric_scale,
)
from condambig_tasks.report.sections import build_sections
from condambig_tasks.run_logs import (
    INSPECT,
    LM_EVAL,
    RunLogError,
    RunResult,
    read_results,
    variant_for,
)
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start

TASKS = ["ambignq", "abg_coqa_detection"]
# numbers the copied "second model" files carry instead of the real run's (exact in 4 decimals)
COPY_NUMBERS = {
    "ambignq": {"f1_answer_all": 0.4, "f1_answer_multi": 0.25, "parse_rate": 0.75},
    "abg_coqa_detection": {"precision": 0.5, "recall": 0.25, "f1": 0.3333, "answer_f1": 0.125},
}
COPY_STDERR = {"ambignq": {"f1_answer_multi": 0.05}}  # lm-eval copy only: the ± column appears
LM_COPY_MODEL, INSPECT_COPY_MODEL = "model-b", "hf/model-c"
PAPER_MODEL_FLAGS = [f"{LM_COPY_MODEL}=SpanSeqGen (co-training)", f"{LM_COPY_MODEL}=XLNET+AnsType",
                     f"{INSPECT_COPY_MODEL}=BERT+AnsType"]
TOLERANCE = {FRACTION: 0.5e-4, PERCENT: 0.5e-2, COUNT: 0.5e-2}


# ---------------------------------------------------------------------- Markdown parsing


def section_tables(markdown: str, heading: str) -> list[list[dict[str, str]]]:
    """The tables under one ``### `` heading (until the next heading), as rows of dicts."""
    lines = markdown.splitlines()
    start = lines.index(heading) + 1
    end = next((i for i in range(start, len(lines)) if lines[i].startswith("#")), len(lines))
    tables, current = [], []
    for line in lines[start:end] + [""]:
        if line.startswith("|"):
            current.append([cell.strip().replace("\\|", "|")
                            for cell in line.strip().strip("|").split(" | ")])
        elif current:
            header, _, *rows = current
            tables.append([dict(zip(header, row, strict=True)) for row in rows])
            current = []
    return tables


def number(cell: str) -> float | None:
    cell = cell.split("±")[0].strip().rstrip("*")
    return None if cell == "—" else float(cell)


def metric_of(header: str) -> str:
    return header.split(" (")[0]


# ---------------------------------------------------------------------- real runs + copies


# the scripted subject (the model route is not what these tests check): every AmbigNQ answer
# scores alike, as a tiny random model's did (an unpaired bootstrap interval depends on the
# order of the samples once their scores differ); Abg-CoQA detection answers vary
SUBJECT = {"rules": [
    {"contains": "What colour was it?", "reply": "blue"},
    {"contains": "when was it rebuilt?", "reply": "1954"}],
    "default": {"reply": "AMBIGUOUS"}}


def _run(command: list[str], cwd: Path, **extra: str) -> subprocess.Popen:
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_OFFLINE="1", **extra)
    return subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[str, list[Path]]:
    """One real lm-eval run and one real Inspect run of one scripted loopback model (run side
    by side to save time)."""
    from tests.support.judge_server import JudgeServer

    root = tmp_path_factory.mktemp("report_runs")
    with JudgeServer(SUBJECT) as subject:
        lm_model = ["--model", "local-chat-completions", "--apply_chat_template", "--model_args",
                    f"model=subject,base_url={subject.base_url}/chat/completions,"
                    "tokenizer_backend=None"]
        lm_env = {"OPENAI_API_KEY": "subject-key"}
        lm_eval = _run([executable("lm_eval"), *lm_model, "--limit", "3",
                        "--tasks", ",".join(TASKS), "--output_path", str(root / "lm_eval"),
                        "--log_samples"], root, **lm_env)
        # the same model on more items: compared unpaired with the two runs above
        more = _run([executable("lm_eval"), *lm_model, "--limit", "4", "--tasks", "ambignq",
                     "--output_path", str(root / "lm_eval_4"), "--log_samples"], root, **lm_env)
        inspect = _run([executable("inspect"), "eval", *(f"condambig/{task}" for task in TASKS),
                        "--model", "openai-api/subject/model", "--limit", "3",
                        "--max-retries", "1", "--log-dir", str(root / "inspect"),
                        "--display", "none"], root, SUBJECT_BASE_URL=subject.base_url,
                       SUBJECT_API_KEY="subject-key")
        for name, process in (("lm_eval", lm_eval), ("inspect", inspect), ("lm_eval 4", more)):
            out, err = process.communicate(timeout=600)
            assert process.returncode == 0, f"{name} failed:\n{out[-2000:]}\n{err[-4000:]}"
    results = [Path(p) for p in glob.glob(f"{root}/lm_eval/**/results_*.json", recursive=True)]
    more_results = glob.glob(f"{root}/lm_eval_4/**/results_*.json", recursive=True)
    logs = sorted((root / "inspect").glob("*.eval"))
    assert len(results) == 1 and len(more_results) == 1 and len(logs) == len(TASKS)
    return {"lm_eval": results, "inspect": logs, "lm_eval_4": [Path(more_results[0])]}


def copy_lm_eval(result: Path, folder: Path) -> Path:
    """A COPY of the real lm-eval results with another model name and other numbers."""
    data = json.loads(result.read_text())
    data["model_name"] = LM_COPY_MODEL
    data["config"]["model_args"] = {"pretrained": LM_COPY_MODEL}
    for numbers in data["results"].values():  # as a run without stderr prints them
        numbers.update({key: "N/A" for key in numbers if key.endswith("_stderr,none")})
    for task, numbers in COPY_NUMBERS.items():
        for metric, value in numbers.items():
            assert f"{metric},none" in data["results"][task]
            data["results"][task][f"{metric},none"] = value
        for metric, value in COPY_STDERR.get(task, {}).items():
            data["results"][task][f"{metric}_stderr,none"] = value
    target = folder / "model_b" / result.name
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data))
    return target


def copy_inspect(log_file: Path, folder: Path) -> Path:
    """A COPY of a real Inspect log with another model name and other numbers."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    log.eval.model = INSPECT_COPY_MODEL
    task = log.eval.task.split("/")[-1]
    [score] = log.results.scores
    for metric, value in COPY_NUMBERS[task].items():
        score.metrics[metric].value = value
    # no stderr of its own (a log without them): none fits the changed numbers
    score.metrics = {k: v for k, v in score.metrics.items() if not k.endswith("_stderr")}
    target = folder / "model_c" / log_file.name
    target.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(target))
    return target


def expected_runs(real_runs, copies) -> dict[tuple[str, str, str], dict[str, float | None]]:
    """(model, front end, task) -> metrics, read from the files without the report's code."""
    from inspect_ai.log import read_eval_log

    expected = {}
    for path in [*real_runs["lm_eval"], copies["lm_eval"]]:
        data = json.loads(path.read_text())
        for task in TASKS:
            expected[(data["model_name"], "lm-eval", task)] = {
                key.split(",")[0]: value for key, value in data["results"][task].items()
                if key.endswith(",none") and "_stderr" not in key}
    for path in [*real_runs["inspect"], *copies["inspect"]]:
        log = read_eval_log(str(path), header_only=True)
        [score] = log.results.scores
        expected[(log.eval.model, "Inspect", log.eval.task.split("/")[-1])] = {
            name: metric.value for name, metric in score.metrics.items()}
    return expected


@pytest.mark.e2e
def test_report_from_real_lm_eval_and_inspect_runs(real_runs, tmp_path):
    copies = {"lm_eval": copy_lm_eval(real_runs["lm_eval"][0], tmp_path / "copies"),
              "inspect": [copy_inspect(log, tmp_path / "copies") for log in real_runs["inspect"]]}
    report = tmp_path / "out" / "report.md"
    command = [executable("condambig-report"), str(real_runs["lm_eval"][0].parent.parent),
               *map(str, real_runs["inspect"]), str(tmp_path / "copies"), "-o", str(report)]
    for flag in PAPER_MODEL_FLAGS:
        command += ["--paper-model", flag]
    result = warm_start.run(command, env=subprocess_env(), capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    markdown = report.read_text()
    expected = expected_runs(real_runs, copies)
    assert len(expected) == 8  # 2 models x 2 front ends x 2 tasks
    data = load_paper_data()

    for task in TASKS:
        benchmark = registry.task_variant(task)[0].name
        comparison, paper_rows, all_metrics, paired = section_tables(markdown,
                                                                     f"### Task `{task}`")
        assert len(paired) == len(all_metrics) - 1  # each run against the next
        # every run, every metric: the inputs' numbers
        assert {(row["Model"], row["Run"]) for row in all_metrics} == {
            (model, run) for model, run, t in expected if t == task}
        for row in all_metrics:
            numbers = expected[(row["Model"], row["Run"], task)]
            assert row["n"] == "3"
            for header, cell in row.items():
                if header in ("Model", "Run", "n"):
                    continue
                metric = metric_of(header)
                want = numbers[metric]
                got = number(cell)
                assert got == pytest.approx(want, abs=TOLERANCE[metric_scale(benchmark, metric)]), \
                    (task, row["Model"], metric)
                if row["Model"] == LM_COPY_MODEL:  # lm-eval's own stderr, only where given
                    assert ("±" in cell) == (metric in COPY_STDERR.get(task, {}))
                    assert "†" not in cell
                elif row["Model"] == INSPECT_COPY_MODEL:  # changed numbers: its samples
                    assert "±" not in cell  # no longer give them, so no ± is computed
                elif row["Run"] in ("Inspect", "lm-eval"):  # the run's own stderr
                    assert "±" in cell and "†" not in cell, (task, row["Run"], metric)
                else:  # the other real runs: computed from their per-sample scores
                    assert cell.endswith("†") and "±" in cell, (task, row["Run"], metric)
        # the paper's rows: exactly the data file's numbers for this task
        entries = [e for e in data.entries if e.task == task]
        assert entries
        cells = {(row["Paper model"], metric_of(h)): c for row in paper_rows
                 for h, c in row.items() if h not in ("Paper model", "Source")}
        for entry in entries:
            cell = cells[(entry.model, entry.metric)]
            assert number(cell) == pytest.approx(entry.value, abs=1e-9)
            assert cell.endswith("*") == (not entry.comparable)
        assert len([c for c in cells.values() if c != "—"]) == len(entries)
        # compared with the paper: the matched model's number and ours - paper
        matched = {"ambignq": {LM_COPY_MODEL: "SpanSeqGen (co-training)"},
                   "abg_coqa_detection": {LM_COPY_MODEL: "XLNET+AnsType",
                                          INSPECT_COPY_MODEL: "BERT+AnsType"}}[task]
        comparable = {e.metric for e in entries if e.comparable}
        assert {metric_of(row["Metric"]) for row in comparison} == comparable
        # only rows with both numbers: the matched models' (the others are in the notes)
        assert {row["Model"] for row in comparison} == set(matched)
        for row in comparison:
            metric = metric_of(row["Metric"])
            ours = expected[(row["Model"], row["Run"], task)][metric]
            assert number(row["Ours"]) == pytest.approx(ours, abs=0.5e-4)
            paper_model = matched[row["Model"]]
            assert row["Paper model"] == paper_model
            entry = next(e for e in entries if e.model == paper_model and e.metric == metric)
            assert number(row["Paper"]) == pytest.approx(entry.value, abs=1e-9)
            assert number(row["Δ (ours − paper)"]) == pytest.approx(ours - entry.value, abs=0.5e-4)
            assert "page not marked in the text" in row["Paper source"]
        if task == "ambignq":
            [row] = comparison
            assert row["Ours"] == "0.2500 ± 0.0500"  # lm-eval's own stderr, unmarked

    # figures: the two benchmarks in the inputs, at the fixed size, not blank
    import matplotlib.image
    import numpy

    for name in ("ambignq", "abg_coqa"):
        image = matplotlib.image.imread(report.parent / "figures" / f"{name}.png")
        assert image.shape[:2] == (HEIGHT_PX, WIDTH_PX)
        assert len(numpy.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 1
        assert f"](figures/{name}.png)" in markdown
    assert sorted(p.name for p in (report.parent / "figures").iterdir()) == [
        "abg_coqa.png", "ambignq.png"]
    assert "No input has CondAmbigQA, HotpotQA-FLM, ConditionalQA" in markdown


def scored_samples_of(path: Path) -> list:
    """A run's per-sample scores read straight from the framework's file (not with the
    report's reader): an Inspect log's Score per sample, lm-eval's per-doc values."""
    from condambig_tasks.benchmark import ScoredSample

    if path.suffix == ".eval":
        from inspect_ai.log import read_eval_log

        samples = []
        for sample in read_eval_log(str(path)).samples:
            [score] = sample.scores.values()
            samples.append(ScoredSample(str(sample.id), dict(score.value), {
                k: v for k, v in (score.metadata or {}).items() if k != "judge_calls"}))
        return samples
    samples = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        items = {name: row[name] for name in row["metrics"]}
        whole = [v["sample"] for v in items.values() if isinstance(v, dict)]
        samples.append(ScoredSample.from_json(whole[0]) if whole else ScoredSample(
            str(row["doc"]["id"]), {k: None if v != v else v for k, v in items.items()}))
    return samples


def _samples_file(results: Path, task: str) -> Path:
    [path] = results.parent.glob(f"samples_{task}_*.jsonl")
    return path


@pytest.mark.e2e
def test_paired_comparison_and_stderr_of_real_runs(real_runs, tmp_path):
    """Three real runs of AmbigNQ: lm-eval and Inspect on the same 3 items (paired), lm-eval
    on 4 (unpaired with both); every Δ, interval and p-value is compare()'s and every ± is
    uncertainty()'s on the runs' own per-sample scores."""
    from condambig_tasks.report.scales import format_value
    from condambig_tasks.report.tables import p_value_text
    from condambig_tasks.uncertainty import compare, uncertainty

    benchmark = registry.get("ambignq")
    [inspect_log] = [p for p in real_runs["inspect"] if "ambignq" in p.name]
    paths = [real_runs["lm_eval"][0], real_runs["lm_eval_4"][0], inspect_log]
    report = tmp_path / "report.md"
    result = warm_start.run([executable("condambig-report"), *map(str, paths), "-o", str(report),
                             "--no-figures", "--bootstrap-resamples", "200", "--seed", "7",
                             "--pairs", "all"],
                            env=subprocess_env(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    tables = section_tables(report.read_text(), "### Task `ambignq`")
    [all_metrics] = [t for t in tables if "n" in t[0] and "A" not in t[0]][-1:]
    [paired] = [t for t in tables if "A" in t[0]]
    samples = [scored_samples_of(_samples_file(paths[0], "ambignq")),
               scored_samples_of(_samples_file(paths[1], "ambignq")),
               scored_samples_of(inspect_log)]
    assert [len(s) for s in samples] == [3, 4, 3]
    options = benchmark.options({})
    headline = headline_metric(benchmark, options, False)
    # the pairs in input order: (3 items, 4 items), (3, Inspect 3), (4, Inspect 3)
    assert [(row["A"].endswith("(Inspect)"), row["B"].endswith("(Inspect)")) for row in paired] \
        == [(False, False), (False, True), (False, True)]
    for row, (a, b) in zip(paired, [(0, 1), (0, 2), (1, 2)], strict=True):
        want = compare(benchmark, samples[a], samples[b], options, False, headline,
                       resamples=200, seed=7)
        assert want.paired == ((a, b) == (0, 2))
        assert row["Items"] == ("paired (3 questions)" if want.paired else
                                f"unpaired (different item sets: {len(samples[a])}, "
                                f"{len(samples[b])})")
        assert metric_of(row["Metric"]) == headline
        fmt = lambda v: format_value(v, "ambignq", headline, signed=True)  # noqa: E731
        assert row["Δ (B − A)"] == fmt(want.delta)
        assert row["95 % interval"] == f"[{fmt(want.ci95_low)}, {fmt(want.ci95_high)}]"
        assert row["p-value"] == p_value_text(want)
    # every ± is uncertainty() on the same samples: the run's own (lm-eval's results and the
    # Inspect log carry it, computed with the defaults: unmarked), else computed here
    # (marked †) with the report's resamples and seed
    by_n_and_run = {("3", "lm-eval"): samples[0], ("4", "lm-eval"): samples[1],
                    ("3", "Inspect"): samples[2]}
    assert len(all_metrics) == 3
    for row in all_metrics:
        own = row["Run"] in ("Inspect", "lm-eval")
        estimates = uncertainty(benchmark, by_n_and_run[(row["n"], row["Run"])], options, False,
                                **({} if own else {"resamples": 200, "seed": 7}))
        for header, cell in row.items():
            if header in ("Model", "Run", "n"):
                continue
            metric = metric_of(header)
            stderr = estimates[metric].stderr
            assert cell.partition(" ± ")[2] == \
                format_value(stderr, "ambignq", metric) + ("" if own else "†")


@pytest.mark.e2e
def test_register_entries_report_the_real_inspect_runs(real_runs, tmp_path):
    """``condambig-register`` on the same real Inspect logs: each task's entry has an
    evaluation_report with the log's headline, valid for inspect_evals' own model."""
    from inspect_ai.log import read_eval_log

    from tests.test_register import COMMIT, load_entries, register

    metadata = pytest.importorskip("inspect_evals.metadata")
    result = register(tmp_path / "register", *map(str, real_runs["inspect"]), cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    entries = load_entries(tmp_path / "register")
    for path in real_runs["inspect"]:
        log = read_eval_log(str(path), header_only=True)
        task = log.eval.task.split("/")[-1]
        headline = log.eval.metadata["headline_metric"]
        report = entries[task].evaluation_report
        assert isinstance(report, metadata.EvaluationReport) and report.commit == COMMIT
        [row] = report.results
        assert row.model == log.eval.model and row.task == task
        [score] = log.results.scores
        assert row.metrics[0].key == headline
        assert row.metrics[0].value == pytest.approx(score.metrics[headline].value)
        assert report.version == log.eval.metadata["full_task_version"]
        assert str(log.eval.task_version) == report.version.split("-")[0]
        assert report.notes and "3 of" in report.notes[0]  # --limit 3


@pytest.mark.e2e
def test_a_path_of_the_wrong_kind_is_one_error_line(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": "world"}))
    for path, expected in ((other, "other.json: not a run of lm-eval, Inspect or "
                                        "condambig-score; expected an lm-eval results file"),
                           (tmp_path / "missing", "no such file or folder")):
        result = warm_start.run([executable("condambig-report"), str(path), "-o",
                                 str(tmp_path / "r.md")], env=subprocess_env(),
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 2
        [line] = result.stderr.strip().splitlines()
        assert line.startswith("condambig-report: ") and expected in line
        assert "Inspect log" in line
    assert not (tmp_path / "r.md").exists()


# ---------------------------------------------------------------------- unit tests


ENTRY_FIELDS = ("benchmark", "task", "model", "metric", "column", "printed", "scale", "value",
                "table", "section", "page", "split")
"""The keys every entry of the paper data file must have."""


def from_paper(printed: float, printed_scale: str, metric_scale_name: str) -> float:
    """A paper's printed number on our metric's scale (percent <-> fraction)."""
    if printed_scale == metric_scale_name:
        return printed
    if (printed_scale, metric_scale_name) == (PERCENT, FRACTION):
        return round(printed / 100, 10)
    if (printed_scale, metric_scale_name) == (FRACTION, PERCENT):
        return round(printed * 100, 10)
    raise ValueError(f"cannot convert a {printed_scale} number to a {metric_scale_name} metric")


def _raw_entries() -> list[dict]:
    """Every benchmark's paper_numbers.yaml entries, with the benchmark of its folder."""
    return [{**entry, "benchmark": name} for name in registry.available()
            if paper_file(registry.get(name)).is_file()
            for entry in yaml.safe_load(paper_file(registry.get(name)).read_text(
                encoding="utf-8"))["entries"]]


def test_paper_data_files_are_well_formed():
    raw = _raw_entries()
    data = load_paper_data()
    assert len(raw) == len(data.entries) > 100
    seen = set()
    for entry in raw:
        assert set(ENTRY_FIELDS) <= set(entry), entry
        assert set(entry) <= {*ENTRY_FIELDS, "comparable", "note"}, entry
        benchmark = registry.get(entry["benchmark"])
        assert entry["metric"] in {spec.name for spec in benchmark.metric_specs}, entry
        variant = find_variant(benchmark, entry["task"])  # a task of the file's own benchmark
        options = benchmark.options(dict(variant.options))
        assert entry["metric"] in {s.name for s in benchmark.active_metrics(options, True)}, entry
        assert isinstance(entry["printed"], str) and entry["scale"] in SCALES, entry
        ours = metric_scale(entry["benchmark"], entry["metric"])
        assert entry["value"] == pytest.approx(
            from_paper(float(entry["printed"]), entry["scale"], ours), abs=1e-12), entry
        low, high = {FRACTION: (0, 1), PERCENT: (0, 100), COUNT: (-20, 20)}[ours]
        assert low <= entry["value"] <= high, entry
        if ours == COUNT:
            assert entry["scale"] == COUNT, entry
        assert entry["table"].strip() and entry["section"].strip(), entry
        assert entry["page"] is None or str(entry["page"]).strip(), entry
        assert entry["split"] in data.splits, entry
        assert entry.get("note") is None or entry["note"] in data.notes, entry
        assert isinstance(entry.get("comparable", True), bool), entry
        assert entry["benchmark"] in data.papers
        key = (entry["task"], entry["model"], entry["metric"], entry["table"])
        assert key not in seen, key
        seen.add(key)
    models = {entry["model"] for entry in raw}
    assert set(data.aliases) <= models
    # the headline numbers the task READMEs quote
    table2 = {(e.model, e.metric): e.value for e in data.entries if e.table == "Table 2"
              and e.benchmark == "condambigqa"}
    assert table2[("GPT-4o", "balanced_condition")] == 0.552
    assert table2[("GPT-4o", "combined_score")] == 0.662
    flm = {(e.task, e.model, e.metric): e.value for e in data.entries
           if e.benchmark == "hotpot_flm"}
    assert flm[("hotpot_flm_test", "Human", "f1_recovery")] == 84.4
    assert flm[("hotpot_flm_test", "Human", "f1_response")] == pytest.approx(0.688)


def test_every_page_less_entry_says_so_in_its_source():
    entry = load_paper_data().entries[0]
    assert entry.page is None and entry.where.endswith("page not marked in the text")


def _lm_eval_results(path: Path, model: str, tasks: dict[str, dict[str, float]]) -> Path:
    """A hand-written results file in lm-eval's shape (unit tests only)."""
    path.write_text(json.dumps({
        "results": {task: {f"{k},none": v for k, v in metrics.items()}
                    for task, metrics in tasks.items()},
        "configs": {}, "model_name": model, "config": {"model_args": {}},
        "n-samples": {task: {"original": 10, "effective": 10} for task in tasks}}))
    return path


def test_unknown_task_is_skipped_with_a_notice(tmp_path, capsys):
    results = _lm_eval_results(tmp_path / "results_x.json", "m", {
        "arc_easy": {"acc": 0.5}, "ambignq": {"f1_answer_all": 0.5, "f1_answer_multi": 0.25}})
    assert main([str(results), "-o", str(tmp_path / "r.md"), "--no-figures"]) == 0
    stderr = capsys.readouterr().err
    assert "skipped task 'arc_easy'" in stderr
    markdown = (tmp_path / "r.md").read_text()
    assert "## Skipped" in markdown and "arc_easy" in markdown
    [row] = section_tables(markdown, "### Task `ambignq`")[-1]  # all metrics of our runs
    assert (row["Model"], row["f1_answer_all (0–1)"], row["n"]) == ("m", "0.5000", "10")


def test_only_unknown_tasks_is_an_error(tmp_path, capsys):
    results = _lm_eval_results(tmp_path / "results_x.json", "m", {"arc_easy": {"acc": 0.5}})
    assert main([str(results), "-o", str(tmp_path / "r.md")]) == 2
    assert "no condambig run in the inputs (1 skipped)" in capsys.readouterr().err


def test_bad_paper_model_flag_is_an_error(tmp_path, capsys):
    results = _lm_eval_results(tmp_path / "results_x.json", "m", {"ambignq": {"parse_rate": 1}})
    assert main([str(results), "--paper-model", "no-equals-sign"]) == 2
    assert "expected OURS=PAPER" in capsys.readouterr().err


def test_model_names_match_the_papers_models():
    data = load_paper_data()
    candidates = ["GPT-4o", "Qwen2.5 (7B)", "LLaMA3.1 (8B)"]
    assert paper_model_for("hf/Qwen/Qwen2.5-7B-Instruct", candidates, data, {}) == "Qwen2.5 (7B)"
    assert paper_model_for("openai/gpt-4o", candidates, data, {}) == "GPT-4o"
    assert paper_model_for("ollama/llama3.1:8b", candidates, data, {}) == "LLaMA3.1 (8B)"
    assert paper_model_for("my-finetune", candidates, data, {}) is None
    explicit = parse_model_map(["/ckpt/my-finetune=Qwen2.5 (7B)", "my-finetune=Llama 3"])
    assert paper_model_for("my-finetune", candidates, data, explicit) == "Qwen2.5 (7B)"
    assert paper_model_for("my-finetune", ["Llama 3"], data, explicit) == "Llama 3"
    assert paper_model_for("my-finetune", ["FiD"], data, explicit) is None


def _variant(task: str):
    return registry.task_variant(task)[1]


def test_inspect_and_cli_options_find_their_task():
    def task_of(benchmark: str, options: dict) -> str:
        return variant_for(registry.get(benchmark), options).task

    assert task_of("abg_coqa", {"subtask": "clarification", "split": "val"}) == \
        "abg_coqa_clarification"
    assert task_of("hotpot_flm", {"split": "test"}) == "hotpot_flm_test"
    assert task_of("condambigqa", {"setting": "main"}) == "condambigqa"
    # the paper's judge rule alone does not make a run condambigqa_paper's, which samples at
    # 0.7: a greedy run (or one whose sampling is not recorded) rescored with it stays in
    # the main setting; at the paper's temperature it is the most specific variant
    deepeval = {"setting": "main", "judge_weighting": "deepeval"}
    assert task_of("condambigqa", deepeval) == "condambigqa"
    assert variant_for(registry.get("condambigqa"), deepeval, 0.0).task == "condambigqa"
    assert variant_for(registry.get("condambigqa"), deepeval, 0.7).task == "condambigqa_paper"
    assert task_of("ambignq", {}) == "ambignq"
    # the paper's Table 2 (recorded for condambigqa) applies to the paper-settings task too
    assert same_or_narrower("condambigqa", _variant("condambigqa_paper"), "condambigqa")
    assert not same_or_narrower("condambigqa", _variant("condambigqa_gold_conditions"),
                                "condambigqa")
    assert not same_or_narrower("hotpot_flm", _variant("hotpot_flm_test"), "hotpot_flm")


def test_a_run_of_a_variant_task_is_that_variant_when_it_sampled_as_it_does():
    """Inspect's condambig/condambigqa_paper sets temperature 0.7 in its task config (the
    log's plan); run at --temperature 0 it is a main-setting run with the paper's judge
    rule, not a paper run; a run whose temperature is not recorded keeps its task's name."""
    from condambig_tasks.run_logs import _variant_of_task

    condambigqa = registry.get("condambigqa")
    deepeval = {"setting": "main", "judge_weighting": "deepeval"}
    assert _variant_of_task(condambigqa, "condambigqa_paper", deepeval, 0.7).task \
        == "condambigqa_paper"
    assert _variant_of_task(condambigqa, "condambigqa_paper", deepeval).task \
        == "condambigqa_paper"
    assert _variant_of_task(condambigqa, "condambigqa_paper", deepeval, 0.0).task \
        == "condambigqa"
    assert _variant_of_task(condambigqa, "condambigqa_gold_conditions",
                            {"setting": "gold_conditions"}, 0.0).task \
        == "condambigqa_gold_conditions"


def _run_of(task: str, model: str, metrics: dict[str, float]) -> RunResult:
    benchmark, variant = registry.task_variant(task)
    return RunResult(source=Path("made-up.json"), framework=LM_EVAL, model=model,
                     benchmark=benchmark.name, variant=variant, task=task, metrics=metrics,
                     n=5)


def test_every_benchmark_figure_is_drawn_at_its_size_and_not_blank(tmp_path):
    import matplotlib.image
    import numpy

    condambigqa = dict(balanced_condition=0.3, balanced_answer=0.4, balanced_citation=0.5,
                       combined_score=0.4)
    conditionalqa = {f"{p}{s}": 0.1 * (i + 1) for i, p in enumerate(["", "yesno_", "extractive_"])
                     for s in ("em", "f1", "em_with_conditions", "f1_with_conditions")}
    runs = [_run_of("condambigqa", "openai/gpt-4o", condambigqa),
            _run_of("hotpot_flm_test", "a", {"f1_recovery": 40.0}),
            _run_of("hotpot_flm", "a", {"f1_recovery": 30.0}),
            _run_of("conditionalqa", "a", conditionalqa),
            _run_of("ambignq", "a", {"f1_answer_all": 0.3, "f1_answer_multi": 0.2}),
            _run_of("abg_coqa_detection", "a", {"precision": 0.3, "recall": 0.2, "f1": 0.24})]
    sections = build_sections(runs, load_paper_data(), {})
    made, skipped = make_figures(sections, tmp_path)
    assert set(made) == set(registry.BENCHMARKS) and not skipped
    for path in made.values():
        image = matplotlib.image.imread(path)
        assert image.shape[:2] == (HEIGHT_PX, WIDTH_PX)
        assert len(numpy.unique(image.reshape(-1, image.shape[-1]), axis=0)) > 1


def test_panel_titles_stay_inside_their_axes_beside_a_wide_legend():
    """Two panels and long run names: the legend takes room from the axes, and a title
    wider than its axis would run under the legend (rewrapped to fit instead)."""
    from condambig_tasks.report.figures import compose, section_panels

    scores = dict(balanced_condition=0.3, balanced_answer=0.4, balanced_citation=0.5,
                  combined_score=0.4)
    runs = [_run_of("condambigqa", f"hf//root/.cache/models/SmolLM2-135M-Instruct-{i}", scores)
            for i in range(2)]
    runs.append(_run_of("condambigqa_gold_conditions", "openai/gpt-4o",
                        dict(balanced_answer=0.4, balanced_citation=0.5)))
    panels = [panel for section in build_sections(runs, load_paper_data(), {})
              for panel in section_panels(section)]
    figure = compose("CondAmbigQA", panels)
    renderer = figure.canvas.get_renderer()
    [legend] = figure.legends
    legend_box = legend.get_window_extent(renderer)
    titled = [axis for axis in figure.axes if axis.get_visible() and axis.get_title()]
    assert len(titled) == 2
    for axis in titled:
        title_box, axis_box = (axis.title.get_window_extent(renderer),
                               axis.get_window_extent(renderer))
        assert title_box.width <= axis_box.width + 1
        assert title_box.x1 <= legend_box.x0 and title_box.x0 >= 0


def test_a_figure_is_skipped_when_no_run_reports_a_plotted_metric(tmp_path):
    runs = [_run_of("condambigqa_closed_book", "a", {"answer_score": 0.2}),
            _run_of("abg_coqa_clarification", "a", {"bleu4": 10.0})]
    made, skipped = make_figures(build_sections(runs, load_paper_data(), {}), tmp_path)
    assert made == {}
    assert skipped == {
        "condambigqa": "no run reports a metric the CondAmbigQA figure draws (combined_score, "
                       "balanced_condition, balanced_answer, balanced_citation)",
        "abg_coqa": "no run reports a metric the Abg-CoQA figure draws (precision, recall, f1)"}


def test_reading_a_folder_skips_other_json_with_a_notice(tmp_path):
    _lm_eval_results(tmp_path / "results_1.json", "m", {"ambignq": {"f1_answer_all": 0.5}})
    (tmp_path / "notes.json").write_text("[1, 2]")
    found = read_results([tmp_path])
    assert [(run.model, run.variant.task, run.n) for run in found.runs] == [("m", "ambignq", 10)]
    assert found.runs[0].metrics == {"f1_answer_all": 0.5}
    assert [n for n in found.notices if "notes.json" in n]


def test_nan_and_na_values_are_no_value(tmp_path):
    _lm_eval_results(tmp_path / "results_1.json", "m", {"ambignq": {
        "f1_answer_all": math.nan, "f1_answer_multi": "N/A", "parse_rate": 1.0}})
    [run] = read_results([tmp_path / "results_1.json"]).runs
    assert run.metrics == {"f1_answer_all": None, "f1_answer_multi": None, "parse_rate": 1.0}



def test_a_saved_condambig_score_result_is_a_run_named_after_its_file(use_fixture_data,
                                                                      tmp_path, capsys):
    from condambig_tasks.cli import main as score_main

    questions = json.loads((use_fixture_data / "ambignq" / "dev_light.json").read_text())
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": q["id"], "output": "[]"} for q in questions]))
    assert score_main(["ambignq", "--outputs", str(outputs)]) == 0
    saved = tmp_path / "SpanSeqGen (co-training).json"  # the file name is the model name
    saved.write_text(capsys.readouterr().out)
    [run] = read_results([saved]).runs
    assert (run.model, run.framework, run.variant.task, run.n) == (
        "SpanSeqGen (co-training)", "condambig-score", "ambignq", len(questions))
    assert run.metrics["f1_answer_multi"] == 0.0
    [section] = build_sections([run], load_paper_data(), {})
    assert section.matched == ["SpanSeqGen (co-training)"]
    assert section.paper_value("SpanSeqGen (co-training)", "f1_answer_multi").value == 0.317


def test_one_model_through_several_front_ends_counts_once(tmp_path):
    """lm-eval names a local model by its path, Inspect by provider/path: one model."""
    from condambig_tasks.report.tables import render_report
    from condambig_tasks.run_logs import RunResults

    path = "/root/.cache/condambig/models/SmolLM2-135M-Instruct"
    runs = [_run_of("ambignq", path, {"f1_answer_all": 0.2}),
            dataclasses.replace(_run_of("ambignq", f"hf/{path}", {"f1_answer_all": 0.2}),
                                framework=INSPECT),
            _run_of("ambignq", "openai/gpt-4o", {"f1_answer_all": 0.5})]
    sections = build_sections(runs, load_paper_data(), {})
    text = render_report(RunResults(runs=runs), sections, load_paper_data(), {}, {}, tmp_path)
    assert "3 runs of 2 models" in text


def test_runs_on_fewer_records_than_their_options_name_say_what_they_read(tmp_path):
    """release=2k (the default) with only the 200-question file: the run read 200 records;
    the report says so instead of letting release=2k stand for the data."""
    from condambig_tasks.report.tables import data_notes

    two_k = registry.get("condambigqa").expected_size(
        registry.get("condambigqa").options({"release": "2k"}))
    path = _lm_eval_results(tmp_path / "results_x.json", "m",
                            {"condambigqa_closed_book": {"citation_score": 0.25}})
    data = json.loads(path.read_text())
    provenance = _provenance("condambigqa", {"setting": "closed_book", "release": "2k"})
    provenance["data"].update(records=200, sources=[
        {"kind": "file", "path": "/data/condambigqa/mcaqa.json", "sha256": "0" * 64}])
    data["configs"] = {"condambigqa_closed_book": {"metadata": {"provenance": provenance}}}
    path.write_text(json.dumps(data))
    [run] = read_results([path]).runs
    assert (run.data_records, run.data_sources) == (200, ("mcaqa.json",))
    [section] = build_sections([run], load_paper_data(), {})
    assert data_notes(section) == [
        f"- Data: m (lm-eval) read 200 records (mcaqa.json), not the {two_k:,} of the full "
        "split its options name: its numbers are on the data it read."]
    full = dataclasses.replace(run, data_records=two_k)
    assert data_notes(build_sections([full], load_paper_data(), {})[0]) == []


def test_scales_follow_the_metric_spec():
    from condambig_tasks.report.scales import COUNT, FRACTION, PERCENT, metric_scale

    assert metric_scale("hotpot_flm", "em_raw_recovery") == PERCENT  # spec scale 100
    assert metric_scale("abg_coqa", "bleu2") == PERCENT
    assert metric_scale("condambigqa", "count_error") == COUNT  # a per-question count
    assert metric_scale("condambigqa", "out_of_range_citations") == COUNT  # SUM
    assert metric_scale("ambignq", "f1_answer_all") == FRACTION
    assert metric_scale("no_such_benchmark", "x") == FRACTION


# ---------------------------------------------------------------------- from the spec


def _provenance(benchmark: str, options: dict, judge: str | None = None) -> dict:
    return {"benchmark": benchmark, "task_version": "1", "options": options, "judge": judge,
            "data": {"records": 6, "records_sha256": "0" * 64}, "models": {}}


def test_an_lm_eval_task_the_spec_does_not_name_is_placed_by_its_provenance(tmp_path):
    """A user's own lm-eval task over our glue: its results name the benchmark and options
    in the provenance block, so it joins that variant (and its paper numbers)."""
    path = _lm_eval_results(tmp_path / "results_x.json", "m", {
        "my_detection": {"f1": 0.5}, "condambigqa": {"citation_score": 0.25}})
    data = json.loads(path.read_text())
    data["configs"] = {
        "my_detection": {"metadata": {"provenance": _provenance(
            "abg_coqa", {"subtask": "detection", "split": "test"})}},
        "condambigqa": {"metadata": {"provenance": _provenance(
            "condambigqa", {"setting": "main"}, judge="judge-x")}}}
    path.write_text(json.dumps(data))
    found = read_results([path])
    assert not found.notices
    detection, condambigqa = found.runs
    assert (detection.benchmark, detection.variant.task, detection.task) == (
        "abg_coqa", "abg_coqa_detection", "my_detection")
    [section] = build_sections([detection], load_paper_data(), {})
    assert {e.task for e in section.paper} == {"abg_coqa_detection"}
    # the judge the run recorded, not only an lm-eval --metadata judge_model
    assert (condambigqa.judge, detection.judge) == ("judge-x", None)


def test_a_benchmark_without_paper_numbers_or_plotted_metrics_is_reported_plainly(
        tmp_path, monkeypatch, capsys):
    """An outside benchmark (the toy) has no paper_numbers.yaml and no metric marked
    plot: its runs get tables, no paper rows, and the report says why there is no figure."""
    from tests.test_contract import extra_benchmarks_with_toy

    monkeypatch.setenv("CONDAMBIG_EXTRA_BENCHMARKS", extra_benchmarks_with_toy())
    load_paper_data.cache_clear()
    try:
        assert not paper_file(registry.get("toy")).exists()
        assert all(e.benchmark != "toy" for e in load_paper_data().entries)
        saved = tmp_path / "toy-model.json"
        saved.write_text(json.dumps({"benchmark": "toy", "options": {},
                                     "metrics": {"exact_match": 0.5}, "n_scored": 4}))
        assert main([str(saved), "-o", str(tmp_path / "r.md")]) == 0
        markdown = (tmp_path / "r.md").read_text()
        assert "## Toy capitals" in markdown
        assert "The papers publish no number for this task." in markdown
        assert "No figure: no run reports a metric the Toy capitals figure draws (none)." \
            in markdown
    finally:
        load_paper_data.cache_clear()


def test_every_builtin_benchmark_keeps_its_paper_numbers_beside_its_spec():
    data = load_paper_data()
    for name in registry.BENCHMARKS:
        path = paper_file(registry.get(name))
        assert path.parent.name == name and path.is_file()
        assert data.papers[name] and any(e.benchmark == name for e in data.entries)


def test_figure_panels_are_the_specs_plotted_metrics():
    """Panels group the variant's active metrics marked plot by MetricSpec.figure; a run's
    missing metric stays a None (drawn n/a), a zero stays a zero."""
    from condambig_tasks.report.figures import section_panels

    benchmark = registry.get("conditionalqa")
    plotted = [s for s in benchmark.metric_specs if s.plot]
    runs = [_run_of("conditionalqa", "a", {s.name: 0.5 for s in plotted}),
            _run_of("conditionalqa", "b", {s.name: 0.0 for s in plotted if s.name != "f1"})]
    [section] = build_sections(runs, load_paper_data(), {})
    panels = section_panels(section)
    assert [list(p.groups) for p in panels] == [
        [s.name for s in plotted if s.figure == figure]
        for figure in dict.fromkeys(s.figure for s in plotted)]
    assert all(p.title.startswith(f"{p.groups[0]} — conditionalqa: ") for p in panels)
    [f1_panel] = [p for p in panels if "f1" in p.groups]
    ours = f1_panel.series[1]
    assert not ours.paper and ours.values[0] is None and ours.values[1:] == [0.0, 0.0, 0.0]
    assert {s.label for s in f1_panel.series if s.paper} == {
        f"{e.model} (paper)" for e in section.paper if e.metric in f1_panel.groups
        and e.comparable}


def test_two_runs_of_one_model_and_framework_are_told_apart_in_figures():
    from condambig_tasks.report.figures import section_panels

    runs = [RunResult(source=Path(f"{day}/results.json"), framework=LM_EVAL, model="m",
                      benchmark="ambignq", variant=_variant("ambignq"), task="ambignq",
                      metrics={"f1_answer_all": 0.2}, created=f"2026-01-0{day}")
            for day in (1, 2)]
    [section] = build_sections(runs, load_paper_data(), {})
    [panel] = section_panels(section)
    labels = [s.label for s in panel.series if not s.paper]
    assert labels == ["m (lm-eval), 2026-01-01", "m (lm-eval), 2026-01-02"]


def test_report_code_names_no_metric():
    """What the report shows of a benchmark comes from its spec: no metric name is written
    in the report's code."""
    names = {spec.name for name in registry.BENCHMARKS
             for spec in registry.get(name).metric_specs}
    folder = Path(registry.__file__).parent / "report"
    for path in folder.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        quoted = sorted(n for n in names if f'"{n}"' in text or f"'{n}'" in text)
        assert not quoted, (path.name, quoted)


# ---------------------------------------------------------------------- per-sample files


def _score_with_per_sample(fixture: Path, tmp_path: Path, capsys, name: str) -> tuple[Path, Path]:
    """condambig-score on AmbigNQ outputs (some parse, some do not) with --per-sample."""
    from condambig_tasks.cli import main as score_main

    questions = json.loads((fixture / "ambignq" / "dev_light.json").read_text())
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": q["id"], "output": '["x"]' if i % 2 else "no list"}
                                   for i, q in enumerate(questions)]))
    per_sample = tmp_path / f"{name}.per-sample.jsonl"
    assert score_main(["ambignq", "--outputs", str(outputs), "--per-sample",
                       str(per_sample)]) == 0
    saved = tmp_path / f"{name}.json"
    saved.write_text(capsys.readouterr().out)
    return saved, per_sample


def test_a_per_sample_file_goes_with_its_condambig_score_json(use_fixture_data, tmp_path,
                                                              capsys):
    from condambig_tasks.run_logs import CLI, read_scored_samples

    saved, per_sample = _score_with_per_sample(use_fixture_data, tmp_path, capsys, "model-x")
    found = read_results([saved, per_sample])
    [run] = found.runs
    assert (run.framework, run.per_sample, run.model) == (CLI, per_sample, "model-x")
    scored = read_scored_samples(run)
    assert scored.samples is not None and len(scored.samples) == run.n
    # condambig-score's own stderr is the ± (the framework's, unmarked)
    assert main([str(saved), str(per_sample), "-o", str(tmp_path / "r.md"), "--no-figures"]) == 0
    markdown = (tmp_path / "r.md").read_text()
    [row] = section_tables(markdown, "### Task `ambignq`")[-1]
    stderr = json.loads(saved.read_text())["stderr"]["parse_rate"]
    assert row["parse_rate (0–1)"].endswith(f" ± {stderr:.4f}")
    assert f"{saved} + {per_sample}" in markdown


def test_a_per_sample_file_of_another_run_or_alone_is_an_error(use_fixture_data, tmp_path,
                                                                capsys):
    """A --per-sample file that goes with no JSON among the inputs (its numbers are not the
    JSON's, or it is alone) records no benchmark or options: one line saying to give its
    JSON or the run record, never a run whose benchmark is read from its metric names."""
    saved, per_sample = _score_with_per_sample(use_fixture_data, tmp_path, capsys, "model-x")
    rows = [json.loads(line) for line in per_sample.read_text().splitlines()]
    rows[0]["values"]["parse_rate"] = 1.0 - rows[0]["values"]["parse_rate"]
    other = tmp_path / "other.jsonl"
    other.write_text("".join(json.dumps(row) + "\n" for row in rows))
    for inputs in ([saved, other], [per_sample]):
        with pytest.raises(RunLogError, match="goes with no condambig-score JSON"):
            read_results(inputs)
        assert main([*map(str, inputs), "-o", str(tmp_path / "r.md"), "--no-figures"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--record FILE" in err
    # the JSON alone is read, and cannot be paired: the paired table says why
    assert main([str(saved), "-o", str(tmp_path / "r.md"), "--no-figures"]) == 0
    markdown = (tmp_path / "r.md").read_text()
    assert "No per-sample scores for " in markdown and \
        ": give its --per-sample file beside the JSON" in markdown


# ---------------------------------------------------------------------- readability


def _section_of(runs, paper=True):
    from condambig_tasks.report.stats import Settings, attach_statistics

    sections = build_sections(runs, load_paper_data(), {})
    attach_statistics(sections, Settings(resamples=0, seed=1))
    return sections


def test_runs_that_would_print_as_the_same_row_are_told_apart():
    from condambig_tasks.report.tables import all_metrics_table

    def run(created, source, **options):
        return RunResult(source=Path(source), framework=LM_EVAL, model="m", benchmark="ambignq",
                         variant=_variant("ambignq"), task="ambignq",
                         metrics={"f1_answer_all": 0.2}, n=5, options=options, created=created)

    def run_cells(runs):
        [section] = _section_of(runs)
        _, _, *rows = all_metrics_table(section)
        return [row.split(" | ")[1] for row in rows]

    # by date, else by the options that differ, else by file name
    assert run_cells([run("2026-01-01T10:00:00", "a/r.json"), run("2026-01-02T10:00:00", "b/r.json")]) \
        == ["lm-eval, 2026-01-01 10:00", "lm-eval, 2026-01-02 10:00"]
    assert run_cells([run(None, "a/r.json", split="dev"), run(None, "b/r.json", split="test")]) \
        == ["lm-eval, split=dev", "lm-eval, split=test"]
    assert run_cells([run(None, "a/r1.json"), run(None, "b/r2.json")]) == \
        ["lm-eval, r1.json", "lm-eval, r2.json"]
    # told apart only when needed: another n is its own column already
    other = dataclasses.replace(run(None, "b/r2.json"), n=6)
    assert run_cells([run(None, "a/r1.json"), other]) == ["lm-eval", "lm-eval"]


def test_the_paper_comparison_shows_only_rows_with_both_numbers():
    from condambig_tasks.report.tables import comparison_table

    runs = [_run_of("abg_coqa_detection", "a", {"precision": 0.3, "recall": None}),
            _run_of("abg_coqa_detection", "b", {"precision": 0.2})]
    [section] = build_sections(runs, load_paper_data(), {"a": ["XLNET+AnsType"]})
    lines = comparison_table(section)
    rows = [line for line in lines if line.startswith("| a") or line.startswith("| b")]
    assert len(rows) == 1 and "| precision (0–1) |" in rows[0] and "| 0.300 |" in rows[0]
    [listed] = [line for line in lines if line.startswith("Paper metrics with no run value")]
    assert "`recall`, `f1`" in listed and "`precision`" not in listed
    # no run matched: no table, one line; a metric the runs report is not listed as one
    # with no run value (the notes say no paper model matched), one they lack still is
    [section] = build_sections(runs, load_paper_data(), {})
    lines = comparison_table(section)
    assert not any(line.startswith("|") for line in lines)
    assert not any("`precision`" in line for line in lines)
    [listed] = [line for line in lines if line.startswith("Paper metrics with no run value")]
    assert "`recall`, `f1`" in listed


def test_report_defaults_are_condambig_scores():
    from condambig_tasks.report import cli
    from condambig_tasks.uncertainty import DEFAULT_RESAMPLES, DEFAULT_SEED

    assert (cli.DEFAULT_RESAMPLES, cli.DEFAULT_SEED) == (DEFAULT_RESAMPLES, DEFAULT_SEED)


def test_runs_scored_with_different_options_are_not_paired():
    """A pair is summarised under one options value: runs scored with other options get a
    reason, not a difference computed under the first run's options."""
    from types import SimpleNamespace

    from condambig_tasks.benchmark import ScoredSample
    from condambig_tasks.report.stats import ALL, RunUncertainty, Settings, pair_plan, pair_row
    from condambig_tasks.run_logs import ScoredRun

    benchmark = registry.get("condambigqa")
    samples = [ScoredSample(id=str(i), values={"citation_score": i / 4}) for i in range(4)]

    def scored(**options):
        return RunUncertainty(scored=ScoredRun(samples, benchmark.options(options), False))

    run = _run_of("condambigqa", "m", {"citation_score": 0.375})
    section = SimpleNamespace(benchmark="condambigqa", runs=[run, run, run],
                              uncertainty=[scored(), scored(), scored(max_conditions=3)])
    settings = Settings(resamples=50, seed=1, pairs=ALL)
    rows = [pair_row(section, a, b, settings) for a, b in pair_plan(section, settings)[0]]
    assert [(row.a, row.b) for row in rows] == [(0, 1), (0, 2), (1, 2)]
    assert rows[0].comparison is not None and rows[0].comparison.delta == 0
    assert [row.reason for row in rows[1:]] == ["the runs were scored with different options"] * 2


# ---------------------------------------------------------------------- pairing judged runs


ALWAYS_TEN = {"default": {"scores": {"10": 1.0}}}


def _judged_score(tmp_path: Path, capsys, monkeypatch, name: str, server,
                  flags: tuple[str, ...] = ()) -> tuple[int, Path, Path]:
    """condambig-score on CondAmbigQA's fixture questions, judged by ``server``, saved as
    ``name.json`` with ``name.per-sample.jsonl``."""
    from condambig_tasks.cli import main as score_main
    from tests.condambigqa.test_consistency import RAW_OUTPUTS

    monkeypatch.setenv("CONDAMBIG_JUDGE_API_KEY", "k")
    monkeypatch.setenv("CONDAMBIG_JUDGE_CACHE", str(tmp_path / f"{name}.db"))
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    per_sample = tmp_path / f"{name}.per-sample.jsonl"
    code = score_main(["condambigqa", "--outputs", str(outputs), "--per-sample", str(per_sample),
                       "--judge-model", "judge", "--judge-base-url", server.base_url, *flags])
    saved = tmp_path / f"{name}.json"
    saved.write_text(capsys.readouterr().out)
    return code, saved, per_sample


def _pair_row(markdown: str) -> dict[str, str]:
    [pair] = section_tables(markdown, "### Task `condambigqa`")[-1]
    return pair


def test_runs_judged_by_different_judges_are_not_paired(use_fixture_data, tmp_path, capsys,
                                                       monkeypatch):
    """Same outputs, one judge against one that always says 10: the Δ would be the judges'."""
    from tests.condambigqa.test_consistency import JUDGE_SCRIPT
    from tests.support.judge_server import JudgeServer

    with JudgeServer(JUDGE_SCRIPT) as judge_a, JudgeServer(ALWAYS_TEN) as judge_b:
        _, a_json, a_samples = _judged_score(tmp_path, capsys, monkeypatch, "a", judge_a)
        _, b_json, b_samples = _judged_score(tmp_path, capsys, monkeypatch, "b", judge_b)
    combined = [json.loads(p.read_text())["metrics"]["combined_score"] for p in (a_json, b_json)]
    assert combined[0] != combined[1]
    report = tmp_path / "r.md"
    assert main([str(a_json), str(a_samples), str(b_json), str(b_samples), "-o", str(report),
                 "--no-figures"]) == 0
    pair = _pair_row(report.read_text())
    assert pair["Δ (B − A)"] == "—" and pair["p-value"] == "—"
    assert pair["Items"].startswith("not paired: judged by different judges")
    assert judge_a.base_url in pair["Items"] and judge_b.base_url in pair["Items"]


def test_a_withheld_headline_is_never_compared(use_fixture_data, tmp_path, capsys, monkeypatch):
    """A run that lost judgements printed combined_score null (exit 2): its --per-sample file
    holds the questions that happened to be judged, and is not paired on them."""
    from tests.condambigqa.test_consistency import JUDGE_SCRIPT
    from tests.support.judge_server import JudgeServer

    losing = {**JUDGE_SCRIPT, "faults": [{"kind": "400", "contains": "Ana Runner"}]}
    with JudgeServer(JUDGE_SCRIPT) as judge_a, JudgeServer(losing) as judge_b:
        _, a_json, a_samples = _judged_score(tmp_path, capsys, monkeypatch, "a", judge_a)
        code, b_json, b_samples = _judged_score(tmp_path, capsys, monkeypatch, "b", judge_b,
                                                ("--judge-max-failed", "0"))
    b_json.write_text(b_json.read_text().replace(judge_b.base_url, judge_a.base_url))
    assert code == 2 and json.loads(b_json.read_text())["metrics"]["combined_score"] is None
    assert b_samples.read_text()
    report = tmp_path / "r.md"
    assert main([str(a_json), str(a_samples), str(b_json), str(b_samples), "-o", str(report),
                 "--no-figures"]) == 0
    pair = _pair_row(report.read_text())
    assert pair["Δ (B − A)"] == "—" and pair["p-value"] == "—"
    assert pair["Items"] == ("not compared: B reported no combined_score (null: withheld by "
                             "the run, or not a number)")


def test_a_per_sample_file_that_does_not_reproduce_its_json_is_an_error(
        use_fixture_data, tmp_path, capsys):
    """``b.per-sample.jsonl`` beside ``b.json`` whose numbers it does not give: one error line
    naming both files, not a third run compared as a model."""
    saved, per_sample = _score_with_per_sample(use_fixture_data, tmp_path, capsys, "b")
    rows = [json.loads(line) for line in per_sample.read_text().splitlines()]
    rows[0]["values"]["parse_rate"] = 1.0 - rows[0]["values"]["parse_rate"]
    per_sample.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert main([str(saved), str(per_sample), "-o", str(tmp_path / "r.md"),
                 "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert str(per_sample) in err and str(saved) in err and "parse_rate" in err
    assert not (tmp_path / "r.md").exists()


def test_the_judge_is_its_model_and_endpoint_whichever_framework_ran_it():
    from inspect_ai.model._model_config import ModelConfig

    from condambig_tasks.report.stats import judge_difference
    from condambig_tasks.run_logs import _grader

    def judged(judge, base_url=None):
        return dataclasses.replace(_run_of("condambigqa", "m", {}), judge=judge,
                                   judge_base_url=base_url)

    # Inspect's grader names its provider; no base URL is api.openai.com in both
    assert judge_difference(judged("openai/gpt-4o-mini"), judged("gpt-4o-mini")) is None
    assert judge_difference(judged("j", "HTTP://H:1/v1/"), judged("j", "http://h:1/v1")) is None
    assert "different judges" in judge_difference(judged("j", "http://a/v1"),
                                                  judged("j", "http://b/v1"))
    assert judge_difference(judged(None), judged("j")) is None  # said by the headline check
    roles = {"grader": ModelConfig(model="openai-api/x/judge", base_url="http://h:2/v1")}
    assert _grader(roles) == ("openai-api/x/judge", "http://h:2/v1")
    assert _grader(None) == (None, None)
