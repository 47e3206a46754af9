"""Hand-written model outputs for the val fixture, per subtask and sample id, with the numbers
they must score (computed by hand in the comments)."""

from __future__ import annotations

RAW_OUTPUTS: dict[str, dict[str, str]] = {
    "detection": {
        "fxstoryone|3|2": "Blue.",                               # answer F1 1.0
        "fxstoryone|4|2": "AMBIGUOUS",                           # true positive
        "fxstorytwo|2|1": "Ambiguous.",                          # false positive, answer F1 0
        "fxstorytwo|3|1": "<think>what does it lend</think>Books",  # answer F1 0.5
        "fxstorythree|5|1": "",                                  # parse failure: false negative
    },
    "clarification": {
        "fxstoryone|4|2": "Do you mean the red boat or the blue boat?",
        "fxstorythree|5|1": "Clarification question: Which tree are you asking about?",
    },
    "clarified_qa": {
        "fxstoryone|4|2#0": "fishing near the dock",  # 1.0
        "fxstoryone|4|2#1": "a picnic",               # leave-one-out (2/3 + 2/3 + 1/3) / 3
        "fxstorythree|5|1#0": "Yes",                  # 1.0
        "fxstorythree|5|1#1": "   ",                  # parse failure: 0.0
        "fxstorythree|5|1#2": "No",                   # (1 + 0.4 + 1) / 3
    },
}

EXPECTED: dict[str, dict[str, float]] = {
    "detection": {"precision": 0.5, "recall": 0.5, "f1": 0.5, "answer_f1": (1 + 0 + 0.5) / 3,
                  "parse_rate": 4 / 5},
    "clarified_qa": {"f1": (1 + 5 / 9 + 1 + 0 + 0.8) / 5, "parse_rate": 4 / 5},
}


def judge_rules() -> list[dict]:
    """Judge replies keyed on the question under judgement: 3.5/10 (weighted) and 8/10."""
    return [
        {"contains": "ACTUAL OUTPUT:\n<<<\nDo you mean the red boat or the blue boat?\n>>>",
         "scores": {"3": 0.5, "4": 0.5}},
        {"contains": "ACTUAL OUTPUT:\n<<<\nWhich tree are you asking about?\n>>>", "scores": {"8": 1.0}},
    ]


EXPECTED_JUDGE = {"judge_helpfulness": (0.35 + 0.8) / 2, "judge_helpful_rate": 0.5, "judge_failed": 0.0}
