"""lm-eval's own task checks on every task the registry lists, offline and without a key.

lm-eval asks of a contributed task what its ``tests/test_tasks.py`` (0.4.13) checks: the
task builds, its splits are declared, ``doc_to_text`` is text that does not end in
whitespace when ``target_delimiter`` is whitespace, ``build_all_requests`` and
``construct_requests`` give a request per document for ``limit=10`` documents. The same
checks run here on the fixture data (at least ten documents per task, so none is
inconclusive), with the network refused and no judge key: building a task must need
neither. The prompt each request carries is the benchmark's own prompt, unchanged.
``test_lm_eval_own_task_tests`` runs lm-eval's test file itself when its source (the
sdist, which ships the tests the wheel lacks) is named in ``CONDAMBIG_LM_EVAL_SOURCE``.

What needs a key, the network or an agent model is checked before generation instead: by
the ``lm_eval`` command before the model loads (tests/test_lm_eval_preflight.py,
tests/test_lm_eval_judge_faults.py), and under ``simple_evaluate`` once the model is built
(the tests at the end).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest

from condambig_tasks import registry
from condambig_tasks.errors import CondambigError
from condambig_tasks.lm_eval_tasks import task_folder
from tests.conftest import FIXTURE_DATA, subprocess_env

LIMIT = 10  # lm-eval's ``limit`` fixture in tests/test_tasks.py
SOURCE_VARIABLE = "CONDAMBIG_LM_EVAL_SOURCE"


def task_names() -> list[str]:
    return [variant.task for name in registry.available()
            for variant in registry.get(name).variants]


def _offline_without_a_key(patch: pytest.MonkeyPatch) -> None:
    """The fixture data, no judge key or setting, the hub offline, every connection refused."""
    patch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    for name in list(os.environ):
        if name.startswith("CONDAMBIG_JUDGE_") or name.startswith("CONDAMBIG_FLM_"):
            patch.delenv(name)
    patch.delenv("OPENAI_API_KEY", raising=False)
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        patch.setenv(name, "1")

    def refuse(self, address):
        raise AssertionError(f"building a task connected to {address!r}")

    patch.setattr(socket.socket, "connect", refuse)
    patch.setattr(socket.socket, "connect_ex", refuse)


def _manager(**kwargs):
    from lm_eval.tasks import TaskManager

    return TaskManager(include_defaults=False, include_path=task_folder(), **kwargs)


@pytest.fixture(scope="module")
def tasks():
    """Every task, built once by lm-eval's TaskManager (as lm-eval's test does)."""
    with pytest.MonkeyPatch.context() as patch:
        _offline_without_a_key(patch)
        return _manager().load(task_names())["tasks"]


def _eval_docs(task) -> list[dict]:
    docs = task.test_docs() if task.has_test_docs() else task.validation_docs()
    return list(islice(docs, LIMIT))


def test_every_registered_task_is_built_offline_without_a_key(tasks):
    assert sorted(tasks) == sorted(task_names())


@pytest.mark.parametrize("name", task_names())
def test_lm_eval_task_checks(name, tasks, monkeypatch):
    task = tasks[name]
    _offline_without_a_key(monkeypatch)
    # test_download: with the task's own dataset_kwargs, as its __init__ does
    task.download(task.config.dataset_kwargs)
    assert task.dataset is not None
    # the split checks
    for kind in ("training", "validation", "test"):
        has = getattr(task, f"has_{kind}_docs")()
        assert has in (True, False)
        if has:
            assert task._config[f"{kind}_split"] is not None
    assert task.should_decontaminate() in (True, False)
    if task.should_decontaminate():
        assert task._config["doc_to_decontamination_query"] is not None
    docs = _eval_docs(task)
    assert len(docs) == LIMIT, f"{name}: the fixture data holds fewer than {LIMIT} documents"
    # test_doc_to_text: the space convention
    delimiter = task.config.target_delimiter
    for doc in docs:
        text = task.doc_to_text(doc)
        assert isinstance(text, str) and text
        if delimiter.isspace():
            assert not text[-1].isspace(), \
                f"{name}: doc_to_text ends in whitespace and target_delimiter {delimiter!r} too"
    # test_create_choices / test_doc_to_target
    if "multiple_choice" in task._config.output_type:
        assert all(isinstance(choices, list) for choices in map(task.doc_to_choice, docs))
    assert all(isinstance(task.doc_to_target(doc), str) for doc in docs)
    # test_build_all_requests, with lm-eval's own arguments (rank 1 of a world of 1)
    task.build_all_requests(rank=1, limit=LIMIT, world_size=1)
    assert task.instances
    # test_construct_requests: one request per document
    requests = [task.construct_requests(doc=doc, ctx=task.doc_to_text(doc)) for doc in docs]
    assert len(requests) == LIMIT


@pytest.mark.parametrize("name", task_names())
def test_the_prompt_sent_is_the_benchmarks_prompt(name, tasks, monkeypatch):
    """What lm-eval sends the model (``build_all_requests``' context, zero-shot) is
    ``Benchmark.prompt`` unchanged: ``target_delimiter`` adds nothing to it."""
    task = tasks[name]
    _offline_without_a_key(monkeypatch)
    benchmark, variant = registry.task_variant(name)
    options = benchmark.options(dict(variant.options), strict=False)
    prompts = {benchmark.item_id(item): benchmark.prompt(item, options)
               for item in benchmark.load(options)}
    task.build_all_requests(rank=0, limit=LIMIT, world_size=1)
    assert len(task.instances) == LIMIT
    for instance in task.instances:
        assert instance.arguments[0] == prompts[instance.doc["id"]], name


# ------------------------------------------------------------- include_defaults=False


def test_a_task_manager_without_defaults_indexes_none_of_our_tasks(tmp_path):
    """As lm-eval's tests/test_task_manager.py expects of ``include_defaults=False``: only
    the given include path is indexed (the ``lm_eval`` command, which keeps lm-eval's
    defaults, still finds every task: tests/test_registration.py)."""
    from lm_eval.tasks import TaskManager

    (tmp_path / "custom_task.yaml").write_text(
        "task: custom_task\ndataset_path: json\noutput_type: generate_until\n"
        "doc_to_text: '{{question}}'\ndoc_to_target: '{{answer}}'\n", encoding="utf-8")
    ours = set(task_names())
    assert not ours & set(TaskManager(include_defaults=False).all_tasks)
    assert not ours & set(TaskManager(None, None, False).all_tasks)  # positional
    custom = TaskManager(include_defaults=False, include_path=str(tmp_path))
    assert custom.all_tasks == ["custom_task"]
    assert ours <= set(_manager().all_tasks)  # named explicitly, the folder is indexed


# --------------------------------------------- simple_evaluate: checked before generation


class RecordingLM:
    """An lm-eval model that records what it is asked to generate."""

    def __new__(cls):
        from lm_eval.api.model import LM

        class _Recording(LM):
            def __init__(self):
                super().__init__()
                self.prompts: list[str] = []

            def generate_until(self, requests, disable_tqdm: bool = False):
                self.prompts += [request.arguments[0] for request in requests]
                return ["I am not sure."] * len(requests)

            def loglikelihood(self, requests, disable_tqdm: bool = False):
                raise NotImplementedError

            def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
                raise NotImplementedError

        return _Recording()


def test_simple_evaluate_checks_the_judge_before_any_generation(monkeypatch, closed_port):
    from lm_eval import simple_evaluate

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    url = f"http://127.0.0.1:{closed_port}/v1"
    monkeypatch.setenv("CONDAMBIG_JUDGE_MODEL", "loopback-judge")
    monkeypatch.setenv("CONDAMBIG_JUDGE_BASE_URL", url)
    monkeypatch.setenv("CONDAMBIG_JUDGE_API_KEY", "test-key")
    monkeypatch.setenv("CONDAMBIG_JUDGE_MAX_RETRIES", "0")
    _manager().load(["condambigqa"])  # building the task asks the judge nothing
    model = RecordingLM()
    with pytest.raises(CondambigError, match="loopback-judge") as raised:
        simple_evaluate(model=model, tasks=["condambigqa"], limit=2,
                        task_manager=_manager())
    assert url in str(raised.value)
    assert model.prompts == []


def test_simple_evaluate_checks_the_agent_models_before_any_generation(monkeypatch,
                                                                      tmp_path):
    from lm_eval import simple_evaluate

    from condambig_tasks.hotpot_flm.hf_models import AgentLoadError

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    missing = str(tmp_path / "no-such-checkpoint")
    metadata = {"answering_agent": missing, "downstream_model": missing}
    _manager(metadata=metadata).load(["hotpot_flm"])  # building it loads no agent
    model = RecordingLM()
    with pytest.raises(AgentLoadError, match="no-such-checkpoint"):
        simple_evaluate(model=model, tasks=["hotpot_flm"], limit=2,
                        task_manager=_manager(metadata=metadata))
    assert model.prompts == []


def test_simple_evaluate_without_a_judge_generates_and_scores(monkeypatch):
    from lm_eval import simple_evaluate

    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(FIXTURE_DATA))
    for name in list(os.environ):
        if name.startswith("CONDAMBIG_JUDGE_"):
            monkeypatch.delenv(name)
    model = RecordingLM()
    results = simple_evaluate(model=model, tasks=["ambignq"], limit=2,
                              task_manager=_manager())
    assert len(model.prompts) == 2
    assert "ambignq" in results["results"]


# ------------------------------------------------------- lm-eval's own test file, if given


def _lm_eval_tests() -> Path:
    source = os.environ.get(SOURCE_VARIABLE, "").strip()
    if not source:
        pytest.skip(f"set {SOURCE_VARIABLE} to lm-eval 0.4.13's source (its sdist, "
                    "which holds tests/) to run its own test files on our tasks")
    tests = Path(source) / "tests"
    if not (tests / "test_tasks.py").is_file():
        pytest.fail(f"{SOURCE_VARIABLE}={source}: no tests/test_tasks.py there")
    return tests


@pytest.mark.e2e
def test_lm_eval_own_task_tests(tmp_path):
    """lm-eval's ``tests/test_tasks.py`` (its parametrised class, on our task names: its
    ``tests/utils.new_tasks`` is not in the sdist, so a one-line stand-in names them) and
    ``test_task_manager.py``'s ``include_defaults=False`` test, in a subprocess with the
    start-up hook on, offline and without a key."""
    tests = _lm_eval_tests()
    copy = tmp_path / "tests"
    copy.mkdir()
    for name in ("test_tasks.py", "test_task_manager.py"):
        shutil.copy(tests / name, copy / name)
    (copy / "__init__.py").write_text("", encoding="utf-8")
    (copy / "utils.py").write_text(f"def new_tasks():\n    return {task_names()!r}\n",
                                   encoding="utf-8")
    env = subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/test_tasks.py::TestNewTasksElseDefault",
         "tests/test_task_manager.py::TestTaskManagerIntegration"
         "::test_include_defaults_false_with_custom_path"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-3000:]
    assert f"{13 * len(task_names()) + 1} passed" in result.stdout, result.stdout[-2000:]
