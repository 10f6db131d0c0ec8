"""Label matrices: long label rows as items x annotators (``levels_to_matrix``, the layout of the pages
and of Cohen / Fleiss) or items x slots (``item_slots``), written cell by cell (``cell_table``); plain values
binarised at a cut, each item's majority, category counts (Fleiss' κ's input). Also the two checks every
module of the package shares: ``as_float_array`` (anything array-like -> floats, NaN = missing) and
``require_columns``."""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import pandas as pd

from pluie_core.stats.errors import StatsError


def require_columns(frame: pd.DataFrame, columns, what: str) -> None:
    """A StatsError naming the ``columns`` that ``frame`` (``what``, for the message) lacks."""
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise StatsError(f"{what} has no column {', '.join(map(repr, missing))}.")


def levels_to_matrix(
    labels_long: pd.DataFrame,
    item_col: str = "pair_id",
    annotator_col: str = "annotator",
    level_col: str = "level",
) -> pd.DataFrame:
    """Long rows (pair_id, annotator, level) -> items x annotators DataFrame of levels (float, NaN = not
    labelled). When an annotator labelled a pair twice, the last row wins."""
    require_columns(labels_long, (item_col, annotator_col, level_col), "The label table")
    items, item_names = pd.factorize(labels_long[item_col], sort=True)
    people, people_names = pd.factorize(labels_long[annotator_col], sort=True)
    if (items < 0).any() or (people < 0).any():  # a missing item or annotator: pandas' own pivot decides
        rows = labels_long[[item_col, annotator_col, level_col]].drop_duplicates([item_col, annotator_col], keep="last")
        matrix = rows.pivot(index=item_col, columns=annotator_col, values=level_col).astype(float)
        matrix.columns.name = annotator_col
        return matrix
    return cell_table(items, item_names, people, people_names, labels_long[level_col], item_col, annotator_col)


def item_slots(
    labels_long: pd.DataFrame,
    item_col: str = "pair_id",
    annotator_col: str = "annotator",
    level_col: str = "level",
) -> pd.DataFrame:
    """Long rows -> items x slots: each item's labels side by side in its first columns (one per annotator,
    the last row winning where one labelled it twice, as in ``levels_to_matrix``), NaN after; items in
    the matrix's order. What counts per item (Fleiss' κ's category counts, the majority, a split between
    paraphrase and not) is the same as on ``levels_to_matrix``'s items x annotators matrix, at the
    labels' size: a campaign of 6,000 annotators over 100,000 pairs is 600,000,000 cells as a matrix of
    annotators, 300,000 and a few as slots. Who gave which label is not kept."""
    require_columns(labels_long, (item_col, annotator_col, level_col), "The label table")
    rows = labels_long[[item_col, annotator_col, level_col]].dropna(subset=[item_col, annotator_col])
    rows = rows.drop_duplicates([item_col, annotator_col], keep="last")
    items, item_names = pd.factorize(rows[item_col], sort=True)
    order = np.argsort(items, kind="stable")
    counts = np.bincount(items, minlength=len(item_names))
    starts = np.cumsum(counts) - counts
    slots = np.empty(len(items), dtype=np.int64)
    slots[order] = np.arange(len(items)) - np.repeat(starts, counts)
    width = int(counts.max()) if len(counts) else 0
    return cell_table(items, item_names, slots, range(width), rows[level_col], item_col, "slot")


def cell_table(
    rows: np.ndarray, row_names, columns: np.ndarray, column_names, values, index_name=None, columns_name=None
) -> pd.DataFrame:
    """DataFrame.pivot's table, written cell by cell into one float array (pivot's unstack took 2 s for
    3,000,000 labels): ``rows`` / ``columns`` are each value's position in ``row_names`` /
    ``column_names`` (pd.factorize codes, all found); a cell given twice keeps its last value, every
    other cell is NaN."""
    cells = np.asarray(rows, dtype=np.int64) * len(column_names) + np.asarray(columns, dtype=np.int64)
    last = ~pd.Series(cells).duplicated(keep="last").to_numpy()
    table = np.full(len(row_names) * len(column_names), np.nan)
    table[cells[last]] = as_float_array(values)[last]
    return pd.DataFrame(
        table.reshape(len(row_names), len(column_names)),
        copy=False,
        index=pd.Index(row_names, name=index_name),
        columns=pd.Index(column_names, name=columns_name),
    )


def as_float_array(data) -> np.ndarray:
    """Anything array-like as a float ndarray, missing values (None, <NA>) as NaN."""
    if isinstance(data, (pd.DataFrame, pd.Series)):  # nullable columns (Int64 with <NA>) become NaN
        return data.to_numpy(dtype=float, na_value=np.nan)
    return np.asarray(data, dtype=float)


def binarise_matrix(values, cut: float):
    """Plain values -> binary labels, element-wise: at or above ``cut`` -> 1, below -> 0, missing stays
    NaN. Keeps the DataFrame / Series shape and labels when given one. (Levels of the app's five-level
    scale are binarised by ``pluie_core.labels.binarise_levels``, which also leaves out "Don't know".)"""
    array = as_float_array(values)
    binary = np.where(np.isnan(array), np.nan, (array >= cut).astype(float))
    if isinstance(values, pd.DataFrame):
        return pd.DataFrame(binary, index=values.index, columns=values.columns)
    if isinstance(values, pd.Series):
        return pd.Series(binary, index=values.index, name=values.name)
    return binary


def majority_binary_vector(binary_matrix) -> pd.Series:
    """Majority binary label of each item (row) of an items x annotators 0/1 matrix; a tie or no label
    gives NaN. The vectorised twin of ``labels.majority_binary``."""
    values = as_float_array(binary_matrix)
    n_positive = np.nansum(values == 1, axis=1)
    n_negative = np.nansum(values == 0, axis=1)
    majority = np.where(n_positive > n_negative, 1.0, np.where(n_negative > n_positive, 0.0, np.nan))
    index = binary_matrix.index if isinstance(binary_matrix, pd.DataFrame) else None
    return pd.Series(majority, index=index, name="majority")


def category_counts(matrix, categories: Optional[Sequence] = None) -> pd.DataFrame:
    """items x annotators labels -> items x categories counts (the input of Fleiss' kappa).
    ``categories``: every distinct value present unless given; NaN and values outside the given
    categories are not counted."""
    values = as_float_array(matrix)
    if categories is None:
        categories = np.unique(values[~np.isnan(values)]).tolist()
    counts = np.zeros((len(values), len(categories)), dtype=np.int64)  # no category at all: every cell missing
    for column, category in enumerate(categories):
        counts[:, column] = (values == category).sum(axis=1)
    index = matrix.index if isinstance(matrix, pd.DataFrame) else None
    return pd.DataFrame(counts, index=index, columns=list(categories))
