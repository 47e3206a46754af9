"""Which judge ``condambig-score`` uses, and what it says about the judge a logged run used.

The judge is the one the user names: ``--judge-model`` / ``--judge-base-url`` /
``--judge-max-failed`` flags over the ``CONDAMBIG_JUDGE_*`` variables. A run read with
``--from-log`` only *tells* which judge it used (model and endpoint): the API key from the
environment goes only to an endpoint the user gave, never to one written in a log, and a log
never chooses the cache file. When the run was judged and this rescoring is not (or is
judged by another model or endpoint), one line says so and gives the flags that judge it
the way the run did.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass
from typing import Any

from condambig_tasks import settings

# condambig-score flag -> lm-eval --metadata key / JudgeConfig field it sets
JUDGE_FLAGS = {"judge_model": "--judge-model", "judge_base_url": "--judge-base-url",
               "judge_max_failed": "--judge-max-failed"}
KEY_VARIABLES = f"{settings.JUDGE_API_KEY_VARIABLE} or OPENAI_API_KEY"


@dataclass(frozen=True)
class LoggedJudge:
    """The judge a logged run used: its model and endpoint (None: api.openai.com)."""

    model: str
    base_url: str | None

    def flags(self) -> str:
        words = ["--judge-model", self.model]
        if self.base_url:
            words += ["--judge-base-url", self.base_url]
        return shlex.join(words)


def add_judge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--judge-model", help="judge model (else $CONDAMBIG_JUDGE_MODEL); "
                        "without one the judge metrics are not reported")
    parser.add_argument("--judge-base-url", help="OpenAI-compatible endpoint, e.g. vLLM "
                        "(else $CONDAMBIG_JUDGE_BASE_URL; default api.openai.com)")
    parser.add_argument("--judge-max-failed", type=int, metavar="N",
                        help="judgements that may fail before the judged metrics are withheld "
                             "(else $CONDAMBIG_JUDGE_MAX_FAILED; default 0)")


def logged_judge(judge_settings: dict[str, Any] | None,
                 provenance: dict[str, Any] | None) -> LoggedJudge | None:
    """The judge an lm-eval run recorded: its ``judge_*`` doc settings, else its provenance
    block (``judge``, ``judge_base_url``); None when the run was not judged."""
    judge_settings = judge_settings if isinstance(judge_settings, dict) else {}
    provenance = provenance if isinstance(provenance, dict) else {}
    model = judge_settings.get("judge_model") or provenance.get("judge")
    if not isinstance(model, str) or not model.strip():
        return None
    base_url = judge_settings.get("judge_base_url") or provenance.get("judge_base_url")
    return LoggedJudge(model.strip(), base_url.strip() if isinstance(base_url, str) and
                       base_url.strip() else None)


def logged_judge_notice(benchmark: str, run: LoggedJudge | None, config: Any,
                        command: list[str]) -> str | None:
    """One line when the logged run's judge is not the one this rescoring uses."""
    if run is None:
        return None
    again = shlex.join(["condambig-score", *command]) + " " + run.flags()
    where = describe(run)
    if config is None:
        return (f"the run was judged by {where}; no judge is configured here, so the judged "
                f"metrics are not reported and pairs are matched without it. To judge as the "
                f"run did (the key comes from {KEY_VARIABLES}): {again}")
    if describe(config) == where:
        return None
    return (f"the run was judged by {where}; re-judging with {describe(config)}. To judge "
            f"as the run did: {again}")


def describe(config: Any) -> str:
    """``<model> at <endpoint>`` of a judge configuration or a :class:`LoggedJudge`."""
    from condambig_metrics.judge import normalized_base_url

    return f"{config.model} at {normalized_base_url(config.base_url)}"


def what_to_set() -> Any:
    """The judge settings as ``condambig-score`` spells them, for a failed check's advice."""
    from condambig_metrics.judge.preflight import JudgeSettings

    return JudgeSettings(
        base_url=f"--judge-base-url / {settings.JUDGE_BASE_URL_VARIABLE} (ends in /v1)",
        model=f"--judge-model / {settings.JUDGE_MODEL_VARIABLE}", key=KEY_VARIABLES)
