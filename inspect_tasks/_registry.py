"""Inspect entry point (``[project.entry-points.inspect_ai]``): importing registers the tasks."""

# ruff: noqa: F401
from condambig.condambigqa import condambigqa
from condambig.conditionalqa import conditionalqa
