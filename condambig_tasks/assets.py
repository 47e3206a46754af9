"""The upstream sources a benchmark reads, in inspect_evals' vocabulary of external assets.

Each loader declares its sources beside its pins (download URL and sha256, hub repository
and revision) and the benchmark names them in its ``Catalogue.assets``. Type, fetch method and
state are those of ``inspect_evals.metadata.ExternalAsset`` (inspect-evals 0.26.0, its
ADR-0004 / ADR-0007): ``pinned`` when the source names a commit, else ``floating`` (a
branch stays floating even where each download is checked against a sha256).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

HUGGINGFACE = "huggingface"
DIRECT_URL = "direct_url"
TYPES = (HUGGINGFACE, DIRECT_URL)
PINNED, FLOATING = "pinned", "floating"
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class AssetFile:
    """One file of a source as it sits under ``$CONDAMBIG_DATA_DIR`` (read first when there)."""

    folder: str
    name: str
    # of the upstream bytes; None: not recorded (a download is then used unchecked)
    sha256: str | None = None

    def __post_init__(self) -> None:
        if self.sha256 is not None and not _SHA256.fullmatch(self.sha256):
            raise ValueError(f"{self.folder}/{self.name}: sha256 must be 64 lower-case hex "
                             f"digits, got {self.sha256!r}")


@dataclass(frozen=True)
class ExternalAsset:
    """One upstream source: a hub repository or a download URL, with its local files."""

    type: str  # HUGGINGFACE (dataset or model repository) or DIRECT_URL
    # the hub repository, or the URL (ending in "/": a folder, each file's name appended)
    source: str
    fetch_method: str  # as inspect_evals names it: load_dataset, download_and_verify, ...
    comment: str
    files: tuple[AssetFile, ...] = ()
    revision: str | None = None  # hub: a commit or a branch; None: the default branch
    config: str | None = None  # hub dataset configuration
    split: str | None = None

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"{self.source}: asset type must be one of {TYPES}")

    @property
    def state(self) -> str:
        """``pinned`` when the revision (hub) or a segment of the URL is a commit sha."""
        reference = (self.revision or "") if self.type == HUGGINGFACE else self.source
        return PINNED if any(_COMMIT.fullmatch(part) for part in reference.split("/")) \
            else FLOATING

    def url(self, file: AssetFile) -> str:
        """Where a direct download of ``file`` comes from."""
        return self.source + file.name if self.source.endswith("/") else self.source

    def to_metadata(self) -> dict[str, str]:
        """The fields of an inspect_evals ``external_assets`` entry."""
        return {"type": self.type, "source": self.source, "fetch_method": self.fetch_method,
                "state": self.state, "comment": " ".join(self.comment.split())}
