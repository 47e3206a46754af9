"""``lm_eval ls tasks`` as lm-eval's own command runs it, without indexing lm-eval's built-in
task tree.

Listing indexes every YAML under ``lm_eval/tasks`` (thousands: about 45 s on an idle
machine, minutes under load) before ours; whether a stock lm-eval finds our tasks does not
depend on that tree. The child runs lm-eval's command entry (``lm_eval.__main__:
cli_evaluate``, what the ``lm_eval`` script calls) with ``TaskIndex.build`` given every
folder the ``TaskManager`` asked for except lm-eval's own, and prints the folders asked
for, so a test still sees the stock configuration (defaults plus our folder, no flag).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

ASKED_PREFIX = "TASK-FOLDERS-ASKED: "

_CHILD = f"""
import atexit, json, sys
from pathlib import Path

import lm_eval.tasks
import lm_eval.tasks._index as index_module

builtin = Path(lm_eval.tasks.__file__).parent
original = index_module.TaskIndex.build
asked = []


def build(paths, **keywords):
    paths = [Path(path) for path in paths]
    asked.extend(str(path) for path in paths)
    return original([path for path in paths if path != builtin], **keywords)


index_module.TaskIndex.build = staticmethod(build)
atexit.register(lambda: print({ASKED_PREFIX!r} + json.dumps(asked), file=sys.stderr))
sys.argv = ["lm_eval", "ls", "tasks"]
from lm_eval.__main__ import cli_evaluate
sys.exit(cli_evaluate())
"""


def list_tasks(python: str, env: dict[str, str]) -> tuple[str, list[str], str]:
    """(the listing, the task folders the TaskManager asked for, lm-eval's own folder)."""
    result = subprocess.run([python, "-c", _CHILD], capture_output=True, text=True, env=env,
                            cwd="/", timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    [line] = [line for line in result.stderr.splitlines() if line.startswith(ASKED_PREFIX)]
    builtin = subprocess.run([python, "-c", "import lm_eval.tasks, pathlib; "
                              "print(pathlib.Path(lm_eval.tasks.__file__).parent)"],
                             capture_output=True, text=True, env=env, cwd="/", timeout=600,
                             check=True).stdout.strip()
    return result.stdout, json.loads(line[len(ASKED_PREFIX):]), str(Path(builtin))
