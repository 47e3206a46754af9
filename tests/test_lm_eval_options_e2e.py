"""`lm_eval --metadata` through the real command: what the user typed is honoured or refused
in one line, and a key scoped to one benchmark reaches only that benchmark."""

from __future__ import annotations

import glob
import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start

pytestmark = pytest.mark.e2e


def _lm_eval(tmp_path: Path, tasks: str, metadata: dict, *extra: str):
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"))
    return warm_start.run([executable("lm_eval"), "--model", "dummy", "--tasks", tasks,
                           "--metadata", json.dumps(metadata), *extra],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)


def _project_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in (result.stderr + result.stdout).splitlines()
            if line.startswith("condambig:")]


@pytest.mark.parametrize(("metadata", "expected"), [
    ({"setting": "gold"}, "setting must be one of main, gold_conditions, no_conditions, "
                          "closed_book, closed_book_conditions; got 'gold'"),
    ({"matching": "exatc"}, "matching must be one of judge, exact; got 'exatc' (did you "
                            "mean 'exact'?)"),
    ({"setting": "gold_conditions"}, "use --tasks condambigqa_gold_conditions"),
])
def test_a_setting_the_task_cannot_honour_ends_the_run_in_one_line(tmp_path, metadata,
                                                                   expected):
    result = _lm_eval(tmp_path, "condambigqa", metadata)
    assert result.returncode != 0
    [line] = _project_lines(result)
    assert expected in line, line
    assert "Traceback" not in result.stderr


def test_a_scoped_option_reaches_only_its_benchmark(tmp_path):
    result = _lm_eval(tmp_path, "abg_coqa,conditionalqa", {"abg_coqa": {"split": "val"}},
                      "--limit", "1", "--output_path", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr[-3000:]
    [results] = glob.glob(f"{tmp_path}/out/**/results_*.json", recursive=True)
    configs = json.loads(Path(results).read_text())["configs"]
    options = {task: config["metadata"]["provenance"]["options"]
               for task, config in configs.items()}
    assert {options[f"abg_coqa_{s}"]["split"]
            for s in ("detection", "clarification", "clarified_qa")} == {"val"}
    assert options["conditionalqa"]["split"] == "dev"
    files = [Path(source["path"]).name
             for source in configs["abg_coqa_detection"]["metadata"]["provenance"]["data"][
                 "sources"]]
    assert files == ["coqa_abg_val.json"]


@pytest.mark.parametrize(("metadata", "expected"), [
    ({"judge_concurrency": 0}, "CONDAMBIG_JUDGE_CONCURRENCY / --metadata judge_concurrency "
                               "must be a whole number >= 1, got 0"),
    ({"judge_concurrency": 2.5}, "judge_concurrency must be a whole number >= 1, got '2.5'"),
    ({"judge_timeout": "nan"}, "judge_timeout must be a finite number of seconds > 0, got nan"),
    ({"judge_timeout": -1}, "judge_timeout must be a finite number of seconds > 0, got -1.0"),
    ({"judge_max_failed": -1}, "judge_max_failed must be a whole number >= 0, got -1"),
    ({"judge_max_failed": "many"}, "judge_max_failed must be a whole number >= 0, got 'many'"),
    ({"judge_retry_budget": "inf"}, "judge_retry_budget must be a finite number of seconds > 0"),
    ({"judge_base_url": "ftp://host/v1"}, "judge_base_url must be an http(s) URL"),
])
def test_an_invalid_judge_setting_ends_the_run_in_one_line(tmp_path, metadata, expected):
    """Each ended in a 59-line traceback: now one line naming the setting and what it allows."""
    result = _lm_eval(tmp_path, "condambigqa", {"judge_model": "j", **metadata})
    assert result.returncode != 0
    [line] = _project_lines(result)
    assert expected in line, line
    assert "Traceback" not in result.stderr
