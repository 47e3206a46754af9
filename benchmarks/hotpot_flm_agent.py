"""HotpotQA-FLM answering agent: batched scoring vs the authors' per-candidate loop, on CPU.

Both run the same randomly initialised t5-small-sized model (6+6 layers, d_model 512,
32,128-row vocabulary; built locally, nothing downloaded) on the same examples and
repeater questions:

  naive   -- the authors' loop: an example's candidate inputs padded to its longest, then one
             ``generate(max_new_tokens=1)`` per candidate at batch size 1;
  batched -- every candidate of every example in length-sorted batches, one decoder step.

Prints whether the chosen facts are identical, the speed-up (target >= 5x), the batched
pass's achieved GFLOP/s (FLOPs counted by torch's ``FlopCounterMode``) against the float32
matmul peak measured in the same run, peak resident memory, and what a full 7,404-example
run costs in forward passes.

    python benchmarks/hotpot_flm_agent.py [--examples 20] [--batch-size 32] [--threads 2]

Data: ``$CONDAMBIG_DATA_DIR`` (the folder with the upstream files) when set, else the test
fixtures.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from condambig_tasks.hotpot_flm.agents import AgentQuery, YesNoAnsweringAgent, arg_max  # noqa: E402
from condambig_tasks.hotpot_flm.hf_models import CheckpointSpec, load_checkpoint  # noqa: E402
from condambig_tasks.hotpot_flm.inference import BatchLimits, YesNoScorer  # noqa: E402
from condambig_tasks.hotpot_flm.loader import load_examples  # noqa: E402
from condambig_tasks.hotpot_flm.prompts import yes_no_prompt  # noqa: E402
from tests.support.tiny_seq2seq import build_tiny_t5  # noqa: E402

FULL_SET_SIZE = 7_404


def peak_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def build_model(directory: str, texts: list[str]) -> None:
    """Runs in a child process, so building the model does not count in our peak memory."""
    build_tiny_t5(Path(directory), size="t5-small", extra_text=texts * 2, vocab_size=8_000)


def authors_loop(scorer: YesNoScorer, query: AgentQuery) -> int:
    """The authors' T5 oracle: pad the example's inputs together, generate one token each.

    The authors pass no attention mask and rely on transformers 4.x inferring it from the
    pad tokens; transformers 5 no longer does for this call, so the row's mask is passed.
    """
    import torch

    checkpoint = scorer.checkpoint
    prompts = [yes_no_prompt(query.question, candidate) for candidate in query.candidates]
    encoded = checkpoint.tokenizer(prompts, return_tensors="pt", padding=True)
    probabilities = []
    with torch.inference_mode():
        for row in range(len(prompts)):
            scores = checkpoint.model.generate(
                encoded.input_ids[row:row + 1], attention_mask=encoded.attention_mask[row:row + 1],
                max_new_tokens=1, do_sample=False, num_beams=1,
                output_scores=True, return_dict_in_generate=True,
            ).scores[0]
            pair = scores[:, [scorer.yes_id, scorer.no_id]].float().softmax(dim=1)
            probabilities.append(float(pair[0, 0]))
    return arg_max(probabilities, query.scoring_order())  # ties: the authors' order


def matmul_peak_gflops(size: int = 1024, repeats: int = 10) -> float:
    """This CPU's float32 matmul rate at the run's thread count: the best of ``repeats``
    square ``size`` x ``size`` products (2 * size**3 FLOPs each)."""
    import torch

    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 / best / 1e9


def flops_per_candidate(scorer: YesNoScorer, prompt: str) -> int:
    """FLOPs of scoring one candidate, counted by torch (``FlopCounterMode``: matmuls and
    convolutions, the operations that dominate; no padding)."""
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with counter:
        scorer.yes_probabilities([prompt])
    return counter.get_total_flops()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    arguments = parser.parse_args()

    import torch

    torch.set_num_threads(arguments.threads)
    if not os.environ.get("CONDAMBIG_DATA_DIR"):
        os.environ["CONDAMBIG_DATA_DIR"] = str(REPO / "tests" / "fixtures" / "data")
    examples = load_examples("full")[: arguments.examples]
    texts = [fact.render() for example in examples for fact in example.candidates]
    texts += [example.question for example in examples]

    scratch = tempfile.mkdtemp()
    try:
        run(arguments, examples, texts, str(Path(scratch) / "t5-small-random"))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def run(arguments: argparse.Namespace, examples, texts: list[str], model_dir: str) -> None:
    builder = multiprocessing.get_context("spawn").Process(target=build_model,
                                                           args=(model_dir, texts))
    builder.start()
    builder.join()
    checkpoint = load_checkpoint(CheckpointSpec(model_dir, "cpu", "float32"),
                                 "answering agent", "answering_agent")
    after_load = peak_mb()
    scorer = YesNoScorer(checkpoint, BatchLimits(batch_size=arguments.batch_size))
    queries = [AgentQuery.for_example(e, e.question) for e in examples]  # repeater questions
    candidates = sum(len(query.candidates) for query in queries)
    tokens = [len(checkpoint.tokenizer(yes_no_prompt(q.question, c))["input_ids"])
              for q in queries for c in q.candidates]
    print(f"{len(queries)} examples, {candidates} candidates "
          f"({candidates / len(queries):.1f} per example), mean input {sum(tokens) / len(tokens):.0f} "
          f"tokens; {arguments.threads} CPU threads; peak RSS with the model loaded "
          f"{after_load:.0f} MB")

    YesNoAnsweringAgent(scorer).choose(queries[:1])  # warm-up (allocator, kernels)
    scorer.forward_passes = 0
    start = time.perf_counter()
    batched = [choice.index for choice in YesNoAnsweringAgent(scorer).choose(queries)]
    batched_seconds = time.perf_counter() - start
    batched_passes = scorer.forward_passes
    batched_peak = peak_mb()

    start = time.perf_counter()
    naive = [authors_loop(scorer, query) for query in queries]
    naive_seconds = time.perf_counter() - start

    # achieved rate of the batched float32 pass: FLOPs of the candidate of median input
    # length times the candidates, per second, against the matmul peak measured here
    prompts = sorted((yes_no_prompt(q.question, c) for q in queries for c in q.candidates),
                     key=lambda text: len(checkpoint.tokenizer(text)["input_ids"]))
    flops = flops_per_candidate(scorer, prompts[len(prompts) // 2])
    achieved = flops * candidates / batched_seconds / 1e9
    peak = matmul_peak_gflops()

    identical = batched == naive
    print(f"naive   (authors' loop, batch 1):         {naive_seconds:7.2f} s, "
          f"{candidates} forward passes, {1000 * naive_seconds / candidates:.1f} ms/candidate")
    print(f"batched (batch {arguments.batch_size}, length-sorted):      {batched_seconds:7.2f} s, "
          f"{batched_passes} forward passes, {1000 * batched_seconds / candidates:.1f} ms/candidate")
    print(f"identical choices: {identical} ({sum(a == b for a, b in zip(batched, naive, strict=True))}"
          f"/{len(naive)}; chosen candidate positions {batched})")
    print(f"speed-up: {naive_seconds / batched_seconds:.1f}x (target >= 5x)")
    print(f"batched float32: {flops / 1e9:.2f} GFLOP per candidate (FlopCounterMode, median "
          f"input), {achieved:.1f} GFLOP/s achieved = {100 * achieved / peak:.0f}% of this "
          f"CPU's float32 matmul peak ({peak:.1f} GFLOP/s, 1024x1024 torch.mm, "
          f"{arguments.threads} threads)")
    print(f"peak RSS: {batched_peak:.0f} MB after the batched pass ({after_load:.0f} MB before it)")

    # for reference: the same batched pass in bfloat16 (agent_dtype=bfloat16; CPUs with
    # AVX512-BF16/AMX run it much faster; choices may then differ from the float32 loop)
    bfloat16 = load_checkpoint(CheckpointSpec(model_dir, "cpu", "bfloat16"),
                               "answering agent", "answering_agent")
    bf16_scorer = YesNoScorer(bfloat16, BatchLimits(batch_size=arguments.batch_size))
    YesNoAnsweringAgent(bf16_scorer).choose(queries[:1])
    start = time.perf_counter()
    bf16 = [choice.index for choice in YesNoAnsweringAgent(bf16_scorer).choose(queries)]
    bf16_seconds = time.perf_counter() - start
    print(f"batched bfloat16 (reference only):        {bf16_seconds:7.2f} s, "
          f"{naive_seconds / bf16_seconds:.1f}x the naive float32 loop, "
          f"{sum(a == b for a, b in zip(bf16, naive, strict=True))}/{len(naive)} same choices")
    per_example = candidates / len(queries)
    full_candidates = per_example * FULL_SET_SIZE
    print(
        f"full run ({FULL_SET_SIZE} examples x {per_example:.1f} candidates): "
        f"{full_candidates:,.0f} candidate scorings = {full_candidates:,.0f} naive forward passes "
        f"or ~{full_candidates / arguments.batch_size:,.0f} batched passes; at this CPU rate "
        f"{full_candidates * batched_seconds / candidates / 60:.0f} min batched vs "
        f"{full_candidates * naive_seconds / candidates / 60:.0f} min naive for a t5-small-sized "
        f"agent; plus 3 x {FULL_SET_SIZE} downstream generations on the first run and "
        f"{FULL_SET_SIZE} on later runs (x_i and x_c answers come from the cache)"
    )
    if not identical:
        sys.exit(1)


if __name__ == "__main__":
    main()
