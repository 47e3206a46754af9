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


def build_scripted_causal_lm(directory: Path, reply: str) -> Path:
    """A real (tiny) Llama checkpoint that answers every prompt with ``reply``, then stops.

    ``reply`` is added to the vocabulary as one token. The weights are set by hand, not
    trained: attention and MLP outputs are zeroed so the last hidden state is the input
    token's embedding; every embedding has +1 in dimension 0, which the LM head maps to the
    reply token, and the reply token's embedding also has +1 in dimension 1, which the LM
    head maps (more strongly) to end-of-sequence. So: any prompt -> reply -> EOS. The end-to-
    end tests use it to drive the real runners with outputs they control.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(directory)
    tokenizer.add_tokens([reply])
    tokenizer.save_pretrained(directory)
    reply_id = tokenizer.convert_tokens_to_ids(reply)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
        num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=4096,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings = model.model.embed_tokens.weight
        embeddings.zero_()
        embeddings[:, 0] = 1.0
        embeddings[reply_id, 1] = 1.0
        model.model.norm.weight.fill_(1.0)
        head = model.lm_head.weight
        head.zero_()
        head[reply_id, 0] = 10.0
        head[tokenizer.eos_token_id, 1] = 40.0
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(directory)
    return directory


SHORT_CONTEXT = 64  # positions of build_short_context_lm's model


def build_short_context_lm(directory: Path) -> Path:
    """A 1-layer GPT-2 with learned position embeddings for :data:`SHORT_CONTEXT` tokens:
    a longer prompt is an ``IndexError`` in the model, as with any such model whose context
    a prompt overflows."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(directory)
    tokenizer.model_max_length = SHORT_CONTEXT
    tokenizer.save_pretrained(directory)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer), n_embd=32, n_layer=1, n_head=4, n_positions=SHORT_CONTEXT,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id)
    model = GPT2LMHeadModel(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(directory)
    return directory
