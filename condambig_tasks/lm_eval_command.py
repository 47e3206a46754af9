"""What the ``lm_eval`` command of this process was asked to write, read from its arguments.

The retry hint of a failed judge names the run's samples (``condambig-score ... --from-log
DIR``): ``--output_path`` and ``--log_samples``, on the command line or in the ``--config``
YAML (lm-eval 0.4.13, ``lm_eval/_cli/run.py`` and ``EvaluatorConfig.from_cli``: command-line
values win over the YAML's). lm-eval's own parser sits in its private ``lm_eval._cli``
package, so the two options are read here with the same names and abbreviations (argparse
accepts any unique prefix, and lm-eval has already accepted this command line). A program
calling ``simple_evaluate`` has no such arguments: it gets the generic hint.
"""

from __future__ import annotations

import argparse
import json
import sys


def running_lm_eval_command() -> bool:
    """This process is the ``lm_eval`` command (its console script, ``python -m lm_eval``
    or ``accelerate launch -m lm_eval``), not a program calling ``simple_evaluate``."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", "") or ""
    return "lm_eval.__main__" in sys.modules or name in {"lm_eval", "lm_eval.__main__"}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--config", "-C", default=None)
    parser.add_argument("--output_path", "-o", default=None)
    parser.add_argument("--log_samples", "-s", action="store_true", default=None)
    parser.add_argument("--model", "-m", default=None)
    parser.add_argument("--model_args", "-a", default=None)
    return parser


def model_name(argv: list[str]) -> str | None:
    """The model an ``lm_eval`` command line evaluates, as its results' ``model_name``
    gives it: ``--model_args``' ``pretrained`` (``model``, ``path``, ``engine``), else the
    ``--model`` type; None when neither is on the command line."""
    arguments, _ = _parser().parse_known_args(argv)
    given = (arguments.model_args or "").strip()
    try:  # lm-eval takes "k=v,k=v" or a JSON object
        values = json.loads(given) if given.startswith("{") else \
            dict(part.split("=", 1) for part in given.split(",") if "=" in part)
    except ValueError:
        values = {}
    for key in ("pretrained", "model", "path", "engine"):
        if values.get(key):
            return values[key]
    return arguments.model


def kept_samples(argv: list[str]) -> str | None:
    """The ``--output_path`` of an ``lm_eval`` command line (``argv`` without the program
    name) when ``--log_samples`` keeps every output there (what ``--from-log`` needs),
    with those of its ``--config`` YAML underneath; else None."""
    arguments, _ = _parser().parse_known_args(argv)
    from_yaml: dict = {}
    if arguments.config:
        from lm_eval.config.evaluate_config import EvaluatorConfig

        try:
            from_yaml = EvaluatorConfig.load_yaml_config(arguments.config)
        except (OSError, ValueError, TypeError):  # lm-eval itself has read it already
            from_yaml = {}
    path = arguments.output_path or from_yaml.get("output_path")
    log_samples = arguments.log_samples or bool(from_yaml.get("log_samples"))
    return str(path) if path and log_samples else None
