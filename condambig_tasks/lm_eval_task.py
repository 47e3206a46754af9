"""The lm-eval task class of every condambig task: its config is built from the spec.

lm-eval 0.4.13 builds a task file holding ``class: !function module.Class`` as
``Class(config=<the file's keys, --metadata in metadata>)`` (``lm_eval/tasks/_factory.py``,
the PY_TASK route). :class:`CondambigTask` looks its task name up in the registry
(:func:`condambig_tasks.registry.task_variant`) and builds the whole ``TaskConfig`` from
that variant (:mod:`condambig_tasks.lm_eval_configs`), so a task file is two lines. The task
owns its config: the provenance block and the null reasons go into its own
``config.metadata`` (written to ``configs.<task>`` of the results JSON), each metric's
aggregation is bound to the task that reports it, and the task gives lm-eval the standard
error of every metric (:meth:`CondambigTask.standard_errors`, through
:mod:`condambig_tasks.lm_eval_stderr`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lm_eval.api.task import ConfigurableTask

from condambig_tasks import lm_eval_configs, lm_eval_stderr, registry
from condambig_tasks.benchmark import SUITE_SPEC
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.lm_eval_glue import LmEvalTask


class CondambigTask(ConfigurableTask):
    """A condambig task for lm-eval, named by its task file's ``task:``."""

    def __init__(self, data_dir: Any = None, cache_dir: Any = None, download_mode: Any = None,
                 config: dict[str, Any] | None = None) -> None:
        given = dict(config or {})
        name = given.get("task")
        found = registry.task_variant(name) if isinstance(name, str) else None
        if found is None:
            raise ConfigurationError(
                f"lm-eval task {name!r}: no benchmark declares this task (known: "
                f"{', '.join(_known_tasks())}); a task file using CondambigTask names one "
                "of them in `task:`")
        benchmark, variant = found
        self.hooks = LmEvalTask(benchmark.name, self)
        built = lm_eval_configs.task_config(benchmark, variant, self.hooks,
                                            self.hooks.aggregation, given)
        super().__init__(data_dir, cache_dir, download_mode, config=built)
        lm_eval_stderr.install()

    def aggregation(self) -> dict[str, Any]:
        """The metric list's aggregations, and one for any other metric of the spec (a
        benchmark whose metrics depend on options the run sets is still aggregated by its
        spec, never by lm-eval's fallback mean)."""
        benchmark = self.hooks.benchmark
        every = {spec.name: self.hooks.aggregation(spec.name)
                 for spec in (*benchmark.metric_specs, SUITE_SPEC)}
        return {**every, **super().aggregation()}

    def standard_errors(self, raw_metrics: Mapping[tuple[str, str], list[Any]],
                        bootstrap_iters: int) -> dict[str, float]:
        """``<metric>_stderr,<filter>`` of this task's metrics, from the run its aggregations
        scored (:meth:`condambig_tasks.lm_eval_glue.LmEvalTask.standard_errors`)."""
        return self.hooks.standard_errors(raw_metrics, bootstrap_iters)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """The docs of this task's run (its metadata receives the provenance block); what
        needs a key, the network or an agent model waits for :meth:`set_fewshot_seed`
        (lm-eval calls this while building the task)."""
        if not isinstance(self.config.metadata, dict):
            self.config.metadata = {}
        self.dataset = self.hooks.load_docs(**self.config.metadata,
                                            **(self.config.dataset_kwargs or {}))

    def set_fewshot_seed(self, seed: int | None = None) -> None:
        """lm-eval 0.4.13's ``simple_evaluate`` calls this for every task once the model is
        built and before ``evaluate`` generates; its task tests never do. So the judge's
        endpoint and the agent models are checked here, once
        (:meth:`condambig_tasks.lm_eval_glue.LmEvalTask.before_generation`; the ``lm_eval``
        command has checked them before the model loaded, and the judge is asked once per
        process)."""
        super().set_fewshot_seed(seed)
        self.hooks.before_generation()


def _known_tasks() -> list[str]:
    return [variant.task for name in registry.available()
            for variant in registry.get(name).variants]
