"""Several ``condambig-score`` commands from one child process: the command's modules (and
Inspect's log reader, which ``--from-log`` imports) are imported once, then each command
runs in a process forked for it, as the console script runs it (``sys.argv``, then
``sys.exit(main())``), with its own stdout and stderr; the fork inherits the child's
resource limits.

    python tests/support/forked_score.py < [[ARG, ...], ...]

prints one JSON list: ``{"returncode", "stdout", "stderr"}`` per command, in order.
Run it by path (no ``PYTHONPATH`` to the checkout needed): it imports only the installed
package.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback


def _run_forked(arguments: list[str], folder: str, index: int) -> dict:
    out_path = os.path.join(folder, f"{index}.out")
    err_path = os.path.join(folder, f"{index}.err")
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the command's process
        code = 1
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
            from condambig_tasks.cli import main

            sys.argv = ["condambig-score", *arguments]
            try:
                code = main()
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:  # as the interpreter would: a traceback, exit 1
                traceback.print_exc()
                code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code if isinstance(code, int) else 1)
    _, status = os.waitpid(pid, 0)
    with open(out_path, encoding="utf-8", errors="replace") as out, \
            open(err_path, encoding="utf-8", errors="replace") as err:
        return {"returncode": os.waitstatus_to_exitcode(status), "stdout": out.read(),
                "stderr": err.read()}


def main() -> int:
    commands = json.load(sys.stdin)
    import inspect_ai.log  # noqa: F401  (what --from-log reads with, imported once)

    import condambig_tasks.cli  # noqa: F401

    with tempfile.TemporaryDirectory() as folder:
        results = [_run_forked(arguments, folder, index)
                   for index, arguments in enumerate(commands)]
    json.dump(results, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
