"""Counting the TCP connection attempts a test's code makes to one port.

A failure against an endpoint that is not there is fast because few connections are tried
(no client retrying for half a minute); the seconds it takes depend on the machine's load.
So tests count the attempts: in process with :func:`count_connections`, in a child process
with :func:`counting_environment` (:mod:`tests.support.child_site`: each attempt noted in a
file, one line each, so an exit without clean-up keeps them).
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.child_site import with_sitecustomize

_START = '''
def _start():
    import os
    import socket

    port = int(os.environ["CONDAMBIG_TEST_COUNT_PORT"])
    log_path = os.environ["CONDAMBIG_TEST_COUNT_FILE"]
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def note(address):
        if isinstance(address, tuple) and len(address) >= 2 and address[1] == port:
            with open(log_path, "a") as log:
                log.write("connect\\n")

    def counted_connect(self, address):
        note(address)
        return connect(self, address)

    def counted_connect_ex(self, address):
        note(address)
        return connect_ex(self, address)

    socket.socket.connect = counted_connect
    socket.socket.connect_ex = counted_connect_ex
'''


def count_connections(monkeypatch: Any, port: int) -> list[tuple[Any, ...]]:
    """The addresses of every connection attempt to ``port`` from now on (this process)."""
    attempts: list[tuple[Any, ...]] = []
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def note(address: Any) -> None:
        if isinstance(address, tuple) and len(address) >= 2 and address[1] == port:
            attempts.append(address)

    def counted_connect(self: socket.socket, address: Any) -> None:
        note(address)
        return connect(self, address)

    def counted_connect_ex(self: socket.socket, address: Any) -> int:
        note(address)
        return connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", counted_connect)
    monkeypatch.setattr(socket.socket, "connect_ex", counted_connect_ex)
    return attempts


def counting_environment(folder: Path, port: int,
                         env: dict[str, str]) -> tuple[dict[str, str], Callable[[], int]]:
    """``env`` for a child Python process whose connection attempts to ``port`` are
    counted, and a function giving the count so far."""
    counted = with_sitecustomize(folder, env, _START)
    log = folder / "connections.log"
    log.write_text("")
    counted.update(CONDAMBIG_TEST_COUNT_PORT=str(port), CONDAMBIG_TEST_COUNT_FILE=str(log))
    return counted, lambda: len(log.read_text().splitlines())
