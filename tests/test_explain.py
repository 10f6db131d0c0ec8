"""Why this score (pluie_core.explain): each word's contribution is the pair's score minus the score of
the pair with that word left out, as the same scorer gives it on its own.

On the tiny model and on the demo judge the variants are compared with ``scorer.score`` called on each
variant alone. With ``batch_size=1`` every variant goes through the same forward pass, of the same
shape, as when scored alone: equal to the last bit (``==``). With the scorer's own batches the rows are
packed together, which changes the order of float32 sums: equal to 1e-6 on the tiny model, and to
1e-4 on the demo judge (its batched scores are its single scores to ~2e-5: docs/library.md, tests/test_packed.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from pluie_core.explain import MAX_WORDS, sentence_tokens, without_word, word_contributions
from pluie_core.scorer import PluieError, PluieScorer

SOURCE = "The cat drinks water, slowly."
HYPOTHESIS = "A cat drinks milk."
# the hypothesis with each word left out, written by hand (as a person would delete it)
HYPOTHESIS_WITHOUT = ["cat drinks milk.", "A drinks milk.", "A cat milk.", "A cat drinks."]
SOURCE_WITHOUT = [
    "cat drinks water, slowly.",
    "The drinks water, slowly.",
    "The cat water, slowly.",
    "The cat drinks, slowly.",
    "The cat drinks water,.",
]


class CountingScorer:
    """A scorer's one public call, counted; a number per pair that says which pair it was."""

    def __init__(self, scorer=None):
        self.scorer, self.calls = scorer, []

    def score(self, sources, hypotheses, symmetric=False, fields=None):
        self.calls.append((list(sources), list(hypotheses)))
        if self.scorer is None:
            return np.arange(len(sources), dtype=float)
        return self.scorer.score(sources, hypotheses, symmetric=symmetric, fields=fields)


def alone(scorer, source, hypothesis, **options) -> float:
    return float(scorer.score([source], [hypothesis], **options)[0])


# ---------------------------------------------------------------- leaving a word out
@pytest.mark.parametrize(
    "sentence,word,expected",
    [
        ("A cat drinks milk.", "cat", "A drinks milk."),  # one space stays, not two
        ("A cat drinks milk.", "milk", "A cat drinks."),  # no space left before the full stop
        ("Hello world, friend", "world", "Hello, friend"),  # nor before a comma
        ("A cat drinks milk.", "A", "cat drinks milk."),  # no space left at the start
        ("Yes it is", "is", "Yes it"),  # nor at the end
        ("(hello world)", "hello", "(world)"),  # the word touched the bracket
        ("(hello world)", "world", "(hello)"),
        ("Amrozi , whom he called", "whom", "Amrozi , he called"),  # tokenised text keeps its own spacing
        ("one\ntwo three", "two", "one\nthree"),  # the whitespace before the word is kept
        ("It costs 2.5 billion", "2.5", "It costs billion"),
    ],
)
def test_leaving_a_word_out_collapses_the_space_around_it(sentence, word, expected):
    start = sentence.index(word)
    assert without_word(sentence, start, start + len(word)) == expected


def test_tokens_are_the_diffs_own_with_spans_on_the_words():
    sentence = "  Don't  say \"3.5\" — café's (naïve) okay?"
    tokens = sentence_tokens(sentence)
    from pluie_core.diff import tokenize

    assert [t for t, *_ in tokens] == [t for _, t in tokenize(sentence)]
    for token, start, end, _ in tokens:
        assert sentence[start:end] == token
    assert [t for t, _, _, is_word in tokens if is_word] == ["Don't", "say", "3.5", "café's", "naïve", "okay"]
    # decomposed accents (a combining mark) stay inside their word
    decomposed = "cafe\u0301 noir"
    assert [(t, s, e) for t, s, e, _ in sentence_tokens(decomposed)] == [("cafe\u0301", 0, 5), ("noir", 6, 10)]


# ---------------------------------------------------------------- the structure, on a counting scorer
def test_the_pair_and_every_variant_go_through_one_call():
    scorer = CountingScorer()
    explanation = word_contributions(scorer, SOURCE, HYPOTHESIS)
    [(sources, hypotheses)] = scorer.calls
    assert (sources[0], hypotheses[0]) == (SOURCE, HYPOTHESIS)
    assert sources[1:] == SOURCE_WITHOUT + [SOURCE] * 4
    assert hypotheses[1:] == [HYPOTHESIS] * 5 + HYPOTHESIS_WITHOUT
    # score 0 for the pair, k for the k-th variant: contribution = 0 − k
    assert explanation.score == 0.0
    assert [w.contribution for w in explanation.source_words] == [-1, -2, -3, -4, -5]
    assert [w.contribution for w in explanation.hypothesis_words] == [-6, -7, -8, -9]
    # punctuation is listed, in the diff's order, and not left out
    assert [(t.token, t.contribution) for t in explanation.hypothesis_tokens][-1] == (".", None)
    assert [t.token for t in explanation.source_tokens if not t.is_word] == [",", "."]


def test_a_one_word_sentence_keeps_its_word():
    scorer = CountingScorer()
    explanation = word_contributions(scorer, "Hello!", HYPOTHESIS)
    [(sources, _)] = scorer.calls
    assert "!" not in sources and "" not in sources and len(sources) == 1 + 4
    assert [(t.token, t.is_word, t.contribution) for t in explanation.source_tokens] == [
        ("Hello", True, None),
        ("!", False, None),
    ]
    assert all(w.contribution is not None for w in explanation.hypothesis_words)


def test_a_sentence_of_punctuation_or_nothing_has_no_contribution():
    scorer = CountingScorer()
    explanation = word_contributions(scorer, "", "?!")
    assert scorer.calls == [([""], ["?!"])] and explanation.source_tokens == ()
    assert [t.contribution for t in explanation.hypothesis_tokens] == [None, None]


def test_too_many_words_are_refused_before_any_scoring():
    scorer = CountingScorer()
    at_cap = " ".join(["word"] * MAX_WORDS) + "."
    assert len(word_contributions(scorer, at_cap, HYPOTHESIS).source_words) == MAX_WORDS
    scorer.calls.clear()
    with pytest.raises(
        PluieError,
        match=f"The hypothesis has 201 words; word contributions are computed for "
        f"sentences of at most {MAX_WORDS} words",
    ):
        word_contributions(scorer, SOURCE, at_cap + " more")
    with pytest.raises(PluieError, match="The source is not a text"):
        word_contributions(scorer, None, HYPOTHESIS)
    assert scorer.calls == []


# ---------------------------------------------------------------- against re-scoring, tiny model
def assert_rescoring(scorer, explanation, exact: bool, atol: float = 0.0):
    """Each contribution against score(pair) − score(variant), both scored alone by the same scorer, with
    the variants written by hand (so a naive deletion, "A  drinks milk." or "A cat drinks .", fails)."""
    full = alone(scorer, SOURCE, HYPOTHESIS)
    expected = [full - alone(scorer, s, HYPOTHESIS) for s in SOURCE_WITHOUT]
    expected += [full - alone(scorer, SOURCE, h) for h in HYPOTHESIS_WITHOUT]
    got = [w.contribution for w in explanation.source_words + explanation.hypothesis_words]
    if exact:
        assert explanation.score == full and got == expected
    else:
        np.testing.assert_allclose([explanation.score] + got, [full] + expected, atol=atol, rtol=0)


def test_each_contribution_is_rescoring_without_the_word_tiny_model(tiny_model_builder):
    path = tiny_model_builder(arch="llama", tokenizer="bpe")
    batched = PluieScorer(str(path), template="fs-direct")
    counted = CountingScorer(batched)
    explanation = word_contributions(counted, SOURCE, HYPOTHESIS)
    assert len(counted.calls) == 1 and batched.last_run["cached"] == 1 + 9  # one call, the prefix shared
    assert batched.last_run["batches"] == 1
    assert_rescoring(batched, explanation, exact=False, atol=1e-6)
    contributions = [w.contribution for w in explanation.source_words + explanation.hypothesis_words]
    assert len(set(np.round(contributions, 4))) == len(contributions)  # distinct: a word off by one would show
    one_by_one = PluieScorer((batched.model, batched.tokenizer), template="fs-direct", batch_size=1)
    assert_rescoring(one_by_one, word_contributions(one_by_one, SOURCE, HYPOTHESIS), exact=True)


def test_symmetric_contributions_rescore_both_directions(tiny_model_builder):
    scorer = PluieScorer(str(tiny_model_builder(arch="llama", tokenizer="bpe")), template="direct", batch_size=1)
    explanation = word_contributions(scorer, SOURCE, HYPOTHESIS, symmetric=True)
    full = alone(scorer, SOURCE, HYPOTHESIS, symmetric=True)
    assert explanation.score == full != alone(scorer, SOURCE, HYPOTHESIS)
    assert [w.contribution for w in explanation.hypothesis_words] == [
        full - alone(scorer, SOURCE, h, symmetric=True) for h in HYPOTHESIS_WITHOUT
    ]


# ---------------------------------------------------------------- against re-scoring, the demo judge
@pytest.fixture(scope="module")
def demo_scorer(demo):
    """The demo judge's weights as the session loaded them from its GGUF file (tests/demo_model.py)."""
    return PluieScorer(demo, template="direct", device="cpu")


@pytest.mark.slow
def test_each_contribution_is_rescoring_without_the_word_demo_judge(demo_scorer):
    """The demo judge loaded once for the test process (tests/demo_model.py: 7-30 s), then a few seconds."""
    explanation = word_contributions(demo_scorer, SOURCE, HYPOTHESIS)
    assert demo_scorer.last_run["cached"] == 1 + 9 and demo_scorer.last_run["batches"] == 1
    assert_rescoring(demo_scorer, explanation, exact=False, atol=1e-4)
    one_by_one = PluieScorer((demo_scorer.model, demo_scorer.tokenizer), template="direct", batch_size=1)
    assert_rescoring(one_by_one, word_contributions(one_by_one, SOURCE, HYPOTHESIS), exact=True)
