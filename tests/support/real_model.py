"""The real model (SmolLM2-135M-Instruct) through every front end: the commands and a server.

Shared by the real-model test tier (``tests/real_model/``) and the evaluation report
(``benchmarks/evaluation_report.py``), so both run exactly the same commands:

- lm-eval ``hf`` (local, ``--apply_chat_template``) and Inspect ``hf/<folder>``;
- the same folder served by ``transformers serve`` on 127.0.0.1 (:class:`ServedModel`) and
  evaluated as an API model: lm-eval ``local-chat-completions``, Inspect ``openai-api/``.

Every route is greedy: lm-eval's tasks are; Inspect's ``hf`` provider samples unless given
``-M do_sample=false``, and API models get ``--temperature 0``.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from condambig_tasks import local_model

# The name the server is asked for: `transformers serve` pinned to a folder answers only
# requests naming that folder as given on its command line, so it is started from the
# folder's parent with this relative name (an API model name with no slashes).
SERVED_NAME = local_model.MODEL_NAME
# The Inspect provider name of the served model: OPENAI_API_KEY-style variables
# <SERVICE>_BASE_URL / <SERVICE>_API_KEY configure it.
INSPECT_SERVICE = "smollm"
SERVER_START_SECONDS = 300.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServedModel:
    """``transformers serve`` of a model folder on 127.0.0.1, started and stopped here."""

    def __init__(self, folder: Path, log_file: Path, continuous_batching: bool = False,
                 env: Mapping[str, str] | None = None):
        self.folder = Path(folder)
        self.env = dict(os.environ if env is None else env)
        self.log_file = Path(log_file)
        self.continuous_batching = continuous_batching
        self.port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def __enter__(self) -> ServedModel:
        command = [str(Path(sys.executable).parent / "transformers"), "serve", SERVED_NAME,
                   "--host", "127.0.0.1", "--port", str(self.port), "--dtype", "float32",
                   "--device", "cpu", "--log-level", "warning"]
        if self.continuous_batching:
            command.append("--continuous-batching")
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("w") as log:
            self.process = subprocess.Popen(command, cwd=self.folder.parent, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True,
                                            env={**self.env, "HF_HUB_OFFLINE": "1"})
        self._wait_until_ready()
        return self

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {self.process.returncode}: "
                                   f"{self.log_file.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/models", timeout=5) as reply:
                    if SERVED_NAME in reply.read().decode():
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(1)
        self.__exit__(None, None, None)
        raise RuntimeError(f"transformers serve did not answer in {SERVER_START_SECONDS} s")

    def __exit__(self, *exc) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()

    def environment(self) -> dict[str, str]:
        """What lm-eval's and Inspect's OpenAI clients need for this server (no real key)."""
        service = INSPECT_SERVICE.upper()
        return {"OPENAI_API_KEY": "local", f"{service}_BASE_URL": self.base_url,
                f"{service}_API_KEY": "local"}

    def judge_environment(self) -> dict[str, str]:
        """The served model as the judge of lm-eval and condambig-score."""
        return {"CONDAMBIG_JUDGE_MODEL": SERVED_NAME, "CONDAMBIG_JUDGE_BASE_URL": self.base_url,
                "CONDAMBIG_JUDGE_API_KEY": "local"}


@dataclass(frozen=True)
class Route:
    """One way of running the model: a front end and where the model runs."""

    name: str
    framework: str  # "lm_eval" or "inspect"
    served: bool


ROUTES = (Route("lm_eval_hf", "lm_eval", False), Route("inspect_hf", "inspect", False),
          Route("lm_eval_served", "lm_eval", True), Route("inspect_served", "inspect", True))


def eos_token(folder: Path) -> str:
    """The model's end-of-turn token, from its tokenizer configuration."""
    return json.loads((Path(folder) / "tokenizer_config.json").read_text())["eos_token"]


def lm_eval_command(route: Route, folder: Path, tasks: Sequence[str], output_path: Path, *,
                    limit: int | None, batch_size: int, max_gen_toks: int | None = None,
                    metadata: Mapping | None = None, base_url: str | None = None,
                    concurrency: int = 1, chat_template: bool = True,
                    response_cache: Path | None = None) -> list[str]:
    """An lm-eval command of ``route`` (``hf`` or the served model) writing its samples;
    with ``response_cache``, lm-eval's own ``--use_cache`` keeps every finished generation
    there, so that an interrupted run resumes where it stopped."""
    if route.served:
        # the model's end token as the stop sequence: without a tokenizer lm-eval cannot tell
        # it and sends none (null), which `transformers serve` answers with HTTP 500
        model = ["--model", "local-chat-completions", "--model_args",
                 f"model={SERVED_NAME},base_url={base_url}/chat/completions,"
                 f"tokenizer_backend=None,num_concurrent={concurrency},max_retries=3,"
                 f"eos_string={eos_token(folder)}"]
    else:
        model = ["--model", "hf", "--model_args", f"pretrained={folder},dtype=float32",
                 "--device", "cpu", "--batch_size", str(batch_size)]
    command = [str(Path(sys.executable).parent / "lm_eval"), *model,
               "--tasks", ",".join(tasks), "--log_samples", "--output_path", str(output_path)]
    if chat_template:
        command.append("--apply_chat_template")
    if limit is not None:
        command += ["--limit", str(limit)]
    if max_gen_toks is not None:
        command += ["--gen_kwargs", f"max_gen_toks={max_gen_toks}"]
    if metadata:
        command += ["--metadata", json.dumps(metadata)]
    if response_cache is not None:
        command += ["--use_cache", str(response_cache)]
    return command


def inspect_command(route: Route, folder: Path, tasks: Sequence[str], log_dir: Path, *,
                    limit: int | None, batch_size: int, max_tokens: int | None = None,
                    task_options: Mapping[str, str] | None = None,
                    concurrency: int = 1, grader: str | None = None) -> list[str]:
    """An ``inspect eval`` command of ``route`` over ``tasks`` (``condambig/<task>`` names,
    with ``-T`` options) writing JSON logs to ``log_dir``."""
    if route.served:
        model = ["--model", f"openai-api/{INSPECT_SERVICE}/{SERVED_NAME}", "--temperature", "0",
                 "--max-connections", str(concurrency)]
    else:
        model = ["--model", f"hf/{folder}", "-M", "do_sample=false", "-M", "device=cpu",
                 "-M", f"batch_size={batch_size}", "--max-connections", str(batch_size)]
    command = [str(Path(sys.executable).parent / "inspect"), "eval", *tasks, *model,
               "--log-dir", str(log_dir), "--log-format", "json", "--display", "none"]
    if limit is not None:
        command += ["--limit", str(limit)]
    if max_tokens is not None:
        command += ["--max-tokens", str(max_tokens)]
    for key, value in (task_options or {}).items():
        command += ["-T", f"{key}={value}"]
    if grader:
        command += ["--model-role", f"grader={grader}"]
    return command


# ---------------------------------------------------------------- what to run
@dataclass(frozen=True)
class TaskSpec:
    """One greedy task of the suite: its benchmark, lm-eval task and Inspect invocation."""

    benchmark: str
    task: str  # the lm-eval task name (the variant's)
    inspect_task: str  # condambig/<task>
    inspect_options: tuple[tuple[str, str], ...]  # the -T options it needs


@functools.cache
def greedy_tasks() -> tuple[TaskSpec, ...]:
    """Every variant of every registered benchmark that decodes greedily (the sampled
    variants, such as condambigqa_paper, cannot agree across front ends), from the specs:
    a new benchmark is covered without editing this list."""
    from condambig_tasks import registry
    from condambig_tasks.docs_tables import inspect_command, installed_inspect_tasks

    inspect_tasks = installed_inspect_tasks()
    specs = []
    for name in registry.BENCHMARKS:
        benchmark = registry.get(name)
        for variant in benchmark.variants:
            if variant.temperature is not None:
                continue
            command = inspect_command(benchmark, variant, inspect_tasks)
            task, *options = command.split(" -T ")
            specs.append(TaskSpec(name, variant.task, task, tuple(
                tuple(option.split("=", 1)) for option in options)))
    return tuple(specs)


def inspect_groups(specs: Sequence[TaskSpec]) -> list[tuple[tuple[str, ...], dict[str, str]]]:
    """The Inspect tasks grouped by their ``-T`` options: one ``inspect eval`` per group
    (``-T`` reaches every task of a command)."""
    groups: dict[tuple[tuple[str, str], ...], list[str]] = {}
    for spec in specs:
        groups.setdefault(spec.inspect_options, []).append(spec.inspect_task)
    return [(tuple(tasks), dict(options)) for options, tasks in groups.items()]


def agent_environment(folder: Path) -> dict[str, str]:
    """HotpotQA-FLM's answering agent and downstream model: the paper's flan-t5-base needs
    the hub, so the real runs use the same local model (a causal checkpoint) for both."""
    return {"CONDAMBIG_FLM_ANSWERING_AGENT": str(folder),
            "CONDAMBIG_FLM_DOWNSTREAM_MODEL": str(folder), "CONDAMBIG_FLM_DEVICE": "cpu"}


# ---------------------------------------------------------------- reading the runs
@dataclass(frozen=True)
class TaskRun:
    """One task's run as a front end logged it."""

    route: str
    benchmark: str
    task: str
    log: Path  # the file or folder condambig-score --from-log reads
    outputs: Mapping[str, str]  # sample id -> the text the scorer read


def lm_eval_runs(route: str, output_path: Path, specs: Sequence[TaskSpec]) -> dict[str, TaskRun]:
    """Each task's run in an lm-eval ``--output_path`` folder (by its samples file)."""
    from condambig_tasks import registry, run_logs

    runs = {}
    for spec in specs:
        [samples] = [path for path in sorted(output_path.rglob(f"samples_{spec.task}_*.jsonl"))
                     if path.name[len(f"samples_{spec.task}_"):][:1].isdigit()]
        logged = run_logs.read_run(registry.get(spec.benchmark), samples)
        runs[spec.task] = TaskRun(route, spec.benchmark, spec.task, samples,
                                  logged.outputs_by_id())
    return runs


def inspect_runs(route: str, log_dirs: Mapping[str, Path],
                 specs: Sequence[TaskSpec]) -> dict[str, TaskRun]:
    """Each task's run in the log folder of its ``inspect eval`` (``log_dirs``: task ->
    folder), found by the Inspect task name."""
    from condambig_tasks import registry, run_logs

    runs = {}
    for spec in specs:
        folder = log_dirs[spec.task]
        name = spec.inspect_task.split("/", 1)[1]
        [log] = [path for path in sorted(folder.glob("*.json"))
                 if json.loads(path.read_text())["eval"]["task"].endswith("/" + name)]
        logged = run_logs.read_run(registry.get(spec.benchmark), log)
        runs[spec.task] = TaskRun(route, spec.benchmark, spec.task, log,
                                  logged.outputs_by_id())
    return runs
