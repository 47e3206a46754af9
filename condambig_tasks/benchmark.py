"""The benchmark contract: what every benchmark implements once, in ``<benchmark>/benchmark.py``.

A benchmark is a :class:`Benchmark` subclass: its name and version, one frozen options
dataclass, how to load its items, the prompt, a JSON-safe record round-trip, ``score`` (one
output -> one :class:`ScoredSample`, pure), an optional batched corpus step
(``score_batch``: the judge, the HotpotQA-FLM agents) and its metric spec
(:class:`MetricSpec`). The generic front ends build everything else from these:
``condambig_tasks.lm_eval_task`` (lm-eval's task, its config built from the spec),
``condambig._factory`` (the Inspect task and scorer) and ``condambig_tasks.cli``
(``condambig-score``). A newcomer reads one benchmark in ``<benchmark>/benchmark.py`` and
the modules it imports; see docs/adding-a-benchmark.md.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from condambig_tasks.assets import ExternalAsset
from condambig_tasks.options import parse_options

if TYPE_CHECKING:
    from condambig_tasks.uncertainty import CorpusStatistics

Options = TypeVar("Options")
Item = TypeVar("Item")

# How a metric's corpus value comes from the per-sample values.
MEAN = "mean"  # mean over the samples that have a value (None = not applicable / not judged)
SUM = "sum"  # total over the samples (counts)
CORPUS = "corpus"  # computed by benchmark.reported_values from every sample (BLEU, P/R/F1, ratios)
AGGREGATIONS = (MEAN, SUM, CORPUS)


@dataclass(frozen=True)
class MetricSpec:
    """One reported metric. ``higher_is_better`` None: a count or diagnostic with no direction.

    ``judge``: reported only when a judge is configured. Every front end takes the metric
    names, aggregations and directions from here (lm-eval's ``metric_list`` is built from
    it).
    """

    name: str
    description: str
    aggregation: str = MEAN
    higher_is_better: bool | None = True
    judge: bool = False
    # what divides the value onto a 0-1 scale for the suite score (100 for percentages)
    scale: float = 1.0
    # drawn in the report's figure of the benchmark (beside the paper's number when it has one)
    plot: bool = False
    # the figure's panel it is drawn in (None: one panel per variant holds its plotted metrics)
    figure: str | None = None
    # the value counts things (per question for a MEAN; every SUM metric is a count): the
    # report prints it as a count, not on a score's scale
    count: bool = False

    def __post_init__(self) -> None:
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(f"metric {self.name}: aggregation must be one of {AGGREGATIONS}")


SUITE_SCORE = "suite_score"
SUITE_SPEC = MetricSpec(
    SUITE_SCORE, "this task's headline metric on a 0-1 scale (divided by its scale); the "
    "condambig group reports the unweighted mean of its tasks' suite_score", CORPUS)
"""Reported after the other metrics whenever a run has a headline: lm-eval's group
aggregation needs one metric name shared by every task, and headlines differ in name and
scale (HotpotQA-FLM's recovery and Abg-CoQA's BLEU are percentages)."""


@dataclass(frozen=True)
class TaskVersion:
    """A task version as inspect_evals writes it (its TASK_VERSIONING.md): ``N-X``.

    N, the comparability version, goes up whenever a score can change (scoring, prompts,
    data handling); X, the interface letter, goes up for changes that leave every score as
    it was (new metrics or options, new outputs) and restarts at A with a new N. Inspect's
    ``Task.version`` and lm-eval's ``metadata.version`` carry N; the full version goes in
    the task metadata and the provenance block.
    """

    full: str

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[1-9]\d*-[A-Z]", self.full):
            raise ValueError(f"a task version is N-X (e.g. 2-A), got {self.full!r}")

    @property
    def comparability(self) -> int:
        return int(self.full.split("-")[0])

    @property
    def interface(self) -> str:
        return self.full.split("-")[1]

    def to_metadata(self) -> dict[str, Any]:
        """The keys inspect_evals puts in a task's metadata."""
        return {"full_task_version": self.full, "task_interface_version": self.interface,
                "task_comparability_version": self.comparability}


@dataclass(frozen=True)
class Variant:
    """One named task of a benchmark: the options it fixes and how it generates.

    The name is the lm-eval task name, the Inspect dataset name and the report's section;
    every front end takes its variants from here (lm-eval's task files, the report's mapping
    from a task name to its benchmark, the register entries).
    """

    task: str
    description: str
    options: Mapping[str, Any] = field(default_factory=dict)
    # sampling as the paper's runs did it (None: greedy decoding, temperature 0)
    temperature: float | None = None
    # the generation budget when it differs from Benchmark.max_tokens(options)
    max_tokens: int | None = None
    # the judge model the paper used, this variant's default judge (None: no default)
    judge_model: str | None = None

    def accepts(self, options: Mapping[str, Any]) -> bool:
        """Whether a run with these options (JSON values) is a run of this variant."""
        return all(_same_value(options.get(key), value) for key, value in self.options.items())

    def generates_like(self, temperature: float | None) -> bool:
        """Whether a run sampled at ``temperature`` (None: not known) generated as this
        variant does: a variant that fixes a sampling temperature takes only runs known to
        have used it (a greedy run rescored with its options is not a run of it)."""
        return self.temperature is None or (
            temperature is not None and abs(float(temperature) - self.temperature) < 1e-9)


def _same_value(left: Any, right: Any) -> bool:
    return str(getattr(left, "value", left)) == str(getattr(right, "value", right))


_ARXIV_ID = re.compile(r"\d{4}\.\d{4,5}")


@dataclass(frozen=True)
class Paper:
    """The paper a benchmark reimplements, as register entries and the report cite it."""

    title: str
    authors: tuple[str, ...]
    year: int
    # where it appeared, short as cited ("ACL 2022"); None: a preprint, cited by its arXiv id
    venue: str | None = None
    arxiv: str | None = None  # the arXiv id ("2502.01523") when the paper is on arXiv
    url: str | None = None  # its page when not the arXiv abstract (e.g. the ACL Anthology)

    def __post_init__(self) -> None:
        if self.arxiv is not None and not _ARXIV_ID.fullmatch(self.arxiv):
            raise ValueError(f"{self.title}: an arXiv id is NNNN.NNNNN, got {self.arxiv!r}")
        if not self.authors or (self.venue is None and self.arxiv is None) or \
                (self.url is None and self.arxiv is None):
            raise ValueError(f"{self.title}: name the authors, and a venue or arXiv id and "
                             "a url or arXiv id")

    @property
    def arxiv_url(self) -> str | None:
        return None if self.arxiv is None else f"https://arxiv.org/abs/{self.arxiv}"

    @property
    def cite(self) -> str:
        """``Li et al. (2025), <title>, arXiv:2502.01523`` (the venue when it has one)."""
        surnames = [author.split()[-1] for author in self.authors]
        who = surnames[0] if len(surnames) == 1 else " and ".join(surnames) \
            if len(surnames) == 2 else f"{surnames[0]} et al."
        return f"{who} ({self.year}), {self.title}, {self.venue or f'arXiv:{self.arxiv}'}"


def row_id(row: Mapping[str, Any]) -> str:
    """The item id of one row of an outputs file (``{"id": ..., "output": ...}``)."""
    return str(row["id"])


@dataclass(frozen=True)
class PredictionFiles:
    """What ``condambig-score`` reads of a benchmark besides raw-output files and its data
    source, read by the CLI only: other names of ``--outputs`` (``aliases``); an official
    prediction format (``format``, said in ``--help`` and errors; ``read(raw, source,
    options)`` gives id -> prediction, what ``score`` accepts besides raw text, or None when
    ``raw`` is not in that format); reference data in the upstream format for ``--ref``
    (``reference(path, options)`` -> items; None: no ``--ref``); the item id of an outputs
    file's row (``output_id``); baselines scored by name (``named``: name -> item ->
    output); a judge-free run's load that keeps less of each item than ``load`` for a
    split too large to hold whole (``lean_load(options, seen)`` -> items, ``seen`` given
    each whole item as it is read, in order, for the provenance digest; None: ``load``)."""

    aliases: tuple[str, ...] = ()
    format: str = ""
    read: Callable[[Any, str, Any], Mapping[str, Any] | None] | None = None
    reference: Callable[[Any, Any], list[Any]] | None = None
    output_id: Callable[[Mapping[str, Any]], str] = row_id
    named: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)
    lean_load: Callable[[Any, Callable[[Any], None]], list[Any]] | None = None


@dataclass(frozen=True)
class Catalogue:
    """What a catalogue says of a benchmark (the inspect_evals register entry, the docs
    tables, data errors), read by those only: the paper (None for a benchmark of no paper),
    a paragraph on the task, topic tags, the inspect_evals group
    (``inspect_evals.metadata.Group``), the upstream sources read (declared by the loaders
    beside their pins), whether a run needs the internet besides fetching those sources
    (inspect_evals' ``requires.internet``), and the folders under ``$CONDAMBIG_DATA_DIR`` it
    reads."""

    paper: Paper | None = None
    description: str = ""
    tags: tuple[str, ...] = ()
    category: str | None = None
    assets: tuple[ExternalAsset, ...] = ()
    requires_internet: bool = False
    data_folders: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScoredSample:
    """One output's score: per-sample numbers by metric name, and JSON-safe details.

    ``values`` holds the MEAN / SUM metrics (None: not applicable to this sample, left out of
    the mean); ``details`` holds what CORPUS metrics and explanations need (e.g. the
    hypothesis and references of a BLEU score). Inspect stores ``values`` in ``Score.value``
    and ``details`` in ``Score.metadata``.
    """

    id: str
    values: Mapping[str, float | None]
    details: Mapping[str, Any] = field(default_factory=dict)
    explanation: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "values": json_safe(dict(self.values)),
                "details": json_safe(dict(self.details)), "explanation": self.explanation}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScoredSample:
        return cls(id=str(data["id"]), values=dict(data.get("values") or {}),
                   details=dict(data.get("details") or {}),
                   explanation=str(data.get("explanation") or ""))


@dataclass(frozen=True)
class Runtime:
    """What a front end lends the corpus step: a judge engine, Inspect model roles.

    ``judge`` is a :class:`condambig_metrics.judge.JudgeEngine` or None (no judge
    configured). ``roles`` maps Inspect role names to bound models (empty elsewhere).
    """

    judge: Any = None
    roles: Mapping[str, Any] = field(default_factory=dict)


class Benchmark(Generic[Options, Item]):
    """Base class of the five benchmarks (and any new one). Override what differs."""

    name: ClassVar[str]
    title: ClassVar[str]
    catalogue: ClassVar[Catalogue] = Catalogue()  # what registers, docs and data errors say
    version: ClassVar[str]  # N-X (TaskVersion)
    options_type: ClassVar[type]
    metric_specs: ClassVar[tuple[MetricSpec, ...]]
    # the metric to rank on: the first of these the run reports (e.g. CondAmbigQA's first
    # needs a judge; without one the run heads with a judge-free one further down)
    headline_metrics: ClassVar[tuple[str, ...]] = ()
    # the judge model the paper used (an OpenAI model name), Inspect's default grader
    # (None: the paper had no model judge, so a judge runs only when one is named)
    paper_judge: ClassVar[str | None] = None
    # the named tasks of this benchmark, the first being its default options; an lm-eval
    # group of them all (None: no group) and the task or group that stands for the benchmark
    # in the condambig suite
    variants: ClassVar[tuple[Variant, ...]]
    group: ClassVar[str | None] = None
    suite_member: ClassVar[str]
    # condambig-score: official prediction files, --ref files, named baselines
    prediction_files: ClassVar[PredictionFiles] = PredictionFiles()
    # what standard errors and the bootstrap resample whole (condambig_tasks.uncertainty):
    # the unit that makes samples independent; see :meth:`cluster`
    resampling_unit: ClassVar[str] = "question"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A benchmark that declares no variants has one: its own name, default options."""
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if isinstance(name, str):
            TaskVersion(cls.version)  # N-X, checked when the class is defined
            if "variants" not in cls.__dict__:
                cls.variants = (Variant(name, getattr(cls, "title", name)),)
            if "suite_member" not in cls.__dict__:
                cls.suite_member = cls.group or cls.variants[0].task

    # ------------------------------------------------------------------ variants
    # ------------------------------------------------------------------ options
    def options(self, values: Mapping[str, Any] | None = None, *, strict: bool = True) -> Options:
        """The typed options from lm-eval ``--metadata``, Inspect ``-T`` or CLI flags.

        ``strict=False`` ignores unknown keys (lm-eval's metadata also holds model
        arguments and the task version).
        """
        return parse_options(self.options_type, values or {}, strict=strict,
                             owner=self.name)

    # ------------------------------------------------------------------ items
    def load(self, options: Options) -> list[Item]:
        raise NotImplementedError

    def item_id(self, item: Item) -> str:
        return str(item.id)  # type: ignore[attr-defined]

    def prompt(self, item: Item, options: Options) -> str:
        raise NotImplementedError

    def target(self, item: Item, options: Options) -> str | list[str]:
        """What a good output looks like, for logs (scoring reads the item)."""
        return ""

    def to_record(self, item: Item) -> dict[str, Any]:
        """A JSON-safe dict that :meth:`from_record` turns back into the item."""
        return json_safe(item)

    def from_record(self, record: Mapping[str, Any]) -> Item:
        raise NotImplementedError

    def models(self, options: Options,
               roles: Mapping[str, Any] | None = None) -> dict[str, str]:
        """Models the scoring itself uses besides the judge (e.g. HotpotQA-FLM's agents),
        by job, for the provenance block; ``roles``: the bound Inspect roles."""
        return {}

    def prepare(self, options: Options, runtime: Runtime) -> None:
        """Checks before any generation (e.g. that agent models can be found); ``runtime``
        says which Inspect roles are bound."""

    def max_tokens(self, options: Options) -> int:
        """The generation budget of one output."""
        return 512

    # ------------------------------------------------------------------ scoring
    def score(self, item: Item, output: Any, options: Options) -> ScoredSample:
        """One output (raw model text, or a prediction read by its ``prediction_files``),
        scored without any model (pure)."""
        raise NotImplementedError

    def judge_applies(self, options: Options) -> bool:
        """Whether a judge scores anything with these options (e.g. one subtask of three)."""
        return uses_judge(self)

    def needs_corpus_step(self, options: Options, judged: bool) -> bool:
        """True when scores need ``score_batch`` (a judge or agent models)."""
        return judged and self.judge_applies(options)

    async def score_batch(
        self, batch: Sequence[tuple[Item, str]], options: Options, runtime: Runtime,
    ) -> list[ScoredSample]:
        """Many outputs at once (all model calls of the batch concurrently / batched).

        lm-eval and ``condambig-score`` pass the whole run; Inspect passes one sample.
        """
        return [self.score(item, output, options) for item, output in batch]

    def active_metrics(self, options: Options, judged: bool) -> list[MetricSpec]:
        """The metrics this run reports (judge metrics only with a judge)."""
        return [spec for spec in self.metric_specs if judged or not spec.judge]

    def metric_values(
        self, samples: Sequence[ScoredSample], options: Options, judged: bool,
    ) -> Mapping[str, float | None]:
        """The active metrics' corpus values: MEAN and SUM from the per-sample values,
        CORPUS from :meth:`corpus_values`."""
        specs = self.active_metrics(options, judged)
        plain = plain_summary(samples, specs)
        corpus = (self.corpus_values(samples, options, judged)
                  if any(spec.aggregation == CORPUS for spec in specs) else {})
        return {spec.name: corpus.get(spec.name) if spec.aggregation == CORPUS
                else plain[spec.name] for spec in specs}

    def corpus_values(
        self, samples: Sequence[ScoredSample], options: Options, judged: bool,
    ) -> Mapping[str, float | None]:
        """The CORPUS metrics (BLEU, precision/recall/F1, ratios of means) from every sample."""
        raise NotImplementedError(f"{self.name} declares CORPUS metrics: define corpus_values")

    def cluster(self, sample: ScoredSample) -> str:
        """The id of the :attr:`resampling_unit` ``sample`` belongs to (its own by default)."""
        return sample.id

    def corpus_statistics(
        self, samples: Sequence[ScoredSample], options: Options, judged: bool,
    ) -> CorpusStatistics | None:
        """Per-sample numbers whose totals give metrics of :meth:`metric_values`, so that a
        bootstrap resample costs a matrix product (None: metric_values runs per resample)."""
        return None

    def null_reasons(
        self, samples: Sequence[ScoredSample], options: Options, judged: bool,
        summary: Mapping[str, float | None],
    ) -> dict[str, str]:
        """Why each metric of ``summary`` that is None has no value (printed beside it)."""
        return {name: "no scored sample has a value for it" if samples else "nothing scored"
                for name, value in summary.items() if value is None}

    def expected_size(self, options: Options) -> int | None:
        """How many items the full upstream split has, when known (a local copy may hold
        fewer; the front ends say so)."""
        return None

    # ------------------------------------------------------------------ whole runs
    def run_notes(self, options: Options, judged: bool) -> list[str]:
        """One-line notices a run shows once (e.g. what is skipped without a judge)."""
        if self.judge_applies(options) and not judged:
            skipped = [spec.name for spec in self.metric_specs if spec.judge]
            return [f"{self.name}: no judge configured, so {', '.join(skipped)} "
                    "are not reported."]
        return []


# ---------------------------------------------------------------------- derived from the contract
# Functions of a benchmark's declarations, the same for every benchmark (not for one to
# override): what its variants, versions, options and metric specs imply.


def uses_judge(benchmark: Benchmark) -> bool:
    """A judge can score this benchmark: it declares a judged metric (lm-eval and the CLI
    then read the judge settings, Inspect the grader role)."""
    return any(spec.judge for spec in benchmark.metric_specs)


def default_grader(benchmark: Benchmark) -> str | None:
    """Inspect's ``grader`` when none is bound: the paper's judge through OpenAI."""
    return None if benchmark.paper_judge is None else f"openai/{benchmark.paper_judge}"


def task_version(benchmark: Benchmark) -> TaskVersion:
    return TaskVersion(benchmark.version)


def find_variant(benchmark: Benchmark, task: str) -> Variant:
    """The variant named ``task`` (KeyError when the benchmark has none by that name)."""
    for variant in benchmark.variants:
        if variant.task == task:
            return variant
    raise KeyError(f"{benchmark.name} has no task {task!r}")


def variant_of(benchmark: Benchmark, options: Any, temperature: float | None = None) -> Variant:
    """The most specific variant whose fixed options these options have and whose
    sampling the run's (``temperature``, None when not known) matches (a run of Inspect
    or condambig-score names options, not a task)."""
    values = options_to_json(benchmark, options)
    matching = [variant for variant in benchmark.variants
                if variant.accepts(values) and variant.generates_like(temperature)]
    return max(matching, key=lambda variant: len(variant.options),
               default=benchmark.variants[0])


def options_to_json(benchmark: Benchmark, options: Any) -> dict[str, Any]:
    return json_safe(dataclasses.asdict(options))


def headline_metric(benchmark: Benchmark, options: Any, judged: bool) -> str | None:
    """The metric a leaderboard ranks this run on (higher is better), or None when the
    run reports none of ``headline_metrics`` (e.g. a setting needing a judge)."""
    active = {spec.name for spec in benchmark.active_metrics(options, judged)}
    return next((name for name in benchmark.headline_metrics if name in active), None)


def reported_metrics(benchmark: Benchmark, options: Any, judged: bool) -> list[MetricSpec]:
    """What a run reports, in order: the headline, the other active metrics in spec
    order, then ``suite_score`` (the headline on a 0-1 scale)."""
    active = benchmark.active_metrics(options, judged)
    headline = headline_metric(benchmark, options, judged)
    if headline is None:
        return active
    first = [spec for spec in active if spec.name == headline]
    return [*first, *(spec for spec in active if spec.name != headline), SUITE_SPEC]


def metric_spec(benchmark: Benchmark, name: str) -> MetricSpec:
    """The spec of one reported metric (``suite_score`` included)."""
    if name == SUITE_SCORE:
        return SUITE_SPEC
    for spec in benchmark.metric_specs:
        if spec.name == name:
            return spec
    raise KeyError(f"{benchmark.name} has no metric {name!r}")


def reported_values(benchmark: Benchmark, samples: Sequence[ScoredSample], options: Any,
                    judged: bool) -> dict[str, float | None]:
    """Corpus values of the reported metrics, headline first, then ``suite_score``;
    None where no sample has a value."""
    values = benchmark.metric_values(samples, options, judged)
    reported = reported_metrics(benchmark, options, judged)
    summary = {spec.name: values.get(spec.name) for spec in reported
               if spec is not SUITE_SPEC}
    if reported and reported[-1] is SUITE_SPEC:  # then the headline is reported[0]
        headline = reported[0]
        value = summary.get(headline.name)
        summary[SUITE_SCORE] = None if value is None else value / headline.scale
    return summary


# ---------------------------------------------------------------------- helpers


def plain_summary(
    samples: Sequence[ScoredSample], specs: Sequence[MetricSpec],
) -> dict[str, float | None]:
    """MEAN and SUM metrics from the per-sample values (CORPUS specs are skipped)."""
    result: dict[str, float | None] = {}
    for spec in specs:
        if spec.aggregation == CORPUS:
            continue
        present = [v for v in (finite_number(s.values.get(spec.name)) for s in samples) if v is not None]
        if not present:
            result[spec.name] = None
        else:  # plain left-to-right sums, as the official scripts add
            result[spec.name] = sum(present) if spec.aggregation == SUM else \
                sum(present) / len(present)
    return result


async def score_run(
    benchmark: Benchmark, batch: Sequence[tuple[Any, Any]], options: Any, runtime: Runtime,
) -> list[ScoredSample]:
    """A whole run's corpus step on a loop of its own; the judge's client, bound to that
    loop, is closed when the run ends (lm-eval and ``condambig-score``)."""
    try:
        return await benchmark.score_batch(batch, options, runtime)
    finally:
        close = getattr(getattr(runtime.judge, "backend", None), "aclose", None)
        if close is not None:
            await close()


def run_blocking(coroutine: Any) -> Any:
    """Run a coroutine to completion from synchronous code, even inside a running loop."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def finite_number(value: Any) -> float | None:
    """``value`` as a float; None for NaN, infinities, non-numbers (``"N/A"``), booleans, None."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def json_safe(value: Any) -> Any:
    """``value`` with NaN / infinities as None, tuples as lists, enums as their values,
    dataclasses as dicts of their fields (the value of ``dataclasses.asdict`` in one walk,
    without its deep copy: the records of every item of a run go through here)."""
    if value is None or type(value) in _JSON_LEAVES:
        return value
    if isinstance(value, float):
        return finite_number(value)
    if isinstance(value, enum.Enum):
        return json_safe(value.value)
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: json_safe(getattr(value, field.name))
                for field in dataclasses.fields(value)}
    return value


_JSON_LEAVES = frozenset({str, int, bool})
