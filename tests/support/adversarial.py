"""An adversarial corpus of model outputs and the parsers it runs through.

Small models really emit thousands of spaces, backticks or brackets, never-closed ``<think>``
tags, huge numbers and lone surrogates. Each generator here builds one such output of about
``size`` characters; :data:`PARSERS` is every benchmark's entry point from a raw output to
its parsed reply, and the judge's reading of a reply. ``tests/test_adversarial_parsing.py`` bounds the time of each pair and
``benchmarks/parsing.py`` reports them.

Each parse runs in a forked child (:func:`timed_parse`), so a parser that never returns is a
reported timeout instead of a hung run.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import time
from collections.abc import Callable
from typing import Any

MEGABYTE = 1_000_000
UNCUT = 90_000
"""Size of the outputs meant to be parsed whole (under ``MAX_PARSED_CHARACTERS``)."""


def _repeat(unit: str, size: int, prefix: str = "", suffix: str = "") -> str:
    return prefix + unit * max(1, (size - len(prefix) - len(suffix)) // len(unit)) + suffix


CORPUS: dict[str, Callable[[int], str]] = {
    "spaces": lambda n: _repeat(" ", n, suffix="x"),
    "fence_then_spaces": lambda n: _repeat(" ", n, prefix="```", suffix="x"),
    "backticks": lambda n: _repeat("`", n),
    "fenced_open_braces": lambda n: _repeat("```json\n{\n```\n", n),
    "five_fences_of_braces": lambda n: ("```json\n" + "{" * (n // 5) + "\n```\n") * 5,
    "open_braces": lambda n: _repeat("{", n),
    "open_brackets": lambda n: _repeat("[", n),
    "bracket_quote": lambda n: _repeat('["', n),
    "brace_quote": lambda n: _repeat('{"', n),
    "deep_nesting": lambda n: "[" * (n // 2) + "]" * (n // 2),
    "deep_nesting_after_answer": lambda n: (
        '{"answers": [["yes", []]], "pairs": [{"question": "q", "answer": "a"}], "x": '
        + "[" * (n // 2) + "]" * (n // 2) + "}"),
    "think_tags": lambda n: _repeat("<think>", n),
    "unclosed_think": lambda n: _repeat("x", n, prefix="<think>"),
    "closing_think_tags": lambda n: _repeat("</think>", n, suffix='["a"]'),
    "huge_integer": lambda n: _repeat("9", n, prefix='[{"question": "q", "answer": ', suffix="}]"),
    "many_huge_integers": lambda n: "[" + ",".join(["9" * 5_000] * (n // 5_001)) + "]",
    "nan_list": lambda n: _repeat("NaN, ", n, prefix="[", suffix="1]"),
    "lone_surrogates": lambda n: _repeat("\ud800", n, prefix='[{"question": "q', suffix='"}]'),
    "escaped_surrogates": lambda n: _repeat("\\udc00", n, prefix='["', suffix='"]'),
    "citation_spaces": lambda n: _repeat(" ", n, prefix='{"answers": [["yes", ["', suffix='x"]]]}'),
    "fragment_commas": lambda n: _repeat(", ", n, prefix=(
        '[{"condition": "c", "answer": "a", "citations": ["Fragment 1'), suffix='x"]}]'),
    # The next three stay under the parsing caps (complete JSON, fully decoded).
    "many_citations": lambda n: _repeat(
        '"Fragment 1, , , , , , , , , , , , , , , , , , , , , , , , x", ', min(n, UNCUT),
        prefix='[{"condition": "c", "answer": "a", "citations": [', suffix='"1"]}]'),
    "many_distinct_citations": lambda n: (
        '[{"condition": "c", "answer": "a", "citations": ['
        + ", ".join(f'"t{index}"' for index in range(min(n, UNCUT) // 9)) + "]}]"),
    "many_pairs": lambda n: "[" + ", ".join(
        ['{"condition": "c", "question": "q", "answer": "a", "citations": [1]}']
        * (min(n, UNCUT) // 70)) + "]",
    "unterminated_strings": lambda n: _repeat('"a', n, prefix="["),
    "label_spaces": lambda n: _repeat(" ", n, prefix="Answer", suffix="x"),
    "newlines": lambda n: _repeat("\n", n, suffix="x"),
    # Judge replies: many objects to skip, and starts of objects that never close.
    "empty_objects": lambda n: _repeat("{}", n, suffix='{"score": 3}'),
    "open_objects": lambda n: _repeat('{"a": [', n),
}


def _conditionalqa(text: str) -> Any:
    from condambig_tasks.conditionalqa.parser import parse_model_output

    return parse_model_output(text, {1: "<li>first</li>", 2: "<li>second</li>"})


def _ambignq(text: str) -> Any:
    from condambig_tasks.ambignq.parser import parse_reply

    return parse_reply(text)


def _abg_coqa(text: str) -> Any:
    from condambig_tasks.abg_coqa.parser import parse_detection

    return parse_detection(text)


def _condambigqa(setting: str) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        from condambig_tasks.condambigqa.parser import parse_response
        from condambig_tasks.condambigqa.records import Setting

        return parse_response(text, Setting(setting), 5)

    return parse


def _hotpot_flm(text: str) -> Any:
    from condambig_tasks.hotpot_flm.prompts import clean_question

    return clean_question(text)


def _judge_reply(text: str) -> Any:
    from condambig_metrics.judge import UnparseableReplyError, parse_reply

    try:
        return parse_reply(text)
    except UnparseableReplyError as error:  # the judge engine's outcome: retried, then failed
        return f"unreadable: {str(error)[:80]}"


PARSERS: dict[str, Callable[[str], Any]] = {
    "conditionalqa": _conditionalqa,
    "ambignq": _ambignq,
    "abg_coqa": _abg_coqa,
    "condambigqa": _condambigqa("main"),
    "condambigqa_closed_book": _condambigqa("closed_book"),
    "hotpot_flm": _hotpot_flm,
    "judge_reply": _judge_reply,
}


def _child(parser: str, kind: str, size: int, connection: Any) -> None:
    # the forked child shares the parent's heap: a garbage collection walking it (a pytest
    # worker's, after hundreds of tests) copies its pages and bills their faults to the
    # parse (0.03 s became 0.44 s beside an 8-million-object heap); frozen, it is skipped
    gc.freeze()
    PARSERS[parser]("")  # imports outside the timed call
    text = CORPUS[kind](size)
    started = time.process_time()
    try:
        result = PARSERS[parser](text)
        outcome: Any = ("ok", repr(result)[:300])
    except BaseException as error:  # reported to the parent, which fails the test
        outcome = ("raised", f"{type(error).__name__}: {str(error)[:200]}")
    connection.send((time.process_time() - started, *outcome))
    connection.close()


def _reference_work() -> None:
    """A fixed amount of plain work (JSON and sorting of 200,000 strings)."""
    numbers = [str(i) for i in range(200_000)]
    json.loads(json.dumps(numbers))
    sorted(numbers, key=lambda text: text[::-1])


def _unit_child(connection: Any) -> None:
    gc.freeze()
    timings = []
    for _ in range(3):
        started = time.process_time()
        _reference_work()
        timings.append(time.process_time() - started)
    connection.send(min(timings))
    connection.close()


def machine_unit(timeout: float = 120.0) -> float:
    """CPU seconds of :func:`_reference_work` in a forked child, as :func:`timed_parse`
    times a parse: the unit a parse's time is bounded in, so the bound holds on a machine
    twice as slow as the one it was set on."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_unit_child, args=(sender,), daemon=True)
    process.start()
    sender.close()
    if not receiver.poll(timeout):
        process.kill()
        process.join()
        raise RuntimeError(f"the reference work did not finish in {timeout:.0f} s")
    unit = receiver.recv()
    process.join()
    return unit


def timed_parse(parser: str, kind: str, size: int, timeout: float) -> tuple[float, str, str]:
    """``(seconds, "ok" | "raised" | "timeout", detail)`` of one parse in a forked child;
    a child still running after ``timeout`` seconds is killed."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_child, args=(parser, kind, size, sender), daemon=True)
    process.start()
    sender.close()
    if receiver.poll(timeout):
        seconds, status, detail = receiver.recv()
        process.join()
        return seconds, status, detail
    process.kill()
    process.join()
    return timeout, "timeout", f"still running after {timeout:.0f} s"
