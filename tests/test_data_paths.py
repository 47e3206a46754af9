"""Data paths and offline runs: a mistyped CONDAMBIG_DATA_DIR, something other than a file
where a data file should be, and an unreachable upstream all end at once with one line
saying what is wrong (never a fallback to the hub, never half a minute of retries)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from condambig_tasks import data, registry, settings
from condambig_tasks.errors import ConfigurationError
from tests.support.connections import count_connections, counting_environment


@pytest.fixture
def network_allowed(monkeypatch):
    for name in settings.OFFLINE_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def _load(name: str):
    benchmark = registry.get(name)
    return benchmark.load(benchmark.options({}))


def test_a_missing_data_folder_is_an_error_at_once_naming_it(monkeypatch, tmp_path):
    missing = tmp_path / "no-such-folder"
    monkeypatch.setenv(settings.DATA_DIR_VARIABLE, str(missing))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(ConfigurationError, match=rf"CONDAMBIG_DATA_DIR={missing}: does not "
                       r"exist\. Point it at the folder"):
        _load("ambignq")


def test_a_data_folder_that_is_a_file_is_an_error(monkeypatch, tmp_path):
    (tmp_path / "data").write_text("")
    monkeypatch.setenv(settings.DATA_DIR_VARIABLE, str(tmp_path / "data"))
    with pytest.raises(ConfigurationError, match=r"is a file, not a folder"):
        data.local_files("ambignq", ["dev_light.json"])


@pytest.mark.parametrize(("make", "what"), [
    (os.mkfifo, "is a named pipe (FIFO), not a regular file"),
    (os.mkdir, "is a folder, not a regular file"),
    (lambda path: os.symlink(path.parent / "gone.json", path), "is a broken symbolic link"),
])
def test_something_else_where_a_data_file_should_be_says_what_it_is(monkeypatch, tmp_path,
                                                                   make, what):
    folder = tmp_path / "ambignq"
    folder.mkdir()
    make(folder / "dev_light.json")
    monkeypatch.setenv(settings.DATA_DIR_VARIABLE, str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(data.CorruptDataError) as error:
        _load("ambignq")
    assert str(error.value).startswith(f"{folder / 'dev_light.json'} {what}; ")


def test_an_unreachable_hub_fails_fast(monkeypatch, network_allowed, closed_port):
    """Fast: one connection attempt (the connect check), not the hub client's retries."""
    from huggingface_hub import constants

    monkeypatch.delenv(settings.DATA_DIR_VARIABLE, raising=False)
    monkeypatch.setattr(constants, "ENDPOINT", f"http://127.0.0.1:{closed_port}")
    attempts = count_connections(monkeypatch, closed_port)
    with pytest.raises(data.DataUnavailableError,
                       match=rf"cannot reach the Hugging Face hub at http://127\.0\.0\.1:"
                             rf"{closed_port} .*CONDAMBIG_DATA_DIR=DIR with DIR/ambignq/"):
        _load("ambignq")
    assert len(attempts) == 1


def test_an_unreachable_download_fails_fast(network_allowed, closed_port, tmp_path,
                                            monkeypatch):
    monkeypatch.setenv(settings.CACHE_DIR_VARIABLE, str(tmp_path))
    url = f"http://127.0.0.1:{closed_port}/dev.json"
    attempts = count_connections(monkeypatch, closed_port)
    with pytest.raises(data.DataUnavailableError, match=rf"cannot reach {url} \(127\.0\.0\.1"):
        data.fetch_pinned(url, None, "ConditionalQA", "conditionalqa", "dev.json")
    assert len(attempts) == 1


def test_the_connect_check_tells_a_listening_port_from_a_closed_one(closed_port):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert data.unreachable(f"http://127.0.0.1:{server.getsockname()[1]}/x") is None
    assert "refused" in data.unreachable(f"http://127.0.0.1:{closed_port}/x").lower()
    assert data.unreachable("http://127.0.0.1:99999/x") is not None  # no usable port


# ---------------------------------------------------------------------- condambig-score


def _score(tmp_path: Path, counted_port: int | None = None,
           **env: str) -> tuple[subprocess.CompletedProcess, int | None]:
    """condambig-score in a child; with ``counted_port``, its connection attempts there."""
    from tests.conftest import executable, subprocess_env

    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": "q1", "output": "an answer"}]))
    environment = {key: value for key, value in subprocess_env().items()
                   if key not in settings.OFFLINE_VARIABLES
                   and key not in {settings.DATA_DIR_VARIABLE, "TRANSFORMERS_OFFLINE"}}
    environment.update(CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"), **env)
    count = None
    if counted_port is not None:
        environment, count = counting_environment(tmp_path / "counting", counted_port,
                                                  environment)
    result = subprocess.run([executable("condambig-score"), "ambignq", "--outputs",
                             str(outputs)], capture_output=True, text=True, env=environment,
                            cwd=tmp_path, timeout=300)
    return result, None if count is None else count()


@pytest.mark.e2e
def test_condambig_score_with_a_missing_data_folder(tmp_path):
    missing = tmp_path / "typo"
    result, _ = _score(tmp_path, CONDAMBIG_DATA_DIR=str(missing))
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert f"CONDAMBIG_DATA_DIR={missing}: does not exist" in line


@pytest.mark.e2e
def test_condambig_score_without_data_or_network_ends_fast(tmp_path, closed_port):
    """Fast: the command tries the hub once (the connect check), where the hub client's own
    retries would take tens of seconds."""
    result, attempts = _score(tmp_path, closed_port,
                              HF_ENDPOINT=f"http://127.0.0.1:{closed_port}")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert "cannot reach the Hugging Face hub" in line and "dev_light.json" in line
    assert attempts == 1
