"""Loading the agents' checkpoints with ``transformers``: any seq2seq or causal model.

Device ``auto`` picks CUDA, then Apple MPS, then CPU. The default dtype is float32 on every
device, as Toles et al. ran their agents (their code loads flan-t5 without a dtype); in
bfloat16 the answering agent's choice changes on some examples and exact ties get likelier.
Dtype ``auto`` (opt-in) picks bfloat16 on a CUDA device that supports it and float32
otherwise — never float16, because T5 checkpoints (the paper's flan-t5-base) overflow in
it. Remote code is never run.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from condambig_tasks import settings
from condambig_tasks.errors import ConfigurationError

Dtype = Literal["float32", "auto", "bfloat16", "float16"]
DTYPES: tuple[str, ...] = get_args(Dtype)
DEFAULT_DTYPE: Dtype = "float32"  # the paper's numerics, on every device
# the variables that name each agent's checkpoint (FlmOptions' field metadata)
AGENT_VARIABLES = {"answering_agent": "CONDAMBIG_FLM_ANSWERING_AGENT",
                   "downstream_model": "CONDAMBIG_FLM_DOWNSTREAM_MODEL"}


class AgentLoadError(ConfigurationError):
    """An agent checkpoint could not be loaded; the message names the option to set."""


@dataclass(frozen=True)
class CheckpointSpec:
    """Which checkpoint to run and how (``device``: auto, cpu, cuda, cuda:1, mps)."""

    name_or_path: str
    device: str = "auto"
    dtype: str = DEFAULT_DTYPE


@dataclass
class LoadedCheckpoint:
    """A model ready for inference, with what the cache key needs to know about it."""

    spec: CheckpointSpec
    model: Any
    tokenizer: Any
    is_seq2seq: bool
    device: Any
    identity: str


def resolve_device(requested: str):
    import torch

    requested = (requested or "auto").strip().lower()
    if requested != "auto":
        return torch.device(requested)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_dtype(requested: str, device):
    import torch

    requested = (requested or DEFAULT_DTYPE).strip().lower()
    if requested not in DTYPES:
        raise ValueError(f"agent dtype {requested!r} is not one of {', '.join(DTYPES)}")
    if requested == "auto":
        if device.type == "cuda" and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return getattr(torch, requested)


def _local_fingerprint(path: Path) -> str:
    """Content of config.json plus names, sizes and times of the weight files."""
    digest = hashlib.sha256()
    config = path / "config.json"
    if config.is_file():
        digest.update(config.read_bytes())
    for weights in sorted(path.glob("*.safetensors")) + sorted(path.glob("*.bin")):
        stat = weights.stat()
        digest.update(f"{weights.name}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


def checkpoint_identity(spec: CheckpointSpec, config: Any, dtype: Any, device: Any) -> str:
    """Stable description of the weights and numerics, for cache keys."""
    local = Path(spec.name_or_path).expanduser()
    if local.is_dir():
        version = "local:" + _local_fingerprint(local)
    else:
        version = "hub:" + str(getattr(config, "_commit_hash", None) or "unpinned")
    return json.dumps(
        {"model": spec.name_or_path, "version": version, "dtype": str(dtype),
         "device": device.type}, sort_keys=True,
    )


def load_error(role: str, spec: CheckpointSpec, option: str, error: Exception) -> AgentLoadError:
    variable = AGENT_VARIABLES.get(option, option)
    return AgentLoadError(
        f"HotpotQA-FLM: cannot load the {role} {spec.name_or_path!r} ({type(error).__name__}: "
        f"{str(error).strip().splitlines()[0] if str(error).strip() else 'no detail'}). "
        f"Download it or point the option at a local seq2seq/causal checkpoint directory: "
        f"{variable}=PATH, lm_eval --metadata '{{\"{option}\": \"PATH\"}}', "
        f"inspect eval ... -T {option}=PATH, or condambig-score hotpot_flm "
        f"--{option.replace('_', '-')} PATH."
    )


def load_checkpoint(spec: CheckpointSpec, role: str, option: str) -> LoadedCheckpoint:
    """Load tokenizer and model (seq2seq if the config says encoder-decoder, else causal)."""
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    device = resolve_device(spec.device)
    dtype = resolve_dtype(spec.dtype, device)
    offline = _hub_access(spec)
    try:
        config = AutoConfig.from_pretrained(spec.name_or_path, trust_remote_code=False, **offline)
        tokenizer = AutoTokenizer.from_pretrained(
            spec.name_or_path, trust_remote_code=False, **offline
        )
        is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
        model_class = AutoModelForSeq2SeqLM if is_seq2seq else AutoModelForCausalLM
        dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
        model = model_class.from_pretrained(
            spec.name_or_path, config=config, trust_remote_code=False,
            **{dtype_key: dtype}, **offline,
        )
    except (OSError, ValueError, KeyError, ImportError, RuntimeError) as error:
        raise load_error(role, spec, option, error) from error
    model.to(device)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    return LoadedCheckpoint(
        spec=spec, model=model, tokenizer=tokenizer, is_seq2seq=is_seq2seq, device=device,
        identity=checkpoint_identity(spec, config, dtype, device),
    )


def _hub_access(spec: CheckpointSpec) -> dict[str, Any]:
    """``local_files_only`` when the hub must not or cannot be asked: the user is offline,
    or the hub's host cannot be reached at all (then transformers' own retries would take a
    minute before the same error). A local folder never asks the hub."""
    if settings.offline() or Path(spec.name_or_path).expanduser().is_dir():
        return {"local_files_only": True}
    from huggingface_hub import constants

    from condambig_tasks.data import unreachable

    return {"local_files_only": True} if unreachable(constants.ENDPOINT) else {}


def check_checkpoint_available(spec: CheckpointSpec, role: str, option: str) -> None:
    """Fail fast (before the evaluated model generates anything) when a checkpoint's config
    cannot be found: reads only ``config.json``, from the local folder, cache or hub."""
    from transformers import AutoConfig

    offline = _hub_access(spec)
    try:
        AutoConfig.from_pretrained(spec.name_or_path, trust_remote_code=False, **offline)
    except (OSError, ValueError, KeyError, ImportError, RuntimeError) as error:
        raise load_error(role, spec, option, error) from error


class CheckpointPool:
    """Loads each checkpoint once per run (A and D are often the same model)."""

    def __init__(self) -> None:
        self._loaded: dict[CheckpointSpec, LoadedCheckpoint] = {}

    def get(self, spec: CheckpointSpec, role: str, option: str) -> LoadedCheckpoint:
        if spec not in self._loaded:
            self._loaded[spec] = load_checkpoint(spec, role, option)
        return self._loaded[spec]
