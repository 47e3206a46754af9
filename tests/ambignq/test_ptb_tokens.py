"""``ptb_tokens`` gives NLTK's ``TreebankWordTokenizer().tokenize`` tokens (compared with
``==``) on the fixture's questions, on random text made of what the rules look at, and
(real-data tier) on every question and disambiguated question of the AmbigNQ dev file; and
scoring AmbigNQ imports neither NLTK nor SciPy.

The rules run on the standard library's ``re``; NLTK 3.9 compiles the same patterns with the
``regex`` module. The two engines' ``\\s``, ``\\d`` and ``\\w`` (hence ``\\b``) differ on a few
code points (the information separators U+001C-U+001F, digits of scripts newer than
Python's Unicode database, ``\\b`` beside combining marks and superscripts), which the random
text leaves out; no real question contains one (the real-data test)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from condambig_metrics.ambignq import ptb_tokens
from tests.conftest import FIXTURE_DATA, load_from_real_data, subprocess_env

treebank = pytest.importorskip("nltk.tokenize.treebank")
NLTK = treebank.TreebankWordTokenizer()

# the characters the rules match, letters of the contractions, and a few of other scripts
ALPHABET = st.sampled_from(list(" \t\n.,:;@#$%&?!'\"`()[]{}<>-_/0123456789")
                           + list("abcdegimnorstvwyACDGLNSTVWY")
                           + ["can", "not", "gon", "na", "wan", "'ye", "'t", "is", "was", "n't",
                              "'ll", "'RE", "...", "--", "``", "''", "é", "ß", "日本", "Ω",
                              "\u00a0", "\u2013", "\u2019"])


def _questions(items) -> list[str]:
    texts = []
    for item in items:
        texts.append(item.question)
        for annotation in item.annotations:
            for pair in getattr(annotation, "pairs", ()):
                texts += pair.question.split("|")
    return texts


@pytest.mark.parametrize("text", [
    '"Hello," he said... can\'t won\'t gonna (x) [y] --z 3,000 $5 a.b. end.',
    "'tis the d'ye wanna x 'twas", "Who's the ``Dr.'' in (U.S.) Dexter, season 1?",
    "", "   ", "a", "end.)'\"  ", ":", "x,", "1:2 a:b",
])
def test_equal_to_nltk_on_hand_picked_text(text):
    assert ptb_tokens(text) == NLTK.tokenize(text)


def test_equal_to_nltk_on_the_fixture_questions(use_fixture_data):
    from condambig_tasks import registry
    from condambig_tasks.data import load_items

    benchmark = registry.get("ambignq")
    texts = _questions(load_items(benchmark, benchmark.options({})))
    assert len(texts) > 20
    for text in texts:
        assert ptb_tokens(text) == NLTK.tokenize(text), text
        assert ptb_tokens(text.lower()) == NLTK.tokenize(text.lower()), text


@settings(max_examples=400, deadline=None)
@given(st.lists(ALPHABET, max_size=40).map("".join))
def test_equal_to_nltk_on_random_text(text):
    assert ptb_tokens(text) == NLTK.tokenize(text)


@pytest.mark.realdata
def test_equal_to_nltk_on_every_real_dev_question(real_data_dir):
    from condambig_tasks.ambignq.loader import load_questions

    questions = load_from_real_data(real_data_dir, "ambignq/dev_light.json", load_questions)
    texts = _questions(questions)
    assert len(questions) == 2002 and len(texts) > 4000
    different = [text for text in texts for case in (text, text.lower())
                 if ptb_tokens(case) != NLTK.tokenize(case)]
    assert different == []


def test_scoring_imports_neither_nltk_nor_scipy():
    """NLTK's import pulls in ``scipy.stats`` (about 1.6 s per process)."""
    code = ("import sys; from condambig_tasks import registry;"
            "from condambig_tasks.data import load_items;"
            "from condambig_metrics import ambignq as a;"
            "b = registry.get('ambignq');"
            "cases = [(i.question, i.annotations, [a.PredictedPair(p.answers[0], p.question)"
            " for p in n.pairs]) for i in load_items(b, b.options({})) for n in i.annotations"
            " if isinstance(n, a.MultipleQAs)];"
            "print(sum(a.score_question(*case).f1_edit_f1 is not None for case in cases));"
            "print(sorted(m for m in ('nltk', 'scipy') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env=subprocess_env(CONDAMBIG_DATA_DIR=str(FIXTURE_DATA)),
                            timeout=120)
    scored, imported = result.stdout.split("\n")[:2]
    assert int(scored) > 0 and imported == "[]", result.stderr[-2000:]
