"""Length-sorted batching: padding only wastes what separates neighbouring lengths."""

from __future__ import annotations

from collections.abc import Sequence


def length_sorted_batches(
    lengths: Sequence[int], batch_size: int, max_batch_tokens: int
) -> list[list[int]]:
    """Indices grouped into batches, longest first, each within both limits.

    A batch holds at most ``batch_size`` sequences and at most ``max_batch_tokens`` padded
    tokens (rows × longest row); a single sequence longer than the budget gets its own batch.
    Longest first so that running out of memory happens at once, not at the end.
    """
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    order = sorted(range(len(lengths)), key=lambda index: (-lengths[index], index))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        longest = lengths[current[0]] if current else lengths[index]
        if current and (len(current) >= batch_size or longest * (len(current) + 1) > max_batch_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches
