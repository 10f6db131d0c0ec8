"""Pairs that disagree: those where the metric's prediction differs from a reference label (most
confident first, ``disagreements``) and those on which annotators split between paraphrase and
non-paraphrase (most evenly split first, ``human_disagreements``)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from pluie_core.labels import DONT_KNOW, binarise_levels, ordinal_levels
from pluie_core.stats.matrices import as_float_array
from pluie_core.stats.versus import binary_labels, predict


def disagreements(
    df: pd.DataFrame,
    score_col: str,
    reference_col: str,
    threshold: float = 0.0,
    higher_is_positive: bool = True,
) -> pd.DataFrame:
    """Pairs where the metric's binary prediction differs from the reference label (0/1), most
    confident first. Adds ``prediction`` (0/1) and ``confidence`` = |score - threshold|; keeps every
    other column. Pairs without a score or a reference are left out."""
    data = df.dropna(subset=[score_col, reference_col])
    reference = binary_labels(data[reference_col])
    scores = data[score_col].to_numpy(dtype=float)
    prediction = predict(scores, threshold, higher_is_positive)
    differs = prediction != reference
    result = data.loc[differs].copy()
    result["prediction"] = prediction[differs]
    result["confidence"] = np.abs(scores[differs] - threshold)
    return result.sort_values("confidence", ascending=False, kind="stable")


def human_disagreements(labels_matrix: pd.DataFrame) -> pd.DataFrame:
    """Items (rows of an items x annotators matrix of levels of the five-level scale, 4 = "Don't
    know" as stored) on which annotators split between
    paraphrase and non-paraphrase ("Don't know" ignored), most evenly split first, then widest spread.
    Columns: n_labels, n_paraphrase, n_non_paraphrase, n_dont_know, min_level, max_level, spread
    (max - min level), minority_share (share of the smaller side)."""
    values = as_float_array(labels_matrix)
    binary = binarise_levels(values)
    ordinal = ordinal_levels(values)
    n_paraphrase = (binary == 1).sum(axis=1)
    n_non_paraphrase = (binary == 0).sum(axis=1)
    split = (n_paraphrase > 0) & (n_non_paraphrase > 0)
    index = labels_matrix.index if isinstance(labels_matrix, pd.DataFrame) else pd.RangeIndex(len(values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing rows are not in the result anyway
        low, high = np.nanmin(ordinal, axis=1), np.nanmax(ordinal, axis=1)
    table = pd.DataFrame(
        {
            "n_labels": n_paraphrase + n_non_paraphrase,
            "n_paraphrase": n_paraphrase,
            "n_non_paraphrase": n_non_paraphrase,
            "n_dont_know": (values == DONT_KNOW).sum(axis=1),
            "min_level": low,
            "max_level": high,
        },
        index=index,
    )[split]
    table["min_level"] = table["min_level"].astype(int)
    table["max_level"] = table["max_level"].astype(int)
    table["spread"] = table["max_level"] - table["min_level"]
    table["minority_share"] = np.minimum(table["n_paraphrase"], table["n_non_paraphrase"]) / table["n_labels"]
    return table.sort_values(["minority_share", "spread"], ascending=False, kind="stable")
