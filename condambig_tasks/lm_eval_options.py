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
from condambig_tasks.benchmark import Benchmark, options_to_json, uses_judge
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.options import option_specs, suggestion

logger = logging.getLogger("condambig")

# keys lm-eval itself puts into a task's metadata (lm_eval/tasks/_factory.py, the YAMLs'
# ``metadata: {version}``), and the provenance block this project records there
FRAMEWORK_KEYS = frozenset({"version", "config_source", "provenance"})

_warned: set[str] = set()


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
    names = set(registry.available())
    scopes = {name: metadata[name] for name in names if name in metadata}
    for name, scoped in scopes.items():
        if not isinstance(scoped, Mapping):
            raise ConfigurationError(
                f"--metadata {name!r} must be an object of {name} options, e.g. "
                f"{_scoped_example(name)}; got {scoped!r}")
    plain = {key: value for key, value in metadata.items() if key not in names}
    scoped = dict(scopes.get(benchmark.name, {}))
    fields_ = option_fields(benchmark)
    judge_keys = set(settings.judge_option_keys()) if uses_judge(benchmark) else set()
    unknown = sorted(set(scoped) - fields_ - judge_keys)
    if unknown:
        raise ConfigurationError(
            f"--metadata {benchmark.name}: {', '.join(map(repr, unknown))} "
            f"{'is not an option' if len(unknown) == 1 else 'are not options'} of "
            f"{benchmark.name}{suggestion(unknown[0], fields_ | judge_keys)}; its options: "
            f"{', '.join(sorted(fields_ | judge_keys))}")
    _warn_close_keys(plain)

    given = {key: value for key, value in {**plain, **scoped}.items() if key in fields_}
    from_plain = sorted(key for key in given if key not in scoped)
    fixed = dict(fixed)
    contradicted: dict[str, Any] = {}
    fixed_options = _parse(benchmark, fixed, "")
    for key in sorted(set(given) & set(fixed)):
        hint = _scope_hint(benchmark.name, {key: given[key]} if key in from_plain else {})
        own = _parse(benchmark, {**fixed, key: given[key]}, hint)
        if getattr(own, key) != getattr(fixed_options, key):
            contradicted[key] = given[key]
    if contradicted:
        hint = _scope_hint(benchmark.name, {key: value for key, value in contradicted.items()
                                            if key in from_plain})
        raise ConfigurationError(_contradiction(benchmark, fixed, contradicted, hint))
    hint = _scope_hint(benchmark.name, {key: given[key] for key in from_plain})
    options = _parse(benchmark, {**given, **fixed}, hint)
    judge = (settings.lm_eval_judge_options({**plain, **scoped})
             if judge_keys and benchmark.judge_applies(options) else {})
    return ResolvedOptions(options=options, judge=judge)


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


def _parse(benchmark: Benchmark, values: Mapping[str, Any], hint: str) -> Any:
    try:
        return benchmark.options(values, strict=False)
    except ConfigurationError as error:
        raise ConfigurationError(f"{error}{hint}") from None


def _warn_close_keys(plain: Mapping[str, Any]) -> None:
    """Warn (once per process) about a key that looks like a misspelt option of ours."""
    candidates = [key for key in plain if key not in FRAMEWORK_KEYS and key not in _warned
                  and key != "task_options"]
    if not candidates:
        return
    known = known_keys()
    for key in candidates:
        if key in known:
            continue
        # ``device``, ``dtype``, ``revision``, ``batch_size``: model arguments, which ours
        # only prefix (agent_device, hub_revision); a typo is the same word misspelt
        if any(name.endswith("_" + key) for name in known):
            continue
        hint = suggestion(key, known)
        if hint and suggestion(key, settings.judge_option_keys()) == hint:
            raise ConfigurationError(misspelt_judge_setting(key, hint))
        if hint:
            _warned.add(key)
            logger.warning("--metadata %r is not a condambig option and is ignored%s",
                           key, hint)


def misspelt_judge_setting(key: str, hint: str) -> str:
    """A key close to a judge setting is an error, not a warning: who typed it asked for a
    judge, and ignoring it would give a run without one."""
    right = hint.split("'")[1]
    return (f"--metadata {key!r} is not a condambig option: write the judge setting "
            f"{right!r} (ignored, it would give a run without the judge)")


def _scope_hint(benchmark: str, given: Mapping[str, Any]) -> str:
    """For plain keys that other benchmarks also have: how to give them to one only."""
    for key, value in given.items():
        others = sorted(name for name in registry.available() if name != benchmark
                        and key in option_fields(registry.get(name)))
        if others:
            return (f" (plain --metadata keys go to every task of the run; if {key} was meant "
                    f"for {' or '.join(others)} only, scope it: --metadata "
                    f"'{json.dumps({others[0]: {key: value}})}')")
    return ""


def _scoped_example(benchmark: str, key: str = "KEY") -> str:
    return json.dumps({benchmark: {key: "VALUE"}})


def _contradiction(benchmark: Benchmark, fixed: Mapping[str, Any],
                   contradicted: Mapping[str, Any], hint: str) -> str:
    asked = ", ".join(f"{key}={value!r}" for key, value in contradicted.items())
    fixes = ", ".join(f"{key}={fixed[key]!r}" for key in contradicted)
    variants = variant_tasks(benchmark.name)
    current = [task for task, options in variants.items() if options == dict(fixed)]
    this = f"task {current[0]}" if len(current) == 1 else "this task"
    wanted = _option_json(benchmark, {**fixed, **contradicted})
    keys = set(fixed) | set(contradicted)

    def same(task_fixed: Mapping[str, Any], over: set[str]) -> bool:
        try:
            mine = _option_json(benchmark, task_fixed)
        except ConfigurationError:
            return False
        return set(task_fixed) <= keys and all(mine.get(k) == wanted.get(k) for k in over)

    exact = [task for task, options in variants.items() if same(options, keys)]
    close = [task for task, options in variants.items() if same(options, set(contradicted))]
    found = exact or close
    advice = (f"; use --tasks {' or '.join(found)}" if found
              else f"; no {benchmark.name} task has {asked}")
    return f"{benchmark.name}: --metadata {asked} contradicts {this}, which fixes {fixes}" \
           f"{advice}{hint}"


def _option_json(benchmark: Benchmark, values: Mapping[str, Any]) -> dict[str, Any]:
    return options_to_json(benchmark, benchmark.options(values, strict=False))


def variant_tasks(benchmark_name: str) -> dict[str, dict[str, Any]]:
    """The lm-eval tasks of a benchmark and the options each fixes (its spec's variants)."""
    from condambig_tasks.benchmark import json_safe

    return {variant.task: json_safe(dict(variant.options))
            for variant in registry.get(benchmark_name).variants}
