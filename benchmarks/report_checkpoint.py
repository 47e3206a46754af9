"""An unfinished lm-eval run of the evaluation report, kept beside the report.

A long run (CondAmbigQA's settings with fragments: about eight hours on 2 CPU cores) takes
several sittings, and a sitting may be on a fresh machine. lm-eval's response cache
(``--use_cache``) keeps each finished batch's generations, but it lives in the run's folder,
which is not in git. So the report saves the cache's generations, with the sittings so far,
as a checkpoint beside its records (``<report>/partial/<run>.json``) whenever the cache
grows, and a later sitting anywhere writes them back into a new cache before lm-eval starts:
lm-eval then generates only what is missing.

The data must not be committed, and a small model copies its prompt at length. So a
generation is kept as literals and ``[start, length]`` references into the prompts of the
run's items (the benchmark's own prompts of its first ``limit`` items, rebuilt from the data
folder); no run of ``SHINGLE`` characters of those prompts is kept as text. The checkpoint
holds the prompts' digest: on other data the references would be wrong, so it is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

SHINGLE = 24  # the shortest copied span kept as a reference (characters)
FORMAT = 1


def reference_text(prompts: Sequence[str]) -> str:
    """The text references point into: the prompts, one after the other."""
    return "\n".join(prompts)


def _index(reference: str) -> dict[str, int]:
    """The first position of every ``SHINGLE``-character span of the reference."""
    index: dict[str, int] = {}
    for start in range(len(reference) - SHINGLE + 1):
        index.setdefault(reference[start:start + SHINGLE], start)
    return index


def encode(text: str, reference: str, index: Mapping[str, int]) -> list:
    """``text`` as literals and ``[start, length]`` spans of ``reference`` (one pass: each
    character is either in a span or one dictionary lookup)."""
    pieces: list = []
    literal: list[str] = []
    position = 0
    while position < len(text):
        start = index.get(text[position:position + SHINGLE]) \
            if position + SHINGLE <= len(text) else None
        if start is None:
            literal.append(text[position])
            position += 1
            continue
        length = SHINGLE
        while position + length < len(text) and start + length < len(reference) and \
                text[position + length] == reference[start + length]:
            length += 1
        if literal:
            pieces.append("".join(literal))
            literal = []
        pieces.append([start, length])
        position += length
    if literal:
        pieces.append("".join(literal))
    return pieces


def decode(pieces: Sequence, reference: str) -> str:
    return "".join(piece if isinstance(piece, str) else
                   reference[piece[0]:piece[0] + piece[1]] for piece in pieces)


def digest(reference: str) -> str:
    return hashlib.sha256(reference.encode("utf-8", "surrogatepass")).hexdigest()


def cache_files(cache_prefix: Path) -> list[Path]:
    """lm-eval's response cache files of ``--use_cache PREFIX`` (one per rank)."""
    return sorted(cache_prefix.parent.glob(cache_prefix.name + "_rank*.db"))


def last_write(cache_prefix: Path) -> float | None:
    """When the cache last grew (None: no cache yet)."""
    return max((file.stat().st_mtime for file in cache_files(cache_prefix)), default=None)


def close_interrupted(sittings: Sequence[Mapping], cache_prefix: Path) -> list[dict]:
    """The sittings, each one not finished counted from its start to the cache's last write
    (what it generated after that is not kept) and marked interrupted."""
    written = last_write(cache_prefix)
    closed = [dict(sitting) for sitting in sittings]
    for sitting in closed:
        if sitting.get("seconds") is None:
            kept = (written or sitting["started"]) - sitting["started"]
            sitting.update(seconds=max(0.0, kept), interrupted=True)
    return closed


def cached_generations(cache_prefix: Path) -> dict[str, str]:
    """lm-eval's response cache (``SqliteDict`` files, one per rank): request hash ->
    generation."""
    from sqlitedict import SqliteDict

    generations: dict[str, str] = {}
    for file in cache_files(cache_prefix):
        with SqliteDict(str(file), flag="r") as cache:
            generations.update((key, value) for key, value in cache.items()
                               if isinstance(value, str))
    return generations


def save(checkpoint: Path, cache_prefix: Path, prompts: Sequence[str],
         sittings: Sequence[Mapping], plan: Mapping) -> int:
    """Write the checkpoint of the run's cache (the current sitting counted up to the cache's
    last write); returns the generations it holds. Each is checked to decode to itself."""
    generations = cached_generations(cache_prefix)
    reference = reference_text(prompts)
    index = _index(reference)
    encoded = {}
    for key, text in sorted(generations.items()):
        pieces = encode(text, reference, index)
        if decode(pieces, reference) != text:  # cannot happen; a wrong checkpoint is worse
            raise AssertionError(f"checkpoint encoding of {key} does not decode to itself")
        encoded[key] = pieces
    kept = close_interrupted(sittings, cache_prefix)
    checkpoint.parent.mkdir(parents=True, exist_ok=True)
    temporary = checkpoint.with_suffix(".tmp")
    temporary.write_text(json.dumps(
        {"format": FORMAT, "plan": dict(plan), "prompts_sha256": digest(reference),
         "shingle": SHINGLE, "sittings": kept, "generations": encoded},
        sort_keys=True) + "\n")
    temporary.replace(checkpoint)
    return len(encoded)


def restore(checkpoint: Path, cache_prefix: Path, prompts: Sequence[str]
            ) -> tuple[int, list[dict]]:
    """Write the checkpoint's generations into the run's (new) response cache; returns how
    many and the earlier sittings. A checkpoint of other prompts is an error (the data folder
    differs from the one it was saved with): delete it to start the run again."""
    from sqlitedict import SqliteDict

    saved = json.loads(checkpoint.read_text())
    reference = reference_text(prompts)
    if saved.get("format") != FORMAT or saved["prompts_sha256"] != digest(reference):
        raise SystemExit(
            f"{checkpoint} was saved from other prompts (another data folder or another "
            f"version of the prompts): delete it to run {saved['plan']} from the start")
    cache_prefix.parent.mkdir(parents=True, exist_ok=True)
    with SqliteDict(str(cache_prefix.parent / (cache_prefix.name + "_rank0.db")),
                    autocommit=False) as cache:
        for key, pieces in saved["generations"].items():
            if key not in cache:
                cache[key] = decode(pieces, reference)
        cache.commit()
    return len(saved["generations"]), saved["sittings"]
