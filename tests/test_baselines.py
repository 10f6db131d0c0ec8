"""Baselines beside PLUIE: values, input order, the registry's direction flags."""
import numpy as np
import pytest

from pluie_core.baselines import BASELINES, HIGHER_IS_SIMILAR, bleu, chrf, compute_baselines, levenshtein, sbert_cosine

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


def test_sbert_cosine_uses_the_offline_minilm_model():
    values = sbert_cosine(["The cat drinks water.", "The cat drinks water.", "A man is playing a guitar."],
                          ["The cat drinks water.", "Stock markets fell sharply today.", "Someone plays the guitar."])
    assert values[0] == pytest.approx(1.0, abs=1e-5)
    assert values[2] > values[1] + 0.3  # a paraphrase is closer than an unrelated sentence
    assert sbert_cosine([], []).shape == (0,)


def test_registry_says_which_direction_is_similar():
    assert set(BASELINES) == {"levenshtein", "bleu", "chrf", "sbert"}
    assert HIGHER_IS_SIMILAR == {"levenshtein": False, "bleu": True, "chrf": True, "sbert": True}
    results = compute_baselines(SOURCES[:2], HYPOTHESES[:2], names=["levenshtein", "chrf"])
    # identical pair (index 1) is "more similar" than kitten/sitting in the stated direction
    assert results["levenshtein"][1] < results["levenshtein"][0]
    assert results["chrf"][1] > results["chrf"][0]
    with pytest.raises(ValueError, match="Unknown baseline"):
        compute_baselines(SOURCES, HYPOTHESES, names=["meteor"])


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="2 sources but 1 hypotheses"):
        levenshtein(["a", "b"], ["a"])
