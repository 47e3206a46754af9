"""Inspect entry point (``[project.entry-points.inspect_ai]``): importing registers the tasks."""

# ruff: noqa: F401, I001, E402
from condambig_tasks.errors import install_one_line_errors

install_one_line_errors()  # in the `inspect` command only: other programs keep their hook

import importlib
import pkgutil

import inspect_ai

from condambig._version_check import check_inspect, required_inspect

check_inspect(inspect_ai.__version__, required_inspect())  # before the tasks import it

import condambig

# every module of the package: importing a benchmark's module registers its @task functions
# (a new benchmark's inspect_tasks/<name>.py needs no line here); they are also names of
# this module, as an explicit import list would make them
for _module in pkgutil.iter_modules(condambig.__path__):
    if not _module.name.startswith("_"):
        _loaded = importlib.import_module(f"condambig.{_module.name}")
        globals().update({name: value for name, value in vars(_loaded).items()
                          if getattr(getattr(value, "__registry_info__", None), "type", None)
                          == "task" and getattr(value, "__module__", None) == _loaded.__name__})
