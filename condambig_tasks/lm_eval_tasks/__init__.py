"""lm-eval task folders (YAML + thin glue), one per benchmark, in lm-eval's own style."""

from pathlib import Path


def task_folder() -> str:
    """The folder to give lm-eval as ``--include_path`` (or that the plugin hook adds)."""
    return str(Path(__file__).resolve().parent)
