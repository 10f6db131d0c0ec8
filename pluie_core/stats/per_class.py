"""Statistics per class, optionally per dataset: each score's mean and standard deviation (the paper's
table 1) and its Pearson correlation with the edit distance (table 4); ``format_p`` shows a p-value."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd


def _group_keys(label_col: str, dataset_col: Optional[str]) -> list[str]:
    return [dataset_col, label_col] if dataset_col else [label_col]


def class_summary(
    df: pd.DataFrame, score_cols: Sequence[str], label_col: str = "label", dataset_col: Optional[str] = None
) -> pd.DataFrame:
    """Mean and standard deviation (ddof=1) of every score per class, optionally per dataset (the
    paper's table 1). Columns: [dataset], label, score, n, mean, std, note. Missing scores are left out."""
    keys = _group_keys(label_col, dataset_col)
    data = df.dropna(subset=[label_col])
    stats = data.groupby(keys, sort=True)[list(score_cols)].agg(["count", "mean", "std"])
    stats.columns.names = ["score", "stat"]
    table = stats.stack("score", future_stack=True).reset_index()
    table = table.rename(columns={"count": "n"})
    table["n"] = table["n"].astype(int)
    table["note"] = np.select(
        [table["n"] == 0, table["n"] == 1],
        ["No scored pair in this class.", "One pair only: no standard deviation."],
        "",
    )
    return table[[*keys, "score", "n", "mean", "std", "note"]]


def format_p(p) -> str:
    """A p-value as people read it: 3 significant digits ("0.0123", "4.56e-07"), "< 1e-16" below what a
    double can tell from 0 next to 1, "—" when there is none. Tables keep the number; this is for display."""
    if p is None or not np.isfinite(p):
        return "—"
    return "< 1e-16" if p < 1e-16 else f"{p:.3g}"


def edit_distance_correlation(
    df: pd.DataFrame,
    score_cols: Sequence[str],
    distance_col: str,
    label_col: str = "label",
    dataset_col: Optional[str] = None,
) -> pd.DataFrame:
    """Pearson correlation (scipy) between each score and the normalised edit distance inside each
    class (the paper's table 4). Columns: [dataset], label, score, n, r, p_value, note; r is NaN with
    a note when fewer than 3 pairs or a constant column make it undefined."""
    keys = _group_keys(label_col, dataset_col)
    rows = []
    for key, group in df.dropna(subset=[label_col]).groupby(keys, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        for score in score_cols:
            pair = group[[score, distance_col]].dropna().to_numpy(dtype=float)
            r = p_value = np.nan
            if len(pair) < 3:
                note = "Fewer than 3 pairs with a score and a distance."
            elif np.ptp(pair[:, 0]) == 0:
                note = "The score is the same for every pair of this class."
            elif np.ptp(pair[:, 1]) == 0:
                note = "The edit distance is the same for every pair of this class."
            else:
                from scipy.stats import pearsonr  # here: scipy.stats takes 0.7 s to import, not at every start

                result = pearsonr(pair[:, 0], pair[:, 1])
                r, p_value, note = float(result.statistic), float(result.pvalue), ""
            rows.append((*key, score, len(pair), r, p_value, note))
    return pd.DataFrame(rows, columns=[*keys, "score", "n", "r", "p_value", "note"])
