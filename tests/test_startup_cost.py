"""What the ``.pth`` hook costs every Python process of the environment: the start-up
imports only the hook module (and its package), nothing heavy (``typing``,
``importlib.abc``, ``tempfile``), and nothing at all with the opt-out set. The imports are
asserted, not timed; ``benchmarks/startup.py`` prints the time."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from condambig_tasks import _lm_eval_hook as hook
from tests.conftest import subprocess_env
from tests.support.fresh_site import venv_with_checkout_pth

HOOK_MODULES = {"condambig_tasks", "condambig_tasks._lm_eval_hook"}
HEAVY = {"typing", "importlib.abc", "importlib.resources", "tempfile", "importlib.metadata"}
LIST_MODULES = "import json, sys; print(json.dumps(sorted(sys.modules)))"


@pytest.fixture(scope="module")
def python(tmp_path_factory) -> Path:
    return venv_with_checkout_pth(tmp_path_factory.mktemp("site") / "venv")


def _modules_at_start(python: Path, opt_out: str, code: str = LIST_MODULES) -> set[str]:
    env = subprocess_env(CONDAMBIG_DISABLE_LM_EVAL_HOOK=opt_out)
    env.pop("PYTHONPATH", None)  # the venv's own site-packages, as installed
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                            env=env, timeout=120, cwd="/")
    assert result.returncode == 0, result.stderr[-2000:]
    return set(json.loads(result.stdout))


def test_the_pth_start_imports_only_the_hook(python):
    with_hook = _modules_at_start(python, "")
    bare = _modules_at_start(python, "1")
    assert with_hook - bare == HOOK_MODULES
    assert bare <= with_hook
    assert not HEAVY & with_hook, sorted(HEAVY & with_hook)


@pytest.mark.parametrize("value", [*hook.OPT_OUT_VALUES, " TRUE ", "Yes"])
def test_the_opt_out_is_honoured_before_anything_is_imported(python, value):
    assert not HOOK_MODULES & _modules_at_start(python, value)


@pytest.mark.parametrize("value", ["0", "no", ""])
def test_other_values_keep_the_hook(python, value):
    assert HOOK_MODULES <= _modules_at_start(python, value)


def test_the_final_exit_handler_is_registered_as_lm_eval_starts_importing(python):
    """Registered before lm-eval's own code runs (so it runs after lm-eval's handlers),
    and not at all in a process that never imports lm-eval."""
    code = ("import json, sys; hook = sys.modules['condambig_tasks._lm_eval_hook'];"
            "before = hook.final_handler_registered; import lm_eval;"
            "print(json.dumps([before, hook.final_handler_registered]))")
    env = subprocess_env(CONDAMBIG_DISABLE_LM_EVAL_HOOK="")
    env.pop("PYTHONPATH", None)
    result = subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                            env=env, timeout=120, cwd="/")
    assert result.returncode == 0, result.stderr[-2000:]
    assert json.loads(result.stdout) == [False, True]
