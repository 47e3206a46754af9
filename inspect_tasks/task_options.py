"""``-T`` options scoped to one benchmark, as lm-eval's ``--metadata`` scopes them.

``inspect eval-set`` hands every ``-T`` option to every task of the set, so ``-T
split=val`` (Abg-CoQA's validation split) also reaches ``hotpot_flm``, whose splits are
others. A ``-T`` key named after a benchmark whose value is a mapping of its options,
``-T 'abg_coqa={split: val}'`` (YAML, as Inspect reads ``-T`` values; JSON works too),
reaches that benchmark's tasks only and wins over a plain key of the same name: the
``--metadata '{"abg_coqa": {"split": "val"}}'`` of lm-eval
(:mod:`condambig_tasks.lm_eval_options`). A plain key goes to every task that has that
option; a task without it ignores it with Inspect's own warning (``param 'x' not used by
task 'y'``). A scoped key that no task of its benchmark has is an error naming the options,
and a plain value a task rejects names the scoped form when another benchmark has that
option.

A benchmark's task functions use this module's :func:`task` in place of Inspect's: it is
Inspect's ``@task`` on the function wrapped by :func:`scoped_options`, which keeps the
declared parameters (Inspect lists and validates those) and adds a ``**scoped`` one,
through which Inspect passes the scope keys. Its name stays ``task`` because Inspect (and
its linter) find tasks in the source by a decorator of that name.

A declared variant's own task (:func:`variant_task`, e.g. ``condambigqa_gold_conditions``)
takes the general task's ``-T`` options but those its variant fixes; one of those given
must say the fixed value, as lm-eval's ``--metadata`` must. The rules are
:func:`condambig_tasks.options.resolve_scoped`'s, lm-eval's reader; this module gives
their ``-T`` wording.
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Callable, Mapping
from typing import Any

from condambig_tasks import registry
from condambig_tasks.benchmark import Benchmark, find_variant
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.options import Wording, resolve_scoped, suggestion

logger = logging.getLogger("condambig")

SCOPES = "scoped"  # the name of the variadic keyword parameter the tasks gain
FIXED = "fixed_options"  # a variant's task: the options its variant fixes (variant_task)
# benchmark -> the -T options of its tasks (filled as the task modules are imported)
_TASK_OPTIONS: dict[str, set[str]] = {}


def task(function: Callable[..., Any]) -> Any:
    """Inspect's ``@task`` for a benchmark's task function (in ``condambig.<benchmark>``),
    its ``-T`` options scopable to the benchmark."""
    from inspect_ai import task as inspect_task

    return inspect_task(scoped_options(function))


def _benchmark_of(function: Callable[..., Any]) -> str:
    """The benchmark whose task module defines ``function``: ``condambig.<benchmark>``, or,
    for a task file Inspect loads by its path, the module Inspect names by that path
    (``.../inspect_tasks/<benchmark>.py``)."""
    return function.__module__.removesuffix(".py").replace("/", ".").rsplit(".", 1)[-1]


def variant_task(general: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The task of one declared variant, named like it (``condambig/<variant>``, as lm-eval
    names the variant's task; one name per variant, so an eval set can hold several): the
    ``-T`` parameters of the benchmark's ``general`` task but those the variant fixes, with
    the variant's generation budget as ``max_tokens``'s default and its sampling
    temperature in the task's config (a ``--temperature`` given still wins).

        @task
        @variant_task(condambigqa)
        def condambigqa_gold_conditions(**options: Any) -> Task:
            ...

    Its docstring is the variant's declared description (the register entry's summary).
    """
    build = inspect.unwrap(general)
    signature = inspect.signature(build)

    def decorate(function: Callable[..., Any]) -> Callable[..., Any]:
        from inspect_ai.model import GenerateConfig

        benchmark = registry.get(_benchmark_of(function))
        variant = find_variant(benchmark, function.__name__)
        parameters = [parameter for name, parameter in signature.parameters.items()
                      if name not in variant.options]
        if variant.max_tokens is not None:
            parameters = [parameter.replace(default=variant.max_tokens)
                          if parameter.name == "max_tokens" else parameter
                          for parameter in parameters]

        fixed, temperature = dict(variant.options), variant.temperature
        own = signature.replace(parameters=parameters)

        @functools.wraps(function)
        def variant_of_general(**given: Any) -> Any:
            arguments = own.bind(**given)
            arguments.apply_defaults()
            task = build(**fixed, **arguments.arguments)
            if temperature is not None:
                task.config = task.config.merge(GenerateConfig(temperature=temperature))
            return task

        variant_of_general.__signature__ = own  # type: ignore[attr-defined]
        variant_of_general.__annotations__ = {
            name: kind for name, kind in build.__annotations__.items() if name not in fixed}
        setattr(variant_of_general, FIXED, fixed)
        variant_of_general.__doc__ = f"{variant.description[0].upper()}{variant.description[1:]}."
        return variant_of_general

    return decorate


def _scoped(benchmark: str, key: str, value: Any) -> str:
    return f"{benchmark}={{{key}: {value}}}"


def _contradiction(benchmark: Benchmark, task: str | None, fixed: Mapping[str, Any],
                   contradicted: Mapping[str, Any], tasks: list[str]) -> str:
    """``-T`` values contradicting what a variant's ``task`` fixes: the task that runs
    them, with the ``-T`` options it does not fix."""
    prefix = registry.INSPECT_PREFIX
    runs = find_variant(benchmark, tasks[0]).options if tasks else {}
    run = prefix + (tasks[0] if tasks else benchmark.name) + "".join(
        f" -T {key}={value}" for key, value in contradicted.items() if key not in runs)
    this = prefix + task if task else "this task"
    return (f"{this} runs {', '.join(f'{k}={fixed[k]}' for k in contradicted)}; "
            f"-T {', '.join(f'{k}={v}' for k, v in contradicted.items())} asks for "
            f"another: run {run}")


WORDING = Wording(
    not_mapping="-T {name} must be a mapping of {name} options, e.g. -T '{example}'; "
                "got {value!r}",
    unknown="-T {name}: {keys} {are} of {name}'s tasks{hint}; their options: {options}",
    scope_hint=" (plain -T options go to every task of the eval set; if {key} was meant "
               "for {others} only, scope it: -T '{scoped}')",
    scoped=_scoped, contradiction=_contradiction)


def scoped_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (a benchmark's task function, in ``condambig.<benchmark>``) taking
    also the scope keys of :mod:`this module <condambig.task_options>`."""
    benchmark = _benchmark_of(function)
    signature = inspect.signature(function)
    declared = [name for name, parameter in signature.parameters.items()
                if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)]
    _TASK_OPTIONS.setdefault(benchmark, set()).update(declared)
    fixed = getattr(function, FIXED, {})

    @functools.wraps(function)
    def with_scopes(*args: Any, **given: Any) -> Any:
        arguments, hint = task_arguments(benchmark, function.__name__, declared, fixed, given)
        try:
            return function(*args, **arguments)
        except ConfigurationError as error:
            raise ConfigurationError(f"{error}{hint}") from None

    with_scopes.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[*signature.parameters.values(),
                    inspect.Parameter(SCOPES, inspect.Parameter.VAR_KEYWORD)])
    return with_scopes


def task_arguments(benchmark: str, task: str, declared: list[str], fixed: Mapping[str, Any],
                   given: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The arguments of one task of ``benchmark`` (its variant fixing ``fixed``) from the
    ``-T`` options ``given``, and the scope hint for a message rejecting one of them."""
    options_of = {name: _TASK_OPTIONS.get(name, set()) for name in registry.available()}
    scoped = resolve_scoped(registry.get(benchmark), given, fixed, options_of=options_of,
                            known=_TASK_OPTIONS.get(benchmark, set(declared)), wording=WORDING)
    for key in scoped.plain:
        if key not in declared:  # Inspect's own warning, which it skips for a task with **kwargs
            logger.warning("param '%s' not used by task '%s'%s", key, task,
                           suggestion(key, set(declared) | set(options_of)))
    for key in sorted(set(scoped.scoped) - set(declared)):
        logger.warning("param '%s' (-T %s) not used by task '%s'", key, benchmark, task)
    return {key: value for key, value in scoped.values.items() if key in declared}, scoped.hint
