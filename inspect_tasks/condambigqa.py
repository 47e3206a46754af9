"""CondAmbigQA in Inspect: ``inspect eval condambig/condambigqa -T setting=main``.

The judge is Inspect's ``grader`` model role (``--model-role grader=openai/gpt-4o-mini``);
without one (or with ``-T judge=false``) only the judge-free metrics are reported.
"""

from __future__ import annotations

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import GenerateConfig, model_roles
from inspect_ai.scorer import Score, Target, mean, scorer
from inspect_ai.solver import TaskState, generate

from condambig._metrics import mean_of_key, total_of_key
from condambig.judge_backend import GRADER_ROLE, grader_judge_engine
from condambig_tasks.condambigqa.loader import load_questions
from condambig_tasks.condambigqa.options import MAX_GENERATION_TOKENS, CondAmbigQAOptions
from condambig_tasks.condambigqa.prompts import build_prompt
from condambig_tasks.condambigqa.records import CondAmbigQuestion, Setting
from condambig_tasks.condambigqa.scoring import ScoringInput, score_one_async

# Score.value keys -> the corpus metric reported for them
_VALUE_KEYS = {
    "condition": "condition_score", "answer": "answer_score", "citation": "citation_score",
    "combined": "combined_score",
}


@task
def condambigqa(
    setting: str = "main",
    release: str = "2k",
    max_conditions: int = 5,
    judge: bool = True,
    matching: str = "judge",
    max_tokens: int | None = None,
    hub_revision: str | None = None,
) -> Task:
    """CondAmbigQA (Li et al.): conditions, answers and citations for ambiguous questions.

    Args:
        setting: main | gold_conditions | no_conditions | closed_book | closed_book_conditions.
        release: "2k" (2,000 questions) or "200" (the original release); a local
            CONDAMBIG_DATA_DIR/condambigqa/ folder takes precedence.
        max_conditions: the N of "up to N conditions" in the prompt (paper: 5).
        judge: score conditions/answers with the `grader` role when one is set.
        matching: "judge" (the paper's weighted matching) or "exact" (citations, then
            answer token F1).
        max_tokens: generation budget (default: per setting, 512-1536).
        hub_revision: a Hugging Face commit sha to pin the dataset.
    """
    options = CondAmbigQAOptions(setting, release, max_conditions, matching, hub_revision)
    judged = bool(judge) and GRADER_ROLE in model_roles()
    samples = [_sample(q, options) for q in load_questions(options.release, options.hub_revision)]
    return Task(
        dataset=MemoryDataset(samples, name=f"condambigqa_{options.setting.value}"),
        solver=generate(),
        scorer=condambigqa_scorer(options.setting.value, judged, options.matching),
        metrics=_metrics(options.setting, judged),
        # no temperature here: providers differ (Inspect's hf provider rejects 0.0); set
        # --temperature on the command line
        config=GenerateConfig(max_tokens=max_tokens or MAX_GENERATION_TOKENS[options.setting]),
    )


def _sample(question: CondAmbigQuestion, options: CondAmbigQAOptions) -> Sample:
    return Sample(
        id=question.id,
        input=build_prompt(question, options.setting, options.prompt_options),
        target=[p.answer for p in question.properties] or [""],
        metadata={"question": question.question, "record": question.to_dict()},
    )


def _metrics(setting: Setting, judged: bool) -> list:
    metrics = [mean_of_key("parsed", "parse_rate"), mean_of_key("answer_count"),
               mean_of_key("count_difference")]
    if setting.cites:
        metrics.append(mean_of_key("citation", "citation_score"))
        metrics.append(total_of_key("out_of_range_citations"))
    if judged:
        if setting.generates_conditions:
            metrics.append(mean_of_key("condition", "condition_score"))
        metrics.append(mean_of_key("answer", "answer_score"))
        if setting is Setting.MAIN:
            metrics.append(mean_of_key("combined", "combined_score"))
        metrics.append(total_of_key("judge_failed"))
    return metrics


@scorer(metrics=[mean()])  # the task replaces these with _metrics(setting, judged)
def condambigqa_scorer(setting: str = "main", judged: bool = False, matching: str = "judge"):
    """Parse the output, judge it with the grader role (if any), score it like the paper."""
    setting_value = Setting(setting)

    async def score(state: TaskState, target: Target) -> Score:
        question = CondAmbigQuestion.from_dict(state.metadata["record"])
        engine = grader_judge_engine() if judged else None
        result = await score_one_async(
            setting_value, ScoringInput(question, state.input_text, state.output.completion),
            engine, matching,
        )
        value: dict[str, float] = {
            "parsed": float(result.parsed),
            "answer_count": float(result.answer_count),
            "count_difference": float(result.count_difference),
            "out_of_range_citations": float(result.out_of_range_citations),
            "judge_failed": float(result.judge_failed),
        }
        for attribute in _VALUE_KEYS:
            if getattr(result, attribute) is not None:
                value[attribute] = float(getattr(result, attribute))
        return Score(value=value, answer=state.output.completion[:2000],
                     explanation=result.explanation(), metadata=result.to_dict())

    return score
