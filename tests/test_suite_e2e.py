"""The whole suite: the documented `inspect eval-set` recipe.

Its lm-eval half, `lm_eval --tasks condambig` running every benchmark, is
``test_lm_eval_condambig_group_runs_every_benchmark`` in tests/test_leaderboard.py: it reads
that module's run of the same command instead of starting one of its own.
"""

from __future__ import annotations

import glob
import re
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, REPO_ROOT, executable, subprocess_env
from tests.support import warm_start

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def suite_env(tmp_path_factory, tiny_t5) -> dict[str, str]:
    t5 = tiny_t5
    return subprocess_env(
        CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
        CONDAMBIG_CACHE_DIR=str(tmp_path_factory.mktemp("suite_cache")),
        CONDAMBIG_FLM_ANSWERING_AGENT=str(t5), CONDAMBIG_FLM_DOWNSTREAM_MODEL=str(t5),
    )


def _run(command: list[str], env: dict[str, str], cwd: Path) -> None:
    result = warm_start.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                            timeout=900)
    assert result.returncode == 0, f"{result.stdout[-3000:]}\n{result.stderr[-5000:]}"


def test_inspect_eval_set_recipe_from_the_readme(tiny_causal_lm, suite_env, tmp_path):
    readme = (REPO_ROOT / "condambig_tasks" / "lm_eval_tasks" / "condambig" / "README.md")
    recipe = re.search(r"inspect eval-set (.*?) --model", readme.read_text().replace("\\\n", " "),
                       re.DOTALL).group(1).split()
    assert len(recipe) == 7
    # judge-free on purpose: no grader here for condambigqa's default (the paper's judge)
    _run([executable("inspect"), "eval-set", *recipe, "--model", f"hf/{tiny_causal_lm}",
          "-T", "judge=false", "--limit", "1", "--max-tokens", "16", "--log-dir", str(tmp_path / "logs"),
          "--display", "none"], suite_env, tmp_path)
    from inspect_ai.log import read_eval_log

    logs = [read_eval_log(path) for path in glob.glob(f"{tmp_path}/logs/*.eval")]
    assert {log.eval.task.split("/")[-1] for log in logs} == {t.split("/")[-1] for t in recipe}
    assert all(log.status == "success" for log in logs)
