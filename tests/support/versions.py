"""The scoring fingerprint of a benchmark, and the recorded one per task version.

A task version must change whenever what a run reports could change: the metric spec
(names, aggregation, direction, judge, scale, headline order), the option defaults, the
prompts, the lm-eval generation settings and, for a judged benchmark, what its judge is
asked (every judge criterion its package defines, rendered by the shared G-Eval template).
The fingerprint is a sha256 over those, with the prompts taken from the hand-written
fixture items under every lm-eval variant's options; ``tests/fixtures/versions.json``
records it beside the version it belongs to.

After a deliberate change: bump the benchmark's ``version`` (lm-eval's ``metadata.version``
follows it), add a CHANGELOG.md line, then record the new fingerprint:

    CONDAMBIG_DATA_DIR=tests/fixtures/data python -m tests.support.versions --record
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import pkgutil
from pathlib import Path
from typing import Any

from condambig_metrics.judge import JudgeCriterion, JudgeRequest
from condambig_metrics.judge.prompt import render_prompt
from condambig_tasks import registry
from condambig_tasks.benchmark import Benchmark, json_safe, options_to_json, uses_judge

RECORD = Path(__file__).resolve().parents[1] / "fixtures" / "versions.json"


def fingerprint(benchmark: Benchmark, variants: list[tuple[dict[str, Any], Any]]) -> str:
    """sha256 over the metric spec, the option defaults, and every variant's generation
    settings and fixture prompts. ``variants``: (task options, lm-eval generation_kwargs)."""
    parts: dict[str, Any] = {
        "metrics": [[spec.name, spec.aggregation, spec.higher_is_better, spec.judge,
                     spec.scale] for spec in benchmark.metric_specs],
        "headline": list(benchmark.headline_metrics),
        "defaults": options_to_json(benchmark, benchmark.options({})),
        "variants": [],
    }
    if uses_judge(benchmark):
        parts["judge"] = judge_prompts(benchmark)
    for task_options, generation in variants:
        options = benchmark.options(task_options)
        items = benchmark.load(options)
        parts["variants"].append({
            "options": options_to_json(benchmark, options),
            "generation": json_safe(generation),
            "max_tokens": benchmark.max_tokens(options),
            "prompts": [benchmark.prompt(item, options) for item in items],
        })
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def judge_prompts(benchmark: Benchmark) -> list[str]:
    """What the judge is asked, per criterion: every module-level ``JudgeCriterion`` of the
    benchmark's package, rendered by the shared template with placeholder texts (a change
    to a criterion or to the template changes it)."""
    package = type(benchmark).__module__.rpartition(".")[0]
    criteria: dict[str, JudgeCriterion] = {}
    modules = [importlib.import_module(package)]
    modules += [importlib.import_module(info.name) for info in
                pkgutil.walk_packages(modules[0].__path__, package + ".")]
    for module in modules:
        for value in vars(module).values():
            if isinstance(value, JudgeCriterion):
                criteria[value.name] = value
    return [render_prompt(JudgeRequest(criterion, "INPUT", "ACTUAL OUTPUT", "EXPECTED OUTPUT"))
            for _, criterion in sorted(criteria.items())]


def benchmark_fingerprint(name: str) -> str:
    from tests.test_contract import lm_eval_variants

    benchmark = registry.get(name)
    variants = [(variant.task_options, variant.config.get("generation_kwargs"))
                for variant in lm_eval_variants(name)]
    return fingerprint(benchmark, variants)


def recorded() -> dict[str, dict[str, str]]:
    return json.loads(RECORD.read_text(encoding="utf-8")) if RECORD.is_file() else {}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true",
                        help="write the current versions and fingerprints")
    arguments = parser.parse_args()
    current = {name: {"version": registry.get(name).version,
                      "fingerprint": benchmark_fingerprint(name)}
               for name in registry.BENCHMARKS}
    if arguments.record:
        RECORD.write_text(json.dumps(current, indent=2, sort_keys=True) + "\n")
    print(json.dumps(current, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
