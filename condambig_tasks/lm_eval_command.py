"""The ``lm_eval`` command of this process, read as lm-eval itself parsed it.

The retry hint of a failed judge names the run's samples (``condambig-score ... --from-log
DIR``: ``--output_path`` when ``--log_samples`` keeps every output there) and the run record
names the model. lm-eval 0.4.13's command parses its arguments and its ``--config`` YAML
into one ``EvaluatorConfig`` (``EvaluatorConfig.from_cli`` in
``lm_eval/config/evaluate_config.py``: command-line values win over the YAML's, and
``model_args`` becomes a dict) and calls its ``process_tasks`` before it loads the model;
the start-up hook (:mod:`condambig_tasks._lm_eval_hook`) hands that config to
:func:`remember`. A program calling ``simple_evaluate`` has no such config: it gets the
generic hint.
"""

from __future__ import annotations

import sys
from typing import Any

_command: list[Any] = []  # the command's EvaluatorConfig, once its tasks are resolved


def running_lm_eval_command() -> bool:
    """This process is the ``lm_eval`` command (its console script, ``python -m lm_eval``
    or ``accelerate launch -m lm_eval``), not a program calling ``simple_evaluate``."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", "") or ""
    return "lm_eval.__main__" in sys.modules or name in {"lm_eval", "lm_eval.__main__"}


def remember(config: Any) -> None:
    """Keep the command's ``EvaluatorConfig`` (from ``EvaluatorConfig.process_tasks``)."""
    _command[:] = [config]


def kept_samples() -> str | None:
    """The command's ``--output_path`` when ``--log_samples`` keeps every output there
    (what ``--from-log`` needs); else None."""
    config = _command[0] if _command else None
    path = getattr(config, "output_path", None)
    return str(path) if path and getattr(config, "log_samples", False) else None


def model_name() -> str | None:
    """The model the command evaluates, as its results' ``model_name`` gives it:
    ``model_args``' ``pretrained`` (``model``, ``path``, ``engine``), else the ``--model``
    type; None outside the command."""
    if not _command:
        return None
    arguments = getattr(_command[0], "model_args", None)
    arguments = arguments if isinstance(arguments, dict) else {}
    for key in ("pretrained", "model", "path", "engine"):
        if arguments.get(key):
            return arguments[key]
    return getattr(_command[0], "model", None)
