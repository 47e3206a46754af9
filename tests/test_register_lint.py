"""The register entries' task files pass inspect-evals-lint (0.12.0, the register's linter)
as the register lints them (``lint_task_files``: the single-evaluation layout, eval.yaml
optional): every rule passes or does not apply, except those docs/leaderboards.md names
as assuming a layout this package does not have, and exactly those."""

from __future__ import annotations

import re

import pytest
import yaml

from tests.conftest import REPO_ROOT
from tests.test_register import register

lint = pytest.importorskip("inspect_evals_lint",
                           reason="inspect-evals-lint is not installed (dev extra, Python >= 3.11)")

DOC = REPO_ROOT / "docs" / "leaderboards.md"


def documented_not_applicable() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    block = text.split("<!-- lint-not-applicable -->")[1].split("<!-- end lint-not-applicable -->")[0]
    return set(re.findall(r"^- `(IE[A-Z]{2}\d{3})`", block, flags=re.MULTILINE))


def test_the_entries_task_files_pass_every_applicable_rule(tmp_path):
    assert register(tmp_path / "register", cwd=tmp_path).returncode == 0
    paths = sorted({yaml.safe_load(entry.read_text())["tasks"][0]["task_path"]
                    for entry in (tmp_path / "register").glob("*/eval.yaml")})
    assert len(paths) >= 5
    run = lint.lint_task_files(REPO_ROOT, paths)
    [package] = run.packages  # every task file is in one package
    failing = {d.rule.code for d in package.diagnostics if d.status == "fail"}
    assert failing == documented_not_applicable(), [
        f"{d.rule.code} {d.location}: {d.message}" for d in package.diagnostics
        if d.status == "fail" and d.rule.code not in documented_not_applicable()]
    score = package.score()
    assert score.passing + len(failing) == score.applicable


def test_the_documented_rules_are_rules_of_the_linter():
    codes = documented_not_applicable()
    assert len(codes) == 3
    for code in codes:
        assert lint.get_rule(code) is not None, code
