"""Inspect entry point (``[project.entry-points.inspect_ai]``): importing registers the tasks."""

# ruff: noqa: F401, I001, E402
from condambig_tasks.errors import install_one_line_errors

install_one_line_errors()  # in the `inspect` command only: other programs keep their hook

from condambig.abg_coqa import (
    abg_coqa,
    abg_coqa_clarification,
    abg_coqa_clarified_qa,
    abg_coqa_detection,
)
from condambig.ambignq import ambignq
from condambig.condambigqa import condambigqa
from condambig.conditionalqa import conditionalqa
from condambig.hotpot_flm import hotpot_flm
