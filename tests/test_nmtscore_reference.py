"""NMTScore against the ``nmtscore`` library itself: values the library computed (0.3.3, transformers 4.33.3,
in its own environment) on a tiny M2M100 that tests/fixtures/make_nmtscore_fixture.py builds from fixed
seeds, rebuilt here and scored by pluie_core.nmtscore. The library's probabilities are 2^(−L), ours exp(−L)
(L: mean cross-entropy in nats), so each library value v is compared as v^(1/ln 2)."""

import json
import math

import numpy as np
import pytest

from pluie_core.baselines import BASELINES
from tests.fixtures.make_nmtscore_fixture import FIXTURE, build_tiny_m2m100, checksums

REFERENCE = json.loads(FIXTURE.read_text(encoding="utf-8"))


def ours(values):
    """A library probability (or one-direction ratio) on our scale: 2^(−L) → exp(−L)."""
    return np.asarray(values, dtype=float) ** (1 / math.log(2))


@pytest.fixture(scope="module")
def tiny_m2m100(tmp_path_factory) -> str:
    directory = build_tiny_m2m100(tmp_path_factory.mktemp("tiny-m2m100"))
    assert {k: v for k, v in checksums(directory).items() if k != "torch"} == {
        k: v for k, v in REFERENCE["model"].items() if k != "torch"
    }, "not the model the fixture was made with"
    return str(directory)


def test_language_tags_are_the_models_language_tokens_not_ordinary_pieces(tiny_m2m100):
    from pluie_core.nmtscore import TranslationModel

    nmt = TranslationModel(tiny_m2m100, device="cpu")
    for code in ("en", "es", "it"):
        assert code in nmt.tokenizer.get_vocab()  # an ordinary piece as well: the bare code must not win
        assert (
            nmt.lang_id(code)
            == nmt.tokenizer.convert_tokens_to_ids(f"__{code}__")
            != nmt.tokenizer.convert_tokens_to_ids(code)
        )


def test_probabilities_and_translations_match_the_nmtscore_library(tiny_m2m100):
    from pluie_core.nmtscore import MAX_TRANSLATION_LENGTH, TranslationModel

    lang, other = REFERENCE["lang"], REFERENCE["other_lang"]
    sources, hypotheses = REFERENCE["sources"], REFERENCE["hypotheses"]
    nmt = TranslationModel(tiny_m2m100, device="cpu")
    np.testing.assert_allclose(nmt.score(sources, hypotheses, lang, lang), ours(REFERENCE["p_h_given_s"]), rtol=1e-5)
    np.testing.assert_allclose(nmt.score(sources, sources, lang, lang), ours(REFERENCE["p_s_given_s"]), rtol=1e-5)
    for key, beams in (("greedy_translations", 1), ("beam_translations", 5)):
        texts = list(REFERENCE[key])
        assert dict(zip(texts, nmt.translate(texts, lang, other, num_beams=beams))) == REFERENCE[key], key
    # the random model writes up to the cap: 200 tokens in all (start token, language token and 198 more),
    # so a translation one token longer (200 new tokens) would differ from the library's
    src = nmt._pad(nmt._ids(texts[:1], lang), nmt.pad_id)
    ids = nmt.model.generate(
        input_ids=src[0],
        attention_mask=src[1],
        forced_bos_token_id=nmt.lang_id(other),
        num_beams=1,
        do_sample=False,
        max_new_tokens=MAX_TRANSLATION_LENGTH,
    )
    assert ids.shape[1] > MAX_TRANSLATION_LENGTH


@pytest.mark.parametrize("measure", ["direct", "pivot", "cross"])
def test_measures_match_the_nmtscore_library(tiny_m2m100, measure):
    lang, other = REFERENCE["lang"], REFERENCE["other_lang"]
    ref = REFERENCE[measure]
    expected = (ours(ref["h_given_s"]) + ours(ref["s_given_h"])) / 2  # both directions, on our scale
    options = {"model": tiny_m2m100, "lang": lang}
    if measure != "direct":
        options.update(pivot_lang=other, num_beams=1)  # the fixture's greedy translations
    values = BASELINES[f"nmt_{measure}"](REFERENCE["sources"], REFERENCE["hypotheses"], **options)
    np.testing.assert_allclose(values, expected, rtol=1e-5)
    assert values[2] == pytest.approx(1.0, abs=1e-5)  # a copy: normalised to 1, as in the library
