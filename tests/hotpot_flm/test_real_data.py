"""Real upstream files (CONDAMBIG_DATA_DIR=<upstream data folder>): statistics the paper states.

The HotpotQA file in that folder is a 53-example subset of hotpot_dev_distractor_v1.json; the TSV
is the authors' complete file.
"""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

import pytest

from condambig_tasks.hotpot_flm.annotated import load_rows
from condambig_tasks.hotpot_flm.hotpotqa_source import load_hotpot_examples
from condambig_tasks.hotpot_flm.loader import load_examples
from condambig_tasks.hotpot_flm.masking import supporting_keys
from condambig_tasks.hotpot_flm.records import facts_in_order, render_context

pytestmark = pytest.mark.realdata


@pytest.fixture
def real_data(real_data_dir: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name, folder in (("hotpotqa", "hotpot_dev_distractor_v1.json"),
                         ("hotpot_flm", "gt_dataset_v3_400_of_600.tsv")):
        if not (real_data_dir / name / folder).is_file():
            pytest.skip(f"{real_data_dir}/{name}/{folder} not present")
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(real_data_dir))
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    return real_data_dir


def test_full_split_statistics(real_data):
    hotpot = load_hotpot_examples()
    examples = load_examples("full")
    supporting = [len(supporting_keys(e)) for e in hotpot]
    candidates = [len(e.candidates) for e in examples]
    distractors = [len(e.candidates) - e.supporting_count for e in examples]
    mean_supporting = statistics.mean(supporting)
    print(f"\nHotpotQA sample: {len(hotpot)} examples, {len(examples)} FLM examples; "
          f"supporting facts per example mean {mean_supporting:.2f} "
          f"(sd {statistics.stdev(supporting):.2f}; paper 2.43, sd 0.71); "
          f"candidates per example mean {statistics.mean(candidates):.1f} "
          f"(min {min(candidates)}, max {max(candidates)}); distractor facts mean "
          f"{statistics.mean(distractors):.1f} (sd {statistics.stdev(distractors):.1f}; "
          f"paper 39.2, sd 11.4)")
    assert len(examples) == len(hotpot) == 53
    assert round(mean_supporting, 2) == 2.43
    for example in examples:
        assert example.candidates[example.masked_index] == example.masked_fact
        assert example.masked_fact.render() not in example.incomplete_context
        assert example.masked_fact.sentence in example.complete_context


def test_tsv_has_600_rows_400_annotated(real_data):
    rows = load_rows()
    annotated = sum(row.human_question is not None for row in rows)
    text = (real_data / "hotpot_flm" / "gt_dataset_v3_400_of_600.tsv").read_text(encoding="utf-8")
    naive = list(csv.DictReader(io.StringIO(text, newline=""), delimiter="\t"))
    naive_annotated = sum(bool((row["q2_gt"] or "").strip()) for row in naive)
    print(f"\nTSV: {len(rows)} rows, {annotated} with a human question (paper n = 400); "
          f"read with csv's default quoting: {len(naive)} rows, {naive_annotated} annotated "
          f"(four fields opening with a literal quote swallow the rows after them)")
    assert (len(rows), annotated) == (600, 400)
    assert (len(naive), naive_annotated) == (596, 396)
    assert len({row.id for row in rows}) == 600


def test_tsv_masked_facts_are_supporting_facts_of_hotpotqa(real_data):
    hotpot = {e.id: e for e in load_hotpot_examples()}
    rows = [row for row in load_rows() if row.id in hotpot]
    context_matches = 0
    for row in rows:
        example = hotpot[row.id]
        support = facts_in_order(example, supporting_keys(example))
        wanted = (row.masked_title, " ".join(row.masked_sentence.split()))
        squeezed = [(fact.title, " ".join(fact.sentence.split())) for fact in support]
        assert wanted in squeezed, f"{row.id}: masked fact is not a supporting fact"
        # the authors' incomplete context is our rendering of the other supporting facts
        others = [fact for fact, key in zip(support, squeezed, strict=True) if key != wanted]
        context_matches += render_context(others) == row.incomplete_context
    print(f"\n{len(rows)} TSV rows have their HotpotQA example in the sample; every masked "
          f"fact is a supporting fact; fc_masked equals our rendering for {context_matches}")
    assert len(rows) == 53
    assert context_matches == len(rows)


def test_test_split_builds_from_the_sample(real_data):
    examples = load_examples("test")
    print(f"\ntest split from the sample: {len(examples)} annotated examples built")
    assert len(examples) == sum(
        1 for row in load_rows()
        if row.human_question and row.id in {e.id for e in load_hotpot_examples()}
    )
    assert all(example.human_question for example in examples)
