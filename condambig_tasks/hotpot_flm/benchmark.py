"""HotpotQA-FLM as a condambig benchmark: options, items, prompt, the agent pipeline, metrics.

Toles et al., *Learning and Evaluating Factual Clarification Question Generation Without
Examples* (code and human test set: github.com/mtoles/qq). The model under evaluation
sees a HotpotQA question whose context lacks one supporting fact and asks one clarifying
question (prompt 3); an answering agent answers it with one fact of the example; a
downstream model answers the original question on the incomplete context, on the context
plus the returned fact and on the complete context. Scores are HotpotQA's answer F1 / EM
per context (and the authors' raw-string EM), and the corpus recovery, MFRR and improved
rate (§4.2). The defaults reproduce the authors' code: float32 agents, downstream answers
cut as their ``T5_PM`` cuts them, candidates scored in their order (ties to the masked fact);
one departure: a downstream answer is its first line, stripped (the same string as theirs
under flan-t5's tokenizer; the task README gives the counts for a byte-level one).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from condambig_metrics.hotpot_flm import ANSWER_METRICS, ROW_KEYS, TIE_TOLERANCE, summarise
from condambig_tasks import settings
from condambig_tasks.benchmark import (
    CORPUS,
    Benchmark,
    Catalogue,
    MetricSpec,
    Paper,
    PredictionFiles,
    Runtime,
    ScoredSample,
    Variant,
    finite_number,
)
from condambig_tasks.errors import ConfigurationError
from condambig_tasks.hotpot_flm import annotated, hotpotqa_source
from condambig_tasks.hotpot_flm.agents import (
    AGENT_ASSET,
    AnsweringAgent,
    DownstreamModel,
    LocalAgents,
    checkpoint_name,
)
from condambig_tasks.hotpot_flm.cache import AnswerCache, NoCache, ScoreCache
from condambig_tasks.hotpot_flm.hf_models import (
    AGENT_VARIABLES,
    DEFAULT_DTYPE,
    AgentLoadError,
    CheckpointSpec,
    Dtype,
    check_checkpoint_available,
)
from condambig_tasks.hotpot_flm.loader import Split, load_examples
from condambig_tasks.hotpot_flm.masking import DEFAULT_MASK_SEED
from condambig_tasks.hotpot_flm.pipeline import ExampleOutcome, in_worker_thread, run_pipeline
from condambig_tasks.hotpot_flm.prompts import QuestionPrompt, clean_question, question_prompt
from condambig_tasks.hotpot_flm.questions import (
    BASELINES,
    QUESTION_FILE_FORMAT,
    human_question,
    read_question_entries,
    repeater_question,
)
from condambig_tasks.hotpot_flm.records import AskedQuestion, FlmExample
from condambig_tasks.hotpot_flm.roles import (
    ANSWERER_ROLE,
    DOWNSTREAM_ROLE,
    RoleAnsweringAgent,
    RoleDownstream,
    bound_model,
)
from condambig_tasks.options import option_specs

if TYPE_CHECKING:
    import numpy as np

    from condambig_tasks.uncertainty import CorpusStatistics

logger = logging.getLogger(__name__)

# The authors' downstream model (T5_PM in github.com/mtoles/qq) generates at most 10 new
# tokens and then cuts the last one: answers keep at most 9 tokens.
DEFAULT_DOWNSTREAM_MAX_NEW_TOKENS = 10
# HotpotQA distractor validation (the full split's source) and the annotated test rows.
FULL_SPLIT_SIZE = 7_405
TEST_SPLIT_SIZE = 400
DEFAULT_AGENT_BATCH_SIZE = 32
# the model under evaluation asks one question; lm-eval's max_gen_toks is the same
MAX_TOKENS = 256
_CHECKPOINT_HELP = ("seq2seq or causal checkpoint, hub name or path (unset: ${variable}, "
                    "else the Inspect role {role} when bound, else google/flan-t5-base)")


@dataclass(frozen=True)
class FlmOptions:
    """Everything that configures a run. Unset checkpoints (None) are the bound Inspect
    role, else the paper's ``google/flan-t5-base``; ``CONDAMBIG_FLM_*`` variables fill what
    is not given explicitly (field metadata ``environment``; see :meth:`HotpotFLM.options`).
    Allowed values are the types' (:mod:`condambig_tasks.options`)."""

    split: Split = field(default=Split.FULL, metadata={
        "help": "full: HotpotQA distractor validation; test: the 400 annotated rows"})
    answering_agent: str | None = field(default=None, metadata={
        "help": _CHECKPOINT_HELP.format(variable=AGENT_VARIABLES["answering_agent"],
                                        role=ANSWERER_ROLE),
        "environment": AGENT_VARIABLES["answering_agent"]})
    downstream_model: str | None = field(default=None, metadata={
        "help": _CHECKPOINT_HELP.format(variable=AGENT_VARIABLES["downstream_model"],
                                        role=DOWNSTREAM_ROLE),
        "environment": AGENT_VARIABLES["downstream_model"]})
    agent_device: str = field(default="auto", metadata={
        "help": "device of local agents: auto, cpu, cuda, cuda:N, mps", "cli": ("--device",),
        "environment": "CONDAMBIG_FLM_DEVICE"})
    agent_dtype: Dtype = field(default=DEFAULT_DTYPE, metadata={
        "help": "dtype of local agents (float32: the paper's; auto: bfloat16 on CUDA devices "
                "that support it)", "cli": ("--dtype",),
        "environment": "CONDAMBIG_FLM_DTYPE"})
    agent_batch_size: int = field(default=DEFAULT_AGENT_BATCH_SIZE, metadata={
        "help": "batch size of local agents", "cli": ("--batch-size",),
        "environment": "CONDAMBIG_FLM_BATCH_SIZE"})
    downstream_max_new_tokens: int = field(default=DEFAULT_DOWNSTREAM_MAX_NEW_TOKENS, metadata={
        "help": "max_new_tokens of the downstream model's greedy generation"})
    downstream_cut_last_token: bool = field(default=True, metadata={
        "help": "drop the last generated token of each downstream answer, as the authors' "
                "code does (10 new tokens keep at most 9)"})
    question_prompt: QuestionPrompt = field(default="default", metadata={
        "help": "C's prompt 3 layout: default (one text, as sent to GPT-4o) or llama3_chat "
                "(the authors' Llama 3 instruction layout, with its system message)"})
    downstream_cache: bool = field(default=True, metadata={
        "help": "read and write the agent cache (downstream answers and candidate scores, "
                "stored batch by batch: an interrupted run resumes)", "cli": ("--cache",),
        "environment": "CONDAMBIG_FLM_CACHE"})
    mask_seed: int = field(default=DEFAULT_MASK_SEED, metadata={
        "help": "masking seed of the full split"})

    def __post_init__(self) -> None:
        # the ranges a type cannot say
        if self.agent_batch_size < 1 or self.downstream_max_new_tokens < 1:
            raise ConfigurationError(
                "agent_batch_size and downstream_max_new_tokens must be >= 1")
        if self.downstream_cut_last_token and self.downstream_max_new_tokens < 2:
            raise ConfigurationError(
                "downstream_max_new_tokens must be >= 2 when downstream_cut_last_token is on "
                "(the last of the tokens is cut)")

    @property
    def cache_path(self) -> Path:
        return settings.cache_dir() / "hotpot_flm" / "downstream_answers.sqlite"

    @property
    def answering_checkpoint(self) -> str:
        return checkpoint_name(self.answering_agent)

    @property
    def downstream_checkpoint(self) -> str:
        return checkpoint_name(self.downstream_model)


_ANSWER_METRIC_NAMES = {
    "f1": "HotpotQA answer F1",
    "em": "HotpotQA answer EM (normalised strings equal)",
    "em_raw": "the authors' EM (raw strings equal, no normalisation)",
}


def _rate(samples: Sequence[ScoredSample], key: str) -> float | None:
    values = [float(v) for s in samples if (v := s.values.get(key)) is not None]
    return sum(values) / len(values) if values else None


# the baselines condambig-score scores by name (--outputs repeater): item -> question
_BASELINES = {name: {"repeater": repeater_question, "human": human_question}[name]
              for name in BASELINES}


def _read_predictions(raw: Any, source: str,
                      options: FlmOptions) -> dict[str, AskedQuestion] | None:
    return read_question_entries(raw, source)


class HotpotFLM(Benchmark[FlmOptions, FlmExample]):
    """HotpotQA-FLM: a clarifying question is scored by the answer quality it recovers."""

    name = "hotpot_flm"
    title = "HotpotQA-FLM"
    catalogue = Catalogue(
        paper=Paper("Learning and Evaluating Factual Clarification Question Generation Without "
                    "Examples", ("Matthew Toles", "Yukun Huang", "Zhou Yu"), 2023,
                    arxiv="2310.11571"),
        description=(
            "A multi-hop HotpotQA question whose context lacks one supporting fact: the model asks "
            "one clarifying question, an answering agent (google/flan-t5-base) answers it with one "
            "fact, and a downstream model (google/flan-t5-base) answers the original question with "
            "and without that fact. The headline, F1 recovery, is the share of the F1 lost by "
            "masking that the asked question wins back."),
        tags=("clarification-questions", "multi-hop", "question-answering", "agents"),
        category="Reasoning",
        assets=(hotpotqa_source.ASSET, annotated.ASSET, AGENT_ASSET),
        data_folders=("hotpotqa", "hotpot_flm"),
    )
    version = "4-A"
    variants = (
        Variant("hotpot_flm", "the full HotpotQA distractor validation set (7,404 examples, "
                "§5.1)", {"split": "full"}),
        Variant("hotpot_flm_test", "the 400-example test set with human questions (Figure 3)",
                {"split": "test"}),
    )
    options_type = FlmOptions
    prediction_files = PredictionFiles(
        aliases=("--questions",),
        format=f"{QUESTION_FILE_FORMAT}; or a baseline: {', '.join(BASELINES)}",
        read=_read_predictions, named=_BASELINES)
    headline_metrics = ("f1_recovery",)
    metric_specs = (
        MetricSpec("f1_recovery", "100·(F1(x_r) − F1(x_i)) / (F1(x_c) − F1(x_i)) on the "
                   "dataset means, percent (headline)", CORPUS, scale=100.0, plot=True),
        MetricSpec("em_recovery", "the same recovery for HotpotQA's normalised exact "
                   "match, percent", CORPUS, scale=100.0),
        MetricSpec("em_raw_recovery", "the same recovery for the authors' raw-string exact "
                   "match (the EM of Toles et al.'s tables), percent", CORPUS, scale=100.0),
        *(MetricSpec(f"{metric}_{context}", f"{_ANSWER_METRIC_NAMES[metric]} of the "
                     f"downstream answer on the {context} context")
          for metric in ("f1", "em", "em_raw")
          for context in ("incomplete", "response", "complete")),
        MetricSpec("mfrr", "share of examples where the answering agent returned the masked "
                   "fact", CORPUS),
        MetricSpec("improved_rate", "share of examples with F1(x_r) > F1(x_i)", CORPUS),
        MetricSpec("agent_fallback_rate", "share of generative answering-agent replies with "
                   "no valid number (a random candidate was returned)", CORPUS, False),
        MetricSpec("empty_question_rate", "share of outputs with no question left after "
                   "cleaning", higher_is_better=False),
    )

    def __init__(self) -> None:
        self._local: dict[tuple[Any, ...], LocalAgents] = {}
        self._local_lock = threading.Lock()

    # ------------------------------------------------------------------ options
    def options(self, values: Mapping[str, Any] | None = None, *,
                strict: bool = True) -> FlmOptions:
        """Explicit values over the ``CONDAMBIG_FLM_*`` variables (each option's field
        metadata ``environment``) over the defaults; an empty value counts as unset."""
        explicit = {key: value for key, value in (values or {}).items()
                    if value is not None and not (isinstance(value, str) and not value.strip())}
        environment = {}
        for spec in option_specs(FlmOptions):
            value = settings.environment_value(spec.environment) if spec.environment else None
            if value is not None:
                environment[spec.name] = value
        return super().options({**environment, **explicit}, strict=strict)

    # ------------------------------------------------------------------ items
    def load(self, options: FlmOptions) -> list[FlmExample]:
        return load_examples(options.split, options.mask_seed)

    def prompt(self, item: FlmExample, options: FlmOptions) -> str:
        return question_prompt(item, options.question_prompt)

    def target(self, item: FlmExample, options: FlmOptions) -> str:
        return item.answer

    def to_record(self, item: FlmExample) -> dict[str, Any]:
        return item.to_dict()

    def from_record(self, record: Mapping[str, Any]) -> FlmExample:
        return FlmExample.from_dict(dict(record))

    def max_tokens(self, options: FlmOptions) -> int:
        return MAX_TOKENS

    def models(self, options: FlmOptions,
               roles: Mapping[str, Any] | None = None) -> dict[str, str]:
        """The agents: a local checkpoint, or the Inspect role that replaces it (a role
        bound to a model is used unless the option names a checkpoint, as in ``prepare``)."""
        models = {"agent_dtype": options.agent_dtype}
        for option, role in (("answering_agent", ANSWERER_ROLE),
                             ("downstream_model", DOWNSTREAM_ROLE)):
            explicit = getattr(options, option)
            bound = bound_model(roles or {}, role)
            models[option] = (f"role {role}: {bound}" if explicit is None and bound is not None
                              else checkpoint_name(explicit))
        return models

    def prepare(self, options: FlmOptions, runtime: Runtime) -> None:
        """The local checkpoints must be found before the evaluated model generates (the
        agents run only afterwards); a checkpoint a bound Inspect role replaces is not.
        Both agents are checked: one error names each missing one, a line each."""
        bound = {name for name in (ANSWERER_ROLE, DOWNSTREAM_ROLE)
                 if bound_model(runtime.roles, name) is not None}
        missing: list[AgentLoadError] = []
        for option, role, inspect_role in (
                ("answering_agent", "answering agent", ANSWERER_ROLE),
                ("downstream_model", "downstream model", DOWNSTREAM_ROLE)):
            explicit = getattr(options, option)
            if explicit is None and inspect_role in bound:
                continue
            logger.info("hotpot_flm: %s %s (device %s, dtype %s)", role,
                        checkpoint_name(explicit), options.agent_device, options.agent_dtype)
            try:
                check_checkpoint_available(
                    CheckpointSpec(checkpoint_name(explicit), options.agent_device,
                                   options.agent_dtype), role, option)
            except AgentLoadError as error:
                missing.append(error)
        if len(missing) == 1:
            raise missing[0]
        if missing:
            raise AgentLoadError("\n".join(map(str, missing)))

    # ------------------------------------------------------------------ scoring
    def needs_corpus_step(self, options: FlmOptions, judged: bool) -> bool:
        return True  # every question goes through the answering agent and downstream model

    def score(self, item: FlmExample, output: Any, options: FlmOptions) -> ScoredSample:
        """One example's pipeline outcome (from :meth:`score_batch`) as its sample."""
        if not isinstance(output, ExampleOutcome):
            raise ConfigurationError(
                "hotpot_flm: a question is scored through the answering agent and the "
                "downstream model; call score_batch with the raw outputs.")
        answers = output.answers
        values: dict[str, float | None] = {
            **output.row,
            "agent_fallback_rate": float(not output.choice_valid),
            "empty_question_rate": float(not output.question_asked),
        }
        details = {
            "question_asked": output.question_asked, "returned_fact": output.returned_fact,
            "masked_fact": output.masked_fact,
            "masked_fact_returned": bool(output.row["masked_fact_returned"]),
            "agent_answered_validly": output.choice_valid,
            **{f"answer_{context}": answer for context, answer in answers.items()},
            "gold_answer": output.gold_answer, "answering_agent": output.answering_agent,
            "downstream_model": output.downstream_model,
            "answers_computed": list(output.computed),
        }
        explanation = (
            f"Asked: {output.question_asked!r}\nReturned: {output.returned_fact}\n"
            f"Masked: {output.masked_fact}\nAnswers (incomplete / response / complete): "
            f"{answers['incomplete']!r} / {answers['response']!r} / {answers['complete']!r}; "
            f"gold {output.gold_answer!r}")
        return ScoredSample(id=item.id, values=values, details=details,
                            explanation=explanation)

    async def score_batch(
        self, batch: Sequence[tuple[FlmExample, Any]], options: FlmOptions, runtime: Runtime,
    ) -> list[ScoredSample]:
        """The answering agent and the downstream model on every output of ``batch`` at once
        (local checkpoints batched; Inspect roles when bound and no checkpoint is set)."""
        questions = {item.id: _asked(output) for item, output in batch}
        agent, downstream = await self._agents(options, runtime.roles)
        cache = await in_worker_thread(self._answer_cache, options, downstream)
        scores = await in_worker_thread(self._score_cache, options, agent)
        run = await run_pipeline([item for item, _ in batch], questions, agent, downstream,
                                 cache, scores)
        outcomes = {outcome.id: outcome for outcome in run.outcomes}
        return [self.score(item, outcomes[item.id], options) for item, _ in batch]

    async def _agents(self, options: FlmOptions,
                      roles: Mapping[str, Any]) -> tuple[AnsweringAgent, DownstreamModel]:
        """Explicit (or environment) checkpoints win over bound roles."""
        answerer = None if options.answering_agent else bound_model(roles, ANSWERER_ROLE)
        role_downstream = None if options.downstream_model else bound_model(roles,
                                                                             DOWNSTREAM_ROLE)
        local = self._local_agents(options)
        agent: AnsweringAgent = (RoleAnsweringAgent(answerer) if answerer is not None
                                 else await in_worker_thread(local.answering_agent))
        downstream: DownstreamModel = (RoleDownstream(role_downstream)
                                       if role_downstream is not None
                                       else await in_worker_thread(local.downstream))
        return agent, downstream

    def _local_agents(self, options: FlmOptions) -> LocalAgents:
        """One set of local agents per checkpoint setup, loaded once per process."""
        key = (options.answering_checkpoint, options.downstream_checkpoint,
               options.agent_device, options.agent_dtype, options.agent_batch_size,
               options.downstream_max_new_tokens, options.downstream_cut_last_token)
        with self._local_lock:
            if key not in self._local:
                self._local[key] = LocalAgents(options)
            return self._local[key]

    @staticmethod
    def _answer_cache(options: FlmOptions, downstream: DownstreamModel) -> AnswerCache | NoCache:
        if not options.downstream_cache:
            return NoCache()
        return AnswerCache(options.cache_path, downstream.identity, downstream.decoding)

    @staticmethod
    def _score_cache(options: FlmOptions, agent: AnsweringAgent) -> ScoreCache | NoCache:
        """The candidate scores of an agent that scores candidates one by one (the paper's
        P(yes) agent), in the same file as the downstream answers."""
        if not options.downstream_cache or not hasattr(agent, "scoring_prompts"):
            return NoCache()
        return ScoreCache(options.cache_path, agent.identity, agent.rule)

    def metric_values(self, samples: Sequence[ScoredSample], options: FlmOptions,
                      judged: bool) -> dict[str, float | None]:
        """Means per context, recovery of the means, MFRR and improved rate (Toles et al.
        §4.2, :func:`condambig_metrics.hotpot_flm.summarise`) and the two diagnostic rates."""
        rows = [s.values for s in samples
                if all(s.values.get(key) is not None for key in ROW_KEYS)]
        corpus: dict[str, Any] = dict(summarise(rows)) if rows else {}
        corpus["agent_fallback_rate"] = _rate(samples, "agent_fallback_rate")
        corpus["empty_question_rate"] = _rate(samples, "empty_question_rate")
        return {spec.name: finite_number(corpus.get(spec.name))
                for spec in self.active_metrics(options, judged)}

    def corpus_statistics(self, samples: Sequence[ScoredSample], options: FlmOptions,
                          judged: bool) -> CorpusStatistics:
        """:meth:`metric_values` as totals: of the complete rows, their row keys and
        improvements; of the two diagnostic rates, their values and counts."""
        from condambig_tasks.uncertainty import CorpusStatistics

        rows = []
        for sample in samples:
            values = sample.values
            complete = all(values.get(key) is not None for key in ROW_KEYS)
            row = ([1.0, *(float(values[key]) for key in ROW_KEYS),
                    float(float(values["f1_response"]) > float(values["f1_incomplete"]))]
                   if complete else [0.0] * (len(ROW_KEYS) + 2))
            for key in ("agent_fallback_rate", "empty_question_rate"):
                value = values.get(key)
                row += [0.0, 0.0] if value is None else [float(value), 1.0]
            rows.append(row)
        columns = ("rows", *ROW_KEYS, "improved", "agent_fallback_rate", "agent_fallback_rate:n",
                   "empty_question_rate", "empty_question_rate:n")
        names = [spec.name for spec in self.active_metrics(options, judged)]
        return CorpusStatistics(columns, rows, lambda totals: {
            name: value for name, value in _flm_metrics(totals).items() if name in names})

    def null_reasons(self, samples: Sequence[ScoredSample], options: FlmOptions, judged: bool,
                     summary: Mapping[str, float | None]) -> dict[str, str]:
        """Why a metric is None: nothing scored, or a recovery whose denominator
        R̄(x_c) − R̄(x_i) is 0 within :data:`TIE_TOLERANCE` (the complete and incomplete
        answers score the same)."""
        reasons = super().null_reasons(samples, options, judged, summary)
        rows = [s.values for s in samples
                if all(s.values.get(key) is not None for key in ROW_KEYS)]
        for name in reasons:
            if not samples or not name.endswith("_recovery"):
                continue
            if not rows:
                reasons[name] = "no example has all three downstream answers scored"
                continue
            metric = name.removesuffix("_recovery")
            corpus = summarise(rows)
            label = _ANSWER_METRIC_NAMES[metric]
            reasons[name] = (
                f"undefined: {label} is the same on the complete and incomplete contexts "
                f"({corpus[f'{metric}_complete']:.4f} on {len(rows)} examples), so the "
                f"recovery's denominator is 0 (|gap| <= {TIE_TOLERANCE:g})")
        return reasons

    def expected_size(self, options: FlmOptions) -> int:
        """Examples of the split's source: HotpotQA distractor validation's 7,405 questions
        (full; Toles et al. report n = 7,404), or the 400 annotated rows (test)."""
        return FULL_SPLIT_SIZE if options.split is Split.FULL else TEST_SPLIT_SIZE


def _flm_metrics(totals: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """:func:`condambig_metrics.hotpot_flm.summarise` and the diagnostic rates of many
    resamples at once, from their column totals (NaN where undefined)."""
    import numpy as np

    with np.errstate(divide="ignore", invalid="ignore"):
        rows = totals["rows"]
        means = {key: np.where(rows > 0, totals[key] / rows, np.nan) for key in ROW_KEYS}
        result = {key: means[key] for key in ROW_KEYS if key != "masked_fact_returned"}
        for metric in ANSWER_METRICS:
            incomplete, complete = means[f"{metric}_incomplete"], means[f"{metric}_complete"]
            gap = complete - incomplete
            result[f"{metric}_recovery"] = np.where(
                np.abs(gap) > TIE_TOLERANCE,
                100.0 * (means[f"{metric}_response"] - incomplete) / gap, np.nan)
        result["mfrr"] = means["masked_fact_returned"]
        result["improved_rate"] = np.where(rows > 0, totals["improved"] / rows, np.nan)
        for name in ("agent_fallback_rate", "empty_question_rate"):
            count = totals[f"{name}:n"]
            result[name] = np.where(count > 0, totals[name] / count, np.nan)
    return result


def _asked(output: Any) -> str:
    """The clarifying question of an output: given as is, or cleaned from raw model text."""
    if isinstance(output, AskedQuestion):
        return output.text
    return clean_question(output if isinstance(output, str) else "")
