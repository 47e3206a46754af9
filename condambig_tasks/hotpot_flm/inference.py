"""Batched inference for the agents: yes/no first-step scoring and greedy generation.

Inputs are deduplicated, sorted by token length and cut into batches (see
:mod:`batching`), so a whole run's candidates — every example times every candidate —
costs a few hundred padded forward passes instead of one pass per candidate. ``plan``
gives those batches, so that a caller can compute and store them one at a time
(:mod:`resumable`); a batch of the plan passed back is computed as one batch.
Causal models are left-padded with explicit position ids, so a padded row computes what
the unpadded row would.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from condambig_tasks.hotpot_flm.batching import length_sorted_batches
from condambig_tasks.hotpot_flm.hf_models import LoadedCheckpoint
from condambig_tasks.hotpot_flm.prompts import CAUSAL_ANSWER_CUE


@dataclass(frozen=True)
class BatchLimits:
    """Batch shape limits: rows per batch, padded tokens per batch, tokens per input."""

    batch_size: int = 32
    max_batch_tokens: int = 16_384
    max_input_tokens: int = 1_024


def _encode(checkpoint: LoadedCheckpoint, texts: Sequence[str], limits: BatchLimits) -> list[list[int]]:
    return checkpoint.tokenizer(
        list(texts), truncation=True, max_length=limits.max_input_tokens,
    )["input_ids"]


def _batches(encoded: Sequence[Sequence[int]], limits: BatchLimits) -> list[list[int]]:
    return length_sorted_batches([len(row) for row in encoded], limits.batch_size,
                                 limits.max_batch_tokens)


def _plan(checkpoint: LoadedCheckpoint, prompts: Sequence[str], model_inputs: Sequence[str],
          limits: BatchLimits) -> list[list[str]]:
    """The distinct ``prompts`` in the batches their ``model_inputs`` are computed in."""
    encoded = _encode(checkpoint, model_inputs, limits)
    return [[prompts[index] for index in batch] for batch in _batches(encoded, limits)]


def _pad(rows: Sequence[Sequence[int]], pad_id: int, left: bool, device):
    """Padded ids, attention mask and (for left padding) position ids as tensors."""
    import torch

    width = max(len(row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for position, row in enumerate(rows):
        span = slice(width - len(row), width) if left else slice(0, len(row))
        ids[position, span] = torch.tensor(row, dtype=torch.long)
        mask[position, span] = 1
    positions = (mask.cumsum(dim=1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), positions.to(device)


def _last_logits(model, ids, mask, positions):
    """Next-token logits of a left-padded causal batch (only the last position computed)."""
    try:
        return model(input_ids=ids, attention_mask=mask, position_ids=positions,
                     logits_to_keep=1).logits[:, -1, :]
    except TypeError:  # models (or transformers < 4.45) without logits_to_keep
        return model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[:, -1, :]


def label_token_ids(checkpoint: LoadedCheckpoint) -> tuple[int, int]:
    """First token of "yes" and of "no" (with a leading space for causal models)."""
    prefix = "" if checkpoint.is_seq2seq else " "
    tokens = []
    for word in ("yes", "no"):
        ids = checkpoint.tokenizer(prefix + word, add_special_tokens=False)["input_ids"]
        if not ids:
            raise ValueError(f"the answering agent's tokenizer encodes {word!r} as nothing")
        tokens.append(ids[0])
    if tokens[0] == tokens[1]:
        raise ValueError("the answering agent's tokenizer cannot tell 'yes' from 'no'")
    return tokens[0], tokens[1]


class YesNoScorer:
    """P(yes) / (P(yes) + P(no)) at the first decoding step, for many inputs at once."""

    def __init__(self, checkpoint: LoadedCheckpoint, limits: BatchLimits = BatchLimits()):
        self.checkpoint = checkpoint
        self.limits = limits
        self.yes_id, self.no_id = label_token_ids(checkpoint)
        self.forward_passes = 0  # batched forward passes run so far (for cost reports)

    def model_input(self, prompt: str) -> str:
        return prompt if self.checkpoint.is_seq2seq else prompt + CAUSAL_ANSWER_CUE

    @property
    def rule(self) -> str:
        """What, besides the checkpoint, decides a score (for cache keys)."""
        return (f"p_yes_first_step:yes={self.yes_id}:no={self.no_id}:"
                f"max_input_tokens={self.limits.max_input_tokens}")

    def plan(self, prompts: Sequence[str]) -> list[list[str]]:
        unique = list(dict.fromkeys(prompts))
        return _plan(self.checkpoint, unique, [self.model_input(p) for p in unique], self.limits)

    def yes_probabilities(self, prompts: Sequence[str]) -> list[float]:
        import torch

        unique = list(dict.fromkeys(prompts))
        if not unique:
            return []
        encoded = _encode(self.checkpoint, [self.model_input(p) for p in unique], self.limits)
        scores = [0.0] * len(unique)
        model = self.checkpoint.model
        pad_id = self.checkpoint.tokenizer.pad_token_id
        batches = _batches(encoded, self.limits)
        with torch.inference_mode():
            for batch in batches:
                rows = [encoded[index] for index in batch]
                if self.checkpoint.is_seq2seq:
                    ids, mask, _ = _pad(rows, pad_id, left=False, device=self.checkpoint.device)
                    start = model.generation_config.decoder_start_token_id
                    if start is None:
                        start = model.config.decoder_start_token_id
                    decoder = torch.full((len(rows), 1), start, dtype=torch.long,
                                         device=self.checkpoint.device)
                    logits = model(input_ids=ids, attention_mask=mask,
                                   decoder_input_ids=decoder).logits[:, -1, :]
                else:
                    ids, mask, positions = _pad(rows, pad_id, left=True,
                                                device=self.checkpoint.device)
                    logits = _last_logits(model, ids, mask, positions)
                self.forward_passes += 1
                pair = logits[:, [self.yes_id, self.no_id]].float().softmax(dim=-1)[:, 0]
                for index, value in zip(batch, pair.tolist(), strict=True):
                    scores[index] = value
        by_prompt = dict(zip(unique, scores, strict=True))
        return [by_prompt[prompt] for prompt in prompts]


class GreedyGenerator:
    """Greedy decoding of many prompts at once; answers are the first line, stripped.

    ``cut_last_token``: drop each answer's last generated token, as the authors' downstream
    model does (``T5_PM.forward`` in github.com/mtoles/qq: ``generate(max_new_tokens=10)``
    then ``[:, 1:-1]``, which removes the decoder start token and the last token). An answer
    that ended with end-of-sequence loses only that marker; one that ran to the cap loses
    its last word piece, so at most ``max_new_tokens - 1`` answer tokens are kept.
    """

    def __init__(self, checkpoint: LoadedCheckpoint, max_new_tokens: int,
                 limits: BatchLimits = BatchLimits(), cut_last_token: bool = False):
        self.checkpoint = checkpoint
        self.max_new_tokens = max_new_tokens
        self.limits = limits
        self.cut_last_token = cut_last_token

    def plan(self, prompts: Sequence[str]) -> list[list[str]]:
        unique = list(dict.fromkeys(prompts))
        return _plan(self.checkpoint, unique, unique, self.limits)

    def _stop_ids(self) -> set[int]:
        """End-of-sequence ids of the model (a generation config may list several)."""
        ids: set[int] = set()
        for source in (getattr(self.checkpoint.model, "generation_config", None),
                       getattr(self.checkpoint.model, "config", None), self.checkpoint.tokenizer):
            value = getattr(source, "eos_token_id", None)
            if isinstance(value, int):
                ids.add(value)
            elif isinstance(value, (list, tuple)):
                ids.update(int(item) for item in value)
        return ids

    def _answer_ids(self, row: Sequence[int], stop: set[int]) -> list[int]:
        """A row's answer tokens: up to the first end-of-sequence (padding after it dropped),
        then, with ``cut_last_token``, without the last generated token."""
        tokens = list(row)
        ended = next((position for position, token in enumerate(tokens) if token in stop), None)
        if ended is not None:
            return tokens[:ended]  # the cut removes the end-of-sequence marker only
        return tokens[:-1] if self.cut_last_token else tokens

    def generate(self, prompts: Sequence[str]) -> list[str]:
        import torch

        unique = list(dict.fromkeys(prompts))
        if not unique:
            return []
        encoded = _encode(self.checkpoint, unique, self.limits)
        outputs = [""] * len(unique)
        tokenizer = self.checkpoint.tokenizer
        model = self.checkpoint.model
        batches = _batches(encoded, self.limits)
        with torch.inference_mode():
            for batch in batches:
                rows = [encoded[index] for index in batch]
                left = not self.checkpoint.is_seq2seq
                ids, mask, _ = _pad(rows, tokenizer.pad_token_id, left=left,
                                    device=self.checkpoint.device)
                generated = model.generate(
                    input_ids=ids, attention_mask=mask, do_sample=False, num_beams=1,
                    max_new_tokens=self.max_new_tokens, pad_token_id=tokenizer.pad_token_id,
                )
                # the answer tokens: after the prompt (causal) or the decoder start (seq2seq)
                generated = generated[:, ids.shape[1]:] if left else generated[:, 1:]
                stop = self._stop_ids()
                for index, row in zip(batch, generated.tolist(), strict=True):
                    text = tokenizer.decode(self._answer_ids(row, stop), skip_special_tokens=True)
                    outputs[index] = first_line(text)
        by_prompt = dict(zip(unique, outputs, strict=True))
        return [by_prompt[prompt] for prompt in prompts]


def first_line(text: str) -> str:
    """The answer as scored: the first line, stripped. The authors keep the decoded text as
    is; the two agree under flan-t5's SentencePiece tokenizer, while a byte-level one decodes
    a leading space (" yes") that raw-string EM would count as a miss (task README)."""
    stripped = text.strip()
    return stripped.splitlines()[0].strip() if stripped else ""

