"""``condambig-score`` when the judge cannot be used from the start: one line on stderr for
the failure, naming the setting that fits the cause (the model and URL for a 404, the key
for a 401, the URL for a refused connection), said once, and "fix that setting" rather than
"run the same command again" (which fits a judge that went away: tests/judge/test_breaker.py).
The real command, against the loopback judge."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import executable, subprocess_env
from tests.judge.test_breaker import _many_clarifications
from tests.support.judge_server import JudgeServer

pytestmark = pytest.mark.e2e

MODEL = "--judge-model / CONDAMBIG_JUDGE_MODEL"
URL = "--judge-base-url / CONDAMBIG_JUDGE_BASE_URL (ends in /v1)"
KEY = "the key in CONDAMBIG_JUDGE_API_KEY or OPENAI_API_KEY"


def _score(tmp_path, base_url: str) -> subprocess.CompletedProcess:
    ref, pred = _many_clarifications(tmp_path, 4)
    return subprocess.run(
        [executable("condambig-score"), "abg_coqa", "--subtask", "clarification",
         "--pred", str(pred), "--ref", str(ref), "--judge-model", "judge",
         "--judge-base-url", base_url],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
        env=subprocess_env(CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"),
                           CONDAMBIG_JUDGE_API_KEY="test-key",
                           CONDAMBIG_JUDGE_MAX_RETRIES="1"))


@pytest.mark.parametrize("cause, advised, not_advised", [
    ("unknown model", [MODEL, URL], [KEY]),
    ("401", [KEY], [MODEL, URL]),
    ("closed port", [URL], [MODEL, KEY]),
])
def test_a_judge_unusable_from_the_start_is_one_line_naming_the_setting_to_fix(
        tmp_path, closed_port, cause, advised, not_advised) -> None:
    faults = {"unknown model": [{"kind": "404", "code": "model_not_found"}],
              "401": [{"kind": "401"}]}
    if cause == "closed port":
        result = _score(tmp_path, f"http://127.0.0.1:{closed_port}/v1")
    else:
        with JudgeServer({"faults": faults[cause]}) as judge:
            result = _score(tmp_path, judge.base_url)
    assert result.returncode == 2, result.stderr[-3000:]
    output = json.loads(result.stdout)
    assert output["metrics"]["judge_helpfulness"] is None
    lines = result.stderr.splitlines()
    # the judge's progress line and the note that the fixture is a part of the split,
    # then the one line of the failure
    assert len(lines) == 3, result.stderr
    assert "judge judge: 0/" in lines[0] and "the data holds" in lines[1]
    line = lines[2]
    assert line.startswith("condambig-score abg_coqa: the judge endpoint failed")
    assert all(line.count(setting) == 1 for setting in advised), line
    assert not any(setting in line for setting in not_advised), line
    assert "What to do" not in line and "run the same command again" not in line
    assert "fix that setting, then run the command again" in line
    assert "Traceback" not in result.stderr
