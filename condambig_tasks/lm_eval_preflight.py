"""Everything the selected lm-eval tasks need, checked before lm-eval loads the model.

lm-eval 0.4.13's command resolves the task names (``EvaluatorConfig.process_tasks`` in
``lm_eval/config/evaluate_config.py``) before ``simple_evaluate`` builds the model; a task's
own checks (``load_docs``) run only after the model has loaded, and stop at the first
failure. The start-up hook (:mod:`condambig_tasks._lm_eval_hook`) calls
:func:`check_selected_tasks` right after ``process_tasks``, with the task names and the
metadata every task will get: each selected task's options and judge settings, its agent
models, its judge's key and its data are checked, and every missing piece is reported in
one error, a line each; when a task's settings are complete, its judge's endpoint is asked
once (:func:`preflight_judge`). The data read here is kept for the task's own load
(:func:`condambig_tasks.provenance.preload`): it is read once.

Building a task (lm-eval's ``TaskManager.load``, its own task tests) needs no key, no
network and no agent model: the checks that do run here, and, for a program calling
``simple_evaluate``, the agent models and the judge's endpoint again from
``CondambigTask.set_fewshot_seed`` (``LmEvalTask.before_generation``), which
``simple_evaluate`` calls for every task after it builds the model and before any
generation. ``lm_eval.evaluator.evaluate`` called
directly skips both: a judge fault then withholds the judged metrics after generation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from condambig_metrics.judge.preflight import JudgeSettings, check_judge
from condambig_tasks import lm_eval_configs, provenance, registry, settings
from condambig_tasks.errors import CondambigError


def selected_tasks(names: Iterable[Any]) -> list[str]:
    """This project's leaf tasks among lm-eval's resolved task names (groups expanded;
    other tasks and task configs given as YAML files are left to lm-eval)."""
    groups = lm_eval_configs.spec_groups()
    found: dict[str, None] = {}
    for name in names:
        if not isinstance(name, str):
            continue
        for leaf in lm_eval_configs.leaf_tasks(name, groups):
            if registry.task_variant(leaf) is not None:
                found.setdefault(leaf)
    return list(found)


def task_problems(task: str, metadata: Mapping[str, Any]) -> list[str]:
    """What one task lacks (one line each): bad options first (the rest depends on them),
    then the judge's settings and key, the agent models, the data."""
    from condambig_tasks.lm_eval_options import resolve_lm_eval_options
    from condambig_tasks.run import BenchmarkRun, EnvironmentJudge

    benchmark, variant = registry.task_variant(task)
    # as the task gets it: its file's metadata (e.g. a variant's default judge) under ours
    metadata = {**lm_eval_configs.task_metadata(benchmark, variant), **metadata}
    try:
        resolved = resolve_lm_eval_options(benchmark, metadata, dict(variant.options))
    except CondambigError as error:
        return [str(error)]
    options, problems = resolved.options, []
    try:
        run, judge = BenchmarkRun.with_options(benchmark, options,
                                               EnvironmentJudge(resolved.judge))
    except CondambigError as error:
        problems.append(f"{benchmark.name}: {error}")
        run, judge = BenchmarkRun(benchmark, options), None
    if judge is not None and not judge.api_key and at_openai(judge):
        problems.append(
            f"{benchmark.name}: the judge {judge.model!r} at the OpenAI API needs a key: set "
            f"{settings.JUDGE_API_KEY_VARIABLE} (or OPENAI_API_KEY), or point "
            f"{settings.JUDGE_BASE_URL_VARIABLE} at your own server")
    for check in (run.before_generation, lambda: provenance.preload(benchmark, options)):
        try:
            check()
        except CondambigError as error:
            problems.extend(str(error).splitlines())
    if judge is not None and not problems:  # a request: only once the settings are right
        try:
            preflight_judge(benchmark, judge)
        except CondambigError as error:
            problems.append(str(error))
    return problems


def check_selected_tasks(names: Iterable[Any], metadata: Mapping[str, Any] | None) -> None:
    """Raise one :class:`CondambigError` listing every missing piece, a line each. A run
    of this project's tasks also keeps its generations on Ctrl-C from here on
    (:mod:`condambig_tasks.lm_eval_interrupt`; other tasks' runs are left alone)."""
    from condambig_tasks import lm_eval_interrupt

    selected = selected_tasks(names)
    if selected:
        lm_eval_interrupt.install()
    found: dict[str, None] = {}  # each problem once (variants share their data)
    for task in selected:
        for line in task_problems(task, dict(metadata or {})):
            found.setdefault(line.strip())
    problems = list(found)
    if len(problems) == 1:
        raise CondambigError(problems[0])
    if problems:
        lines = "\n".join(f"  - {line}" for line in problems)
        raise CondambigError(f"{len(problems)} things this run needs are missing or wrong "
                             f"(nothing was loaded or generated):\n{lines}")


# the judge settings as lm-eval users set them, for what a judge error advises
LM_EVAL_SETTINGS = JudgeSettings(
    base_url=f"{settings.JUDGE_BASE_URL_VARIABLE} (or --metadata judge_base_url; it ends in /v1)",
    model=f"{settings.JUDGE_MODEL_VARIABLE} (or --metadata judge_model)",
    key=f"{settings.JUDGE_API_KEY_VARIABLE} (or OPENAI_API_KEY)")


def preflight_judge(benchmark: Any, judge: Any) -> None:
    """The judge check (:func:`condambig_metrics.judge.preflight.check_judge`) through the
    judge's endpoint, once per process and (model, endpoint), and its cache: a wrong URL,
    key, model or cache path ends the run now, as one line, instead of after generation."""
    from condambig_metrics.judge import OpenAIJudgeBackend, normalized_base_url
    from condambig_tasks.run import check_judge_cache

    try:
        check_judge(OpenAIJudgeBackend(judge, LM_EVAL_SETTINGS),
                    f"{judge.model!r} at {normalized_base_url(judge.base_url)}", once=True,
                    timeout_seconds=judge.timeout_seconds)
    except ValueError as error:  # JudgeUnavailableError, or no key for the OpenAI API
        raise CondambigError(f"{benchmark.name}: {error}") from None
    check_judge_cache(benchmark, judge.cache_file)


def at_openai(judge: Any) -> bool:
    """The judge is the OpenAI API (its default endpoint)."""
    from condambig_metrics.judge import DEFAULT_BASE_URL, normalized_base_url

    return normalized_base_url(judge.base_url) == DEFAULT_BASE_URL
