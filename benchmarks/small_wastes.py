"""Before / after, in one run: the provenance digest (``records_sha256``) at 10,000
CondAmbigQA items, AmbigNQ's question metrics (``score_question``) with every
multi-answer annotation of the data scored as a prediction against its question (each
case once, so the per-text caches gain only within a question), and AmbigNQ's question
tokens: NLTK's ``TreebankWordTokenizer`` (its patterns behind NLTK's ReDoS timer, and the
import of ``nltk``) against the same rules on the standard library's ``re``.

"Before" is the previous computation, kept here as the definition: records converted with
``dataclasses.asdict`` then ``json_safe`` (and built a second time for lm-eval's docs); BLEU
through NLTK's ``corpus_bleu`` per (gold, predicted) pair, edits and answer normalisation
recomputed per pair. Both sides must give the same digest and the same scores (checked).
The items are the fixture data's (or ``CONDAMBIG_DATA_DIR``'s); CondAmbigQA's repeated.

    python benchmarks/small_wastes.py [--records 10000]
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
os.environ.setdefault("CONDAMBIG_DATA_DIR", str(REPO / "tests" / "fixtures" / "data"))

import condambig_metrics.ambignq as ambignq  # noqa: E402
from condambig_metrics.text import normalize_answer  # noqa: E402
from condambig_tasks import registry  # noqa: E402
from condambig_tasks.benchmark import json_safe  # noqa: E402
from condambig_tasks.data import load_items  # noqa: E402
from condambig_tasks.provenance import records_sha256  # noqa: E402


def _repeat(items: list, count: int) -> list:
    return (items * (count // len(items) + 1))[:count]


def _digest_before(items: list) -> str:
    digest = hashlib.sha256()
    for item in items:
        record = json_safe(dataclasses.asdict(item))
        digest.update(json.dumps(record, sort_keys=True, ensure_ascii=False,
                                 separators=(",", ":")).encode("utf-8") + b"\n")
    return digest.hexdigest()


def digest(count: int) -> None:
    benchmark = registry.get("condambigqa")
    items = _repeat(load_items(benchmark, benchmark.options({})), count)
    start = time.perf_counter()
    before = _digest_before(items)
    # lm-eval / Inspect built every record a second time for their samples
    [json_safe(dataclasses.asdict(item)) for item in items]
    before_s = time.perf_counter() - start
    start = time.perf_counter()
    records = [benchmark.to_record(item) for item in items]  # shared with the samples
    after = records_sha256(benchmark, items, records)
    after_s = time.perf_counter() - start
    assert before == after, "the digest changed"
    print(f"records_sha256 + sample records, {count:,} CondAmbigQA items: "
          f"before {before_s:.2f} s, after {after_s:.2f} s ({before_s / after_s:.1f}x), "
          "same digest")


def _pycoco_epsilon(p_n: list[Fraction], **_: object) -> list[float]:
    return [(p.numerator + 1e-15) / (p.denominator + 1e-9) for p in p_n]


def _bleu_before(predicted: str, references) -> tuple[float, ...]:
    from nltk.translate.bleu_score import corpus_bleu

    hypothesis = predicted.split()
    reference_tokens = [reference.split() for reference in references]
    if not hypothesis or not any(reference_tokens):
        return (0.0, 0.0, 0.0, 0.0)
    scores = corpus_bleu([reference_tokens], [hypothesis],
                         weights=[(1.0,), (0.5, 0.5), (1 / 3, 1 / 3, 1 / 3), (0.25,) * 4],
                         smoothing_function=_pycoco_epsilon)
    if not isinstance(scores, list):
        return (0.0, 0.0, 0.0, 0.0)
    return tuple(float(score) for score in scores)


def _edit_f1_before(prompt: str, predicted: str, references) -> float:
    prompt_tokens = prompt.split(" ")
    predicted_edits = ambignq.question_edits(prompt_tokens, predicted.split(" "))
    best = 0.0
    for reference in references:
        reference_edits = ambignq.question_edits(prompt_tokens, reference.split(" "))
        if not reference_edits and not predicted_edits:
            best = max(best, 1.0)
        elif reference_edits and predicted_edits:
            best = max(best, ambignq.greedy_set_f1(predicted_edits, reference_edits,
                                                   lambda a, b: a == b))
    return best


def _answer_matches_before(acceptable, prediction: str) -> bool:
    normalised = normalize_answer(prediction)
    return any(normalize_answer(candidate) == normalised for candidate in acceptable)


def _score_all(cases: list) -> tuple[list, float]:
    start = time.perf_counter()
    scores = [ambignq.score_question(*case) for case in cases]
    return scores, time.perf_counter() - start


def _clear_caches() -> None:
    for cached in (ambignq._ngrams, ambignq._edits, ambignq._normalised_answer,
                   ambignq.normalize_question):
        cached.cache_clear()


def question_metrics() -> None:
    benchmark = registry.get("ambignq")
    cases = []
    for item in load_items(benchmark, benchmark.options({})):
        for annotation in item.annotations:
            if isinstance(annotation, ambignq.MultipleQAs):  # an annotator as the prediction
                cases.append((item.question, item.annotations, [
                    ambignq.PredictedPair(pair.answers[0], pair.question.split("|")[0])
                    for pair in annotation.pairs]))
    _bleu_before("a", ["a"])
    patched = {"question_bleu": _bleu_before, "edit_f1": _edit_f1_before,
               "answer_matches": _answer_matches_before}
    saved = {name: getattr(ambignq, name) for name in patched}
    for name, function in patched.items():
        setattr(ambignq, name, function)
    _clear_caches()
    try:
        before, before_s = _score_all(cases)
    finally:
        for name, function in saved.items():
            setattr(ambignq, name, function)
    _clear_caches()
    after, after_s = _score_all(cases)
    assert before == after, "the scores changed"
    print(f"AmbigNQ score_question, {len(cases):,} (question, annotation as prediction) "
          "cases, each once: "
          f"before {before_s:.2f} s, after {after_s:.2f} s ({before_s / after_s:.1f}x), "
          "identical scores")


def _best_of(rounds: int, work) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def _import_seconds(module: str, rounds: int = 5) -> float:
    """Median wall time of a fresh interpreter importing ``module`` (minus a bare start)."""
    def once(code: str) -> float:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        return time.perf_counter() - start
    bare = statistics.median(once("pass") for _ in range(rounds))
    return statistics.median(once(f"import {module}") for _ in range(rounds)) - bare


def question_tokens() -> None:
    from nltk.tokenize import TreebankWordTokenizer

    benchmark = registry.get("ambignq")
    texts = []
    for item in load_items(benchmark, benchmark.options({})):
        texts.append(item.question.lower())
        for annotation in item.annotations:
            if isinstance(annotation, ambignq.MultipleQAs):
                texts += [part.lower() for pair in annotation.pairs
                          for part in pair.question.split("|")]
    nltk_tokenizer = TreebankWordTokenizer()
    assert [nltk_tokenizer.tokenize(t) for t in texts] == [ambignq.ptb_tokens(t) for t in texts]
    before = _best_of(3, lambda: [nltk_tokenizer.tokenize(t) for t in texts])
    after = _best_of(3, lambda: [ambignq.ptb_tokens(t) for t in texts])
    print(f"AmbigNQ question tokens, {len(texts):,} questions (best of 3): NLTK "
          f"{before:.3f} s, standard re {after:.3f} s ({before / after:.1f}x), identical tokens")
    nltk_import = _import_seconds("nltk.tokenize")
    ours = _import_seconds("condambig_metrics.ambignq")
    print(f"import (fresh interpreter, median of 5, bare start subtracted): nltk.tokenize "
          f"{nltk_import:.2f} s (scipy.stats with it), condambig_metrics.ambignq "
          f"{max(ours, 0.0):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    print(f"data: {os.environ['CONDAMBIG_DATA_DIR']}")
    digest(args.records)
    question_metrics()
    question_tokens()


if __name__ == "__main__":
    main()
