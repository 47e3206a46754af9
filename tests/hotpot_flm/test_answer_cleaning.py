"""Downstream answers are cut to their first line and stripped, a stated departure from the
authors' code (which keeps the decoded text as is): the raw-string EM differs only under a
tokenizer that decodes a leading space."""

from __future__ import annotations

from pathlib import Path

from condambig_metrics.hotpot_flm import answer_em, answer_em_raw, answer_f1
from condambig_tasks.hotpot_flm.inference import first_line

README = (Path(__file__).resolve().parents[2] / "condambig_tasks" / "lm_eval_tasks"
          / "hotpot_flm" / "README.md")


def test_a_byte_level_leading_space_is_cleaned_and_only_raw_em_would_see_it():
    decoded = " yes"  # a byte-level tokenizer's decoding of the answer token
    assert first_line(decoded) == "yes" and first_line(" Paris\nThe city") == "Paris"
    assert answer_em_raw(first_line(decoded), "yes") == 1.0
    assert answer_em_raw(decoded, "yes") == 0.0  # the authors' score of the same decoding
    assert answer_em(decoded, "yes") == answer_f1(decoded, "yes") == 1.0


def test_the_task_readme_states_the_departure_with_its_counts():
    text = " ".join(README.read_text().split())
    assert "a departure: the authors keep the decoded text as it is" in text
    assert "159 of 159" in text and "83 of 159" in text
