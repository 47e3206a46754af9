"""Score HotpotQA-FLM questions (a baseline or a file of a model's questions) with real agents.

    condambig-score hotpot_flm --questions repeater|human|FILE --split full|test \\
        [--answering-agent MODEL] [--downstream-model MODEL] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from condambig_tasks.hotpot_flm.dataset import load_examples, parse_split
from condambig_tasks.hotpot_flm.options import FlmOptions
from condambig_tasks.hotpot_flm.pipeline import build_local_agents, run_pipeline
from condambig_tasks.hotpot_flm.questions import BASELINES, baseline_questions, read_question_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--questions", required=True, metavar="repeater|human|FILE",
        help="a baseline (repeater: ask the task; human: the test set's q2_gt) or a JSON file "
             '[{"id": ..., "question": ...}] of a model\'s questions',
    )
    parser.add_argument("--split", default="full", choices=("full", "test"),
                        help="full: HotpotQA distractor validation; test: the 400 annotated rows")
    parser.add_argument("--answering-agent", metavar="MODEL",
                        help="seq2seq or causal checkpoint, hub name or path "
                             "(default $CONDAMBIG_FLM_ANSWERING_AGENT or google/flan-t5-base)")
    parser.add_argument("--downstream-model", metavar="MODEL",
                        help="seq2seq or causal checkpoint, hub name or path "
                             "(default $CONDAMBIG_FLM_DOWNSTREAM_MODEL or google/flan-t5-base)")
    parser.add_argument("--limit", type=int, metavar="N", help="score only the first N examples")
    parser.add_argument("--mask-seed", type=int, help="masking seed of the full split (default 0)")
    parser.add_argument("--device", help="auto (default), cpu, cuda, cuda:N, mps")
    parser.add_argument("--dtype", choices=("auto", "float32", "bfloat16", "float16"))
    parser.add_argument("--batch-size", type=int, help="agent batch size (default 32)")
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the downstream answer cache")
    parser.add_argument("--per-example", type=Path, metavar="FILE",
                        help="also write each example's question, returned fact and answers "
                             "(JSON Lines)")


def options_from_args(args: argparse.Namespace) -> FlmOptions:
    return FlmOptions.resolve({
        "answering_agent": args.answering_agent, "downstream_model": args.downstream_model,
        "agent_device": args.device, "agent_dtype": args.dtype,
        "agent_batch_size": args.batch_size, "mask_seed": args.mask_seed,
        "downstream_cache": False if args.no_cache else None,
    })


def _json_number(value: float) -> float | None:
    return None if isinstance(value, float) and math.isnan(value) else value


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.limit is not None and args.limit < 1:
        raise ValueError("--limit must be at least 1")
    options = options_from_args(args)
    split = parse_split(args.split)
    examples = load_examples(split, options.mask_seed)
    ignored = 0
    if args.questions in BASELINES:
        examples = examples[: args.limit] if args.limit else examples
        questions = baseline_questions(args.questions, examples)
        examples = [example for example in examples if example.id in questions]
    else:
        question_file = read_question_file(Path(args.questions))
        known = {example.id for example in examples}
        ignored = sum(1 for key in question_file.questions if key not in known)
        examples = [e for e in examples if e.id in question_file.questions]
        if not examples:
            raise ValueError(
                f"{args.questions}: none of its ids belongs to the {split.value} split"
            )
        examples = examples[: args.limit] if args.limit else examples
        questions = question_file.questions
    agents = build_local_agents(options)
    result = run_pipeline(examples, questions, agents.agent, agents.downstream, agents.cache)
    if args.per_example:
        args.per_example.parent.mkdir(parents=True, exist_ok=True)
        with args.per_example.open("w", encoding="utf-8") as sink:
            for outcome in result.outcomes:
                sink.write(json.dumps(outcome.to_dict(), ensure_ascii=False) + "\n")
    return {
        "benchmark": "hotpot_flm",
        "split": split.value,
        "questions": args.questions,
        "n_examples": len(result.outcomes),
        "ids_not_in_split": ignored,
        "metrics": {key: _json_number(value) for key, value in result.metrics().items()},
        "downstream_answers_computed": result.computed,
        "options": options.to_dict(),
    }
