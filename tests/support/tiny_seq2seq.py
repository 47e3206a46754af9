"""Tiny randomly initialised T5 models built locally (nothing is downloaded).

Used as HotpotQA-FLM's answering agent and downstream model in tests (``tiny``), and as a
t5-small-sized stand-in in ``benchmarks/hotpot_flm_agent.py`` (``t5-small``). The
tokenizer is a byte-level BPE trained on a few lines, with T5's conventions: ``</s>``
appended to every input, ``<pad>`` (id 0) as the decoder start token.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

_CORPUS = [
    "question: Who directed the film? context: The film was directed by Mara Velt.",
    "prompt: Does the context answer the question, yes or no? yes no yes no",
    "What question can you ask to help you answer the final question? You can ask:",
    "Answer in as few words as possible: the of and to in is was for on that with as by at",
    "born river city album band film novel actor singer team president year country",
    "0 1 2 3 4 5 6 7 8 9 10 1960 1999 2004 ( ) ; : , . ? ! \" ' -",
]

SIZES = {
    # 2 layers of width 32: a forward pass costs microseconds
    "tiny": dict(d_model=32, d_kv=8, d_ff=64, num_layers=2, num_decoder_layers=2, num_heads=4,
                 feed_forward_proj="gated-gelu"),
    # the t5-small architecture (60M parameters with its 32,128-row vocabulary)
    "t5-small": dict(d_model=512, d_kv=64, d_ff=2048, num_layers=6, num_decoder_layers=6,
                     num_heads=8, feed_forward_proj="relu", vocab_size=32128),
}


def build_t5_tokenizer(directory: Path, extra_text: Iterable[str] = (), vocab_size: int = 600):
    """A byte-level BPE tokenizer with T5's special tokens, saved to ``directory``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<pad>", "</s>", "<unk>"]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(list(_CORPUS) * 4 + list(extra_text), trainer=trainer)
    eos_id = tokenizer.token_to_id("</s>")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", eos_id)],
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", eos_token="</s>", unk_token="<unk>",
    )
    fast.model_max_length = 2048
    fast.save_pretrained(directory)
    return fast


def build_tiny_t5(
    directory: Path, size: str = "tiny", seed: int = 0, extra_text: Iterable[str] = (),
    vocab_size: int = 600,
) -> Path:
    """A random T5 of the given size plus tokenizer, saved to ``directory`` (idempotent)."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    directory = Path(directory)
    if (directory / "config.json").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_t5_tokenizer(directory, extra_text, vocab_size)
    shape = dict(SIZES[size])
    vocabulary = max(shape.pop("vocab_size", 0), len(tokenizer))
    torch.manual_seed(seed)
    config = T5Config(
        vocab_size=vocabulary, pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False, **shape,
    )
    model = T5ForConditionalGeneration(config)
    with torch.no_grad():  # small output weights: P(yes) varies by input instead of saturating
        model.lm_head.weight.mul_(0.2 / config.d_model**0.5)
    model.generation_config.decoder_start_token_id = tokenizer.pad_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(directory)
    return directory
