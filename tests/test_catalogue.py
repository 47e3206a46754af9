"""What a catalogue lists about each benchmark, declared once in its spec, checked against
the world: the papers' texts, the sources the loaders really read, the real data, and the
run configurations shipped in ``run_configs/inspect/``.

The register entries written from the spec are checked in tests/test_register.py.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import importlib
import itertools
import logging
import re
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from condambig_tasks import registry
from condambig_tasks.assets import AssetFile, ExternalAsset
from condambig_tasks.benchmark import (
    Benchmark,
    Paper,
    default_grader,
    find_variant,
    options_to_json,
    variant_of,
)
from condambig_tasks.data import load_items, recording_sources
from condambig_tasks.errors import CondambigError
from tests.conftest import REPO_ROOT

BENCHMARKS = list(registry.BENCHMARKS)
INSPECT_PREFIX = "condambig/"
RUN_CONFIGS = sorted((REPO_ROOT / "run_configs" / "inspect").glob("*.yaml"))
# the papers' texts, in the shared folder beside the checkout (or beside its worktree folder)
SEEDS = next((folder for folder in (REPO_ROOT.parent / "shared" / "seeds",
                                    REPO_ROOT.parents[1] / "shared" / "seeds")
              if folder.is_dir()), None)


# ---------------------------------------------------------------------- the papers


def test_a_citation_names_the_first_author_year_title_and_venue_or_arxiv():
    many = Paper("A Title", ("Ann Li", "Bo Chen", "Cy Wu"), 2025, arxiv="2502.01523")
    assert many.cite == "Li et al. (2025), A Title, arXiv:2502.01523"
    assert many.arxiv_url == "https://arxiv.org/abs/2502.01523"
    two = Paper("T", ("Ann Li", "Bo Chen"), 2020, venue="EMNLP 2020", url="https://x.org/p")
    assert two.cite == "Li and Chen (2020), T, EMNLP 2020"
    assert two.arxiv_url is None
    assert Paper("T", ("S. Joe Qin",), 2021, venue="AKBC 2021", url="https://x.org").cite == \
        "Qin (2021), T, AKBC 2021"
    for bad in ({"arxiv": "abs/2502.01523"}, {"url": "https://x.org"}, {"venue": "ACL"}):
        with pytest.raises(ValueError):
            Paper("T", ("Ann Li",), 2020, **bad)


def test_the_report_cites_each_paper_as_the_spec_does():
    from condambig_tasks.report.paper import load_paper_data

    load_paper_data.cache_clear()
    papers = load_paper_data().papers
    assert papers and papers == {name: registry.get(name).catalogue.paper.cite for name in papers}
    for path in sorted((REPO_ROOT / "condambig_tasks").rglob("paper_numbers.yaml")):
        assert "cite" not in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}), path


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_declares_what_a_catalogue_lists(name):
    catalogue = registry.get(name).catalogue
    assert isinstance(catalogue.paper, Paper)
    assert catalogue.description and "\n" not in catalogue.description
    assert catalogue.tags and all(re.fullmatch(r"[a-z0-9-]+", tag) for tag in catalogue.tags)
    assert catalogue.assets and all(isinstance(a, ExternalAsset) for a in catalogue.assets)
    for asset in catalogue.assets:  # data errors name the folders a benchmark reads
        assert {file.folder for file in asset.files} <= set(catalogue.data_folders), asset


def test_categories_and_assets_are_inspect_evals_values():
    metadata = pytest.importorskip(
        "inspect_evals.metadata",
        reason="inspect-evals is not installed: pip install --no-deps inspect-evals==0.26.0")
    for name in BENCHMARKS:
        catalogue = registry.get(name).catalogue
        assert metadata.Group(catalogue.category)
        for asset in catalogue.assets:
            metadata.ExternalAsset.model_validate(asset.to_metadata())


def test_no_file_is_declared_twice():
    files = [(file.folder, file.name) for name in BENCHMARKS
             for asset in registry.get(name).catalogue.assets for file in asset.files]
    assert len(files) == len(set(files))


def test_an_asset_is_pinned_only_when_it_names_a_commit():
    commit = "07e3e03bddd81795aeb3afc630d6fbe3fa498c3c"
    assert ExternalAsset("direct_url", f"https://h/o/r/{commit}/f.tsv", "m", "").state == "pinned"
    assert ExternalAsset("direct_url", "https://h/o/r/main/d/", "m", "").state == "floating"
    assert ExternalAsset("huggingface", "o/r", "m", "", revision=commit).state == "pinned"
    for revision in ("main", None):
        assert ExternalAsset("huggingface", "o/r", "m", "", revision=revision).state == \
            "floating"
    with pytest.raises(ValueError):
        AssetFile("f", "n.json", "not-a-digest")


def seed_texts() -> dict[str, str]:
    if SEEDS is None:
        pytest.skip("no papers' texts (shared/seeds) beside the checkout")
    return {path.name: " ".join(path.read_text(encoding="utf-8", errors="replace").split())
            for path in sorted(SEEDS.glob("*.txt"))}


def test_titles_and_authors_are_the_papers_own():
    """Each paper's title stands with all its authors' surnames in one of the papers' texts:
    its own title page or a bibliography entry (the ConditionalQA text has neither)."""
    texts = seed_texts().values()
    found = {name for name in BENCHMARKS for text in texts
             if (paper := registry.get(name).catalogue.paper).title.lower() in text.lower()
             and all(author.split()[-1] in text for author in paper.authors)}
    assert found >= {"condambigqa", "hotpot_flm", "ambignq", "abg_coqa"}


def test_the_ambigqa_arxiv_id_is_the_one_toles_et_al_cite():
    texts = seed_texts()
    paper = registry.get("ambignq").catalogue.paper
    [citing] = [text for text in texts.values() if registry.get("hotpot_flm").catalogue.paper.title in text]
    assert f"arXiv:{paper.arxiv}" in citing


# ---------------------------------------------------------------------- sources


def choices(options_type: type) -> dict[str, list[Any]]:
    """The allowed values of each option that has a closed set (``choices`` metadata, a
    ``Literal`` or an ``Enum`` type)."""
    hints = typing.get_type_hints(options_type)
    found = {}
    for field in dataclasses.fields(options_type):
        kind = hints.get(field.name)
        values = field.metadata.get("choices") or (
            list(typing.get_args(kind)) if typing.get_origin(kind) is typing.Literal else
            [member.value for member in kind] if isinstance(kind, type) and
            issubclass(kind, enum.Enum) else None)
        if values:
            found[field.name] = list(values)
    return found


def data_selections(benchmark: Benchmark) -> Iterator[Any]:
    """The options of every variant with each value of the options that pick data
    (split, release, subtask, ...): each option set once."""
    seen = []
    for variant in benchmark.variants:
        axes = {key: values for key, values in choices(benchmark.options_type).items()
                if key in ("split", "release", "subtask", "setting")}
        for combination in itertools.product(*axes.values()):
            try:
                options = benchmark.options({**variant.options,
                                             **dict(zip(axes, combination, strict=True))})
            except CondambigError:
                continue
            if options not in seen:
                seen.append(options)
                yield options


def declared(benchmark: Benchmark, source: dict[str, Any]) -> bool:
    """Whether a source a loader read is one of the benchmark's assets, digest and
    revision included."""
    for asset in benchmark.catalogue.assets:
        if source["kind"] == "url":
            if any(asset.url(file) == source["url"] and file.sha256 == source["pinned_sha256"]
                   for file in asset.files):
                return True
        elif source["kind"] == "hub" and asset.source == source["repository"] and \
                (asset.revision or "default branch (not pinned)") == source["revision"] and \
                (asset.config, asset.split) == (source["name"], source["split"]):
            return True
    return False


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_upstream_source_a_loader_reads_is_a_declared_asset(name, tmp_path,
                                                                  monkeypatch):
    """Offline with no local files, each load names its upstream source before it fails:
    every such URL (with its pinned sha256) and hub dataset (with its revision, configuration
    and split) is one of the benchmark's assets."""
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    benchmark = registry.get(name)
    read = []
    for options in data_selections(benchmark):
        with recording_sources() as sources, pytest.raises(CondambigError):
            benchmark.load(options)
        read += [source for source in sources if source["kind"] in ("url", "hub")]
    assert read, f"{name}: no upstream source recorded"
    undeclared = [source for source in read if not declared(benchmark, source)]
    assert not undeclared, f"{name}: read but not in its assets: {undeclared}"


def declared_files() -> dict[tuple[str, str], AssetFile]:
    return {(file.folder, file.name): file for name in BENCHMARKS
            for asset in registry.get(name).catalogue.assets for file in asset.files}


@pytest.mark.realdata
def test_declared_digests_match_the_real_data(real_data_dir: Path):
    checked = 0
    for (folder, file_name), file in declared_files().items():
        path = real_data_dir / folder / file_name
        if file.sha256 is None or not path.is_file():
            continue
        assert hashlib.sha256(path.read_bytes()).hexdigest() == file.sha256, path
        checked += 1
    assert checked, f"no declared file with a digest in {real_data_dir}"


@pytest.mark.realdata
@pytest.mark.parametrize("name", BENCHMARKS)
def test_split_sizes_match_the_real_data(name, real_data_dir: Path, monkeypatch, tmp_path,
                                        caplog):
    """``expected_size`` against the items loaded from real files whose bytes are the
    declared upstream ones (a file without a declared digest may be a subset), where the
    loader read what was asked (no warning that it fell back to another file)."""
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(real_data_dir))
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    benchmark = registry.get(name)
    digests = {file_name: file.sha256 for (_, file_name), file in declared_files().items()}
    counted = []
    for options in data_selections(benchmark):
        expected = benchmark.expected_size(options)
        if expected is None:
            continue
        caplog.clear()
        try:
            with recording_sources() as sources, caplog.at_level(logging.WARNING):
                items = load_items(benchmark, options)
        except CondambigError:
            continue  # a file these options need is not in the real data folder
        files = [source for source in sources if source["kind"] == "file"]
        if files and not caplog.records and all(digests.get(Path(source["path"]).name) == source["sha256"]
                         for source in files):
            assert len(items) == expected, options_to_json(benchmark, options)
            counted.append(options)
    if not counted:
        pytest.skip(f"{name}: no split whose files are all upstream bytes in {real_data_dir}")


# ---------------------------------------------------------------------- run configs


@pytest.fixture
def recorded_inspect_tasks(monkeypatch) -> list[tuple[str, dict[str, Any]]]:
    """Calls of ``benchmark_task`` made by the ``@task`` functions, instead of building the
    task (no data, no agent models): the benchmark and the options each task passes."""
    from inspect_ai import Task

    import condambig._registry  # noqa: F401  (registers every @task)

    calls: list[tuple[str, dict[str, Any]]] = []

    def record(benchmark_name, option_values, **kwargs):
        calls.append((benchmark_name, dict(option_values)))
        return Task()

    for module_name in BENCHMARKS:
        module = importlib.import_module(f"condambig.{module_name}")
        monkeypatch.setattr(module, "benchmark_task", record)
    return calls


def test_register_entries_size_the_options_each_inspect_task_runs(recorded_inspect_tasks):
    """condambig-register sizes an Inspect task by the options it runs with no ``-T``."""
    import condambig._registry as tasks
    from condambig_tasks.register import inspect_tasks, task_options

    for task in inspect_tasks():
        recorded_inspect_tasks.clear()
        getattr(tasks, task.name)()
        [(called, values)] = recorded_inspect_tasks
        benchmark = registry.get(called)
        assert called == task.benchmark
        run = benchmark.options({k: v for k, v in values.items() if v is not None})
        assert task_options(benchmark, task) == run, task.name


def named_variant(path: Path, benchmark: Benchmark):
    """The variant a run configuration is named after: ``<variant>_paper.yaml``, or
    ``<variant>.yaml`` for a variant that is itself the paper's run."""
    for task in (path.stem, path.stem.removesuffix("_paper")):
        try:
            return find_variant(benchmark, task)
        except KeyError:
            continue
    raise AssertionError(f"{path.name} names no variant of {benchmark.name}")


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=[path.name for path in RUN_CONFIGS])
def test_a_run_config_runs_the_variant_it_names(path, monkeypatch, recorded_inspect_tasks):
    """Its options are that variant's, and its sampling and grader the variant's own."""
    from inspect_ai._cli.eval import parse_run_config

    import condambig._registry as tasks

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # model roles are built here
    params = parse_run_config(str(path))
    getattr(tasks, params["tasks"].removeprefix(INSPECT_PREFIX))(**params.get("task_args", {}))
    [(name, values)] = recorded_inspect_tasks
    benchmark = registry.get(name)
    options = benchmark.options({k: v for k, v in values.items() if v is not None})
    variant = named_variant(path, benchmark)
    assert variant_of(benchmark, options, params.get("temperature")) == variant
    assert params.get("temperature") == variant.temperature or \
        (variant.temperature is None and params.get("temperature") in (None, 0))
    if variant.max_tokens is not None:
        assert params.get("max_tokens") == variant.max_tokens
    # the grader in effect: the file's, else the task's default (the paper's judge)
    grader = (params.get("model_roles") or {}).get("grader") or default_grader(benchmark)
    if variant.judge_model is not None:
        assert str(grader).split("/", 1)[1] == variant.judge_model


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=[path.name for path in RUN_CONFIGS])
def test_a_run_config_needs_no_key_when_the_grader_is_bound_on_the_command_line(
        path, monkeypatch):
    """Inspect builds a run config's model roles while reading the file, before
    ``--model-role grader=...`` replaces them: a grader named in the file would need its
    provider's key even when the command line binds another."""
    from inspect_ai._cli.eval import merge_run_config_params, parse_run_config

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    params = merge_run_config_params(parse_run_config(str(path)),
                                     {"model_roles": {"grader": "openai-api/local/judge"}})
    assert params["model_roles"]["grader"] == "openai-api/local/judge"
