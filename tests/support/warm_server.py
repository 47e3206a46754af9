"""Test runs only: a warm interpreter that forks each ``inspect`` / ``lm_eval`` command.

Run as a script by ``tests/support/warm_start.py`` (which imports only its constants and
:func:`console_scripts`). It imports the frameworks once (Inspect's CLI, lm-eval's CLI and
``hf`` models, torch, transformers: 10-15 s of CPU that every ``inspect eval`` / ``lm_eval``
command of the end-to-end tests paid again), then waits on a Unix socket. For each request
it forks a *waiter*, which forks the *command*: a new session with the request's
stdin/stdout/stderr descriptors, working folder, environment and argv, that runs the
framework's console entry point at this script's top level and ends as that command would
(its exit code, its atexit handlers, its threads joined). The waiter sends the
command's pid and then its exit code (negative for a signal, as ``subprocess`` says it).

What differs from a fresh process is only which modules are already imported. The client
sends a command here only when every environment variable read during the warm-up (this
server prints them, with their values, when it is ready) has the same value in the command's
environment; otherwise it runs the command as a plain subprocess.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

# The frameworks whose commands start warm: ``python -m <package>``, or a console script of
# theirs (``inspect``, ``lm_eval``, ``lm-eval``: read from their own entry points).
FRAMEWORKS = ("inspect_ai", "lm_eval")


def console_scripts() -> dict[str, str]:
    """The frameworks' console scripts: name -> ``module:function``."""
    from importlib.metadata import entry_points

    return {point.name: point.value for point in entry_points(group="console_scripts")
            if point.module.split(".")[0] in FRAMEWORKS}


# Not lm_eval.evaluator: it imports lm_eval.tasks, which this project's start-up hook patches
# on import, and the patch does per-command work (see _check_warm_up).
WARM_IMPORTS = ("inspect_ai._cli.main", "inspect_ai.model._providers.hf",
                "inspect_ai.model._providers.openai_compatible", "lm_eval.__main__",
                "lm_eval.models.huggingface", "lm_eval.models.openai_completions",
                "datasets")
PROJECT_PACKAGES = ("condambig", "inspect_tasks", "metrics")


# Read at interpreter start, before the recording below: by Python itself, by this project's
# .pth hook, and by the tests' sitecustomize (tests/support/lm_eval_index).
STARTUP_VARIABLES = ("CONDAMBIG_DISABLE_LM_EVAL_HOOK", "CONDAMBIG_TEST_LM_EVAL_INDEX")
# Read through C's getenv by the native libraries torch and numpy load, which the recording
# cannot see: torch sizes its thread pool during the warm-up (the real-model tier runs its
# commands with OMP_NUM_THREADS=1; warm, they ran on the server's two threads).
NATIVE_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def _warm_up() -> dict[str, str | None]:
    """Import the frameworks; returns each environment variable they read, with its value.

    A scan of every variable (``os.environ.items()`` or ``dict(os.environ)``, as tqdm does for
    ``TQDM_*`` and fsspec for ``FSSPEC_*``) is not a read of each: the tests vary no variable
    of such a prefix.
    """
    import importlib

    environ = type(os.environ)
    read: set[str] = {*STARTUP_VARIABLES, *NATIVE_VARIABLES}
    scans = [0]  # iterations over os.environ in progress
    copying: list[str] = []  # the keys a finished scan listed, not yet read back in order
    get, contains, iterate = environ.__getitem__, environ.__contains__, environ.__iter__

    def recording_get(self, key):
        if copying and copying[0] == key:  # dict(os.environ) lists the keys, then reads each
            copying.pop(0)
        elif not scans[0]:
            copying.clear()
            read.add(key)
        return get(self, key)

    def recording_contains(self, key):
        if not scans[0]:
            read.add(key)
        return contains(self, key)

    def scanning_iter(self):
        scans[0] += 1
        listed = []
        try:
            for key in iterate(self):
                listed.append(key)
                yield key
        finally:
            scans[0] -= 1
        copying[:] = listed

    project = _project_modules()
    environ.__getitem__, environ.__contains__ = recording_get, recording_contains
    environ.__iter__ = scanning_iter
    try:
        for name in WARM_IMPORTS:
            importlib.import_module(name)
    finally:
        environ.__getitem__, environ.__contains__, environ.__iter__ = get, contains, iterate
    _check_warm_up(project)
    return {key: os.environ.get(key) for key in sorted(read)}


def _project_modules() -> set[str]:
    return {name for name in sys.modules if name.split(".")[0] in PROJECT_PACKAGES}


def _check_warm_up(project_at_start: set[str]) -> None:
    """The warm-up ran none of this project's code beyond what every interpreter start runs
    (the .pth hook), and imported neither module the hook patches when it is imported: the
    patch also installs the one-line error hook, and only in a framework's command process."""
    extra = sorted(_project_modules() - project_at_start)
    from condambig_tasks import _lm_eval_hook

    hooked = [name for name in (_lm_eval_hook._TARGET, _lm_eval_hook._CONFIG_TARGET)
              if name in sys.modules]
    if hooked or extra:
        raise SystemExit(f"warm_server: the warm-up imported {hooked + extra}")


def _serve(path: str, read: dict[str, str | None]) -> dict:
    """Accept requests until the client goes; returns only inside a forked command."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(16)
    print(json.dumps(read), flush=True)  # the client waits for this line on our stdout
    while True:
        ready, _, _ = select.select([listener, sys.stdin], [], [])
        if sys.stdin in ready:  # the test process closed our stdin, or ended: stop
            os._exit(0)
        connection, _ = listener.accept()
        message, fds, _, _ = socket.recv_fds(connection, 1 << 20, 3)
        waiter = os.fork()
        if waiter == 0:
            listener.close()
            command = os.fork()
            if command == 0:
                connection.close()
                return _become(json.loads(message), fds)
            for fd in fds:
                os.close(fd)
            connection.send(f"pid {command}".encode())
            _, status, usage = os.wait4(command, 0)
            cpu = usage.ru_utime + usage.ru_stime
            connection.send(f"exit {os.waitstatus_to_exitcode(status)} {cpu:.3f}".encode())
            os._exit(0)
        connection.close()
        for fd in fds:
            os.close(fd)
        _reap()


def _reap() -> None:
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def _become(request: dict, fds: list[int]) -> dict:
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)  # stdin, stdout, stderr: the request's
    for fd in set(fds):
        if fd > 2:
            os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    for number in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return request


def _command(request: dict) -> None:
    """The framework's entry point, as its console script or ``python -m`` calls it."""
    import importlib
    import runpy

    argv = request["argv"]
    if request.get("module"):
        sys.path[0] = os.getcwd()  # what ``python -m`` puts first
        sys.argv = ["-m", *argv[3:]]
        runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
        return
    sys.path[0] = os.path.dirname(argv[0])  # what a console script puts first
    sys.argv = list(argv)
    module, _, function = console_scripts()[os.path.basename(argv[0])].partition(":")
    sys.exit(getattr(importlib.import_module(module), function)())


def _run(request: dict) -> None:
    """Run the command and end the process as the interpreter would end it.

    Python 3.11's ``Py_FinalizeEx`` joins non-daemon threads, runs the atexit callbacks and
    flushes the standard streams, then tears down every module: ~4 s here with torch and both
    frameworks imported (every page the teardown touches is copied after the fork). The
    teardown runs no code of the frameworks, so this process stops after the flush.
    """
    import atexit
    import threading

    interrupted = False
    try:
        _command(request)
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        code, interrupted = 1, True
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()  # what the interpreter calls first when the main module ends
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            code = code or 120  # what Python exits with when the final flush fails
    if interrupted:  # as Python does on an uncaught KeyboardInterrupt: end by the signal
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.path[0] = ""  # not this folder: the tests' modules stay out of the commands
    _run(_serve(sys.argv[1], _warm_up()))
