"""Humans versus the metric: a human's (or the majority's) binary labels against the metric's prediction
at a threshold (κ, accuracy, confusion), for one annotator, every column of a 0/1 matrix or every
annotator of the label rows. Also what the threshold, draw and disagreement modules share: ``predict``
(at or above the threshold, or at or below it for distances), ``binary_labels`` (0/1 checked) and
``scored_pairs`` (the pairs with both a score and a label)."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from pluie_core.stats.errors import StatsError
from pluie_core.stats.matrices import as_float_array, item_slots, majority_binary_vector
from pluie_core.stats.reliability import kappa_from_codes


def predict(scores: np.ndarray, threshold: float, higher_is_positive: bool) -> np.ndarray:
    """1 (paraphrase) where a score is at or above ``threshold`` (at or below it when not
    ``higher_is_positive``), else 0."""
    return (scores >= threshold if higher_is_positive else scores <= threshold).astype(int)


def binary_labels(labels) -> np.ndarray:
    """``labels`` as floats, checked to be 0, 1 or missing (NaN)."""
    labels = as_float_array(labels)
    known = labels[~np.isnan(labels)]
    if not np.isin(known, (0, 1)).all():
        raise StatsError("Binary labels must be 0 (non-paraphrase) or 1 (paraphrase); binarise the levels first.")
    return labels


def scored_pairs(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """Drops pairs without a score (not scored yet) or without a label."""
    scores, labels = as_float_array(scores), binary_labels(labels)
    if scores.shape != labels.shape:
        raise StatsError("Scores and labels must have the same length (one of each per pair).")
    keep = ~np.isnan(scores) & ~np.isnan(labels)
    if not keep.any():
        raise StatsError("No pair has both a score and a label.")
    return scores[keep], labels[keep].astype(int)


def human_vs_model(human_binary, model_scores, threshold: float = 0.0, higher_is_positive: bool = True) -> dict:
    """Binarised agreement of one human (or the majority label) with the metric at ``threshold``.

    Returns {"kappa", "accuracy", "confusion", "n"}; confusion is a 2x2 ndarray, rows = human
    (0, 1), columns = model (0, 1). Pairs without a label or a score are dropped."""
    scores, human = scored_pairs(model_scores, human_binary)
    predicted = predict(scores, threshold, higher_is_positive)
    try:
        kappa = kappa_from_codes(human, predicted, None)
    except StatsError:
        raise StatsError(
            "κ between humans and the metric is undefined here: humans and metric put every pair in the same single class."
        ) from None
    return {
        "kappa": float(kappa),
        "accuracy": float(np.mean(human == predicted)),
        "confusion": np.bincount(human * 2 + predicted, minlength=4).reshape(2, 2),
        "n": int(human.size),
    }


def _versus_row(name, labels: np.ndarray, scores: np.ndarray, threshold: float, higher_is_positive: bool) -> dict:
    """One row of ``human_vs_model_table``: ``labels`` and ``scores`` of the same pairs (NaN = none)."""
    row = {
        "annotator": name,
        "n": 0,
        "kappa": np.nan,
        "accuracy": np.nan,
        "tn": 0,
        "fp": 0,
        "fn": 0,
        "tp": 0,
        "note": "",
    }
    if labels.shape == scores.shape:  # the pairs this annotator labelled (a few of a large campaign's) only:
        kept = ~np.isnan(scores) & ~np.isnan(labels)  # human_vs_model leaves out the rest, and reads them no more
        labels, scores = labels[kept], scores[kept]
    try:
        result = human_vs_model(labels, scores, threshold, higher_is_positive)
        row.update(n=result["n"], kappa=result["kappa"], accuracy=result["accuracy"])
        row.update(zip(("tn", "fp", "fn", "tp"), map(int, result["confusion"].ravel())))
    except StatsError as error:
        row["note"] = str(error)
        keep = ~np.isnan(scores) & ~np.isnan(labels) if labels.shape == scores.shape else np.zeros(0, bool)
        if keep.any():  # κ undefined but accuracy and the counts still are
            human, predicted = labels[keep].astype(int), predict(scores[keep], threshold, higher_is_positive)
            from sklearn.metrics import confusion_matrix  # here: 1.3 s to import, not at every app/worker start

            cells = confusion_matrix(human, predicted, labels=[0, 1]).ravel()
            row.update(n=int(keep.sum()), accuracy=float(np.mean(human == predicted)))
            row.update(zip(("tn", "fp", "fn", "tp"), map(int, cells)))
    return row


def human_vs_model_table(
    binary_matrix: pd.DataFrame, model_scores, threshold: float = 0.0, higher_is_positive: bool = True
) -> pd.DataFrame:
    """``human_vs_model`` for every annotator (columns of an items x annotators 0/1 matrix) and for
    the majority label. ``model_scores`` is aligned with the matrix rows (by index for a Series).
    Columns: annotator, n, kappa, accuracy, tn, fp, fn, tp, note (why κ is NaN).
    ``human_vs_model_by_annotator`` gives the same table from the labels as rows."""
    if isinstance(model_scores, pd.Series):
        model_scores = model_scores.reindex(binary_matrix.index)
    scores = as_float_array(model_scores)
    values = as_float_array(binary_matrix)
    if scores.shape != values.shape[:1]:  # each row says what is wrong
        columns = [*(values[:, i] for i in range(values.shape[1])), as_float_array(majority_binary_vector(values))]
        names = [*binary_matrix.columns, "majority"]
        return pd.DataFrame([_versus_row(n, c, scores, threshold, higher_is_positive) for n, c in zip(names, columns)])
    rows, columns = np.nonzero(~np.isnan(values))
    labels = pd.DataFrame(
        {
            "pair_id": rows,
            "annotator": np.asarray(binary_matrix.columns, dtype=object)[columns],
            "value": values[rows, columns],
        }
    )
    return human_vs_model_by_annotator(
        labels, pd.Series(scores), threshold, higher_is_positive, annotators=list(binary_matrix.columns)
    )


def positions_by(keys) -> dict:
    """{key: the positions (int64 array, ascending) where it occurs in ``keys``}, in one sort: what a loop
    over thousands of annotators takes from the labels' rows without a boolean mask per annotator."""
    codes, names = pd.factorize(pd.Series(keys))
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(names)))])
    return {name: order[bounds[i] : bounds[i + 1]] for i, name in enumerate(names)}


def human_vs_model_by_annotator(
    labels: pd.DataFrame,
    model_scores: pd.Series,
    threshold: float = 0.0,
    higher_is_positive: bool = True,
    annotators: Optional[Sequence] = None,
) -> pd.DataFrame:
    """``human_vs_model_table`` from the binarised labels as rows (``pair_id``, ``annotator``, ``value`` 0/1,
    one per pair and annotator; pluie_core.analysis.agreement_values), at the labels' size rather than
    pairs x annotators. ``model_scores`` is indexed by pair_id. One row per annotator (``annotators``' order,
    sorted names by default), then the majority label of every pair's labels."""
    items = labels["pair_id"].to_numpy()
    values = as_float_array(labels["value"])
    scores = as_float_array(model_scores.reindex(items))
    where = positions_by(labels["annotator"])
    rows = []
    for name in sorted(where) if annotators is None else annotators:
        chosen = where.get(name, np.zeros(0, dtype=np.int64))
        rows.append(_versus_row(name, values[chosen], scores[chosen], threshold, higher_is_positive))
    majority = majority_binary_vector(item_slots(labels, level_col="value"))
    rows.append(
        _versus_row(
            "majority",
            as_float_array(majority),
            as_float_array(model_scores.reindex(majority.index)),
            threshold,
            higher_is_positive,
        )
    )
    return pd.DataFrame(rows)
