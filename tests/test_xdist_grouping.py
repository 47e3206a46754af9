"""The suite's two xdist workers keep a module's tests together (``--dist loadgroup`` with
the ``xdist_group`` marks tests/conftest.py adds): a module-scoped fixture such as the
real-model tier's runs is then built once, not once per worker. pytest 9.2 broke the
mechanism silently (xdist renames node ids to carry the group, which 9.2 ignores: every
test became its own unit); this checks the installed pair still groups."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = '''
import os
import pytest

pytestmark = pytest.mark.xdist_group("probe")


@pytest.fixture(scope="module")
def built():
    with open(os.environ["PROBE_LOG"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")


@pytest.mark.parametrize("index", range(8))
def test_uses_the_module_fixture(built, index):
    pass
'''

OTHERS = '''
import pytest


@pytest.mark.parametrize("index", range(8))
def test_elsewhere(index):
    pass
'''


def test_a_group_runs_on_one_worker_and_builds_its_module_fixture_once(tmp_path):
    (tmp_path / "test_probe.py").write_text(PROBE)
    (tmp_path / "test_others.py").write_text(OTHERS)
    log = tmp_path / "built.log"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2",
         "--dist", "loadgroup", "--rootdir", str(tmp_path), str(tmp_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={"PATH": str(Path(sys.executable).parent), "PROBE_LOG": str(log)})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert len(log.read_text().split()) == 1, \
        f"the module fixture was built on {log.read_text().split()}: groups are not kept"
