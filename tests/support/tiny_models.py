"""Tiny randomly initialised Hugging Face models built locally (nothing is downloaded).

Used by the end-to-end tests as the model under evaluation (``lm_eval --model hf`` and
``inspect eval --model hf/<path>``). Outputs are gibberish, which is the point: the
benchmarks must count such outputs as parse failures, never crash.
"""

from __future__ import annotations

from pathlib import Path

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"
)

_CORPUS = [
    "The question is ambiguous. Fragment 1 says the answer depends on the condition.",
    '{"condition": "in 2010", "answer": "Paris", "citations": ["Fragment 2"]}',
    "What question can you ask to help you answer the final question? You can ask:",
    "yes no maybe the of and to in is was for on that with as by at from",
    "0 1 2 3 4 5 6 7 8 9 10 [ ] { } : , . ? ! \" '",
]


def build_tokenizer(directory: Path):
    """A byte-level BPE tokenizer trained on a few lines, saved with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    special = ["<pad>", "<s>", "</s>", "<unk>"]
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_CORPUS * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
        unk_token="<unk>",
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.model_max_length = 2048
    fast.save_pretrained(directory)
    return fast


def build_tiny_causal_lm(directory: Path, seed: int = 0) -> Path:
    """A 2-layer Llama with a 2,048-token window, saved to ``directory`` (idempotent)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory = Path(directory)
    if (directory / "config.json").is_file():
        return directory
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(directory)
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    return directory
