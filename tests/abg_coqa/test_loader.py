"""Abg-CoQA loading, the three subtasks' samples, prompts."""

from __future__ import annotations

import json

import pytest

from condambig_tasks.abg_coqa.loader import (
    UPSTREAM_SHA256,
    AbgCoQADataConfig,
    load_turns,
    normalise_record,
    parse_file,
    to_upstream,
)
from condambig_tasks.abg_coqa.prompts import build_prompt
from condambig_tasks.abg_coqa.records import split_clarified_qa_sample_id
from condambig_tasks.abg_coqa.samples import build_samples
from condambig_tasks.data import CorruptDataError, DataUnavailableError, sha256_of
from tests.conftest import FIXTURE_DATA


@pytest.fixture
def val_turns(use_fixture_data):
    return load_turns(AbgCoQADataConfig(split="val"))


def test_records_are_typed(val_turns):
    turn = val_turns[1]
    assert turn.ambiguous and turn.source == "mctest" and len(turn.history) == 2
    assert turn.target.question == "What was it used for?"
    assert turn.clarification.replies[0].answers == ("fishing near the dock", "fishing", "Fishing near the dock.")
    assert turn.reference_clarification_questions == (
        "Do you mean the red boat or the blue boat?", "Are you asking about the old boat?")
    assert val_turns[0].clarification is None and not val_turns[0].ambiguous


def test_subtask_samples(val_turns):
    assert len(build_samples(val_turns, "detection")) == 5
    assert [s.id for s in build_samples(val_turns, "clarification")] == ["fxstoryone|4|2", "fxstorythree|5|1"]
    clarified = build_samples(val_turns, "clarified_qa")
    assert len(clarified) == 5  # 2 + 3 replies
    assert clarified[1].id == "fxstoryone|4|2#1" and clarified[1].reply.reply == "The blue one."
    assert split_clarified_qa_sample_id(clarified[1].id) == ("fxstoryone|4|2", 1)
    with pytest.raises(ValueError, match="unknown subtask"):
        build_samples(val_turns, "summaries")


def test_prompts_carry_story_history_question_and_reply(val_turns):
    clarified = build_samples(val_turns, "clarified_qa")[0]
    prompt = build_prompt(clarified)
    assert "Mira kept two boats" in prompt
    assert "Q: Which one did Tomas paint?\nA: the new one\nQ: Was the other one old?\nA: yes\nQ: What was it used for?" in prompt
    assert prompt.endswith("Your clarification question: Do you mean the red boat or the blue boat?\nUser: The red one.")
    assert "AMBIGUOUS" in build_prompt(build_samples(val_turns, "detection")[0])


def test_records_round_trip_through_the_upstream_format(val_turns):
    for turn in val_turns:
        assert normalise_record(json.loads(json.dumps(to_upstream(turn)))) == turn


def test_default_split_is_test(use_fixture_data):
    assert AbgCoQADataConfig().split == "test"
    assert [t.id for t in load_turns()][0] == "fxteststoryone|3|2"
    with pytest.raises(ValueError, match="unknown split 'dev'"):
        AbgCoQADataConfig(split="dev")


def test_bad_files_and_missing_data_say_what_to_do(monkeypatch, tmp_path):
    with pytest.raises(CorruptDataError, match="'data' list"):
        parse_file([], "x.json")
    with pytest.raises(CorruptDataError, match="upstream format"):
        parse_file({"data": [{"id": "1", "ambiguity": "maybe"}]}, "x.json")
    monkeypatch.setenv("CONDAMBIG_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("CONDAMBIG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CONDAMBIG_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match=r"abg_coqa/.*coqa_abg_val\.json"):
        load_turns(AbgCoQADataConfig(split="val"))


def test_pinned_digest_is_the_real_files(real_data_dir):
    path = real_data_dir / "abg_coqa" / "coqa_abg_val.json"
    if not path.is_file():
        pytest.skip("abg_coqa/coqa_abg_val.json is not in the data directory")
    assert sha256_of(path) == UPSTREAM_SHA256["val"]


def test_fixture_files_exist_for_both_splits():
    assert (FIXTURE_DATA / "abg_coqa" / "coqa_abg_val.json").is_file()
    assert (FIXTURE_DATA / "abg_coqa" / "coqa_abg_test.json").is_file()
