"""Session-wide fixtures: the hand-written data directory and tiny local models."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import warm_start
from tests.support.run_folder import (
    create_run_folder,
    is_xdist_worker,
    remove_run_folder,
    shared_model,
    with_lm_eval_index,
    worker_cache_dir,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURE_DATA = REPO_ROOT / "tests" / "fixtures" / "data"
SHARED_DATA_VARIABLE = "CONDAMBIG_DATA_DIR"
_OWN_CACHE_VARIABLE = "CONDAMBIG_TEST_OWN_CACHE"  # CONDAMBIG_CACHE_DIR was set by this conftest


def pytest_configure(config) -> None:
    """One folder for the run (tiny models, lm-eval's task index, the Hugging Face cache),
    made by the first pytest process and inherited by xdist workers; judge caches and
    downloads of the run go to a folder of each process there, never to the user's ~/.cache."""
    if not is_xdist_worker(config):
        config._condambig_run_folder = create_run_folder()
        os.environ["HF_HOME"] = str(config._condambig_run_folder / "huggingface")
        # torch writes its default here on first use in a process, so the test process's
        # environment would differ from the warm interpreter's (tests/support/warm_start.py)
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(config._condambig_run_folder / "torch")
    if not os.environ.get("CONDAMBIG_CACHE_DIR") or os.environ.get(_OWN_CACHE_VARIABLE):
        os.environ["CONDAMBIG_CACHE_DIR"] = str(worker_cache_dir(config))
        os.environ[_OWN_CACHE_VARIABLE] = "1"


def pytest_unconfigure(config) -> None:
    folder = getattr(config, "_condambig_run_folder", None)
    if folder is not None:
        remove_run_folder(folder)


@pytest.hookimpl(tryfirst=True)  # before xdist names the groups
def pytest_collection_modifyitems(config, items) -> None:
    """Under ``--dist loadgroup``, the tests of a module sharing a module-scoped fixture (one
    lm-eval run read by several tests) run on one worker, so the fixture is built once.
    xdist workers start with the subprocess runs (``e2e``, then ``realdata``), so the many
    quick tests fill the end of the run instead of one long run ending it alone."""
    if is_xdist_worker(config):
        items.sort(key=lambda item: (item.get_closest_marker("e2e") is None,
                                     item.get_closest_marker("realdata") is None))
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None:
            continue
        if any(definition.scope in ("module", "class", "package")
               for name in info.names_closure
               for definition in info.name2fixturedefs.get(name, ())):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))


@pytest.fixture(scope="session")
def fixture_data_dir() -> Path:
    return FIXTURE_DATA


@pytest.fixture
def use_fixture_data(monkeypatch) -> Path:
    """Point the loaders at tests/fixtures/data (and keep the real cache out of the way)."""
    monkeypatch.setenv(SHARED_DATA_VARIABLE, str(FIXTURE_DATA))
    return FIXTURE_DATA


@pytest.fixture(scope="session")
def real_data_dir() -> Path:
    """The upstream files (``CONDAMBIG_DATA_DIR``); tests using it skip when it is not set."""
    value = os.environ.get(SHARED_DATA_VARIABLE, "").strip()
    if not value or Path(value).resolve() == FIXTURE_DATA.resolve():
        pytest.skip(f"real-data tier: set {SHARED_DATA_VARIABLE} to the upstream data folder")
    return Path(value)


def load_from_real_data(real_data_dir: Path, relative_file: str, load):
    """``load()`` with CONDAMBIG_DATA_DIR at the real data; skip when the file is absent."""
    if not (real_data_dir / relative_file).is_file():
        pytest.skip(f"{relative_file} is not in the real data folder {real_data_dir}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(SHARED_DATA_VARIABLE, str(real_data_dir))
        return load()


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A loopback port nothing listens on, bound for the whole test so that no other test
    (or xdist worker) is given it meanwhile."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


@pytest.fixture(scope="session")
def tiny_causal_lm() -> Path:
    """A 2-layer random Llama with a local tokenizer (built once per run, read-only)."""
    from tests.support.tiny_models import build_tiny_causal_lm

    return shared_model("tiny_causal_lm", build_tiny_causal_lm)


@pytest.fixture(scope="session")
def tiny_t5() -> Path:
    """A 2-layer random T5 with a local tokenizer: HotpotQA-FLM's answering agent and
    downstream model (built once per run, read-only)."""
    from tests.support.tiny_seq2seq import build_tiny_t5

    return shared_model("tiny_t5", build_tiny_t5)


@pytest.fixture(scope="session")
def scripted_causal_lm():
    """``scripted_causal_lm(reply)``: a tiny Llama answering every prompt with ``reply``
    (tests/support/tiny_models.py), built once per run and reply, read-only."""
    import hashlib

    from tests.support.tiny_models import build_scripted_causal_lm

    def model(reply: str) -> Path:
        name = "scripted_lm-" + hashlib.sha256(reply.encode()).hexdigest()[:16]
        return shared_model(name, lambda folder: build_scripted_causal_lm(folder, reply))

    return model


def subprocess_env(**extra: str) -> dict[str, str]:
    """Environment for CLI subprocesses: offline, quiet, no user judge.

    No PYTHONPATH to the checkout: with it, `inspect eval condambig/...` finds no task
    (Inspect then resolves the package from the path, not from its install record).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CONDAMBIG_JUDGE_")}
    env.update({
        "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "INSPECT_LOG_LEVEL": "warning", "NO_COLOR": "1",
    })
    env.pop("OPENAI_API_KEY", None)
    env.update(extra)
    return with_lm_eval_index(env)


def run_ok(command: list[str], env: dict[str, str], cwd: Path,
           timeout: float = 600) -> subprocess.CompletedProcess:
    """A command run to completion that must exit 0 (its output's tail in the failure)."""
    result = warm_start.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, \
        f"{command[0]} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    return result


def executable(name: str) -> str:
    """A console script installed beside this interpreter."""
    candidate = Path(sys.executable).parent / name
    return str(candidate) if candidate.exists() else name
