"""Baselines beside PLUIE: values, input order, the registry's direction flags."""

import math
from collections import Counter

import numpy as np
import pytest

from pluie_core.baselines import (
    BASELINES,
    HIGHER_IS_SIMILAR,
    bleu,
    bleu_paper,
    chrf,
    compute_baselines,
    levenshtein,
    sbert_cosine,
)
from pluie_core.io import load_pairs
from tests.paths import DATASETS

SOURCES = ["kitten", "The cat drinks water.", "The cat drinks water.", "abc"]
HYPOTHESES = ["sitting", "The cat drinks water.", "Stock markets fell sharply today.", ""]


def test_levenshtein_is_edit_distance_over_the_longer_length():
    values = levenshtein(SOURCES, HYPOTHESES)
    np.testing.assert_allclose(values, [3 / 7, 0.0, values[2], 1.0])
    assert 0.5 < values[2] <= 1
    assert levenshtein(["", ""], ["", "ab"]).tolist() == [0.0, 1.0]


def test_bleu_and_chrf_are_sentence_level_sacrebleu():
    import sacrebleu

    b, c = bleu(SOURCES, HYPOTHESES), chrf(SOURCES, HYPOTHESES)
    assert b[1] == pytest.approx(100) and c[1] == pytest.approx(100)
    assert b[2] < 10 and c[2] < 30
    for i, (s, h) in enumerate(zip(SOURCES, HYPOTHESES)):
        assert c[i] == pytest.approx(sacrebleu.sentence_chrf(h, [s]).score)
    # Per-pair values, in input order.
    np.testing.assert_allclose(chrf(SOURCES[::-1], HYPOTHESES[::-1]), c[::-1])


def torchtext_bleu(candidate: str, reference: str, max_n: int = 4) -> float:
    """torchtext.data.metrics.bleu_score([candidate.split()], [[reference.split()]]) with its default
    max_n=4 and equal weights, transcribed from torchtext 0.18 (the paper's BLEU, footnote 1)."""
    cand, ref = candidate.split(), reference.split()

    def ngrams(tokens):
        return Counter(tuple(tokens[i : i + n]) for n in range(1, max_n + 1) for i in range(len(tokens) - n + 1))

    clipped = [0] * max_n
    for gram, count in (ngrams(cand) & ngrams(ref)).items():
        clipped[len(gram) - 1] += count
    total = [max(len(cand) - i, 0) for i in range(max_n)]
    if min(clipped) == 0:
        return 0.0
    score = math.exp(sum(math.log(c / t) for c, t in zip(clipped, total)) / max_n)
    return score * math.exp(min(1 - len(ref) / len(cand), 0))


def test_bleu_paper_is_torchtexts_unsmoothed_bleu_on_whitespace_tokens():
    pairs = load_pairs(DATASETS / "mrpc" / "msr_paraphrase_test.txt").head(300)
    sources, hypotheses = pairs["source"].tolist(), pairs["hypothesis"].tolist()
    values = bleu_paper(sources, hypotheses)
    expected = [torchtext_bleu(h, s) for s, h in zip(sources, hypotheses)]
    np.testing.assert_allclose(values, expected, rtol=1e-9, atol=1e-12)
    assert 0 < (values == 0).mean() < 0.5 and values.max() <= 1
    # unsmoothed: one n-gram order without a match (here no shared 4-gram, or under 4 tokens) gives 0,
    # where sacreBLEU's default smooths it; punctuation stays on its word ("water." is not "water")
    few = bleu_paper(
        ["The cat drinks water.", "The cat drinks water.", "a b c", "The cat drinks water ."],
        ["The cat drinks water.", "The dog drinks milk.", "a b c", "The cat drinks water."],
    )
    assert few.tolist() == pytest.approx(
        [1.0, 0.0, 0.0, torchtext_bleu("The cat drinks water.", "The cat drinks water .")]
    )
    assert few[3] == 0.0 and bleu(["The cat drinks water."], ["The dog drinks milk."])[0] > 0


def test_sbert_cosine_uses_the_offline_minilm_model():
    values = sbert_cosine(
        ["The cat drinks water.", "The cat drinks water.", "A man is playing a guitar."],
        ["The cat drinks water.", "Stock markets fell sharply today.", "Someone plays the guitar."],
    )
    assert values[0] == pytest.approx(1.0, abs=1e-5)
    assert values[2] > values[1] + 0.3  # a paraphrase is closer than an unrelated sentence
    assert sbert_cosine([], []).shape == (0,)


def test_registry_says_which_direction_is_similar():
    new = {
        "selfbleu",
        "bertscore",
        "bert_ibleu",
        "s3c",
        "bbscore",
        "nmt_direct",
        "nmt_pivot",
        "nmt_cross",
    }  # test_paper_baselines
    assert set(BASELINES) == {"levenshtein", "bleu", "chrf", "sbert", "bleu_paper"} | new
    assert HIGHER_IS_SIMILAR == {
        "levenshtein": False,
        "bleu": True,
        "chrf": True,
        "sbert": True,
        "bleu_paper": True,
        **{name: True for name in new},
    }
    # each BLEU says which it is
    assert (
        "sacreBLEU defaults" in BASELINES["bleu"].description
        and "not the ParaPLUIE paper" in BASELINES["bleu"].description
    )
    assert (
        "ParaPLUIE paper" in BASELINES["bleu_paper"].description
        and "no smoothing, 0-1" in BASELINES["bleu_paper"].description
    )
    assert BASELINES["bleu_paper"].title == "BLEU (paper)" and BASELINES["bleu"].title == "BLEU"
    results = compute_baselines(SOURCES[:2], HYPOTHESES[:2], names=["levenshtein", "chrf"])
    # identical pair (index 1) is "more similar" than kitten/sitting in the stated direction
    assert results["levenshtein"][1] < results["levenshtein"][0]
    assert results["chrf"][1] > results["chrf"][0]
    with pytest.raises(ValueError, match="Unknown baseline"):
        compute_baselines(SOURCES, HYPOTHESES, names=["meteor"])


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="2 sources but 1 hypotheses"):
        levenshtein(["a", "b"], ["a"])
