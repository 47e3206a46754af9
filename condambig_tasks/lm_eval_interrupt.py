"""Ctrl-C (or SIGTERM) in the ``lm_eval`` command keeps every finished generation.

lm-eval 0.4.13 generates every request of the run first, each response appended to its
``Instance.resps`` (``lm_eval.evaluator.evaluate``, whose local ``eval_results_acc`` maps
each task name to ``{"task": task, ...}``), then scores: our judge and HotpotQA-FLM agents
run in its aggregation step, after every generation. It catches no ``KeyboardInterrupt``:
the generations died with the process. Its own request cache (``--use_cache PREFIX``:
``lm_eval.api.model.CachingLM``, a sqlite file ``PREFIX_rank<N>.db`` keyed by
``hash_args(request_type, instance.args)``) lets a rerun skip every request found there.

So an interrupt that reaches the top of the command is handled here (:func:`install`
wraps ``sys.excepthook`` in an ``lm_eval`` process that selected this project's tasks,
from :mod:`condambig_tasks.lm_eval_preflight`): the finished responses of every task
of the run, read from the ``evaluate`` frame of the traceback, are written to that cache
(the run's own, or one this module names), and one line gives the command that resumes
without generating again; the judge and agent caches keep their part. Exit status 130.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVALUATOR_MODULE = "lm_eval.evaluator"
EVALUATE_FUNCTION = "evaluate"
RUN_TASKS_LOCAL = "eval_results_acc"
MODEL_LOCAL = "lm"


@dataclass(frozen=True)
class KeptGenerations:
    """What an interrupted run left in lm-eval's request cache: the ``--use_cache``
    prefix a rerun needs, whether it is the run's own (which stored each generation as it
    finished), the responses written, and those that cannot be reused (sampled requests,
    which ``CachingLM`` never reads)."""

    prefix: str | None
    own_cache: bool = False
    written: int = 0
    sampled: int = 0
    problem: str = ""  # why nothing could be written


def evaluate_frame(traceback: Any) -> Any:
    """The frame of lm-eval's ``evaluate`` in ``traceback``, or None (interrupted
    before it started, e.g. while the model loaded)."""
    while traceback is not None:
        frame = traceback.tb_frame
        if (frame.f_code.co_name == EVALUATE_FUNCTION
                and frame.f_globals.get("__name__") == EVALUATOR_MODULE):
            return frame
        traceback = traceback.tb_next
    return None


def finished_responses(frame: Any) -> list[tuple[str, Any, Any, bool]]:
    """(request type, arguments, response, sampled) of every request of the run that
    has its response."""
    found = []
    for accumulated in (frame.f_locals.get(RUN_TASKS_LOCAL) or {}).values():
        task = accumulated.get("task") if isinstance(accumulated, dict) else None
        for instance in getattr(task, "instances", None) or []:
            if instance.resps:
                sampled = (instance.request_type == "generate_until"
                           and bool(instance.args[1].get("do_sample", False)))
                found.append((instance.request_type, instance.args, instance.resps[-1],
                              sampled))
    return found


def cache_prefix(argv: list[str]) -> str:
    """A request-cache prefix of this command line: lm-eval's cache keys do not name the
    model, so one prefix must serve one command (its model and arguments) only."""
    from condambig_tasks import settings

    digest = hashlib.sha256("\0".join(argv).encode()).hexdigest()[:16]
    return str(settings.cache_dir() / "lm_eval_requests" / digest)


def cache_file(prefix: str, model: Any) -> Path:
    """``CachingLM``'s file for this rank (``lm_eval.evaluator.simple_evaluate``)."""
    rank = getattr(model, "rank", 0) or int(os.environ.get("LOCAL_RANK", "0"))
    return Path(f"{prefix}_rank{rank}.db")


def keep_generations(frame: Any, argv: list[str]) -> KeptGenerations:
    """Write the run's finished responses to lm-eval's request cache, committed."""
    from lm_eval.api.model import CachingLM, hash_args
    from sqlitedict import SqliteDict

    model = frame.f_locals.get(MODEL_LOCAL)
    responses = finished_responses(frame)
    reusable = [(kind, args, response) for kind, args, response, sampled in responses
                if not sampled]
    sampled = len(responses) - len(reusable)
    if isinstance(model, CachingLM):  # stored as they finished; committed here
        model.dbdict.commit()
        return KeptGenerations(None, True, len(reusable), sampled)
    prefix = cache_prefix(argv)
    if reusable:
        path = cache_file(prefix, model)
        path.parent.mkdir(parents=True, exist_ok=True)
        with SqliteDict(str(path), autocommit=False) as cache:
            for kind, args, response in reusable:
                cache[hash_args(kind, args)] = response
            cache.commit()
    return KeptGenerations(prefix, False, len(reusable), sampled)


def command_words() -> list[str]:
    """How this process was started: ``lm_eval`` (or ``python -m lm_eval``)."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return [name] if name in {"lm_eval", "lm-eval"} else ["python", "-m", "lm_eval"]


def interrupted_line(kept: KeptGenerations, cached: str, argv: list[str]) -> str:
    """The one line: what was kept, and the command that resumes from it."""
    words = [*command_words(), *argv]
    again = shlex.join(words if kept.own_cache else [*words, "--use_cache", kept.prefix])
    parts = [f"{kept.written} generations in lm-eval's request cache"] if kept.written else []
    if kept.own_cache and not kept.written:
        parts.append("the generations finished so far, in the run's --use_cache")
    parts += [cached] if cached else []
    sampled = (f" ({kept.sampled} sampled generations are not reused: lm-eval caches only "
               "greedy ones)" if kept.sampled else "")
    if kept.written or kept.own_cache:
        return (f"interrupted; kept: {', '.join(parts)}{sampled}; run `{again}` to resume "
                "without generating again.")
    why = f" (they could not be written: {kept.problem})" if kept.problem else ""
    return (f"interrupted before any generation was kept{why}"
            f"{'; kept: ' + cached if cached else ''}; run `{again}` to start again (its "
            "--use_cache keeps each generation as it finishes).")


def handle(traceback: Any) -> None:
    """Keep what the run finished, print the one line, exit 130 (no teardown: every
    cache is committed)."""
    from condambig_tasks import interrupts

    argv = list(sys.argv[1:])
    frame = evaluate_frame(traceback)
    kept = KeptGenerations(cache_prefix(argv))
    try:
        if frame is not None:
            kept = keep_generations(frame, argv)
    except KeyboardInterrupt:  # a second Ctrl-C: stop without keeping the generations
        pass
    except Exception as error:  # e.g. a full disk: still one line, no traceback
        kept = KeptGenerations(kept.prefix, problem=f"{type(error).__name__}: {error}")
    try:
        interrupts.settle()
    except KeyboardInterrupt:
        pass
    line = interrupted_line(kept, interrupts.cached_summary(), argv)
    bars = getattr(getattr(sys.modules.get("tqdm"), "tqdm", None), "_instances", None)
    start = "\n" if bars else ""  # a progress bar's line has no end yet
    print(f"{start}condambig: {line}", file=sys.stderr)
    interrupts.exit_now(interrupts.EXIT_CODE)


def install() -> None:
    """In the ``lm_eval`` command, handle an interrupt that reaches the top (idempotent);
    every other exception goes to the hook found at install time."""
    from condambig_tasks.lm_eval_command import running_lm_eval_command

    previous = sys.excepthook
    if getattr(previous, "_condambig_interrupt", False) or not running_lm_eval_command():
        return

    def excepthook(kind, error, traceback):
        if issubclass(kind, KeyboardInterrupt):
            handle(traceback)
        previous(kind, error, traceback)

    excepthook._condambig_interrupt = True  # type: ignore[attr-defined]
    sys.excepthook = excepthook
