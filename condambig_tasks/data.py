"""Finding benchmark files: a local ``CONDAMBIG_DATA_DIR`` first, else the upstream source.

Every loader calls :func:`local_files` with its folder name and file patterns. Upstream
downloads go through ``datasets`` (Hugging Face hub, pinned revision) or
:func:`fetch_pinned` (a raw file, sha256 checked). When nothing local exists and the
network is off or fails, :class:`DataUnavailableError` says exactly what to place where.
A ``CONDAMBIG_DATA_DIR`` that is not a folder is an error at once; so is something other
than a regular file where a data file should be. Before any download, one TCP connect
(:data:`CONNECT_TIMEOUT`) tells an unreachable host in a second, where the hub client's
own retries would take half a minute.
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import stat
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from condambig_tasks import json_files, settings
from condambig_tasks.benchmark import options_to_json
from condambig_tasks.errors import CondambigError, ConfigurationError

if TYPE_CHECKING:
    from condambig_tasks.benchmark import Benchmark

# seconds for the TCP connect that tells whether an upstream host can be reached at all
CONNECT_TIMEOUT = 1.5


class DataUnavailableError(CondambigError, RuntimeError):
    """No local copy and the upstream source could not be reached."""

    def __init__(self, benchmark: str, folder: str, file_names: Sequence[str], reason: str,
                 upstream: str | None = None):
        names = ", ".join(file_names)
        where = f" from {upstream}" if upstream else ""
        super().__init__(
            f"{benchmark}: data not available ({reason}). Either allow network access to the "
            f"upstream source, or download the files{where} and set "
            f"{settings.DATA_DIR_VARIABLE}=DIR with DIR/{folder}/ containing: {names}."
        )
        self.benchmark = benchmark
        self.folder = folder
        self.file_names = tuple(file_names)
        self.upstream = upstream


class CorruptDataError(CondambigError, RuntimeError):
    """A data file exists but cannot be read as the benchmark's format."""


_SOURCES: ContextVar[list[dict[str, Any]] | None] = ContextVar("data_sources", default=None)


@contextlib.contextmanager
def recording_sources() -> Iterator[list[dict[str, Any]]]:
    """Collect where the data read in this context came from (files with their sha256, hub
    repositories with their revision, URLs), for the provenance block of a run."""
    sources: list[dict[str, Any]] = []
    token = _SOURCES.set(sources)
    try:
        yield sources
    finally:
        _SOURCES.reset(token)


def note_source(entry: dict[str, Any]) -> None:
    """Record one data source (a no-op outside :func:`recording_sources`)."""
    sources = _SOURCES.get()
    if sources is not None and entry not in sources:
        sources.append(entry)


def read_text(path: Path) -> str:
    """A data file's UTF-8 text, recorded with the sha256 of the bytes read (one read).

    Raises OSError / UnicodeDecodeError for the caller to word as its own error."""
    content = path.read_bytes()
    if _SOURCES.get() is not None:  # hashed only when a run records its provenance
        note_file(path, hashlib.sha256(content).hexdigest())
    return content.decode("utf-8")


def note_file(path: Path, sha256: str) -> None:
    """Record a data file read with the sha256 of its bytes (see :func:`note_source`)."""
    note_source({"kind": "file", "path": str(path), "sha256": sha256})


def not_json(path: Path, error: Exception) -> CorruptDataError:
    """The error for a data file that cannot be read as JSON."""
    return CorruptDataError(
        f"{path}: cannot be read as JSON ({error}). Replace it with the upstream file.")


def data_root() -> Path | None:
    """``$CONDAMBIG_DATA_DIR``, or None when unset; a path that is not a folder is an error
    (a mistyped path must not silently fall back to the upstream sources)."""
    root = settings.data_dir()
    if root is None or root.is_dir():
        return root
    raise ConfigurationError(
        f"{settings.DATA_DIR_VARIABLE}={root}: {describe_path(root, 'a folder')}. Point it at "
        "the folder that holds the benchmark folders (condambigqa/, hotpotqa/, hotpot_flm/, "
        "conditionalqa/, ambignq/, abg_coqa/), or unset it to read the upstream sources.")


def describe_path(path: Path, expected: str) -> str:
    """What is at ``path`` instead of ``expected`` ("does not exist", "is a folder, not a
    regular file", "is a named pipe (FIFO), not a regular file", ...)."""
    try:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode) and not path.exists():
            return "is a broken symbolic link"
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
    except OSError as error:
        return f"cannot be inspected ({error.strerror or error})"
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISREG, "a file"),
             (stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    kind = next((name for test, name in kinds if test(mode)), "something else")
    return f"is {kind}, not {expected}"


def local_folder(folder: str) -> Path | None:
    """``$CONDAMBIG_DATA_DIR/<folder>`` when the variable is set and the folder exists."""
    root = data_root()
    if root is None:
        return None
    candidate = root / folder
    return candidate if candidate.is_dir() else None


def local_files(folder: str, patterns: Sequence[str]) -> list[Path]:
    """Files in the local folder matching any glob pattern, sorted by name; a match that is
    not a regular file (a folder, a FIFO, a broken link) is an error saying what it is."""
    base = local_folder(folder)
    if base is None:
        return []
    found: set[Path] = set()
    for pattern in patterns:
        literal = base / pattern
        # a plain name is looked up itself: glob() skips a broken symbolic link
        matches = base.glob(pattern) if any(c in pattern for c in "*?[") else \
            [literal] if literal.is_symlink() or literal.exists() else []
        for path in matches:
            if not path.is_file():
                raise CorruptDataError(
                    f"{path} {describe_path(path, 'a regular file')}; a data file is "
                    "expected there. Replace it with the upstream file, or remove it.")
            found.add(path)
    return sorted(found)


def read_json(path: Path) -> Any:
    """JSON (or JSON Lines, for ``*.jsonl``) with a clear error naming the file when corrupt."""
    try:
        text = read_text(path)
        if path.suffix == ".jsonl":
            return [value for _, value in json_files.loads_lines(text)]
        return json_files.loads(text)
    except (OSError, UnicodeDecodeError, json_files.JsonFileError) as error:
        raise not_json(path, error) from error


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fetch_pinned(url: str, sha256: str | None, benchmark: str, folder: str, file_name: str) -> Path:
    """Download a raw upstream file once into the cache, check its sha256, return its path.

    ``sha256=None`` means the digest was not recorded yet (this project was built without
    access to the upstream host); the file is then used unchecked and the digest is printed
    in the error-free path's log so it can be pinned.
    """
    note_source({"kind": "url", "url": url, "pinned_sha256": sha256})
    target = settings.cache_dir() / "upstream" / folder / file_name
    if target.is_file() and (sha256 is None or sha256_of(target) == sha256):
        return target
    unavailable = partial(DataUnavailableError, benchmark, folder, [file_name], upstream=url)
    _require_reachable(url, url, unavailable)
    try:
        import fsspec

        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_suffix(target.suffix + ".part")
        with fsspec.open(url, "rb") as source, part.open("wb") as sink:
            for block in iter(lambda: source.read(1 << 20), b""):
                sink.write(block)
    except Exception as error:  # network errors come in many types
        raise unavailable(f"download failed: {error}") from error
    actual = sha256_of(part)
    if sha256 is not None and actual != sha256:
        part.unlink(missing_ok=True)
        raise CorruptDataError(
            f"{url}: sha256 {actual} differs from the pinned {sha256}; the upstream file "
            f"changed. Place the expected file in ${settings.DATA_DIR_VARIABLE}/{folder}/."
        )
    part.replace(target)
    return target


def load_hub_dataset(
    repository: str, revision: str | None, benchmark: str, folder: str, file_names: Sequence[str],
    name: str | None = None, split: str | None = None,
):
    """``datasets.load_dataset`` at a pinned revision, never with remote code.

    Returns a ``DatasetDict`` (split=None) or a ``Dataset``; raises DataUnavailableError with
    the local alternative when the hub cannot be reached.
    """
    note_source({"kind": "hub", "repository": repository,
                 "revision": revision or "default branch (not pinned)", "name": name,
                 "split": split})
    from huggingface_hub import constants

    unavailable = partial(DataUnavailableError, benchmark, folder, file_names,
                          upstream=f"https://huggingface.co/datasets/{repository}")
    _require_reachable(constants.ENDPOINT, f"the Hugging Face hub at {constants.ENDPOINT}",
                       unavailable)
    try:
        import datasets

        return datasets.load_dataset(repository, name=name, split=split, revision=revision)
    except Exception as error:
        raise unavailable(
            f"loading {repository} from the Hugging Face hub failed: {error}") from error


def _require_reachable(url: str, what: str,
                       unavailable: Callable[[str], DataUnavailableError]) -> None:
    """Raise ``unavailable(reason)`` when offline mode is on or ``url`` cannot be reached."""
    if settings.offline():
        raise unavailable("offline mode is on")
    problem = unreachable(url)
    if problem is not None:
        raise unavailable(f"cannot reach {what} ({problem})")


def unreachable(url: str, timeout: float = CONNECT_TIMEOUT) -> str | None:
    """Why no TCP connection to ``url``'s host (or the proxy that would carry it) opens
    within ``timeout`` seconds, name resolution included; None when one does."""
    try:
        parts = urllib.parse.urlsplit(url)
        host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
        proxy = urllib.request.getproxies().get(parts.scheme)
        if proxy and host and not urllib.request.proxy_bypass(host):
            proxy_parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
            host = proxy_parts.hostname
            port = proxy_parts.port or (443 if proxy_parts.scheme == "https" else 80)
    except ValueError as error:
        return f"{url!r} is not a usable address ({error})"
    if not host:
        return f"no host in {url!r}"
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as error:
            outcome.append(f"{host}:{port}: {error.strerror or error}")
        else:
            outcome.append(None)

    # a thread, so that a hanging name lookup is bounded too
    worker = threading.Thread(target=connect, name="condambig-connect-check", daemon=True)
    worker.start()
    worker.join(timeout)
    return outcome[0] if outcome else f"{host}:{port}: no answer within {timeout:g} s"


def load_items(benchmark: Benchmark, options: Any,
               load: Callable[[Any], list[Any]] | None = None) -> list[Any]:
    """The benchmark's items (``load``: another way to them than ``benchmark.load``); no
    items is an error naming where they were looked for (a run over zero items would
    report nothing and exit as if it had succeeded)."""
    items = (load or benchmark.load)(options)
    if not items:
        root = settings.data_dir()
        folders = benchmark.catalogue.data_folders
        where = (" in " + ", ".join(str(root / folder) for folder in folders)
                 if root is not None and folders else "")
        raise CorruptDataError(
            f"{benchmark.title}: the data{where} holds no items for these options "
            f"({options_to_json(benchmark, options)}); check that the files are the "
            "upstream ones and not empty.")
    return items
