"""The loopback judge server itself: its CLI mode, test endpoints and streaming."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import openai
import pytest

from tests.support.judge_server import JudgeScript, tokenize

REPO = Path(__file__).resolve().parents[2]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def post_json(url: str, payload: dict) -> dict:
    data = json.dumps(payload).encode()
    http_request = urllib.request.Request(url, data=data,
                                          headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(http_request, timeout=10) as response:
        return json.loads(response.read())


def test_tokenize_keeps_numbers_whole_and_round_trips() -> None:
    text = '{"score": 10, "reason": "fine."}'
    tokens = tokenize(text)
    assert "".join(tokens) == text and " 10" in tokens


def test_unknown_fault_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fault kind"):
        JudgeScript.from_dict({"faults": [{"kind": "418"}]})


def test_stats_reset_and_script_endpoints(judge_server) -> None:
    server = judge_server({"default": {"scores": {"3": 1.0}}})
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    first = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
    assert json.loads(first.choices[0].message.content)["score"] == 3
    base = server.base_url.removesuffix("/v1")
    assert get_json(f"{base}/stats?prompts=1")["prompts"] == ["a"]
    post_json(f"{base}/script", {"default": {"scores": {"9": 1.0}}})
    post_json(f"{base}/reset", {})
    second = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "b"}])
    assert json.loads(second.choices[0].message.content)["score"] == 9
    assert get_json(f"{base}/stats")["requests"] == 1


def test_streamed_completion_carries_logprobs(judge_server) -> None:
    server = judge_server({"default": {"scores": {"6": 0.75, "7": 0.25}}})
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "x"}], stream=True, logprobs=True,
        top_logprobs=5)
    text, score_alternatives = "", None
    for chunk in stream:
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            for entry in (chunk.choices[0].logprobs.content or []
                          if chunk.choices[0].logprobs else []):
                if entry.token == " 6":
                    score_alternatives = {t.token: t.logprob for t in entry.top_logprobs}
    assert json.loads(text)["score"] == 6
    assert set(score_alternatives) == {" 6", " 7"}


@pytest.mark.e2e
def test_server_runs_as_a_process_and_prints_its_port(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"scores": {"8": 1.0}},
                                  "faults": [{"kind": "500", "first": 1}]}))
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.support.judge_server", "--port", "0", "--script",
         str(script), "--latency-ms", "5"],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )
    try:
        address = json.loads(process.stdout.readline())
        client = openai.OpenAI(base_url=address["base_url"], api_key="k", max_retries=0)
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "q"}])
        reply = client.chat.completions.create(model="m",
                                               messages=[{"role": "user", "content": "q"}])
        assert json.loads(reply.choices[0].message.content)["score"] == 8
        base = address["base_url"].removesuffix("/v1")
        assert get_json(f"{base}/stats")["outcomes"] == {"500": 1, "ok": 1}
    finally:
        process.terminate()
        process.wait(10)


def test_a_rule_can_apply_only_after_a_number_of_requests() -> None:
    script = JudgeScript.from_dict({"rules": [{"after_requests": 2, "reply": "later"}],
                                    "default": {"reply": "early"}})
    assert [script.rule_for("any prompt", number).reply for number in (1, 2, 3, 4)] == \
        ["early", "early", "later", "later"]
