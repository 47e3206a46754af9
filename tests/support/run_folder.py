"""One temporary folder per test run, shared by the pytest process and its xdist workers.

The first pytest process (the xdist controller, or the only process of a serial run) makes
it and names it in ``RUN_FOLDER_VARIABLE``; xdist workers and CLI subprocesses inherit the
variable. It holds what is built once per run and then only read: the tiny models
(:func:`shared_model`) and lm-eval's index of its built-in tasks
(``tests/support/lm_eval_index/``). Caches that tests write to are per worker
(:func:`worker_cache_dir`), as in a serial run each process has its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

RUN_FOLDER_VARIABLE = "CONDAMBIG_TEST_RUN_DIR"
# lm-eval's task index of this run (tests/support/lm_eval_index/sitecustomize.py)
LM_EVAL_INDEX_VARIABLE = "CONDAMBIG_TEST_LM_EVAL_INDEX"
LM_EVAL_INDEX_PATH = Path(__file__).resolve().parent / "lm_eval_index"


def is_xdist_worker(config) -> bool:
    return hasattr(config, "workerinput")


def create_run_folder() -> Path:
    """Called once, by the first pytest process; the caller removes it at the end."""
    folder = Path(tempfile.mkdtemp(prefix="condambig-test-run-"))
    os.environ[RUN_FOLDER_VARIABLE] = str(folder)
    return folder


def run_folder() -> Path:
    return Path(os.environ[RUN_FOLDER_VARIABLE])


def remove_run_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def worker_cache_dir(config) -> Path:
    """``CONDAMBIG_CACHE_DIR`` of this process: one per xdist worker (``gw0``, ``gw1``...)."""
    name = config.workerinput["workerid"] if is_xdist_worker(config) else "main"
    folder = run_folder() / "cache" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def shared_model(name: str, build: Callable[[Path], object]) -> Path:
    """The model folder ``name`` of this run, built by ``build(folder)`` on first use.

    Whichever process asks first builds it under a file lock, into a staging folder renamed
    into place when complete; the others wait for the lock and then find the folder.
    """
    from filelock import FileLock  # a dependency of huggingface_hub, hence of every runner

    models = run_folder() / "models"
    models.mkdir(parents=True, exist_ok=True)
    target = models / name
    with FileLock(str(models / f"{name}.lock")):
        if not target.is_dir():
            staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=models))
            build(staging)
            staging.rename(target)
    return target


def with_lm_eval_index(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this run's lm-eval task index switched on (a subprocess environment)."""
    if RUN_FOLDER_VARIABLE not in env:
        return env
    python_path = [str(LM_EVAL_INDEX_PATH)]
    if env.get("PYTHONPATH"):
        python_path.append(env["PYTHONPATH"])
    return {**env, "PYTHONPATH": os.pathsep.join(python_path),
            LM_EVAL_INDEX_VARIABLE: str(Path(env[RUN_FOLDER_VARIABLE]) / "lm_eval_index")}
