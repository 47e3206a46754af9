"""Reading finished runs: lm-eval results, Inspect logs and ``condambig-score`` results.

- lm-eval (``results_*.json``, or a ``--output_path`` folder): ``results[task]["<metric>,none"]``
  and ``"<metric>_stderr,none"`` (a number, or ``"N/A"``), the model from ``model_name`` or
  ``config.model_args``, the task's options from ``configs[task].metadata`` and its YAML's
  ``task_options``, ``n`` from ``n-samples``.
- Inspect (``.eval``, or ``.json`` written with ``--log-format json``): the header only
  (``read_eval_log(header_only=True)``): ``eval.task``, ``eval.model``, ``eval.metadata``
  (the benchmark and its options, written by ``condambig._factory``), and
  ``results.scores[*].metrics`` (``<metric>_stderr`` where a scorer reports one).
- ``condambig-score`` (its JSON saved to a file): ``benchmark``, ``options``, ``metrics``;
  the model is the file's name without extension (or a ``"model"`` key).

A result of a task that is not one of this project's benchmarks is skipped with a notice.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from condambig_tasks import json_files, registry
from condambig_tasks.errors import CondambigError
from condambig_tasks.framework_results import finite_number, lm_eval_task_metrics
from condambig_tasks.report.variants import (
    Variant,
    builtin_variants,
    variant_for_options,
    variant_from_config_source,
)

LM_EVAL = "lm-eval"
INSPECT = "Inspect"
CLI = "condambig-score"

EXPECTED = ("an lm-eval results file (results_*.json) or --output_path folder, an Inspect "
            "log (.eval, or .json from --log-format json), or a saved condambig-score JSON")


class ReportInputError(CondambigError):
    """A path the report cannot read as any of the expected inputs."""


@dataclass(frozen=True)
class Run:
    """One model on one task variant, as one framework recorded it."""

    source: Path
    front_end: str
    model: str
    variant: Variant
    metrics: Mapping[str, float | None]
    stderr: Mapping[str, float] = field(default_factory=dict)
    n: int | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    judge: str | None = None
    created: str | None = None

    @property
    def benchmark(self) -> str:
        return self.variant.benchmark


@dataclass
class Inputs:
    runs: list[Run] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)


def read_inputs(paths: Iterable[str | Path]) -> Inputs:
    """Every run under ``paths`` (files or folders), in the order given."""
    found = Inputs()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise ReportInputError(f"{path}: no such file or folder; expected {EXPECTED}.")
        files = _files_in(path) if path.is_dir() else [path]
        if not files:
            raise ReportInputError(f"{path}: holds no results_*.json, .eval or .json file; "
                                   f"expected {EXPECTED}.")
        for file in files:
            runs, notices = _read_file(file, strict=not path.is_dir())
            found.runs.extend(runs)
            found.notices.extend(notices)
    return found


def _files_in(folder: Path) -> list[Path]:
    """lm-eval results and Inspect logs under a folder (lm-eval's samples_*.jsonl, Inspect's
    logs.json listing and other JSON are left alone)."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and (
        p.suffix == ".eval" or (p.suffix == ".json" and p.name != "logs.json")))


def _read_file(path: Path, strict: bool) -> tuple[list[Run], list[str]]:
    """The runs of one file; a file of none of the kinds is an error when named directly
    and a notice when met inside a folder."""
    if path.suffix == ".eval":
        return _read_inspect(path)
    if path.suffix == ".json":
        if _INSPECT_JSON_HEAD.match(_head(path)):  # without parsing a large log twice
            return _read_inspect(path)
        data, problem = _load_json(path, strict)
        if problem is not None:
            return [], [f"skipped {path}: {problem}"]
        if isinstance(data, dict) and isinstance(data.get("results"), dict) and (
                "configs" in data or "config" in data):
            return _read_lm_eval(path, data)
        if isinstance(data, dict) and isinstance(data.get("eval"), dict):
            return _read_inspect(path)
        if isinstance(data, dict) and isinstance(data.get("metrics"), dict) and \
                isinstance(data.get("benchmark"), str):
            return _read_score_json(path, data)
    message = f"{path}: not {EXPECTED}."
    if strict:
        raise ReportInputError(message)
    return [], [f"skipped {path}: not an lm-eval, Inspect or condambig-score result"]


_INSPECT_JSON_HEAD = re.compile(r'\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


def _head(path: Path) -> str:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return handle.read(256)
    except OSError:
        return ""


def _load_json(path: Path, strict: bool) -> tuple[Any, str | None]:
    """The file's value, or (in a folder) why it cannot be read."""
    try:
        return json_files.loads(path.read_text(encoding="utf-8")), None
    except (OSError, UnicodeDecodeError, json_files.JsonFileError) as error:
        if not strict:
            return None, f"cannot be read as JSON ({error})"
        raise ReportInputError(f"{path}: cannot be read as JSON ({error}); expected "
                               f"{EXPECTED}.") from None


# ---------------------------------------------------------------------- lm-eval


def _read_lm_eval(path: Path, data: Mapping[str, Any]) -> tuple[list[Run], list[str]]:
    runs, notices = [], []
    configs = _object(path, data, "configs")
    groups = set(_object(path, data, "group_subtasks"))
    counts = _object(path, data, "n-samples")
    model = _lm_eval_model(path, data)
    for task, values in data["results"].items():
        config = _object(path, configs, task)
        if not isinstance(values, dict):
            raise ReportInputError(f"{path}: 'results' of task {task!r} is "
                                   f"{type(values).__name__}, not an object; expected "
                                   f"{EXPECTED}.")
        metadata = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
        variant = (variant_from_config_source(task, metadata.get("config_source"))
                   or builtin_variants().get(task))
        if variant is None:
            if task not in groups:  # a group's own row repeats its tasks
                notices.append(f"skipped task {task!r} in {path}: not a condambig task")
            continue
        if variant.benchmark not in registry.available():
            notices.append(f"skipped task {task!r} in {path}: benchmark {variant.benchmark!r} "
                           "is not registered")
            continue
        metrics, stderr = lm_eval_task_metrics(values)
        options = _options(variant.benchmark, {**metadata, **variant.fixed_options})
        n_samples = _object(path, counts, task)
        runs.append(Run(
            source=path, front_end=LM_EVAL, model=model, variant=variant, metrics=metrics,
            stderr=stderr, n=_int(n_samples.get("effective", n_samples.get("original"))),
            options=options, judge=metadata.get("judge_model"),
            created=_created(data.get("date"))))
    return runs, notices


def _lm_eval_model(path: Path, data: Mapping[str, Any]) -> str:
    name = data.get("model_name")
    if isinstance(name, str) and name.strip():
        return name.strip()
    config = _object(path, data, "config")
    args = config.get("model_args")
    if isinstance(args, str):  # "pretrained=...,dtype=..."
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    if isinstance(args, dict):
        for key in ("pretrained", "model", "path", "engine"):
            if args.get(key):
                return str(args[key])
    return str(config.get("model") or "unknown model")


def _created(value: Any) -> str | None:
    if isinstance(value, (int, float)):
        from datetime import datetime, timezone

        return datetime.fromtimestamp(value, tz=timezone.utc).isoformat(timespec="seconds")
    return str(value) if value else None


# ---------------------------------------------------------------------- Inspect


def _read_inspect(path: Path) -> tuple[list[Run], list[str]]:
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(path), header_only=True)
    except Exception as error:  # a zip or JSON that is not an Inspect log
        raise ReportInputError(f"{path}: cannot be read as an Inspect log "
                               f"({type(error).__name__}); expected {EXPECTED}.") from None
    spec = log.eval
    metadata = spec.metadata or {}
    benchmark = metadata.get("benchmark")
    task = spec.task.split("/")[-1]
    if not isinstance(benchmark, str):  # an older log: the task name may be a variant
        known = builtin_variants().get(task)
        benchmark = known.benchmark if known else None
    if benchmark is None or benchmark not in registry.available():
        return [], [f"skipped {path}: Inspect task {spec.task!r} is not a condambig task"]
    if log.status != "success" or log.results is None:
        return [], [f"skipped {path}: the Inspect run did not finish (status {log.status})"]
    options = dict(_object(path, metadata, "options") or _options(benchmark,
                                                                  spec.task_args or {}))
    variant = variant_for_options(benchmark, options, task)
    metrics: dict[str, float | None] = {}
    stderr: dict[str, float] = {}
    for score in log.results.scores:
        plain = {name: finite_number(metric.value) for name, metric in score.metrics.items()}
        single = [name for name in plain if name != "stderr"]
        for name, value in plain.items():
            if name.endswith("_stderr") and value is not None:
                stderr[name[: -len("_stderr")]] = value
            elif name == "stderr":
                if len(single) == 1 and value is not None:
                    stderr[single[0]] = value
            else:
                metrics[name] = value
    model = spec.model
    questioner = metadata.get("questioner")
    if questioner in ("repeater", "human"):  # a HotpotQA-FLM baseline: no model asked
        model = questioner
    return [Run(source=path, front_end=INSPECT, model=model, variant=variant, metrics=metrics,
                stderr=stderr, n=_int(log.results.completed_samples), options=options,
                judge=_grader(spec.model_roles), created=str(spec.created))], []


def _grader(roles: Any) -> str | None:
    grader = (roles or {}).get("grader")
    if isinstance(grader, list):
        grader = grader[0] if grader else None
    return getattr(grader, "model", None) if grader is not None else None


# ---------------------------------------------------------------------- condambig-score


def _read_score_json(path: Path, data: Mapping[str, Any]) -> tuple[list[Run], list[str]]:
    benchmark = data["benchmark"]
    if benchmark not in registry.available():
        return [], [f"skipped {path}: benchmark {benchmark!r} is not registered"]
    options = dict(_object(path, data, "options"))
    variant = variant_for_options(benchmark, options, benchmark)
    metrics = {name: finite_number(value) for name, value in data["metrics"].items()}
    model = str(data.get("model") or path.stem)
    return [Run(source=path, front_end=CLI, model=model, variant=variant, metrics=metrics,
                n=_int(data.get("n_scored")), options=options)], []


# ---------------------------------------------------------------------- helpers


def _options(benchmark: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """The benchmark's options from a framework's mixed metadata (unknown keys ignored)."""
    try:
        bench = registry.get(benchmark)
        return bench.options_to_json(bench.options(dict(values), strict=False))
    except Exception:  # options the benchmark no longer accepts: keep what was recorded
        return {key: value for key, value in values.items() if isinstance(key, str)}


def _object(path: Path, container: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``container[key]`` where the format has an object (or nothing: empty)."""
    value = container.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReportInputError(f"{path}: {key!r} is {type(value).__name__}, not an object; "
                               f"expected {EXPECTED}.")
    return value


def _int(value: Any) -> int | None:
    number = finite_number(value)
    return int(number) if number is not None else None
