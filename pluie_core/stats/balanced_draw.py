"""The paper's Mixed Balanced Dataset (MBD, section 5.2): ``mixed_balanced_draw`` draws as many
paraphrases as non-paraphrases from every dataset, many times, and summarises each score's best
threshold, its figures at a given threshold and its ROC AUC over the draws."""

from __future__ import annotations

import warnings
from typing import Mapping, Sequence, Union

import numpy as np
import pandas as pd

from pluie_core.stats.errors import StatsError, StatsWarning
from pluie_core.stats.matrices import require_columns
from pluie_core.stats.thresholds import CRITERIA, rates_from_counts
from pluie_core.stats.versus import binary_labels, predict

PerScore = Union[float, bool, Mapping[str, Union[float, bool]], None]


def _per_score(value: PerScore, score: str, default):
    if isinstance(value, Mapping):
        return value.get(score, default)
    return default if value is None else value


def _summary_rows(score: str, at: str, figures: dict, confidence: float) -> list[dict]:
    tail = (1 - confidence) / 2 * 100
    rows = []
    for figure, values in figures.items():
        values = np.asarray(values, dtype=float)
        std = float(values.std(ddof=1)) if values.size > 1 else 0.0
        low, high = np.percentile(values, [tail, 100 - tail])
        rows.append(
            {
                "score": score,
                "at": at,
                "figure": figure,
                "mean": float(values.mean()),
                "std": std,
                "ci_low": float(low),
                "ci_high": float(high),
                # 1.96 standard errors of the mean over draws: the "±" of the paper's MBD column
                "mean_ci_halfwidth": float(1.959964 * std / np.sqrt(values.size)),
            }
        )
    return rows


def _draw_statistics(oriented: np.ndarray, labels: np.ndarray, drawn: np.ndarray, criterion: str):
    """Best threshold, its confusion counts (tp, fp, tn, fn) and the ROC AUC of every draw (rows of
    ``drawn``, row positions into ``oriented`` / ``labels``).

    The scores are sorted once for all draws: each distinct score is a tie group, and a draw is
    summarised by how many of its positives and negatives fall in each group (a bincount). Counts at
    each candidate threshold are cumulative sums over groups. Draws go in chunks so memory stays
    bounded with 100,000 pairs; small draws only look at the groups they contain."""
    values, group = np.unique(oriented, return_inverse=True)
    labels = labels.astype(bool)
    per_draw = drawn.shape[1]
    chunk = max(1, 2_000_000 // max(len(values), per_draw))
    if chunk * per_draw < len(values):  # small draws: work on the groups present, not all of them
        chunk = max(1, 2_000_000 // per_draw)
    best_values, best_counts, aucs = [], [], []
    for first in range(0, len(drawn), chunk):
        rows = drawn[first : first + chunk]
        n_rows, row_groups, chunk_values = len(rows), group[rows], values
        if n_rows * per_draw < len(values):
            present, row_groups = np.unique(row_groups, return_inverse=True)
            row_groups, chunk_values = row_groups.reshape(rows.shape), values[present]
        n_groups = len(chunk_values)
        flat = (np.arange(n_rows)[:, None] * n_groups + row_groups).ravel()
        everyone = np.bincount(flat, minlength=n_rows * n_groups).reshape(n_rows, n_groups)
        positives = np.bincount(flat[labels[rows].ravel()], minlength=n_rows * n_groups).reshape(n_rows, n_groups)
        negatives = everyone - positives
        n_pos, n_neg = positives.sum(axis=1), negatives.sum(axis=1)
        # the threshold at group g predicts paraphrase for groups >= g
        pos_below = np.cumsum(positives, axis=1) - positives
        neg_below = np.cumsum(negatives, axis=1) - negatives
        if criterion == "accuracy":  # accuracy = (tp + tn) / n is highest where pos_below - neg_below is lowest
            target = (neg_below - pos_below).astype(float)
        else:
            tp = n_pos[:, None] - pos_below
            target = 2 * tp / (tp + (n_neg[:, None] - neg_below) + n_pos[:, None])
        target[everyone == 0] = -np.inf  # only scores present in the draw are thresholds
        best = np.argmax(target, axis=1)  # first maximum: the lowest threshold, as in best_threshold
        at_best = np.arange(n_rows), best
        tp, fp = n_pos - pos_below[at_best], n_neg - neg_below[at_best]
        best_values.append(chunk_values[best])
        best_counts.append(np.stack([tp, fp, n_neg - fp, n_pos - tp]))
        # Mann-Whitney: each negative loses to the positives above its group and to half of those
        # tied with it; equals sklearn's ROC AUC with ties
        beaten = (
            np.einsum("ij,ij->i", negatives, n_pos[:, None] - pos_below - positives)
            + np.einsum("ij,ij->i", negatives, positives) / 2
        )
        aucs.append(beaten / (n_pos * n_neg))
    return np.concatenate(best_values), np.concatenate(best_counts, axis=1), np.concatenate(aucs)


PAPER_PER_CLASS = 45  # pairs drawn per class from each corpus in the paper's MBD (section 5.2)


def mixed_balanced_draw(
    df: pd.DataFrame,
    score_cols: Sequence[str],
    label_col: str = "label",
    dataset_col: str = "dataset",
    n_draws: int = 100,
    seed: int = 0,
    per_class: int = PAPER_PER_CLASS,
    thresholds: PerScore = None,
    higher_is_positive: PerScore = True,
    criterion: str = "accuracy",
    confidence: float = 0.95,
) -> pd.DataFrame:
    """The paper's Mixed Balanced Dataset (MBD, section 5.2): draw ``per_class`` paraphrases and
    ``per_class`` non-paraphrases from every dataset without replacement (default: the paper's 45),
    ``n_draws`` times (paper: 100). When a dataset has fewer pairs of a class, every draw takes the
    smallest class count instead, so the draw stays balanced; a ``StatsWarning`` and
    ``table.attrs["note"]`` say so (the note is "" otherwise). On each draw and for each
    score: the best a-posteriori threshold and its accuracy, F1, precision, recall; the same figures
    at a given threshold (``thresholds``: one number or {score: number}, e.g. 0 for PLUIE); ROC AUC.
    Every score is evaluated on the same draws. Pairs missing any of the scores or the label are left
    out before drawing.

    Returns one row per score x at x figure: score, at ("best" | "given" | "threshold-free"), figure
    (threshold, accuracy, f1, precision, recall, roc_auc), mean, std, ci_low, ci_high (percentile
    interval over draws), mean_ci_halfwidth (1.96 x standard error of the mean, the "±" of the paper's
    table 3), n_draws, per_class (the number drawn)."""
    score_cols = list(score_cols)
    require_columns(df, (*score_cols, label_col, dataset_col), "The table")
    if not score_cols:
        raise StatsError("Choose at least one score for the mixed balanced draw.")
    if n_draws < 1:
        raise StatsError("The mixed balanced draw needs at least one draw.")
    if criterion not in CRITERIA:
        raise StatsError(f"Unknown criterion {criterion!r}; use 'accuracy' or 'f1'.")
    data = df.dropna(subset=[*score_cols, label_col])
    labels_all = binary_labels(data[label_col]).astype(int)
    datasets = data[dataset_col].to_numpy()

    groups = []  # row positions of each (dataset, class)
    for dataset in pd.unique(datasets):
        for label in (1, 0):
            groups.append((dataset, label, np.flatnonzero((datasets == dataset) & (labels_all == label))))
    if per_class < 1:
        raise StatsError("The mixed balanced draw needs at least one pair per class and dataset.")

    def shortfall(n: int) -> str:
        short = [
            f"{d!r} ({'paraphrases' if label else 'non-paraphrases'}: {len(r)})" for d, label, r in groups if len(r) < n
        ]
        return ", ".join(short) or "the data"

    smallest = min(len(rows) for _, _, rows in groups) if groups else 0
    if smallest < 1:
        raise StatsError(
            "Each dataset needs scored paraphrases and non-paraphrases for the mixed balanced draw; "
            f"there are none in {shortfall(1)}."
        )
    note = ""
    if smallest < per_class:
        note = (
            f"{per_class} pairs per class and dataset were asked for, but there are fewer in "
            f"{shortfall(per_class)}: each draw takes {smallest} per class and dataset."
        )
        warnings.warn(note, StatsWarning, stacklevel=2)
        per_class = smallest

    rng = np.random.default_rng(seed)
    drawn = np.stack(
        [
            np.concatenate([rows[rng.choice(len(rows), per_class, replace=False)] for _, _, rows in groups])
            for _ in range(n_draws)
        ]
    )  # draws x pairs, row positions in ``data``

    results = []
    for score in score_cols:
        higher = bool(_per_score(higher_is_positive, score, True))
        scores = data[score].to_numpy(dtype=float)
        best, best_counts, auc = _draw_statistics(scores if higher else -scores, labels_all, drawn, criterion)
        figures = {"threshold": best if higher else -best, **rates_from_counts(*best_counts)}
        results += _summary_rows(score, "best", figures, confidence)

        given = _per_score(thresholds, score, None)
        if given is not None:
            predicted = predict(scores, float(given), higher)[drawn]
            labels = labels_all[drawn]
            tp = np.sum(predicted & labels, axis=1)
            fp = np.sum(predicted, axis=1) - tp
            fn = np.sum(labels, axis=1) - tp
            tn = drawn.shape[1] - tp - fp - fn
            figures = {"threshold": np.full(n_draws, float(given)), **rates_from_counts(tp, fp, tn, fn)}
            results += _summary_rows(score, "given", figures, confidence)

        results += _summary_rows(score, "threshold-free", {"roc_auc": auc}, confidence)

    table = pd.DataFrame(results)
    table["n_draws"] = n_draws
    table["per_class"] = per_class
    table.attrs["note"] = note
    return table
