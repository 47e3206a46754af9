"""Real-data tier: the upstream dev.json (run with CONDAMBIG_DATA_DIR=<upstream data folder>, pytest -s).

documents.json is not available offline, so this tier scores predictions that need no
documents: the gold answers themselves (1.0 everywhere) and the paper's "majority" baseline
(always "yes", no conditions), and checks the clear error for the missing documents file.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from condambig_metrics.conditionalqa import question_categories
from condambig_tasks import data
from condambig_tasks.cli import main
from condambig_tasks.conditionalqa import loader
from condambig_tasks.conditionalqa.benchmark import ConditionalQA

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def dev_file(real_data_dir: Path) -> Path:
    path = real_data_dir / "conditionalqa" / "dev.json"
    if not path.is_file():
        pytest.skip(f"{path} not present")
    return path


def _score(capsys, predictions: list[dict], reference: Path, tmp_path: Path) -> dict:
    pred = tmp_path / "pred.json"
    pred.write_text(json.dumps(predictions))
    assert main(["conditionalqa", "--pred", str(pred), "--ref", str(reference)]) == 0
    return json.loads(capsys.readouterr().out)["metrics"]


def test_dev_statistics_match_the_paper(dev_file):
    questions = loader.load_questions("dev", path=dev_file)
    categories = [question_categories(q.official_answers()) for q in questions]
    statistics = {
        "questions": len(questions),
        "documents": len({q.url for q in questions}),
        "yesno": sum(c.yesno for c in categories),
        "extractive": sum(c.extractive for c in categories),
        "conditional": sum(c.conditional for c in categories),
        "not_answerable": sum(q.not_answerable for q in questions),
        "answers_per_question": dict(sorted(Counter(len(q.answers) for q in questions).items())),
    }
    print("\nConditionalQA dev statistics:", json.dumps(statistics))
    assert statistics["questions"] == 285 and statistics["documents"] == 59  # paper §4.5
    assert all(q.not_answerable == (not q.answers) for q in questions)
    assert statistics["yesno"] + statistics["extractive"] + statistics["not_answerable"] == 285
    assert data.sha256_of(dev_file) == loader.UPSTREAM_FILES["dev"].sha256


def test_gold_answers_score_one_everywhere(dev_file, capsys, tmp_path):
    gold = [{"id": q["id"], "answers": q["answers"]} for q in json.loads(dev_file.read_text())]
    report = _score(capsys, gold, dev_file, tmp_path)
    print("\ngold as predictions:", json.dumps(report))
    for name, value in report.items():
        if name not in ("parse_rate", "out_of_range_citations", "truncated_documents",
                        "outputs_truncated"):
            assert value == pytest.approx(1.0), name


def test_always_yes_baseline(dev_file, capsys, tmp_path):
    questions = json.loads(dev_file.read_text())
    report = _score(capsys, [{"id": q["id"], "answers": [["yes", []]]} for q in questions], dev_file, tmp_path)
    print("\nalways 'yes', no conditions:", json.dumps(report))
    # Independent computation: one predicted "yes" matches at most one reference "yes";
    # n references -> 1/n; with conditions only when that "yes" has none.
    em, em_conditions = [], []
    for q in questions:
        references = q["answers"]
        yes = [conditions for text, conditions in references if text.lower().strip(" .") == "yes"]
        em.append(1 / len(references) if yes else 0.0)
        em_conditions.append(1 / len(references) if any(not c for c in yes) else 0.0)
    assert report["em"] == pytest.approx(sum(em) / len(questions))
    assert report["em_with_conditions"] == pytest.approx(sum(em_conditions) / len(questions))
    assert report["extractive_em"] == 0.0
    assert 0.4 < report["yesno_em"] < 0.8  # the paper's test-set majority baseline: 62.2


def test_task_without_documents_names_the_file(dev_file, monkeypatch, tmp_path):
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(dev_file.parent.parent))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(data.DataUnavailableError, match="documents.json"):
        benchmark = ConditionalQA()
        benchmark.load(benchmark.options({}))
