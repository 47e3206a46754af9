"""``run``: ``subprocess.run`` for the tests, with framework commands started warm.

An ``inspect`` or ``lm_eval`` command costs 10-15 s of CPU before it does anything (imports
of Inspect, lm-eval, torch, transformers), and the end-to-end tests run about a hundred of
them. ``run`` sends such a command to a warm interpreter of this test process
(``tests/support/warm_server.py``), which forks it with the frameworks already imported: it
is still its own process, with the command's argv, environment, working folder and standard
streams, running the framework's own entry point, and it ends as that command ends.

A command runs as a plain subprocess instead when any environment variable the frameworks
read while being imported differs from the warm interpreter's (the server records which they
read), when a variable ``PYTHON*`` differs, or when ``CONDAMBIG_TEST_COLD=1`` asks for every
command to start cold. Native thread counts (``OMP_NUM_THREADS``...) get a warm interpreter
of their own. Signal tests start their commands themselves (``interrupting.py``).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from tests.support.warm_server import FRAMEWORKS, NATIVE_VARIABLES, console_scripts

_SERVER = Path(__file__).resolve().with_name("warm_server.py")
_BIN = Path(sys.executable).parent
_SCRIPTS = frozenset(console_scripts())
COLD_VARIABLE = "CONDAMBIG_TEST_COLD"
LOG_VARIABLE = "CONDAMBIG_TEST_WARM_LOG"  # a file: one line per framework command, warm or why not


class _Server:
    """The warm interpreter of this process, started on first use with ``env``."""

    def __init__(self, env: dict[str, str]) -> None:
        self.folder = tempfile.mkdtemp(prefix="warm-")
        self.path = os.path.join(self.folder, "socket")
        self.env = env
        self.process = subprocess.Popen([sys.executable, str(_SERVER), self.path], env=env,
                                        cwd=self.folder, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the warm interpreter did not start (exit {self.process.wait()})")
        self.read: dict[str, str | None] = json.loads(line)
        atexit.register(self.stop)

    def differing(self, env: dict[str, str]) -> list[str]:
        """The import-time variables whose value in ``env`` is not the server's."""
        names = set(self.read) | {k for k in (*env, *self.env) if k.startswith("PYTHON")}
        return sorted(name for name in names if env.get(name) != self.env.get(name))

    def stop(self) -> None:
        self.process.stdin.close()  # the server's signal to stop
        self.process.wait()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        os.rmdir(self.folder)


_servers: dict[tuple, _Server] = {}  # by the native thread counts they were started with
_server_lock = threading.Lock()  # tests that run commands from several threads start one


def _server_for(env: dict[str, str]) -> _Server:
    """The warm interpreter of ``env``'s native thread counts, started on first use.

    torch sizes its thread pool while it is imported, so a command with
    ``OMP_NUM_THREADS=1`` (the real-model tier's) needs an interpreter started with it.
    """
    from tests.conftest import subprocess_env

    threads = tuple((name, env.get(name)) for name in NATIVE_VARIABLES)
    with _server_lock:
        if threads not in _servers:
            base = {k: v for k, v in subprocess_env().items() if k not in NATIVE_VARIABLES}
            _servers[threads] = _Server({**base, **{k: v for k, v in threads if v is not None}})
        return _servers[threads]


_last_pid: int | None = None


def last_pid() -> int | None:
    """The process id of the last command started warm (its own session's leader)."""
    return _last_pid


def _request(command: list[str]) -> dict | None:
    """What the server needs to run ``command``, or None when it is not a framework command."""
    if len(command) >= 3 and command[0] == sys.executable and command[1] == "-m" \
            and command[2] in FRAMEWORKS:
        return {"module": command[2], "argv": list(command)}
    head = Path(command[0]) if command else None
    if head is not None and head.name in _SCRIPTS and (head.parent == _BIN or str(head) == head.name):
        return {"argv": [str(_BIN / head.name), *command[1:]]}
    return None


def run(command: list[str], *, env: dict[str, str] | None = None, cwd=None,
        capture_output: bool = False, stdin=None, stdout=None, stderr=None,
        input: str | bytes | None = None,
        text: bool = False, timeout: float | None = None,
        check: bool = False) -> subprocess.CompletedProcess:
    """``subprocess.run`` with these arguments; framework commands start warm (see above)."""
    command = [str(part) for part in command]
    env = dict(os.environ if env is None else env)
    request = _request(command)
    if request is not None and os.environ.get(COLD_VARIABLE) != "1":
        server = _server_for(env)
        differing = server.differing(env)
        if differing:
            _note(command, differing)
        else:
            return _run_warm(server, request, command, env, cwd, capture_output, stdin,
                             stdout, stderr, input, text, timeout, check)
    return subprocess.run(command, env=env, cwd=cwd, capture_output=capture_output,
                          stdin=stdin, stdout=stdout, stderr=stderr, input=input, text=text,
                          timeout=timeout, check=check)


def _note(command: list[str], differing: list[str], cpu: float | None = None) -> None:
    if os.environ.get(LOG_VARIABLE):
        with open(os.environ[LOG_VARIABLE], "a", encoding="utf-8") as log:
            log.write(json.dumps({"command": command[:3], "cold_because": differing,
                                  "cpu_seconds": cpu}) + "\n")


def _stream(choice, default_fd: int):
    """(descriptor for the command, file the caller reads afterwards or None)."""
    if isinstance(choice, int) and choice == subprocess.PIPE:
        handle = tempfile.TemporaryFile()
        return handle.fileno(), handle
    if choice is subprocess.DEVNULL:
        handle = open(os.devnull, "r+b")
        return handle.fileno(), handle
    if choice is None:
        return default_fd, None
    return choice.fileno() if hasattr(choice, "fileno") else choice, None


def _run_warm(server: _Server, request: dict, command, env, cwd, capture_output, stdin,
              stdout, stderr, input, text, timeout, check) -> subprocess.CompletedProcess:
    if capture_output:
        stdout = stderr = subprocess.PIPE
    if input is not None:
        stdin_handle = tempfile.TemporaryFile()
        stdin_handle.write(input.encode() if isinstance(input, str) else input)
        stdin_handle.seek(0)
        in_fd = stdin_handle.fileno()
    elif stdin is None:  # inherited, as subprocess.run does
        stdin_handle, in_fd = None, 0
    else:
        in_fd, stdin_handle = _stream(stdin, 0)
    out_fd, out_file = _stream(stdout, 1)
    if stderr is subprocess.STDOUT:
        err_fd, err_file = out_fd, None
    else:
        err_fd, err_file = _stream(stderr, 2)
    request = {**request, "env": env, "cwd": str(Path(cwd or os.getcwd()).resolve())}
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as connection:
        connection.connect(server.path)
        socket.send_fds(connection, [json.dumps(request).encode()], [in_fd, out_fd, err_fd])
        if stdin_handle is not None:
            stdin_handle.close()
        global _last_pid
        pid = _last_pid = int(connection.recv(64).decode().split()[1])
        connection.settimeout(timeout)
        try:
            reply = connection.recv(64).decode()
        except TimeoutError:
            os.killpg(pid, 9)
            connection.settimeout(None)
            connection.recv(64)
            raise subprocess.TimeoutExpired(command, timeout, *_outputs(out_file, err_file, text)) \
                from None
    _, code, cpu = reply.split()
    code = int(code)
    _note(command, [], float(cpu))
    out, err = _outputs(out_file, err_file, text)
    if check and code:
        raise subprocess.CalledProcessError(code, command, out, err)
    return subprocess.CompletedProcess(command, code, out, err)


def _outputs(out_file, err_file, text: bool):
    def read(handle):
        if handle is None:
            return None
        if handle.name == os.devnull:
            handle.close()
            return None
        handle.seek(0)
        data = handle.read()
        handle.close()
        if not text:
            return data
        return data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")

    return read(out_file), read(err_file)
