"""An endpoint that quotes the key it was sent ("Incorrect API key provided: Bearer sk-...")
puts it nowhere: error messages are redacted before they are written anywhere."""

from __future__ import annotations

import json
import subprocess

from condambig_metrics.judge.errors import redact_secrets
from tests.condambigqa.test_consistency import JUDGE_SCRIPT, RAW_OUTPUTS
from tests.conftest import FIXTURE_DATA, executable, subprocess_env
from tests.support.judge_server import JudgeServer

SECRET = "sk-condambig-test-secret-4711"


def test_the_configured_key_bearer_tokens_and_key_like_text_are_redacted():
    assert redact_secrets(f"Incorrect API key provided: Bearer {SECRET} (check it)") == \
        "Incorrect API key provided: Bearer [redacted] (check it)"
    assert redact_secrets("key abc-secret-value-9 refused", ["abc-secret-value-9"]) == \
        "key [redacted] refused"
    assert redact_secrets("Incorrect API key provided: sk-proj-****4711") == \
        "Incorrect API key provided: [redacted]"
    # a short stub key does not blank ordinary words; plain messages stay as they are
    assert redact_secrets("rate limit reached", ["k"]) == "rate limit reached"


def test_condambig_score_writes_no_key_an_endpoint_echoes(use_fixture_data, tmp_path):
    """The judgements of one question fail with an error quoting the Authorization header:
    stdout (null_reasons), stderr and the --per-sample file carry no key."""
    script = {**JUDGE_SCRIPT, "faults": [{"kind": "400", "contains": "Ana Runner",
                                          "echo_key": True}]}
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps([{"id": k, "output": v} for k, v in RAW_OUTPUTS.items()]))
    per_sample = tmp_path / "per-sample.jsonl"
    with JudgeServer(script) as server:
        done = subprocess.run(
            [executable("condambig-score"), "condambigqa", "--outputs", str(outputs),
             "--per-sample", str(per_sample), "--judge-model", "judge", "--judge-base-url",
             server.base_url],
            capture_output=True, text=True, timeout=300, env=subprocess_env(
                CONDAMBIG_DATA_DIR=str(FIXTURE_DATA), CONDAMBIG_JUDGE_API_KEY=SECRET,
                CONDAMBIG_JUDGE_CACHE=str(tmp_path / "j.db"),
                CONDAMBIG_JUDGE_MAX_RETRIES="0"))
        assert server.stats()["outcomes"].get("400", 0) > 0
    assert done.returncode == 2, done.stderr
    written = done.stdout + done.stderr + per_sample.read_text()
    assert "Incorrect API key provided: Bearer [redacted]" in written
    assert SECRET not in written and "condambig-test-secret" not in written
