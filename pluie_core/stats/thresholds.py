"""A metric's threshold against binary labels: accuracy, F1, precision and recall at every distinct score
(``threshold_curve``), the best a-posteriori threshold and its ties, the figures at a fixed threshold,
ROC AUC. ``rates_from_counts`` and ``CRITERIA`` are shared with the mixed balanced draw."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pluie_core.stats.errors import StatsError
from pluie_core.stats.versus import predict, scored_pairs


def _threshold_counts(scores: np.ndarray, labels: np.ndarray):
    """Confusion counts at every candidate threshold, for each row of (resamples x pairs) arrays.

    Scores are sorted once in ascending order; the threshold at sorted position i predicts positive
    the pairs at positions >= i, so the counts are cumulative sums. Only the first position of each
    distinct score is a real threshold (``is_threshold``)."""
    order = np.argsort(scores, axis=1, kind="stable")
    sorted_scores = np.take_along_axis(scores, order, axis=1)
    sorted_labels = np.take_along_axis(labels, order, axis=1)
    n = scores.shape[1]
    positives = sorted_labels.sum(axis=1, keepdims=True)
    tp = positives - (np.cumsum(sorted_labels, axis=1) - sorted_labels)
    fp = (n - np.arange(n))[None, :] - tp
    fn = positives - tp
    tn = (n - positives) - fp
    is_threshold = np.ones_like(sorted_scores, dtype=bool)
    is_threshold[:, 1:] = sorted_scores[:, 1:] != sorted_scores[:, :-1]
    return sorted_scores, tp, fp, tn, fn, is_threshold


def rates_from_counts(tp, fp, tn, fn) -> dict:
    """Accuracy, F1, precision, recall from counts; 0 where a ratio has no denominator (sklearn's
    zero_division=0)."""
    tp, fp, tn, fn = (np.asarray(x, dtype=float) for x in (tp, fp, tn, fn))
    with np.errstate(divide="ignore", invalid="ignore"):
        precision = np.where(tp + fp > 0, tp / (tp + fp), 0.0)
        recall = np.where(tp + fn > 0, tp / (tp + fn), 0.0)
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), 0.0)
    accuracy = (tp + tn) / (tp + fp + tn + fn)
    return {"accuracy": accuracy, "f1": f1, "precision": precision, "recall": recall}


def _require_both_classes(labels: np.ndarray, what: str) -> None:
    if labels.min() == labels.max():
        only = "paraphrases" if labels[0] == 1 else "non-paraphrases"
        raise StatsError(f"{what} needs both paraphrases and non-paraphrases; these pairs are all {only}.")


def threshold_curve(scores, labels, higher_is_positive: bool = True) -> pd.DataFrame:
    """Accuracy, F1, precision and recall at every distinct score used as threshold (papers' figures
    3-14), in one vectorised pass. Pairs without a score or label are dropped.

    Columns: threshold (ascending), rank (1 + pairs scoring strictly below the threshold, the x axis
    of the rank-centred figures 9-14), accuracy, f1, precision, recall, tp, fp, tn, fn."""
    scores, labels = scored_pairs(scores, labels)
    _require_both_classes(labels, "A threshold curve")
    oriented = scores if higher_is_positive else -scores
    sorted_scores, tp, fp, tn, fn, is_threshold = (x[0] for x in _threshold_counts(oriented[None, :], labels[None, :]))
    keep = is_threshold
    threshold = sorted_scores[keep] if higher_is_positive else -sorted_scores[keep]
    curve = pd.DataFrame({"threshold": threshold})
    curve["rank"] = np.searchsorted(np.sort(scores), threshold, side="left") + 1
    for name, values in rates_from_counts(tp[keep], fp[keep], tn[keep], fn[keep]).items():
        curve[name] = values
    for name, values in (("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn)):
        curve[name] = values[keep].astype(int)
    return curve.sort_values("threshold", kind="stable", ignore_index=True)


CRITERIA = ("accuracy", "f1")  # what best_threshold and mixed_balanced_draw can maximise


def best_threshold(scores, labels, higher_is_positive: bool = True, criterion: str = "accuracy") -> dict:
    """The a-posteriori threshold that maximises ``criterion`` ("accuracy", as in the paper's table 3,
    or "f1"). Among equally good thresholds, the one predicting the most paraphrases is kept.

    Returns {"threshold", "accuracy", "f1", "precision", "recall", "tp", "fp", "tn", "fn", "n",
    "tie_low", "tie_high", "n_tied"}. Several thresholds often reach the same best value (a plateau):
    tie_low and tie_high are the lowest and highest of them (in the score's units) and n_tied how many
    distinct thresholds reach it, so a reader sees that the choice within [tie_low, tie_high] is
    arbitrary (the other figures differ along it; the thresholds between may do worse)."""
    if criterion not in CRITERIA:
        raise StatsError(f"Unknown criterion {criterion!r}; use 'accuracy' or 'f1'.")
    scores, labels = scored_pairs(scores, labels)
    _require_both_classes(labels, "The best threshold")
    oriented = scores if higher_is_positive else -scores
    sorted_scores, tp, fp, tn, fn, is_threshold = (x[0] for x in _threshold_counts(oriented[None, :], labels[None, :]))
    target = np.where(is_threshold, rates_from_counts(tp, fp, tn, fn)[criterion], -np.inf)
    best = int(np.argmax(target))  # first maximum: the lowest oriented threshold, most paraphrases
    threshold = sorted_scores[best] if higher_is_positive else -sorted_scores[best]
    # equal rates are equal ratios of whole numbers, which IEEE division rounds identically: == finds the ties
    tied = sorted_scores[target == target[best]]
    low, high = (tied.min(), tied.max()) if higher_is_positive else (-tied.max(), -tied.min())
    result = _metrics_dict(float(threshold), tp[best], fp[best], tn[best], fn[best])
    return {**result, "tie_low": float(low), "tie_high": float(high), "n_tied": int(tied.size)}


def _metrics_dict(threshold: float, tp, fp, tn, fn) -> dict:
    rates = {name: float(value) for name, value in rates_from_counts(tp, fp, tn, fn).items()}
    counts = {"tp": int(tp), "fp": int(fp), "tn": int(tn), "fn": int(fn)}
    return {"threshold": threshold, **rates, **counts, "n": int(tp + fp + tn + fn)}


def metrics_at(scores, labels, threshold: float = 0.0, higher_is_positive: bool = True) -> dict:
    """Accuracy, F1, precision, recall at a fixed threshold (e.g. PLUIE's natural 0), same keys as
    ``best_threshold``. Undefined ratios (no predicted / no actual paraphrase) are 0, as in sklearn."""
    scores, labels = scored_pairs(scores, labels)
    predicted = predict(scores, threshold, higher_is_positive)
    tp = int(np.sum((predicted == 1) & (labels == 1)))
    fp = int(np.sum((predicted == 1) & (labels == 0)))
    fn = int(np.sum((predicted == 0) & (labels == 1)))
    tn = int(np.sum((predicted == 0) & (labels == 0)))
    return _metrics_dict(float(threshold), tp, fp, tn, fn)


def roc_auc(scores, labels, higher_is_positive: bool = True) -> float:
    """Area under the ROC curve (sklearn); pairs without a score or label are dropped."""
    scores, labels = scored_pairs(scores, labels)
    _require_both_classes(labels, "ROC AUC")
    from sklearn.metrics import roc_auc_score  # here: 1.3 s to import, not at every app/worker start

    return float(roc_auc_score(labels, scores if higher_is_positive else -scores))
