"""An Inspect older than the tasks need is named in one line, with the version to install,
instead of Inspect's "No inspect tasks were found" after an ImportError."""

from __future__ import annotations

import subprocess
import sys

import pytest

from condambig._version_check import check_inspect, release, required_inspect
from tests.conftest import subprocess_env


def test_the_minimum_is_the_one_the_package_declares():
    from importlib import metadata

    declared = [requirement for requirement in metadata.requires("condambig")
                if requirement.lower().startswith("inspect-ai")]
    assert declared and required_inspect() and f">={required_inspect()}" in declared[0]


@pytest.mark.parametrize(("installed", "ok"), [
    ("0.3.140", False), ("0.3.260", False), ("0.3.261", True), ("0.3.285", True),
    ("0.4.0", True), ("0.3.261.dev3+gabc", True), ("0.3.26", False)])
def test_versions_compare_as_releases_not_strings(installed, ok):
    if ok:
        check_inspect(installed, "0.3.261")
    else:
        with pytest.raises(ImportError, match=r"need inspect-ai>=0\.3\.261 \(installed: "):
            check_inspect(installed, "0.3.261")
    assert release("0.3.261") == (0, 3, 261)


def test_inspect_loading_the_tasks_under_an_older_release_says_which_one_to_install():
    """Inspect's own entry-point loading, with its reported version set older than the
    minimum: its one warning line carries ours."""
    script = ("import inspect_ai; inspect_ai.__version__ = '0.3.212'\n"
              "from inspect_ai._util.entrypoints import ensure_entry_points\n"
              "ensure_entry_points('condambig')\n")
    result = subprocess.run([sys.executable, "-c", script], env=subprocess_env(),
                            capture_output=True, text=True, timeout=300)
    lines = [line for line in result.stderr.splitlines() if "condambig._registry" in line]
    assert len(lines) == 1, result.stderr[-3000:]
    assert f"need inspect-ai>={required_inspect()} (installed: 0.3.212)" in lines[0]
    assert "pip install" in lines[0]
