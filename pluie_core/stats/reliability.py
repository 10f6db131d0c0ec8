"""Agreement between annotators: percent agreement, Cohen's κ (two annotators, or every pair of an items
x annotators matrix at once, ``pairwise_kappa``), Fleiss' κ, Krippendorff's α and its bootstrap interval
(also from counts summarised as patterns). Plain values: NaN is missing, every other value a label.
(``pluie_core.agreement`` is another module: the app's one α of the five-level labels, built on these.)"""

from __future__ import annotations

import warnings
from typing import NamedTuple, Optional, Sequence

import krippendorff
import numpy as np
import pandas as pd

from pluie_core.stats.errors import StatsError
from pluie_core.stats.matrices import as_float_array


def _require_whole(values: np.ndarray) -> None:
    known = values[~np.isnan(values)]
    if (known != np.round(known)).any():
        raise StatsError("Cohen's κ needs labels that are whole numbers (categories); these have fractions.")


def _shared_pairs(a, b) -> tuple[np.ndarray, np.ndarray]:
    a, b = as_float_array(a), as_float_array(b)
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


def kappa_from_codes(a: np.ndarray, b: np.ndarray, weights: Optional[str]) -> float:
    """Cohen's κ of two int arrays of the same items' labels, none missing (``cohen_kappa`` checks its input
    and calls this)."""
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
    return kappa_from_codes(*_shared_pairs(a, b), weights)


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
        chunk = values[start : start + block]
        indicators = np.zeros((len(chunk), people * levels), dtype=np.float32)  # exact: a block's counts < 2^24
        rows, who = np.nonzero(~np.isnan(chunk))
        indicators[rows, columns[who] + (chunk[rows, who] - low).astype(np.int64)] = 1.0
        product += indicators.T @ indicators
    return product.reshape(people, levels, people, levels).transpose(0, 2, 1, 3)


def pairwise_kappa(labels: pd.DataFrame, weights: Optional[str] = None) -> PairwiseAgreement:
    """Cohen's κ and percent agreement for every pair of annotators of an items x annotators matrix
    (NaN = missing)."""
    values = as_float_array(labels)
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
    counts = as_float_array(counts)
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


def _reliability_value_counts(reliability_data, level: str, value_domain) -> tuple[np.ndarray, np.ndarray]:
    """annotators x items data -> (items x values counts, value domain), as krippendorff builds them."""
    if level not in _LEVELS_OF_MEASUREMENT:
        raise StatsError(f"Unknown level of measurement {level!r}; use one of {', '.join(_LEVELS_OF_MEASUREMENT)}.")
    data = as_float_array(reliability_data)
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
        # level is one of _LEVELS_OF_MEASUREMENT (checked by the callers); krippendorff types it as a Literal
        alpha = krippendorff.alpha(value_counts=value_counts, value_domain=value_domain, level_of_measurement=level)  # type: ignore[arg-type]
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
    expected = (n_v[:, :, None] * n_v[:, None, :] - n_v[:, :, None] * np.eye(n_values)[None]) / (n_total - 1)[
        :, None, None
    ]
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
    value_domain: Sequence[float] | np.ndarray,
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
