"""A prompt longer than an in-process model's context: the real ``inspect eval-set`` ends at
once with one line before any generation, instead of retrying a deterministic
``IndexError`` (a traceback per try); the check itself in process
(inspect_tasks/context_check.py)."""

from __future__ import annotations

import glob
import re

import pytest

from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support import warm_start
from tests.support.run_folder import shared_model
from tests.support.tiny_models import SHORT_CONTEXT, build_short_context_lm


@pytest.fixture(scope="module")
def short_context_lm():
    return shared_model("short_context_lm", build_short_context_lm)


@pytest.mark.e2e
def test_an_eval_set_whose_prompts_overflow_the_context_ends_at_once_in_one_line(
        tmp_path, short_context_lm):
    command = [executable("inspect"), "eval-set", "condambig/abg_coqa_detection",
               "-T", "split=val", "--model", f"hf/{short_context_lm}",
               "-M", "do_sample=false", "--log-dir", str(tmp_path / "logs"), "--limit", "2",
               "--display", "plain",
               # without the check: a retry a second later, not Inspect's 30 s, 60 s, ...
               "--retry-attempts", "2", "--retry-wait", "1"]
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA),
                         CONDAMBIG_CACHE_DIR=str(tmp_path / "cache"), OMP_NUM_THREADS="1")
    completed = warm_start.run(command, env=env, cwd=tmp_path, capture_output=True,
                               text=True, timeout=600)
    output = completed.stdout + completed.stderr
    assert completed.returncode != 0, output[-3000:]
    lines = [line for line in output.splitlines() if line.startswith("condambig:")]
    assert len(lines) == 1, output[-4000:]
    assert re.search(r"abg_coqa_detection: (\d+) of \1 prompts do not fit the context of hf/",
                     lines[0]), lines[0]
    assert f"({SHORT_CONTEXT} tokens; the longest" in lines[0]
    assert "use a model with a longer context" in lines[0]
    assert "Traceback" not in output and "IndexError" not in output
    assert not glob.glob(f"{tmp_path}/logs/*.eval")  # nothing generated, nothing retried


def test_prompts_that_fit_pass_and_the_longest_overflow_is_named(
        use_fixture_data, short_context_lm):
    from inspect_ai.model import get_model
    from inspect_ai.model._model import active_model_context_var

    from condambig.context_check import PromptTooLongError, check_prompts_fit

    check_prompts_fit("t", [("c", "the of and " * 40)])  # no eval's model: not checked
    token = active_model_context_var.set(get_model(f"hf/{short_context_lm}", memoize=False))
    try:
        check_prompts_fit("t", [("a", "yes"), ("b", "no")])  # a few tokens each: they fit
        with pytest.raises(PromptTooLongError,
                           match=r"t: 1 of 3 prompts do not fit the context of hf/.* "
                                 rf"\({SHORT_CONTEXT} tokens; the longest, sample c, is \d+ "
                                 r"tokens\).* longer context or lower x$"):
            check_prompts_fit("t", [("a", "yes"), ("b", "no"), ("c", "the of and " * 40)],
                              " or lower x")
    finally:
        active_model_context_var.reset(token)
