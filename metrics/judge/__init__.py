"""The LLM judge (G-Eval) shared by lm-eval, Inspect and ``condambig-score``.

``render_prompt`` builds the G-Eval prompt, a backend sends it (``openai_judge_engine`` for
any OpenAI-compatible endpoint; ``condambig.judge_backend`` for Inspect's grader role), and
:class:`JudgeEngine` adds the cache, bounded concurrency, retries and failure accounting.
A failed judgement has ``score=None``: leave it out of means (``JudgeEngine.stats`` counts it).
"""

from condambig_metrics.judge.cache import JudgeCache, cache_key
from condambig_metrics.judge.engine import JudgeEngine, record_judgements
from condambig_metrics.judge.errors import (
    JudgeError,
    LogprobsRefusedError,
    PermanentJudgeError,
    RateLimitedError,
    TransientJudgeError,
    UnparseableReplyError,
)
from condambig_metrics.judge.openai_backend import OpenAIJudgeBackend, openai_judge_engine
from condambig_metrics.judge.prompt import render_prompt
from condambig_metrics.judge.records import (
    DEFAULT_BASE_URL,
    DEFAULT_JUDGE_WEIGHTING,
    JUDGE_WEIGHTINGS,
    WEIGHTING_CONDAMBIG,
    WEIGHTING_DEEPEVAL,
    JudgeBackend,
    JudgeCompletion,
    JudgeConfig,
    JudgeCriterion,
    JudgeRequest,
    JudgeResult,
    JudgeStats,
    JudgeWeighting,
    TokenLogprobs,
    normalized_base_url,
)
from condambig_metrics.judge.scoring import (
    deepeval_weighted_score,
    judge_reply,
    parse_reply,
    token_logprobs,
)

__all__ = [
    "record_judgements",
    "DEFAULT_BASE_URL",
    "DEFAULT_JUDGE_WEIGHTING",
    "JUDGE_WEIGHTINGS",
    "JudgeWeighting",
    "WEIGHTING_CONDAMBIG",
    "WEIGHTING_DEEPEVAL",
    "JudgeBackend",
    "JudgeCache",
    "JudgeCompletion",
    "JudgeConfig",
    "JudgeCriterion",
    "JudgeEngine",
    "JudgeError",
    "JudgeRequest",
    "JudgeResult",
    "JudgeStats",
    "LogprobsRefusedError",
    "OpenAIJudgeBackend",
    "PermanentJudgeError",
    "RateLimitedError",
    "TokenLogprobs",
    "TransientJudgeError",
    "UnparseableReplyError",
    "cache_key",
    "deepeval_weighted_score",
    "judge_reply",
    "normalized_base_url",
    "openai_judge_engine",
    "parse_reply",
    "render_prompt",
    "token_logprobs",
]
