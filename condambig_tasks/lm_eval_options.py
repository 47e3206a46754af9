"""One lm-eval task's options from ``--metadata``, never ignoring what the user typed.

lm-eval 0.4.13 hands every task one metadata dict: the model arguments merged with
``--metadata`` (``EvaluatorConfig.metadata = model_args | metadata`` in
``lm_eval/config/evaluate_config.py``; ``simple_evaluate`` does the same), under the YAML's
own ``metadata`` and with ``config_source`` added (``TaskFactory`` in
``lm_eval/tasks/_factory.py``); ``ConfigurableTask.download`` passes it, with the YAML's
``dataset_kwargs``, to ``custom_dataset`` as keyword arguments. So a key that is not one of
ours may be a model argument and is no error; a key close to one of ours is warned about,
and one close to a judge setting (``judge_modle``) is an error: ignored, it would give a run
without the judge the user asked for.

In a group run every task gets the same dict. A key scoped to one benchmark,
``{"abg_coqa": {"split": "val"}}``, reaches that benchmark only and wins over a plain key;
a plain key goes to every task that has that option.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from condambig_tasks import registry, settings
from condambig_tasks.benchmark import Benchmark, uses_judge
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.options import Wording, option_specs, resolve_scoped, suggestion

logger = logging.getLogger("condambig")

# keys lm-eval itself puts into a task's metadata (lm_eval/tasks/_factory.py, the YAMLs'
# ``metadata: {version}``), and the provenance block this project records there
FRAMEWORK_KEYS = frozenset({"version", "config_source", "provenance"})

_warned: set[str] = set()


def _scoped(benchmark: str, key: str, value: Any) -> str:
    return json.dumps({benchmark: {key: value}})


def _contradiction(benchmark: Benchmark, task: str | None, fixed: Mapping[str, Any],
                   contradicted: Mapping[str, Any], tasks: list[str]) -> str:
    asked = ", ".join(f"{key}={value!r}" for key, value in contradicted.items())
    fixes = ", ".join(f"{key}={fixed[key]!r}" for key in contradicted)
    this = f"task {task}" if task else "this task"
    advice = (f"; use --tasks {' or '.join(tasks)}" if tasks
              else f"; no {benchmark.name} task has {asked}")
    return f"{benchmark.name}: --metadata {asked} contradicts {this}, which fixes {fixes}{advice}"


WORDING = Wording(
    not_mapping="--metadata {name!r} must be an object of {name} options, e.g. {example}; "
                "got {value!r}",
    unknown="--metadata {name}: {keys} {are} of {name}{hint}; its options: {options}",
    scope_hint=" (plain --metadata keys go to every task of the run; if {key} was meant "
               "for {others} only, scope it: --metadata '{scoped}')",
    scoped=_scoped, contradiction=_contradiction)


@dataclass(frozen=True)
class ResolvedOptions:
    """A task's typed options, and its judge settings (the ``judge_*`` keys of its metadata,
    plain keys overridden by ``{"<benchmark>": {...}}``; empty when no judge applies)."""

    options: Any
    judge: dict[str, Any]


def resolve_lm_eval_options(benchmark: Benchmark, metadata: Mapping[str, Any],
                            fixed: Mapping[str, Any]) -> ResolvedOptions:
    """The options of one lm-eval task of ``benchmark``.

    ``metadata``: what lm-eval passes to ``custom_dataset``; ``fixed``: the task's
    ``dataset_kwargs: {task_options: {...}}`` (a variant such as
    ``condambigqa_gold_conditions``). Raises :class:`ConfigurationError` for an invalid value
    (naming the allowed ones), a value that contradicts the task's fixed option (naming the
    task to use) and an unknown key scoped to this benchmark.
    """
    fields_ = option_fields(benchmark)
    judge_keys = set(settings.judge_option_keys()) if uses_judge(benchmark) else set()
    options_of = {name: option_fields(registry.get(name)) for name in registry.available()}
    scoped = resolve_scoped(benchmark, metadata, fixed, options_of=options_of,
                            known=fields_ | judge_keys, wording=WORDING)
    _warn_close_keys(scoped.plain)
    given = {key: value for key, value in scoped.values.items() if key in fields_}
    try:
        options = benchmark.options({**given, **fixed}, strict=False)
    except ConfigurationError as error:
        raise ConfigurationError(f"{error}{scoped.hint}") from None
    judge: dict[str, Any] = {}
    if judge_keys and benchmark.judge_applies(options):
        # the API key never travels: lm-eval writes docs into its sample logs and metadata
        # into its results file, so the key must come from the environment
        judge = {key: value for key, value in scoped.values.items()
                 if key in judge_keys and key != "judge_api_key"}
        if scoped.values.get("judge_api_key"):
            logger.warning("--metadata judge_api_key is ignored: lm-eval writes metadata and "
                           "docs into its output files. Set %s (or OPENAI_API_KEY) instead.",
                           settings.JUDGE_API_KEY_VARIABLE)
    return ResolvedOptions(options, judge)


def option_fields(benchmark: Benchmark) -> set[str]:
    """The option names of a benchmark (its options dataclass's fields)."""
    return {spec.name for spec in option_specs(benchmark.options_type)}


@functools.cache
def known_keys() -> frozenset[str]:
    """Every key that means something to this project in lm-eval metadata."""
    keys = set(settings.judge_option_keys()) | set(registry.available())
    for name in registry.available():
        keys |= option_fields(registry.get(name))
    return frozenset(keys)


def _warn_close_keys(plain: Mapping[str, Any]) -> None:
    """Warn (once per process) about a key that looks like a misspelt option of ours; one
    close to a judge setting is an error, as who typed it asked for a judge, and ignoring
    it would give a run without one."""
    known = known_keys()
    for key in plain:
        if key in FRAMEWORK_KEYS or key in _warned or key == "task_options" or key in known:
            continue
        # ``device``, ``dtype``, ``revision``, ``batch_size``: model arguments, which ours
        # only prefix (agent_device, hub_revision); a typo is the same word misspelt
        if any(name.endswith("_" + key) for name in known):
            continue
        hint = suggestion(key, known)
        if hint and suggestion(key, settings.judge_option_keys()) == hint:
            right = hint.split("'")[1]
            raise ConfigurationError(
                f"--metadata {key!r} is not a condambig option: write the judge setting "
                f"{right!r} (ignored, it would give a run without the judge)")
        if hint:
            _warned.add(key)
            logger.warning("--metadata %r is not a condambig option and is ignored%s",
                           key, hint)
