"""A loopback OpenAI chat-completions server whose judgements and failures the test controls.

Speaks ``POST /v1/chat/completions`` (with ``logprobs`` / ``top_logprobs``, and ``stream``),
``GET /v1/models``, plus test endpoints ``GET /stats`` (request counters, and
``connections``: how many TCP connections carried them; ``?prompts=1`` adds every prompt
received), ``POST /reset`` and ``POST /script`` (replace the script).

A *script* (dict or JSON file) says what to answer::

    {
      "rules": [                                  # first rule whose text occurs in the prompt
        {"contains": "Paris", "scores": {"7": 0.6, "8": 0.3, "seven": 0.1},
         "reason": "close"},
        {"contains": "gibberish", "reply": "I cannot grade this."},   # verbatim reply
        {"contains": "no logprobs", "scores": {"4": 1.0}, "logprobs": false},
        {"contains": "parrot", "echo": "after"},  # the prompt copied into the reply: "only"
                                                  # (no verdict), "before" / "after" the
                                                  # verdict
        {"after_requests": 3, "reply": "later"}   # only from the server's 4th request on
      ],
      "default": {"scores": {"5": 1.0}},          # when no rule matches
      "faults": [                                 # applied before answering
        {"kind": "429", "first": 2},              # the first 2 requests get HTTP 429
        {"kind": "timeout", "contains": "slow", "sleep_seconds": 3}   # always, when matched
      ],
      "latency_ms": 50,                           # added to every request
      "require_api_key": "secret",                # optional: 401 unless this bearer key
      "refuse_logprobs": true,                    # optional: HTTP 400 to any request that
                                                  # asks for logprobs (after latency_ms;
                                                  # such a request gets no fault)
      "rate_limit": {"per_second": 5,             # optional: a steady limit; a request when
                     "retry_after": 2,            # `per_second` were let through in the
                     "as": "seconds"},            # last second gets HTTP 429 (counted, not
                                                  # let through) with Retry-After in seconds,
                                                  # "date" (HTTP date), "ms" (retry-after-ms)
                                                  # or "none" (no header)
      "die_after": 100, "die_with": "500",        # optional: from request 101 on, every
                                                  # request gets HTTP 500 (or "disconnect";
                                                  # "exit": request 101 ends the server's
                                                  # process, as a killed judge, see
                                                  # judge_server_process)
      "hold": {"in_flight": 32, "seconds": 10,    # optional: answer no request (but those
               "except_containing": "check"}      # containing the text) until 32 are in
    }                                             # flight or 10 s have passed since the
                                                  # first; /stats' "in_flight_at_release"
                                                  # says how many were (a client's
                                                  # concurrency, counted, not timed)

A fault may carry the same ``retry_after`` / ``as`` keys for its HTTP answer (a 429 or 503
that names its wait), ``"every": N`` (only every N-th matching request gets it: 2, every
other one), and ``"echo_key": true``: its error message then quotes the request's
``Authorization`` header ("Incorrect API key provided: Bearer sk-..."), as some servers do. ``GET /stats?timeline=1`` adds one entry per request: when it arrived
(``at``, ``time.time()``), its outcome and, for an answer naming a wait, the moment the
wait ends (``retry_until``).

An HTTP fault's error body has ``"code": <kind>`` unless the fault names a ``code`` (e.g.
``"insufficient_quota"``).

The reply is ``{"score": N, "reason": "..."}`` where N is the most probable integer in
``scores``; the score token's top logprobs are ``log(p)`` of every ``scores`` entry (with the
score token's leading space), so a weighted score can be computed by hand. Fault kinds:
``429``, ``500``, ``502``, ``503``, ``408``, ``409``, ``425``, ``400``, ``401``, ``403``, ``404`` (HTTP errors),
``timeout`` (sleep ``sleep_seconds`` then answer), ``malformed`` (HTTP 200, invalid JSON),
``redirect`` (HTTP 307 to the fault's ``location``),
``no_choices`` (HTTP 200, JSON without choices), ``disconnect`` (close without answering),
``unparseable`` (HTTP 200, a reply with no score in it).

In-process: ``with JudgeServer(script) as server: ... server.base_url ... server.stats()``.
As a process (for CLI end-to-end tests)::

    python -m tests.support.judge_server --port 0 --script FILE [--latency-ms 50]

prints one JSON line ``{"port": N, "base_url": "http://127.0.0.1:N/v1"}`` and serves until
terminated.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

HTTP_FAULTS = {"400", "401", "403", "404", "408", "409", "425", "429", "500", "502", "503"}
OTHER_FAULTS = {"timeout", "malformed", "no_choices", "disconnect", "unparseable", "redirect"}
_TOKEN = re.compile(r"\s*\d{1,3}|\s*[A-Za-z_]+|\s*[^\w\s]+|\s+")


@dataclass(frozen=True)
class ScoreRule:
    """What to answer when ``contains`` occurs in the prompt (None: every prompt)."""

    contains: str | None = None
    scores: dict[str, float] = field(default_factory=lambda: {"5": 1.0})
    reason: str = "scripted judgement"
    reply: str | None = None
    logprobs: bool = True
    echo: str | None = None  # "only" | "before" | "after": the prompt copied into the reply
    after_requests: int | None = None  # applies only once the server has had this many

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScoreRule:
        scores = {str(token): float(p) for token, p in data.get("scores", {"5": 1.0}).items()}
        if data.get("echo") not in (None, *ECHO_FORMS):
            raise ValueError(f"echo must be one of {ECHO_FORMS}, got {data.get('echo')!r}")
        return cls(contains=data.get("contains"), scores=scores,
                   reason=str(data.get("reason", "scripted judgement")),
                   reply=data.get("reply"), logprobs=bool(data.get("logprobs", True)),
                   echo=data.get("echo"),
                   after_requests=(None if data.get("after_requests") is None
                                   else int(data["after_requests"])))

    def text(self, prompt: str) -> str:
        """The reply: verbatim, or the verdict JSON, with the prompt copied where ``echo``
        says (a judge that repeats its instructions)."""
        verdict = self.reply if self.reply is not None else json.dumps(
            {"score": self.score(), "reason": self.reason})
        if self.echo == "only":
            return prompt
        if self.echo == "before":
            return f"{prompt}\n\n{verdict}"
        if self.echo == "after":
            return f"{verdict}\n\nYou asked:\n{prompt}"
        return verdict

    def score(self) -> int | None:
        integers = {int(t): p for t, p in self.scores.items() if t.strip().isdigit()}
        return max(integers, key=lambda value: integers[value]) if integers else None


RETRY_AFTER_FORMS = ("seconds", "date", "ms", "none")
ECHO_FORMS = ("only", "before", "after")


@dataclass(frozen=True)
class RetryAfter:
    """The wait an HTTP error answer names, and how its header writes it."""

    seconds: float | None = None
    form: str = "seconds"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RetryAfter:
        form = str(data.get("as", "seconds"))
        if form not in RETRY_AFTER_FORMS:
            raise ValueError(f"unknown Retry-After form {form!r}; use one of {RETRY_AFTER_FORMS}")
        seconds = data.get("retry_after")
        return cls(seconds=None if seconds is None else float(seconds), form=form)

    def headers(self, now: float) -> tuple[dict[str, str], float | None]:
        """The header(s) and the moment (``time.time()``) the wait ends; none without a wait."""
        if self.seconds is None or self.form == "none":
            return {}, None
        if self.form == "date":  # whole seconds, rounded up so the wait is at least `seconds`
            until = float(math.ceil(now + self.seconds))
            return {"Retry-After": formatdate(until, usegmt=True)}, until
        if self.form == "ms":
            return {"retry-after-ms": f"{self.seconds * 1000:g}"}, now + self.seconds
        return {"Retry-After": f"{self.seconds:g}"}, now + self.seconds


@dataclass(frozen=True)
class Fault:
    """A failure injected for the first ``first`` matching requests (None: always)."""

    kind: str
    first: int | None = None
    contains: str | None = None
    sleep_seconds: float = 5.0
    retry_after: RetryAfter = RetryAfter()
    code: str | None = None  # the error body's code (default: the kind)
    location: str = "http://127.0.0.1:9/v1/chat/completions"  # of a redirect
    echo_key: bool = False  # the error message quotes the request's Authorization header
    every: int | None = None  # only every n-th matching request (2: every other one)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fault:
        kind = str(data["kind"])
        if kind not in HTTP_FAULTS | OTHER_FAULTS:
            raise ValueError(f"unknown fault kind {kind!r}; use one of "
                             f"{sorted(HTTP_FAULTS | OTHER_FAULTS)}")
        first = data.get("first")
        return cls(kind=kind, first=None if first is None else int(first),
                   contains=data.get("contains"),
                   sleep_seconds=float(data.get("sleep_seconds", 5.0)),
                   retry_after=RetryAfter.from_dict(data), code=data.get("code"),
                   location=str(data.get("location", cls.location)),
                   echo_key=bool(data.get("echo_key", False)),
                   every=None if data.get("every") is None else int(data["every"]))


@dataclass(frozen=True)
class RateLimit:
    """At most ``per_second`` requests let through in any one-second window."""

    per_second: int
    retry_after: RetryAfter = RetryAfter()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RateLimit:
        return cls(per_second=int(data["per_second"]),
                   retry_after=RetryAfter.from_dict({"retry_after": 1, **data}))


@dataclass(frozen=True)
class Hold:
    """The first requests wait unanswered until ``in_flight`` are in flight (or ``seconds``
    have passed since the first arrived), requests containing ``except_containing`` apart."""

    in_flight: int
    seconds: float = 10.0
    except_containing: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Hold:
        return cls(in_flight=int(data["in_flight"]), seconds=float(data.get("seconds", 10.0)),
                   except_containing=data.get("except_containing"))


@dataclass(frozen=True)
class JudgeScript:
    rules: tuple[ScoreRule, ...] = ()
    default: ScoreRule = ScoreRule()
    faults: tuple[Fault, ...] = ()
    latency_ms: float = 0.0
    require_api_key: str | None = None
    refuse_logprobs: bool = False
    rate_limit: RateLimit | None = None
    die_after: int | None = None
    die_with: Fault = Fault("500")
    hold: Hold | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> JudgeScript:
        data = data or {}
        die_with = str(data.get("die_with", "500"))
        if die_with not in HTTP_FAULTS | {"disconnect", "exit"}:
            raise ValueError("die_with must be an HTTP status, 'disconnect' or 'exit' (the "
                             f"server's process ends), got {die_with!r}")
        return cls(
            rate_limit=(RateLimit.from_dict(data["rate_limit"]) if data.get("rate_limit")
                        else None),
            die_after=None if data.get("die_after") is None else int(data["die_after"]),
            die_with=Fault(die_with),
            rules=tuple(ScoreRule.from_dict(rule) for rule in data.get("rules", [])),
            default=ScoreRule.from_dict(data.get("default", {})),
            faults=tuple(Fault.from_dict(fault) for fault in data.get("faults", [])),
            latency_ms=float(data.get("latency_ms", 0.0)),
            require_api_key=data.get("require_api_key"),
            refuse_logprobs=bool(data.get("refuse_logprobs", False)),
            hold=Hold.from_dict(data["hold"]) if data.get("hold") else None,
        )

    def rule_for(self, prompt: str, number: int = 1) -> ScoreRule:
        """The first rule matching ``prompt`` as the server's ``number``-th request."""
        for rule in self.rules:
            if rule.after_requests is not None and number <= rule.after_requests:
                continue
            if rule.contains is None or rule.contains in prompt:
                return rule
        return self.default


class _State:
    """Script and counters shared by the handler threads."""

    def __init__(self, script: JudgeScript):
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)  # notified at every admitted request
        self.script = script
        self.reset()

    def reset(self) -> None:
        with self.lock:
            self.requests = 0
            self.outcomes: Counter[str] = Counter()
            self.fault_counts: Counter[int] = Counter()
            self.fault_seen: Counter[int] = Counter()  # matching requests, for "every"
            self.prompts: list[str] = []
            self.last_request: dict[str, Any] = {}
            self.in_flight = 0
            self.max_in_flight = 0
            self.timeline: list[dict[str, Any]] = []
            self.let_through: deque[float] = deque()  # arrival times, for the rate limit
            self.clients: set[Any] = set()  # client (host, port): one per TCP connection
            self.hold_deadline: float | None = None  # the script's hold, once started
            self.in_flight_at_release: int | None = None
            # a request still open when a test resets the server has its timeline entry in
            # the old timeline (finish)
            self.generation = getattr(self, "generation", 0) + 1

    def admit(self, body: dict[str, Any], prompt: str,
              client: Any = None) -> tuple[JudgeScript, Fault | None, tuple[int, int]]:
        """Count a request and decide which fault (if any) it gets; also its ticket: the
        counts' generation and its timeline index (see :meth:`finish`)."""
        with self.lock:
            now = time.time()
            self.requests += 1
            self.clients.add(client)
            self.prompts.append(prompt)
            self.timeline.append({"at": now, "outcome": None, "retry_until": None})
            ticket = (self.generation, len(self.timeline) - 1)
            self.last_request = {k: v for k, v in body.items() if k != "messages"}
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.arrived.notify_all()
            script = self.script
            if script.die_after is not None and self.requests > script.die_after:
                return script, script.die_with, ticket
            if script.rate_limit is not None:
                while self.let_through and self.let_through[0] <= now - 1.0:
                    self.let_through.popleft()
                if len(self.let_through) >= script.rate_limit.per_second:
                    return script, Fault("429", retry_after=script.rate_limit.retry_after), ticket
                self.let_through.append(now)
            if self.script.refuse_logprobs and body.get("logprobs"):
                return self.script, None, ticket  # refused: uses up no fault
            chosen = None
            for number, fault in enumerate(self.script.faults):
                if fault.contains is not None and fault.contains not in prompt:
                    continue
                if fault.first is not None and self.fault_counts[number] >= fault.first:
                    continue
                if fault.every is not None:
                    self.fault_seen[number] += 1
                    if self.fault_seen[number] % fault.every:
                        continue
                self.fault_counts[number] += 1
                chosen = fault
                break
            return self.script, chosen, (self.generation, len(self.timeline) - 1)

    def wait_for_release(self, hold: Hold, prompt: str) -> None:
        """The script's hold: wait while fewer than ``hold.in_flight`` requests are in flight
        and its time lasts; the first request to go records how many were."""
        if hold.except_containing is not None and hold.except_containing in prompt:
            return
        with self.lock:
            if self.in_flight_at_release is not None:
                return
            if self.hold_deadline is None:
                self.hold_deadline = time.time() + hold.seconds
            while self.in_flight < hold.in_flight and self.in_flight_at_release is None:
                remaining = self.hold_deadline - time.time()
                if remaining <= 0:
                    break
                self.arrived.wait(remaining)
            if self.in_flight_at_release is None:
                self.in_flight_at_release = self.in_flight
            self.arrived.notify_all()

    def finish(self, outcome: str, ticket: tuple[int, int],
               retry_until: float | None = None) -> None:
        """Record a request's outcome (counted even when the server was reset while it was
        open: tests wait for it); its timeline entry only if the timeline is still its own."""
        generation, position = ticket
        with self.lock:
            self.in_flight -= 1
            self.outcomes[outcome] += 1
            if generation == self.generation:
                self.timeline[position].update(outcome=outcome, retry_until=retry_until)

    def snapshot(self, with_prompts: bool = False, with_timeline: bool = False) -> dict[str, Any]:
        with self.lock:
            stats: dict[str, Any] = {
                "requests": self.requests,
                "outcomes": dict(self.outcomes),
                "max_in_flight": self.max_in_flight,
                "in_flight_at_release": self.in_flight_at_release,
                "connections": len(self.clients),
                "last_request": dict(self.last_request),
            }
            if with_prompts:
                stats["prompts"] = list(self.prompts)
            if with_timeline:
                stats["timeline"] = [dict(entry) for entry in self.timeline]
            return stats


def tokenize(text: str) -> list[str]:
    """Split a reply into tokens (digits 1-3 at a time, as OpenAI's tokenizers do)."""
    tokens = _TOKEN.findall(text)
    assert "".join(tokens) == text
    return tokens


def completion_body(rule: ScoreRule, model: str, want_logprobs: bool, top_n: int,
                    number: int, prompt: str = "") -> dict[str, Any]:
    """The chat-completion JSON for one scripted judgement."""
    score = rule.score()
    text = rule.text(prompt)
    choice: dict[str, Any] = {
        "index": 0, "message": {"role": "assistant", "content": text},
        "finish_reason": "stop", "logprobs": None,
    }
    tokens = tokenize(text)
    if want_logprobs and rule.logprobs:
        choice["logprobs"] = {"content": _token_logprobs(tokens, rule, score, top_n)}
    return {
        "id": f"chatcmpl-loopback-{number}", "object": "chat.completion",
        "created": int(time.time()), "model": model, "choices": [choice],
        "usage": {"prompt_tokens": 10, "completion_tokens": len(tokens),
                  "total_tokens": 10 + len(tokens)},
    }


def _token_logprobs(tokens: list[str], rule: ScoreRule, score: int | None,
                    top_n: int) -> list[dict[str, Any]]:
    entries = []
    score_token_seen = False
    for token in tokens:
        alternatives = [(token, 0.0)]
        if (rule.reply is None and not score_token_seen and score is not None
                and token.strip() == str(score)):
            score_token_seen = True
            lead = token[: len(token) - len(token.lstrip())]
            alternatives = sorted(
                ((lead + key, math.log(p)) for key, p in rule.scores.items() if p > 0),
                key=lambda pair: -pair[1],
            )
        chosen_logprob = dict(alternatives).get(token, 0.0)
        entries.append({
            "token": token, "logprob": chosen_logprob, "bytes": list(token.encode()),
            "top_logprobs": [
                {"token": alt, "logprob": lp, "bytes": list(alt.encode())}
                for alt, lp in alternatives[:top_n]
            ],
        })
    return entries


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body are separate small writes: without this, Nagle's algorithm and
        # the client's delayed ACK add ~40 ms to every response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/stats":
            query = parse_qs(url.query)
            with_prompts = query.get("prompts", ["0"])[0] not in {"0", ""}
            with_timeline = query.get("timeline", ["0"])[0] not in {"0", ""}
            self._json(200, self.server.state.snapshot(with_prompts, with_timeline))
        elif url.path.rstrip("/") in {"/v1/models", "/models"}:
            self._json(200, {"object": "list", "data": [
                {"id": "loopback-judge", "object": "model", "created": 0, "owned_by": "test"}]})
        else:
            self._json(404, {"error": {"message": f"no route {url.path}"}})

    def do_POST(self) -> None:
        path = urlparse(self.path).path.rstrip("/")
        body = self._read_json()
        if path == "/reset":
            self.server.state.reset()
            self._json(200, {"ok": True})
        elif path == "/script":
            script = JudgeScript.from_dict(body)
            with self.server.state.lock:
                self.server.state.script = script
            self._json(200, {"ok": True})
        elif path in {"/v1/chat/completions", "/chat/completions"}:
            self._chat_completion(body or {})
        else:
            self._json(404, {"error": {"message": f"no route {path}"}})

    def _chat_completion(self, body: dict[str, Any]) -> None:
        state = self.server.state
        prompt = _last_user_text(body.get("messages", []))
        script, fault, ticket = state.admit(body, prompt, self.client_address)
        outcome = "ok"
        retry_until = None
        settled = False

        def settle() -> None:
            # The outcome is recorded before the answer's first byte: a client that has its
            # answer finds it in /stats.
            nonlocal settled
            if not settled:
                settled = True
                state.finish(outcome, ticket, retry_until)

        self._before_answer = settle
        try:
            if script.hold is not None:
                state.wait_for_release(script.hold, prompt)
            if script.latency_ms:
                time.sleep(script.latency_ms / 1000)
            if script.require_api_key is not None and (
                self.headers.get("Authorization") != f"Bearer {script.require_api_key}"
            ):
                outcome = "401"
                self._json(401, _error("Incorrect API key provided.", "invalid_api_key"))
                return
            if script.refuse_logprobs and body.get("logprobs"):
                outcome = "refused-logprobs"
                self._json(400, _error("logprobs is not supported by this model",
                                       "invalid_request_error"))
                return
            if fault is not None:
                outcome = fault.kind
                if fault.kind in HTTP_FAULTS:
                    headers, retry_until = fault.retry_after.headers(time.time())
                    message = (f"Incorrect API key provided: {self.headers.get('Authorization')}"
                               if fault.echo_key else f"injected HTTP {fault.kind}")
                    self._json(int(fault.kind), _error(message, fault.code or fault.kind),
                               headers)
                    return
                if fault.kind == "redirect":
                    self._json(307, _error("moved", "redirect"), {"Location": fault.location})
                    return
                if fault.kind == "malformed":
                    self._raw(200, b'{"id": "chatcmpl-broken", "choices": [{"mess', "application/json")
                    return
                if fault.kind == "no_choices":
                    self._json(200, {"id": "chatcmpl-empty", "object": "chat.completion",
                                     "created": 0, "model": body.get("model", ""),
                                     "choices": []})
                    return
                if fault.kind == "exit":  # the process dies: its port refuses connections
                    os._exit(0)
                if fault.kind == "disconnect":
                    self.close_connection = True
                    settle()
                    self.connection.shutdown(2)
                    return
                if fault.kind == "timeout":
                    time.sleep(fault.sleep_seconds)
            rule = script.rule_for(prompt, ticket[1] + 1)
            if fault is not None and fault.kind == "unparseable":
                rule = ScoreRule(reply="I would rather not give a number here.")
            top_n = int(body.get("top_logprobs") or 0)
            payload = completion_body(rule, body.get("model", ""), bool(body.get("logprobs")),
                                      top_n, state.requests, prompt)
            if body.get("stream"):
                self._stream(payload)
            else:
                self._json(200, payload)
        except (BrokenPipeError, ConnectionResetError, OSError):
            outcome = f"{outcome}-client-gone"
        finally:
            self._before_answer = None
            settle()

    def _stream(self, payload: dict[str, Any]) -> None:
        """Server-sent events: one chunk per token (with its logprobs), then usage and [DONE]."""
        choice = payload["choices"][0]
        text = choice["message"]["content"]
        logprob_entries = (choice["logprobs"] or {}).get("content")
        tokens = [entry["token"] for entry in logprob_entries] if logprob_entries else [text]
        chunks = []
        for index, token in enumerate(tokens):
            delta_choice: dict[str, Any] = {"index": 0, "delta": {"content": token},
                                            "finish_reason": None}
            if index == 0:
                delta_choice["delta"]["role"] = "assistant"
            if logprob_entries:
                delta_choice["logprobs"] = {"content": [logprob_entries[index]]}
            chunks.append({"id": payload["id"], "object": "chat.completion.chunk",
                           "created": payload["created"], "model": payload["model"],
                           "choices": [delta_choice]})
        chunks.append({"id": payload["id"], "object": "chat.completion.chunk",
                       "created": payload["created"], "model": payload["model"],
                       "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                       "usage": payload["usage"]})
        data = b"".join(f"data: {json.dumps(chunk)}\n\n".encode() for chunk in chunks)
        self._raw(200, data + b"data: [DONE]\n\n", "text/event-stream")

    def _read_json(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return None

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        self._raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _raw(self, status: int, data: bytes, content_type: str,
             headers: dict[str, str] | None = None) -> None:
        before_answer = getattr(self, "_before_answer", None)
        if before_answer is not None:
            before_answer()
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "loopback_error", "code": code, "param": None}}


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):  # content parts
                return "".join(part.get("text", "") for part in content if isinstance(part, dict))
            return str(content or "")
    return ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], state: _State):
        super().__init__(address, _Handler)
        self.state = state


class JudgeServer:
    """The loopback server on a background thread; use as a context manager."""

    def __init__(self, script: JudgeScript | dict[str, Any] | None = None,
                 host: str = "127.0.0.1", port: int = 0):
        if not isinstance(script, JudgeScript):
            script = JudgeScript.from_dict(script)
        self.state = _State(script)
        self._server = _Server((host, port), self.state)
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> JudgeServer:
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True,
                                        name=f"judge-server-{self.port}")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def stats(self, with_prompts: bool = False, with_timeline: bool = False) -> dict[str, Any]:
        return self.state.snapshot(with_prompts, with_timeline)

    def reset(self) -> None:
        self.state.reset()

    def set_script(self, script: JudgeScript | dict[str, Any]) -> None:
        if not isinstance(script, JudgeScript):
            script = JudgeScript.from_dict(script)
        with self.state.lock:
            self.state.script = script

    def __enter__(self) -> JudgeServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@contextlib.contextmanager
def judge_server_process(script: dict[str, Any], latency_ms: float | None = None
                         ) -> Iterator[str]:
    """This server in a process of its own (so its CPU is not the client's, as benchmarks
    measure it); yields its base URL and stops it on exit."""
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "script.json"
        path.write_text(json.dumps(script))
        command = [sys.executable, "-m", "tests.support.judge_server", "--port", "0",
                   "--script", str(path)]
        if latency_ms is not None:
            command += ["--latency-ms", str(latency_ms)]
        server = subprocess.Popen(command, cwd=Path(__file__).resolve().parents[2],
                                  stdout=subprocess.PIPE, text=True)
        try:
            yield json.loads(server.stdout.readline())["base_url"]
        finally:
            server.terminate()
            server.wait(10)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--script", type=Path, help="JSON script (see module docstring)")
    parser.add_argument("--latency-ms", type=float, help="override the script's latency_ms")
    args = parser.parse_args(argv)
    data = json.loads(args.script.read_text()) if args.script else {}
    if args.latency_ms is not None:
        data["latency_ms"] = args.latency_ms
    server = JudgeServer(data, host=args.host, port=args.port)
    print(json.dumps({"port": server.port, "base_url": server.base_url}), flush=True)
    try:
        server._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server._server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
