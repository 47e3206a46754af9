"""lm-eval task folders, one per benchmark: task files generated from the spec
(``generate.py``) and each benchmark's task card."""

from pathlib import Path


def task_folder() -> str:
    """The folder to give lm-eval as ``--include_path`` (or that the plugin hook adds)."""
    return str(Path(__file__).resolve().parent)
