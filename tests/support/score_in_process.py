"""``condambig-score ARGS`` run in process (its ``main``), for the e2e tests that score a
framework's outputs again: the command's JSON on stdout and its stderr, exit 0 required.

The environment is the one a subprocess of ``tests.conftest.subprocess_env`` would see for
this project: the fixture data, offline, no judge but the one ``env`` names (its
``CONDAMBIG_*`` entries are set for the call, the others are left as they are).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

import pytest

from tests.conftest import FIXTURE_DATA

ScoreCli = Callable[..., tuple[dict, str]]


def score_cli_fixture(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> ScoreCli:
    """``score(arguments, env=None)`` -> (JSON result, stderr)."""
    from condambig_tasks.cli import main

    def score(arguments: list[str], env: Mapping[str, str] | None = None) -> tuple[dict, str]:
        with monkeypatch.context() as patch:
            for key in [key for key in os.environ if key.startswith("CONDAMBIG_JUDGE_")]:
                patch.delenv(key)
            patch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
            patch.setenv("CONDAMBIG_OFFLINE", "1")
            for key, value in (env or {}).items():
                if key.startswith("CONDAMBIG_"):
                    patch.setenv(key, value)
            capsys.readouterr()
            code = main(arguments)
            captured = capsys.readouterr()
        assert code == 0, f"condambig-score {' '.join(arguments)} failed:\n{captured.err[-3000:]}"
        return json.loads(captured.out), captured.err

    return score
