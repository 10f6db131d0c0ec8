"""Agreement, threshold and distribution statistics for the app's views.

Pure functions on arrays and DataFrames; no Streamlit, no database.

Conventions
- The agreement statistics take plain values: NaN is missing, every other value is a label (BIOSSES'
  4, Krippendorff's worked example's 4 ...). The rules of the app's five-level scale ("Don't know" is
  missing, the paraphrase binarisation) are applied where those labels are read, by
  ``pluie_core.labels.ordinal_levels`` / ``binarise_levels`` (``pluie_core.analysis.agreement_matrix``).
- Binary labels: 1 = paraphrase, 0 = non-paraphrase (``binarise_matrix`` cuts plain values).
- A pair is predicted a paraphrase when its score is at or above the threshold; with
  ``higher_is_positive=False`` (distances such as normalised Levenshtein) at or below it.
- Matrices of labels: ``levels_to_matrix`` gives items x annotators (the layout of the pages and of
  Cohen/Fleiss); ``krippendorff_alpha`` takes annotators x items, the krippendorff library's layout.
- Errors a user can cause (no shared items, a single class, ...) raise ``StatsError`` with a sentence
  meant for the page. Tables over many groups put NaN and say why in a ``note`` column instead.
"""
from __future__ import annotations

import warnings
from typing import Mapping, NamedTuple, Optional, Sequence, Union

import krippendorff
import numpy as np
import pandas as pd
from scipy.stats import pearsonr
from sklearn.metrics import confusion_matrix, roc_auc_score

from pluie_core.labels import DONT_KNOW, binarise_levels, ordinal_levels

__all__ = [
    "StatsError",
    "StatsWarning",
    "levels_to_matrix",
    "item_slots",
    "binarise_matrix",
    "majority_binary_vector",
    "category_counts",
    "percent_agreement",
    "cohen_kappa",
    "PairwiseAgreement",
    "pairwise_kappa",
    "fleiss_kappa",
    "krippendorff_alpha",
    "krippendorff_alpha_ci",
    "krippendorff_alpha_ci_from_patterns",
    "human_vs_model",
    "human_vs_model_table",
    "human_vs_model_by_annotator",
    "positions_by",
    "threshold_curve",
    "best_threshold",
    "metrics_at",
    "roc_auc",
    "PAPER_PER_CLASS",
    "mixed_balanced_draw",
    "class_summary",
    "edit_distance_correlation",
    "disagreements",
    "human_disagreements",
]

PerScore = Union[float, bool, Mapping[str, Union[float, bool]], None]


class StatsError(ValueError):
    """A statistic cannot be computed on this data; the message says why, for the user."""


class StatsWarning(UserWarning):
    """A statistic was computed, but not quite as asked (e.g. fewer pairs drawn); the message says how."""


# --------------------------------------------------------------------------- label matrices


def _require_columns(frame: pd.DataFrame, columns, what: str) -> None:
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
    _require_columns(labels_long, (item_col, annotator_col, level_col), "The label table")
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
    _require_columns(labels_long, (item_col, annotator_col, level_col), "The label table")
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


def cell_table(rows: np.ndarray, row_names, columns: np.ndarray, column_names, values, index_name=None,
               columns_name=None) -> pd.DataFrame:
    """DataFrame.pivot's table, written cell by cell into one float array (pivot's unstack took 2 s for
    3,000,000 labels): ``rows`` / ``columns`` are each value's position in ``row_names`` /
    ``column_names`` (pd.factorize codes, all found); a cell given twice keeps its last value, every
    other cell is NaN."""
    cells = np.asarray(rows, dtype=np.int64) * len(column_names) + np.asarray(columns, dtype=np.int64)
    last = ~pd.Series(cells).duplicated(keep="last").to_numpy()
    table = np.full(len(row_names) * len(column_names), np.nan)
    table[cells[last]] = _as_float_array(values)[last]
    return pd.DataFrame(table.reshape(len(row_names), len(column_names)), copy=False,
                        index=pd.Index(row_names, name=index_name), columns=pd.Index(column_names, name=columns_name))


def _as_float_array(data) -> np.ndarray:
    if isinstance(data, (pd.DataFrame, pd.Series)):  # nullable columns (Int64 with <NA>) become NaN
        return data.to_numpy(dtype=float, na_value=np.nan)
    return np.asarray(data, dtype=float)


def binarise_matrix(values, cut: float):
    """Plain values -> binary labels, element-wise: at or above ``cut`` -> 1, below -> 0, missing stays
    NaN. Keeps the DataFrame / Series shape and labels when given one. (Levels of the app's five-level
    scale are binarised by ``pluie_core.labels.binarise_levels``, which also leaves out "Don't know".)"""
    array = _as_float_array(values)
    binary = np.where(np.isnan(array), np.nan, (array >= cut).astype(float))
    if isinstance(values, pd.DataFrame):
        return pd.DataFrame(binary, index=values.index, columns=values.columns)
    if isinstance(values, pd.Series):
        return pd.Series(binary, index=values.index, name=values.name)
    return binary


def majority_binary_vector(binary_matrix) -> pd.Series:
    """Majority binary label of each item (row) of an items x annotators 0/1 matrix; a tie or no label
    gives NaN. The vectorised twin of ``labels.majority_binary``."""
    values = _as_float_array(binary_matrix)
    n_positive = np.nansum(values == 1, axis=1)
    n_negative = np.nansum(values == 0, axis=1)
    majority = np.where(n_positive > n_negative, 1.0, np.where(n_negative > n_positive, 0.0, np.nan))
    index = binary_matrix.index if isinstance(binary_matrix, pd.DataFrame) else None
    return pd.Series(majority, index=index, name="majority")


def category_counts(matrix, categories: Optional[Sequence] = None) -> pd.DataFrame:
    """items x annotators labels -> items x categories counts (the input of Fleiss' kappa).
    ``categories``: every distinct value present unless given; NaN and values outside the given
    categories are not counted."""
    values = _as_float_array(matrix)
    if categories is None:
        categories = np.unique(values[~np.isnan(values)]).tolist()
    counts = np.zeros((len(values), len(categories)), dtype=np.int64)  # no category at all: every cell missing
    for column, category in enumerate(categories):
        counts[:, column] = (values == category).sum(axis=1)
    index = matrix.index if isinstance(matrix, pd.DataFrame) else None
    return pd.DataFrame(counts, index=index, columns=list(categories))


# --------------------------------------------------------------------------- agreement


def _require_whole(values: np.ndarray) -> None:
    known = values[~np.isnan(values)]
    if (known != np.round(known)).any():
        raise StatsError("Cohen's κ needs labels that are whole numbers (categories); these have fractions.")


def _shared_pairs(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = _as_float_array(a), _as_float_array(b)
    if a.shape != b.shape:
        raise StatsError("The two label lists must have the same length (one label per item).")
    shared = ~np.isnan(a) & ~np.isnan(b)
    if not shared.any():
        raise StatsError("The two annotators have no labelled item in common.")
    _require_whole(a[shared])
    _require_whole(b[shared])
    return a[shared].astype(int), b[shared].astype(int)


def percent_agreement(a, b) -> float:
    """Share of the items labelled by both (NaN = missing) that got the same label."""
    a, b = _shared_pairs(a, b)
    return float(np.mean(a == b))


def _kappa(a: np.ndarray, b: np.ndarray, weights: Optional[str]) -> float:
    # Every integer between the lowest and highest level, so weighted κ measures distances on the
    # scale even when a middle level was never used.
    low = min(a.min(), b.min())
    n = int(max(a.max(), b.max()) - low + 1)
    return kappa_from_confusion(np.bincount((a - low) * n + (b - low), minlength=n * n).reshape(n, n), weights)


def kappa_from_confusion(confusion: np.ndarray, weights: Optional[str]) -> float:
    """sklearn's cohen_kappa_score formula on a confusion matrix whose rows and columns are consecutive
    integer levels: the same value, without its input validation, which cost seconds over the
    hundreds of pairs of a 20-annotator campaign. Levels nobody used add nothing to either sum."""
    if weights not in (None, "linear", "quadratic"):
        raise StatsError(f"Unknown κ weighting {weights!r}; use None, 'linear' or 'quadratic'.")
    confusion = np.asarray(confusion, dtype=float)
    n = len(confusion)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    distance = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
    weight = {None: (distance > 0).astype(float), "linear": distance, "quadratic": distance**2}[weights]
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1 - (weight * confusion).sum() / (weight * expected).sum()
    if not np.isfinite(kappa):
        raise StatsError(
            "Cohen's κ is undefined here: every shared item got the same single label from both, "
            "so chance agreement is already perfect."
        )
    return float(kappa)


def cohen_kappa(a, b, weights: Optional[str] = None) -> float:
    """Cohen's κ between two annotators (sklearn's formula), on the items both labelled (NaN = missing).
    ``weights="linear"|"quadratic"`` gives the weighted κ of an ordinal scale."""
    return _kappa(*_shared_pairs(a, b), weights)


class PairwiseAgreement(NamedTuple):
    kappa: pd.DataFrame  # annotators x annotators, NaN on the diagonal and where undefined
    n_shared: pd.DataFrame  # annotators x annotators; diagonal = items the annotator labelled
    table: pd.DataFrame  # one row per pair: annotator_a, annotator_b, n_shared, percent_agreement, kappa, note


_CONFUSION_LEVELS = 64  # beyond this many levels between the lowest and the highest, pair by pair
_CONFUSION_CELLS = 1 << 22  # items x (annotators x levels) indicators per matrix product


def _confusion_tables(values: np.ndarray) -> np.ndarray:
    """Every pair of annotators' confusion matrix of an items x annotators matrix of whole numbers
    (NaN = missing): tables[i, j, a, b] counts the items annotator i gave level low + a and annotator j
    level low + b. One indicator matrix (items x annotators·levels) times itself, in blocks of items:
    one matrix product instead of a pass over every item for each of the hundreds of pairs (1.3 s
    for 1,000,000 items and 20 annotators before)."""
    people = values.shape[1]
    known = values[~np.isnan(values)]
    if known.size == 0:
        return np.zeros((people, people, 1, 1))
    low, levels = known.min(), int(known.max() - known.min()) + 1
    if levels > _CONFUSION_LEVELS:  # a wide raw scale: a table per pair from its own items
        tables = np.zeros((people, people, levels, levels))
        for i in range(people):
            for j in range(people):
                shared = ~np.isnan(values[:, i]) & ~np.isnan(values[:, j])
                codes = (values[shared, i] - low).astype(np.int64) * levels + (values[shared, j] - low).astype(np.int64)
                tables[i, j] = np.bincount(codes, minlength=levels * levels).reshape(levels, levels)
        return tables
    product = np.zeros((people * levels, people * levels))
    block = max(1024, _CONFUSION_CELLS // (people * levels))
    columns = np.arange(people) * levels
    for start in range(0, len(values), block):
        chunk = values[start:start + block]
        indicators = np.zeros((len(chunk), people * levels), dtype=np.float32)  # exact: a block's counts < 2^24
        rows, who = np.nonzero(~np.isnan(chunk))
        indicators[rows, columns[who] + (chunk[rows, who] - low).astype(np.int64)] = 1.0
        product += indicators.T @ indicators
    return product.reshape(people, levels, people, levels).transpose(0, 2, 1, 3)


def pairwise_kappa(labels: pd.DataFrame, weights: Optional[str] = None) -> PairwiseAgreement:
    """Cohen's κ and percent agreement for every pair of annotators of an items x annotators matrix
    (NaN = missing)."""
    values = _as_float_array(labels)
    _require_whole(values)
    names = list(labels.columns) if isinstance(labels, pd.DataFrame) else list(range(values.shape[1]))
    tables = _confusion_tables(values)
    n_shared = tables.sum(axis=(2, 3)).astype(np.int64)
    kappa = np.full((len(names), len(names)), np.nan)
    rows = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            agreement, value, note = np.nan, np.nan, ""
            if n_shared[i, j]:
                agreement = float(np.trace(tables[i, j]) / n_shared[i, j])
                try:
                    value = kappa_from_confusion(tables[i, j], weights)
                except StatsError as error:
                    note = str(error)
            else:
                note = "No labelled item in common."
            kappa[i, j] = kappa[j, i] = value
            rows.append((names[i], names[j], int(n_shared[i, j]), agreement, value, note))
    table = pd.DataFrame(rows, columns=["annotator_a", "annotator_b", "n_shared", "percent_agreement", "kappa", "note"])
    return PairwiseAgreement(
        kappa=pd.DataFrame(kappa, index=names, columns=names),
        n_shared=pd.DataFrame(n_shared, index=names, columns=names),
        table=table,
    )


def fleiss_kappa(counts) -> float:
    """Fleiss' κ from an items x categories count matrix (Fleiss 1971).

    Items rated by fewer than two raters carry no agreement information and are left out. When the
    number of raters varies between items, each item's agreement uses its own number of raters and
    category proportions pool all ratings (the usual generalisation; identical to Fleiss' formula
    when every item has the same number of raters)."""
    counts = _as_float_array(counts)
    if counts.ndim != 2:
        raise StatsError("Fleiss' κ needs an items x categories table of counts.")
    if (counts < 0).any() or np.isnan(counts).any() or (counts != np.round(counts)).any():
        raise StatsError("Fleiss' κ needs whole, non-negative counts.")
    raters = counts.sum(axis=1)
    counts, raters = counts[raters >= 2], raters[raters >= 2]
    if len(counts) == 0:
        raise StatsError("Fleiss' κ needs at least one item labelled by two or more annotators.")
    item_agreement = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    proportions = counts.sum(axis=0) / raters.sum()
    chance = float((proportions**2).sum())
    if np.isclose(chance, 1.0):
        raise StatsError("Fleiss' κ is undefined here: every rating is the same label.")
    return float((item_agreement.mean() - chance) / (1 - chance))


_LEVELS_OF_MEASUREMENT = ("nominal", "ordinal", "interval")


def _reliability_value_counts(reliability_data, level: str, value_domain):
    """annotators x items data -> (items x values counts, value domain), as krippendorff builds them."""
    if level not in _LEVELS_OF_MEASUREMENT:
        raise StatsError(f"Unknown level of measurement {level!r}; use one of {', '.join(_LEVELS_OF_MEASUREMENT)}.")
    data = _as_float_array(reliability_data)
    if data.ndim != 2:
        raise StatsError("Krippendorff's α needs an annotators x items table.")
    observed = np.sort(pd.unique(data[~np.isnan(data)]))  # a hash, not np.unique's sort of every label
    if observed.size == 0:
        raise StatsError("There are no labels to compare yet.")
    if value_domain is None:
        integer = observed.size and np.array_equal(observed, np.round(observed))
        value_domain = np.arange(observed.min(), observed.max() + 1) if integer else observed
    value_domain = np.asarray(value_domain, dtype=float)
    if not np.isin(observed, value_domain).all():
        raise StatsError("Some labels are outside the value domain given for Krippendorff's α.")
    if len(np.intersect1d(observed, value_domain)) < 2:
        raise StatsError("Krippendorff's α is undefined here: every label is the same value.")
    value_counts = np.stack([(data == v).sum(axis=0) for v in value_domain], axis=1)
    if not (value_counts.sum(axis=1) >= 2).any():
        raise StatsError("Krippendorff's α needs at least one item labelled by two or more annotators.")
    return value_counts, value_domain


def krippendorff_alpha(
    reliability_data,
    level: str = "nominal",
    value_domain: Optional[Sequence[float]] = None,
) -> float:
    """Krippendorff's α (krippendorff library) of annotators x items data, NaN = missing, every other
    value a label. ``level``: nominal, ordinal or interval."""
    return _library_alpha(*_reliability_value_counts(reliability_data, level, value_domain), level)


def _library_alpha(value_counts: np.ndarray, value_domain: np.ndarray, level: str) -> float:
    with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
        warnings.simplefilter("ignore")
        alpha = krippendorff.alpha(value_counts=value_counts, value_domain=value_domain, level_of_measurement=level)
    if not np.isfinite(alpha):
        raise StatsError("Krippendorff's α is undefined here: the items that two annotators share all carry one value.")
    return float(alpha)


def _alpha_from_weighted_patterns(patterns: np.ndarray, weights: np.ndarray, value_domain: np.ndarray, level: str):
    """α for many resamples at once. ``patterns`` are the distinct item rows of value counts and
    ``weights`` (resamples x patterns) how often each is drawn. Same formulas as krippendorff.alpha
    (coincidences, expected coincidences, distance), linear in the items so one matrix product
    covers every resample; the tests check it equals the library on the unweighted data."""
    n_values = len(value_domain)
    pairable = patterns.sum(axis=1)
    per_item = patterns[:, :, None] * patterns[:, None, :] - patterns[:, :, None] * np.eye(n_values)[None]
    per_item = per_item / np.maximum(pairable - 1, 1)[:, None, None]
    coincidences = (weights @ per_item.reshape(len(patterns), -1)).reshape(-1, n_values, n_values)
    n_v = coincidences.sum(axis=1)
    n_total = n_v.sum(axis=1)
    expected = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(n_values)[None]) / (
        n_total - 1
    )[:, None, None]
    if level == "nominal":
        distance = np.broadcast_to(1.0 - np.eye(n_values), coincidences.shape)
    elif level == "interval":
        distance = np.broadcast_to((value_domain[:, None] - value_domain[None, :]) ** 2, coincidences.shape)
    else:  # ordinal: (sum of n_g for g between c and k, minus half the two ends) squared
        cumulative = np.concatenate([np.zeros((len(n_v), 1)), np.cumsum(n_v, axis=1)], axis=1)
        low = np.minimum.outer(np.arange(n_values), np.arange(n_values))
        high = np.maximum.outer(np.arange(n_values), np.arange(n_values))
        between = cumulative[:, high + 1] - cumulative[:, low]
        distance = (between - (n_v[:, :, None] + n_v[:, None, :]) / 2) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        return 1 - (coincidences * distance).sum(axis=(1, 2)) / (expected * distance).sum(axis=(1, 2))


def krippendorff_alpha_ci(
    reliability_data,
    level: str = "nominal",
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
    value_domain: Optional[Sequence[float]] = None,
) -> dict:
    """Krippendorff's α with a percentile bootstrap interval, resampling items with replacement.

    Returns {"alpha", "ci_low", "ci_high", "n_boot", "n_items"}; n_items counts the items labelled
    by two or more annotators (the only ones α uses, and the ones resampled). Resamples where α is
    undefined (a single value drawn) are left out of the interval."""
    if n_boot < 1:
        raise StatsError("The bootstrap needs at least one resample.")
    if not 0 < confidence < 1:
        raise StatsError("The confidence level must be between 0 and 1 (e.g. 0.95).")
    value_counts, value_domain = _reliability_value_counts(reliability_data, level, value_domain)
    value_counts = value_counts[value_counts.sum(axis=1) >= 2]
    # Items with identical value counts are interchangeable: α is the same sum over the distinct rows,
    # each weighted by how many items have it, and a resample of items is a multinomial draw over
    # them. Exact, and cheap even for 1,000,000 items; krippendorff.alpha itself took 0.7 s a level
    # there (tests/test_stats.py checks both give the same α).
    patterns, frequency = _distinct_rows(value_counts)
    return krippendorff_alpha_ci_from_patterns(patterns, frequency, value_domain, level, n_boot, seed, confidence)


def _distinct_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(counts, axis=0, return_counts=True) for small non-negative whole counts, in the same
    (lexicographic) order: each row read as one number in base max + 1, then unique numbers (1.5 s
    for 1,000,000 items before)."""
    counts = np.asarray(counts, dtype=np.int64)
    base = int(counts.max(initial=0)) + 1
    if counts.shape[1] * np.log2(base) >= 62:  # the number would not fit in 64 bits
        return np.unique(counts, axis=0, return_counts=True)
    keys = counts @ (base ** np.arange(counts.shape[1] - 1, -1, -1, dtype=np.int64))
    unique, first, frequency = np.unique(keys, return_index=True, return_counts=True)
    return counts[first], frequency


def krippendorff_alpha_ci_from_patterns(
    patterns,
    frequencies,
    value_domain: Sequence[float],
    level: str = "nominal",
    n_boot: int = 200,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict:
    """krippendorff_alpha_ci for data summarised as counts: ``patterns`` are distinct items' counts of
    each value of ``value_domain`` (patterns x values) and ``frequencies`` how many items have each.
    α depends on nothing else, so a million items summarised this way take a few kilobytes (a
    dataset export gathers them chunk by chunk). Items with fewer than two values are left out.
    Returns the same dict as krippendorff_alpha_ci."""
    if level not in _LEVELS_OF_MEASUREMENT:
        raise StatsError(f"Unknown level of measurement {level!r}; use one of {', '.join(_LEVELS_OF_MEASUREMENT)}.")
    if n_boot < 1:
        raise StatsError("The bootstrap needs at least one resample.")
    if not 0 < confidence < 1:
        raise StatsError("The confidence level must be between 0 and 1 (e.g. 0.95).")
    value_domain = np.asarray(value_domain, dtype=float)
    patterns = np.asarray(patterns, dtype=float).reshape(-1, len(value_domain))
    frequencies = np.asarray(frequencies, dtype=float)
    kept = (patterns.sum(axis=1) >= 2) & (frequencies > 0)
    patterns, frequencies = patterns[kept], frequencies[kept]
    if len(patterns) == 0:
        raise StatsError("Krippendorff's α needs at least one item labelled by two or more annotators.")
    if ((patterns * frequencies[:, None]).sum(axis=0) > 0).sum() < 2:
        raise StatsError("Krippendorff's α is undefined here: every label is the same value.")
    alpha = float(_alpha_from_weighted_patterns(patterns, frequencies[None, :], value_domain, level)[0])
    if not np.isfinite(alpha):
        raise StatsError("Krippendorff's α is undefined here: the items that two annotators share all carry one value.")
    n_items = int(frequencies.sum())
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_items, frequencies / frequencies.sum(), size=n_boot).astype(float)
    boots = _alpha_from_weighted_patterns(patterns, weights, value_domain, level)
    boots = boots[np.isfinite(boots)]
    if boots.size == 0:
        raise StatsError("No bootstrap resample gave a defined α; there are too few labelled items.")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(boots, [tail, 100 - tail])
    return {"alpha": alpha, "ci_low": float(low), "ci_high": float(high), "n_boot": int(boots.size), "n_items": n_items}


# --------------------------------------------------------------------------- human vs model


def _predict(scores: np.ndarray, threshold: float, higher_is_positive: bool) -> np.ndarray:
    return (scores >= threshold if higher_is_positive else scores <= threshold).astype(int)


def _binary_labels(labels) -> np.ndarray:
    labels = _as_float_array(labels)
    known = labels[~np.isnan(labels)]
    if not np.isin(known, (0, 1)).all():
        raise StatsError("Binary labels must be 0 (non-paraphrase) or 1 (paraphrase); binarise the levels first.")
    return labels


def _scored_pairs(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """Drops pairs without a score (not scored yet) or without a label."""
    scores, labels = _as_float_array(scores), _binary_labels(labels)
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
    scores, human = _scored_pairs(model_scores, human_binary)
    predicted = _predict(scores, threshold, higher_is_positive)
    try:
        kappa = _kappa(human, predicted, None)
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
    row = {"annotator": name, "n": 0, "kappa": np.nan, "accuracy": np.nan, "tn": 0, "fp": 0, "fn": 0, "tp": 0, "note": ""}
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
            human, predicted = labels[keep].astype(int), _predict(scores[keep], threshold, higher_is_positive)
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
    scores = _as_float_array(model_scores)
    values = _as_float_array(binary_matrix)
    if scores.shape != values.shape[:1]:  # each row says what is wrong
        columns = [*(values[:, i] for i in range(values.shape[1])), _as_float_array(majority_binary_vector(values))]
        names = [*binary_matrix.columns, "majority"]
        return pd.DataFrame([_versus_row(n, c, scores, threshold, higher_is_positive) for n, c in zip(names, columns)])
    rows, columns = np.nonzero(~np.isnan(values))
    labels = pd.DataFrame({"pair_id": rows, "annotator": np.asarray(binary_matrix.columns, dtype=object)[columns],
                           "value": values[rows, columns]})
    return human_vs_model_by_annotator(labels, pd.Series(scores), threshold, higher_is_positive,
                                       annotators=list(binary_matrix.columns))


def positions_by(keys) -> dict:
    """{key: the positions (int64 array, ascending) where it occurs in ``keys``}, in one sort: what a loop
    over thousands of annotators takes from the labels' rows without a boolean mask per annotator."""
    codes, names = pd.factorize(pd.Series(keys))
    order = np.argsort(codes, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(codes, minlength=len(names)))])
    return {name: order[bounds[i]:bounds[i + 1]] for i, name in enumerate(names)}


def human_vs_model_by_annotator(labels: pd.DataFrame, model_scores: pd.Series, threshold: float = 0.0,
                                higher_is_positive: bool = True, annotators: Optional[Sequence] = None) -> pd.DataFrame:
    """``human_vs_model_table`` from the binarised labels as rows (``pair_id``, ``annotator``, ``value`` 0/1,
    one per pair and annotator; pluie_core.analysis.agreement_values), at the labels' size rather than
    pairs x annotators. ``model_scores`` is indexed by pair_id. One row per annotator (``annotators``' order,
    sorted names by default), then the majority label of every pair's labels."""
    items = labels["pair_id"].to_numpy()
    values = _as_float_array(labels["value"])
    scores = _as_float_array(model_scores.reindex(items))
    where = positions_by(labels["annotator"])
    rows = []
    for name in (sorted(where) if annotators is None else annotators):
        chosen = where.get(name, np.zeros(0, dtype=np.int64))
        rows.append(_versus_row(name, values[chosen], scores[chosen], threshold, higher_is_positive))
    majority = majority_binary_vector(item_slots(labels, level_col="value"))
    rows.append(_versus_row("majority", _as_float_array(majority),
                            _as_float_array(model_scores.reindex(majority.index)), threshold, higher_is_positive))
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- thresholds


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


def _rates(tp, fp, tn, fn) -> dict:
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
    scores, labels = _scored_pairs(scores, labels)
    _require_both_classes(labels, "A threshold curve")
    oriented = scores if higher_is_positive else -scores
    sorted_scores, tp, fp, tn, fn, is_threshold = (x[0] for x in _threshold_counts(oriented[None, :], labels[None, :]))
    keep = is_threshold
    threshold = sorted_scores[keep] if higher_is_positive else -sorted_scores[keep]
    curve = pd.DataFrame({"threshold": threshold})
    curve["rank"] = np.searchsorted(np.sort(scores), threshold, side="left") + 1
    for name, values in _rates(tp[keep], fp[keep], tn[keep], fn[keep]).items():
        curve[name] = values
    for name, values in (("tp", tp), ("fp", fp), ("tn", tn), ("fn", fn)):
        curve[name] = values[keep].astype(int)
    return curve.sort_values("threshold", kind="stable", ignore_index=True)


_CRITERIA = ("accuracy", "f1")


def best_threshold(scores, labels, higher_is_positive: bool = True, criterion: str = "accuracy") -> dict:
    """The a-posteriori threshold that maximises ``criterion`` ("accuracy", as in the paper's table 3,
    or "f1"). Among equally good thresholds, the one predicting the most paraphrases is kept.

    Returns {"threshold", "accuracy", "f1", "precision", "recall", "tp", "fp", "tn", "fn", "n",
    "tie_low", "tie_high", "n_tied"}. Several thresholds often reach the same best value (a plateau):
    tie_low and tie_high are the lowest and highest of them (in the score's units) and n_tied how many
    distinct thresholds reach it, so a reader sees that the choice within [tie_low, tie_high] is
    arbitrary (the other figures differ along it; the thresholds between may do worse)."""
    if criterion not in _CRITERIA:
        raise StatsError(f"Unknown criterion {criterion!r}; use 'accuracy' or 'f1'.")
    scores, labels = _scored_pairs(scores, labels)
    _require_both_classes(labels, "The best threshold")
    oriented = scores if higher_is_positive else -scores
    sorted_scores, tp, fp, tn, fn, is_threshold = (x[0] for x in _threshold_counts(oriented[None, :], labels[None, :]))
    target = np.where(is_threshold, _rates(tp, fp, tn, fn)[criterion], -np.inf)
    best = int(np.argmax(target))  # first maximum: the lowest oriented threshold, most paraphrases
    threshold = sorted_scores[best] if higher_is_positive else -sorted_scores[best]
    # equal rates are equal ratios of whole numbers, which IEEE division rounds identically: == finds the ties
    tied = sorted_scores[target == target[best]]
    low, high = (tied.min(), tied.max()) if higher_is_positive else (-tied.max(), -tied.min())
    result = _metrics_dict(float(threshold), tp[best], fp[best], tn[best], fn[best])
    return {**result, "tie_low": float(low), "tie_high": float(high), "n_tied": int(tied.size)}


def _metrics_dict(threshold: float, tp, fp, tn, fn) -> dict:
    rates = {name: float(value) for name, value in _rates(tp, fp, tn, fn).items()}
    counts = {"tp": int(tp), "fp": int(fp), "tn": int(tn), "fn": int(fn)}
    return {"threshold": threshold, **rates, **counts, "n": int(tp + fp + tn + fn)}


def metrics_at(scores, labels, threshold: float = 0.0, higher_is_positive: bool = True) -> dict:
    """Accuracy, F1, precision, recall at a fixed threshold (e.g. PLUIE's natural 0), same keys as
    ``best_threshold``. Undefined ratios (no predicted / no actual paraphrase) are 0, as in sklearn."""
    scores, labels = _scored_pairs(scores, labels)
    predicted = _predict(scores, threshold, higher_is_positive)
    tp = int(np.sum((predicted == 1) & (labels == 1)))
    fp = int(np.sum((predicted == 1) & (labels == 0)))
    fn = int(np.sum((predicted == 0) & (labels == 1)))
    tn = int(np.sum((predicted == 0) & (labels == 0)))
    return _metrics_dict(float(threshold), tp, fp, tn, fn)


def roc_auc(scores, labels, higher_is_positive: bool = True) -> float:
    """Area under the ROC curve (sklearn); pairs without a score or label are dropped."""
    scores, labels = _scored_pairs(scores, labels)
    _require_both_classes(labels, "ROC AUC")
    return float(roc_auc_score(labels, scores if higher_is_positive else -scores))


# --------------------------------------------------------------------------- mixed balanced draw


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
        rows.append({
            "score": score, "at": at, "figure": figure, "mean": float(values.mean()), "std": std,
            "ci_low": float(low), "ci_high": float(high),
            # 1.96 standard errors of the mean over draws: the "±" of the paper's MBD column
            "mean_ci_halfwidth": float(1.959964 * std / np.sqrt(values.size)),
        })
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
        rows = drawn[first:first + chunk]
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
        beaten = np.einsum("ij,ij->i", negatives, n_pos[:, None] - pos_below - positives) + np.einsum(
            "ij,ij->i", negatives, positives
        ) / 2
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
    _require_columns(df, (*score_cols, label_col, dataset_col), "The table")
    if not score_cols:
        raise StatsError("Choose at least one score for the mixed balanced draw.")
    if n_draws < 1:
        raise StatsError("The mixed balanced draw needs at least one draw.")
    if criterion not in _CRITERIA:
        raise StatsError(f"Unknown criterion {criterion!r}; use 'accuracy' or 'f1'.")
    data = df.dropna(subset=[*score_cols, label_col])
    labels_all = _binary_labels(data[label_col]).astype(int)
    datasets = data[dataset_col].to_numpy()

    groups = []  # row positions of each (dataset, class)
    for dataset in pd.unique(datasets):
        for label in (1, 0):
            groups.append((dataset, label, np.flatnonzero((datasets == dataset) & (labels_all == label))))
    if per_class < 1:
        raise StatsError("The mixed balanced draw needs at least one pair per class and dataset.")

    def shortfall(n: int) -> str:
        short = [f"{d!r} ({'paraphrases' if label else 'non-paraphrases'}: {len(r)})" for d, label, r in groups
                 if len(r) < n]
        return ", ".join(short) or "the data"

    smallest = min(len(rows) for _, _, rows in groups) if groups else 0
    if smallest < 1:
        raise StatsError(
            "Each dataset needs scored paraphrases and non-paraphrases for the mixed balanced draw; "
            f"there are none in {shortfall(1)}."
        )
    note = ""
    if smallest < per_class:
        note = (f"{per_class} pairs per class and dataset were asked for, but there are fewer in "
                f"{shortfall(per_class)}: each draw takes {smallest} per class and dataset.")
        warnings.warn(note, StatsWarning, stacklevel=2)
        per_class = smallest

    rng = np.random.default_rng(seed)
    drawn = np.stack([
        np.concatenate([rows[rng.choice(len(rows), per_class, replace=False)] for _, _, rows in groups])
        for _ in range(n_draws)
    ])  # draws x pairs, row positions in ``data``

    results = []
    for score in score_cols:
        higher = bool(_per_score(higher_is_positive, score, True))
        scores = data[score].to_numpy(dtype=float)
        best, best_counts, auc = _draw_statistics(scores if higher else -scores, labels_all, drawn, criterion)
        figures = {"threshold": best if higher else -best, **_rates(*best_counts)}
        results += _summary_rows(score, "best", figures, confidence)

        given = _per_score(thresholds, score, None)
        if given is not None:
            predicted = _predict(scores, float(given), higher)[drawn]
            labels = labels_all[drawn]
            tp = np.sum(predicted & labels, axis=1)
            fp = np.sum(predicted, axis=1) - tp
            fn = np.sum(labels, axis=1) - tp
            tn = drawn.shape[1] - tp - fp - fn
            figures = {"threshold": np.full(n_draws, float(given)), **_rates(tp, fp, tn, fn)}
            results += _summary_rows(score, "given", figures, confidence)

        results += _summary_rows(score, "threshold-free", {"roc_auc": auc}, confidence)

    table = pd.DataFrame(results)
    table["n_draws"] = n_draws
    table["per_class"] = per_class
    table.attrs["note"] = note
    return table


# --------------------------------------------------------------------------- per-class statistics


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
        [table["n"] == 0, table["n"] == 1], ["No scored pair in this class.", "One pair only: no standard deviation."], ""
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
                result = pearsonr(pair[:, 0], pair[:, 1])
                r, p_value, note = float(result.statistic), float(result.pvalue), ""
            rows.append((*key, score, len(pair), r, p_value, note))
    return pd.DataFrame(rows, columns=[*keys, "score", "n", "r", "p_value", "note"])


# --------------------------------------------------------------------------- disagreements


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
    reference = _binary_labels(data[reference_col])
    scores = data[score_col].to_numpy(dtype=float)
    prediction = _predict(scores, threshold, higher_is_positive)
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
    values = _as_float_array(labels_matrix)
    binary = binarise_levels(values)
    ordinal = ordinal_levels(values)
    n_paraphrase = (binary == 1).sum(axis=1)
    n_non_paraphrase = (binary == 0).sum(axis=1)
    split = (n_paraphrase > 0) & (n_non_paraphrase > 0)
    index = labels_matrix.index if isinstance(labels_matrix, pd.DataFrame) else pd.RangeIndex(len(values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-missing rows are not in the result anyway
        low, high = np.nanmin(ordinal, axis=1), np.nanmax(ordinal, axis=1)
    table = pd.DataFrame({
        "n_labels": n_paraphrase + n_non_paraphrase,
        "n_paraphrase": n_paraphrase,
        "n_non_paraphrase": n_non_paraphrase,
        "n_dont_know": (values == DONT_KNOW).sum(axis=1),
        "min_level": low,
        "max_level": high,
    }, index=index)[split]
    table["min_level"] = table["min_level"].astype(int)
    table["max_level"] = table["max_level"].astype(int)
    table["spread"] = table["max_level"] - table["min_level"]
    table["minority_share"] = np.minimum(table["n_paraphrase"], table["n_non_paraphrase"]) / table["n_labels"]
    return table.sort_values(["minority_share", "spread"], ascending=False, kind="stable")
