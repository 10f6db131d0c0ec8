"""Correlation of metric scores with graded human judgments (the Revisiting paper's segment and
system level; *-PLUIE's alignment with human ratings).

    correlate(scores, reference)                  # one row per (metric, method): r, ci_low, ci_high, n
    compare_correlations(a, b, reference)         # paired bootstrap test of r(a) = r(b)
    system_level(scores, reference, systems)      # the same on per-system means

The coefficients are scipy's (``pearsonr``, ``spearmanr``, ``kendalltau``: τ-b). Intervals are
percentile bootstrap intervals over the pairs: ``n_boot`` resamples drawn with replacement. When
there are more pairs than ``max_resample``, each resample draws ``max_resample`` pairs and its
deviation from the full-sample r is scaled by √(m/n) (the m-out-of-n bootstrap, Bickel, Götze & van
Zwet 1997), which keeps the cost bounded at 100,000 pairs; below that it is the ordinary bootstrap.
A graded reference is any numeric human judgment: gold scores (STS-B 0-5, SICK 1-5, BIOSSES'
annotators' mean) or the mean level of labels on the five-level scale (``mean_levels``: Don't know
excluded by ``pluie_core.labels.ordinal_levels``).

Every problem the data can cause raises ``StatsError`` with one sentence for the user.
"""

from __future__ import annotations

import warnings
from typing import Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from pluie_core import private_api
from pluie_core.labels import ordinal_levels
from pluie_core.stats.errors import StatsError

__all__ = [
    "METHODS",
    "MIN_PAIRS",
    "graded_reference",
    "correlation",
    "correlate",
    "compare_correlations",
    "system_means",
    "system_level",
    "mean_levels",
]

METHODS = ("pearson", "spearman", "kendall")
MIN_PAIRS = 3  # fewer pairs leave no freedom: any two points are perfectly correlated
MISSING_TEXT = ("", "nan", "na", "n/a", "none", "null")  # empty cells, not text
COLUMNS = ["metric", "method", "r", "ci_low", "ci_high", "n"]

Scores = Union[pd.DataFrame, pd.Series, Mapping[str, Sequence[float]]]


# --------------------------------------------------------------------------- inputs


def graded_reference(values, name: str = "reference", role: str = "reference") -> pd.Series:
    """The reference (or a score column: ``role``) as floats, missing staying NaN. Text raises
    StatsError naming a value found."""
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    numbers = pd.to_numeric(series, errors="coerce")
    text = series[numbers.isna() & series.notna()]
    text = text[~text.astype(str).str.strip().str.lower().isin(MISSING_TEXT)]
    if len(text):
        raise StatsError(
            f"The {role} {name!r} holds text (e.g. {str(text.iloc[0])[:40]!r}), not numbers: choose a numeric column."
        )
    return numbers.astype(float)


def _score_frame(scores: Scores) -> pd.DataFrame:
    if isinstance(scores, pd.DataFrame):
        frame = scores
    elif isinstance(scores, pd.Series):
        frame = scores.to_frame(scores.name if scores.name is not None else "score")
    else:
        frame = pd.DataFrame(
            {
                name: pd.Series(values) if not isinstance(values, pd.Series) else values
                for name, values in scores.items()
            }
        )
    if frame.shape[1] == 0:
        raise StatsError("Choose at least one metric to correlate.")
    return pd.DataFrame(
        {str(c): graded_reference(frame[c], str(c), "score column") for c in frame.columns}, index=frame.index
    )


def _aligned(scores: Scores, reference) -> tuple[pd.DataFrame, pd.Series]:
    frame = _score_frame(scores)
    if isinstance(reference, pd.Series) and isinstance(scores, (pd.DataFrame, pd.Series)):
        reference = graded_reference(reference, str(reference.name or "reference")).reindex(frame.index)
    else:
        if len(reference) != len(frame):
            raise StatsError("Scores and reference must have the same length (one of each per pair).")
        reference = graded_reference(pd.Series(np.asarray(reference), index=frame.index))
    return frame, reference


def _valid(x: np.ndarray, y: np.ndarray, what: str) -> tuple[np.ndarray, np.ndarray]:
    kept = ~(np.isnan(x) | np.isnan(y))
    x, y = x[kept], y[kept]
    if len(x) < MIN_PAIRS:
        raise StatsError(
            f"Only {len(x)} pair{'s' if len(x) != 1 else ''} {'have' if len(x) != 1 else 'has'} both "
            f"{what} and a reference; a correlation needs at least {MIN_PAIRS}."
        )
    if np.all(x == x[0]):
        raise StatsError(f"Every pair has the same {what}: a correlation with it is undefined.")
    if np.all(y == y[0]):
        raise StatsError("Every pair has the same reference value: a correlation with it is undefined.")
    return x, y


def _check_method(method: str) -> None:
    if method not in METHODS:
        raise StatsError(f"Unknown correlation {method!r}; use one of {', '.join(METHODS)}.")


# --------------------------------------------------------------------------- coefficients


def correlation(x, y, method: str = "pearson") -> float:
    """scipy's coefficient (NaN pairs dropped): pearsonr, spearmanr or kendalltau (τ-b)."""
    _check_method(method)
    x, y = _valid(np.asarray(x, dtype=float), np.asarray(y, dtype=float), "score")
    return _coefficient(x, y, method)


def _coefficient(x: np.ndarray, y: np.ndarray, method: str) -> float:
    function = {"pearson": scipy_stats.pearsonr, "spearman": scipy_stats.spearmanr, "kendall": scipy_stats.kendalltau}[
        method
    ]
    return float(function(x, y).statistic)


def _pairs_in_runs(codes: np.ndarray) -> np.ndarray:
    """Per row of ``codes`` (each row sorted), the number of pairs of equal values."""
    rows, m = codes.shape
    new = np.ones((rows, m), dtype=bool)
    new[:, 1:] = codes[:, 1:] != codes[:, :-1]
    positions = np.broadcast_to(np.arange(m), (rows, m))
    starts = np.maximum.accumulate(np.where(new, positions, 0), axis=1)
    return (positions - starts).sum(axis=1)


def _dense_ranks(sorted_rows: np.ndarray) -> np.ndarray:
    ranks = np.ones(sorted_rows.shape, dtype=np.intp)
    ranks[:, 1:] = sorted_rows[:, 1:] != sorted_rows[:, :-1]
    return np.cumsum(ranks, axis=1)


def _rows_kendall(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b of each row of x with the same row of y (NaN where a row is constant): scipy's
    own algorithm (Knight's, as in ``scipy.stats.kendalltau``), its sorts and tie counts done for all
    rows at once so that a thousand bootstrap resamples cost about one call each. The discordant
    pairs are counted by scipy's compiled ``_kendall_dis`` when this scipy has it
    (``pluie_core.private_api.kendall_discordant``), else each row goes through ``kendalltau``, with a
    warning in the log; tests check both against ``kendalltau``."""
    _kendall_dis = private_api.kendall_discordant()
    if _kendall_dis is None:  # another scipy layout: the public function, row by row
        return _rows_kendall_public(x, y)
    rows, m = x.shape
    order = np.argsort(y, axis=1, kind="stable")  # by y, then (stable) by x: ties in x keep y's order
    y, x = np.take_along_axis(y, order, 1), np.take_along_axis(x, order, 1)
    y_ties, y_ranks = _pairs_in_runs(y), _dense_ranks(y)
    order = np.argsort(x, axis=1, kind="stable")
    x, y_ranks = np.take_along_axis(x, order, 1), np.ascontiguousarray(np.take_along_axis(y_ranks, order, 1))
    x_ties, x_ranks = _pairs_in_runs(x), np.ascontiguousarray(_dense_ranks(x))
    joint_ties = _pairs_in_runs(x_ranks * (m + 1) + y_ranks)  # consecutive equal (x, y)
    discordant = np.array([_kendall_dis(x_ranks[r], y_ranks[r]) for r in range(rows)], dtype=float)
    total = m * (m - 1) // 2
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = (total - x_ties - y_ties + joint_ties - 2 * discordant) / np.sqrt((total - x_ties) * (total - y_ties))
    tau[(x_ties == total) | (y_ties == total)] = np.nan
    return np.clip(tau, -1.0, 1.0)


def _rows_kendall_public(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():  # a constant resample: NaN, left out of the interval
        warnings.simplefilter("ignore")
        return np.array([scipy_stats.kendalltau(a, b).statistic for a, b in zip(x, y)], dtype=float)


def _rows_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r of each row of x with the same row of y (NaN where a row is constant)."""
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=1) / np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    return np.clip(r, -1.0, 1.0)


class _Resamples:
    """Bootstrap resamples of n pairs, shared by every metric and method computed on them (so that
    the difference of two metrics is paired); the reference's values and ranks are drawn once."""

    def __init__(self, n: int, n_boot: int, max_resample: int, seed: int):
        if n_boot < 1:
            raise StatsError("The bootstrap needs at least one resample.")
        self.n, self.m = n, min(n, max(int(max_resample), MIN_PAIRS))
        self.scale = np.sqrt(self.m / n)  # 1 for the ordinary bootstrap
        self.index = np.random.default_rng(seed).integers(0, n, size=(n_boot, self.m))
        self._ranks: dict[int, np.ndarray] = {}

    def statistic(self, x: np.ndarray, y: np.ndarray, method: str, y_key: Optional[int] = None) -> np.ndarray:
        """r of every resample (NaN where a resample is constant)."""
        xs, ys = x[self.index], y[self.index]
        if method == "pearson":
            return _rows_pearson(xs, ys)
        if method == "spearman":
            if y_key is None or y_key not in self._ranks:
                ranks = scipy_stats.rankdata(ys, axis=1)
                if y_key is not None:
                    self._ranks[y_key] = ranks
            else:
                ranks = self._ranks[y_key]
            return _rows_pearson(scipy_stats.rankdata(xs, axis=1), ranks)
        return _rows_kendall(xs, ys)

    def deviations(self, boots: np.ndarray, estimate: float) -> np.ndarray:
        """Resample deviations on the scale of n pairs (√(m/n) shrinks those of an m-out-of-n draw)."""
        boots = boots[np.isfinite(boots)]
        return (boots - estimate) * self.scale


def _interval(estimate: float, deviations: np.ndarray, confidence: float) -> tuple[float, float]:
    if deviations.size == 0:
        return float("nan"), float("nan")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(estimate + deviations, [tail, 100 - tail])
    return float(np.clip(low, -1, 1)), float(np.clip(high, -1, 1))


def _check_confidence(confidence: float) -> None:
    if not 0 < confidence < 1:
        raise StatsError("The confidence level must be between 0 and 1 (e.g. 0.95).")


def correlate(
    scores: Scores,
    reference,
    methods: Sequence[str] = METHODS,
    n_boot: int = 1000,
    confidence: float = 0.95,
    max_resample: int = 1000,
    seed: int = 0,
    coefficients: Optional[pd.DataFrame] = None,
) -> pd.DataFrame:
    """Correlation of each metric with the reference: one row per (metric, method) with columns
    metric, method, r (scipy's coefficient), ci_low, ci_high (percentile bootstrap interval at
    ``confidence``) and n (pairs with both a score and a reference).

    ``scores``: a DataFrame (one column per metric) or a Series, aligned with ``reference`` on
    the index; or a mapping / arrays of the same length as ``reference``. Distances keep their sign
    (a distance correlates negatively with similarity judgments). ``n_boot=0``: the coefficients
    alone, their intervals NaN (what a page shows while the bootstrap runs). ``coefficients``: that table,
    already computed for these same scores and reference: its r are taken as they are, not computed
    again (on a million pairs, scipy's three coefficients of each run take about a second)."""
    _check_confidence(confidence)
    for method in methods:
        _check_method(method)
    frame, reference = _aligned(scores, reference)
    y_all = reference.to_numpy()
    rows, shared = [], {}
    known = (
        None
        if coefficients is None
        else dict(zip(zip(coefficients["metric"], coefficients["method"]), coefficients["r"]))
    )
    for metric in frame.columns:
        x, y = _valid(frame[metric].to_numpy(), y_all, f"{metric} score")
        # metrics scored on the same pairs share their resamples (and the reference's ranks in them)
        kept = (~(np.isnan(frame[metric].to_numpy()) | np.isnan(y_all))).tobytes()
        if kept not in shared and n_boot != 0:
            shared[kept] = _Resamples(len(x), n_boot, max_resample, seed)
        resamples = shared.get(kept)
        for method in methods:
            r = known.get((metric, method)) if known else None
            r = _coefficient(x, y, method) if r is None else float(r)
            low, high = float("nan"), float("nan")
            if resamples is not None:
                boots = resamples.statistic(x, y, method, y_key=0)
                low, high = _interval(r, resamples.deviations(boots, r), confidence)
            rows.append({"metric": metric, "method": method, "r": r, "ci_low": low, "ci_high": high, "n": len(x)})
    return pd.DataFrame(rows, columns=COLUMNS)


def compare_correlations(
    a,
    b,
    reference,
    method: str = "pearson",
    n_boot: int = 1000,
    confidence: float = 0.95,
    max_resample: int = 1000,
    seed: int = 0,
) -> dict:
    """Do two metrics correlate differently with the same human judgments? A paired bootstrap over
    the pairs that have both scores and a reference: every resample draws the same pairs for both
    metrics. Returns {"method", "r_a", "r_b", "difference" (r_a - r_b), "ci_low", "ci_high" (interval
    of the difference), "p_value" (two-sided: twice the share of resamples on the far side of 0,
    +1 smoothed, at most 1), "n"}. Identical metrics give a difference of 0 and p = 1."""
    _check_method(method)
    _check_confidence(confidence)
    frame, reference = _aligned(
        {"a": a, "b": b} if not isinstance(a, pd.Series) else pd.DataFrame({"a": a, "b": b}), reference
    )
    x_a, x_b, y = frame["a"].to_numpy(), frame["b"].to_numpy(), reference.to_numpy()
    kept = ~(np.isnan(x_a) | np.isnan(x_b) | np.isnan(y))
    if kept.sum() < MIN_PAIRS:
        raise StatsError(
            f"Only {int(kept.sum())} pairs have both scores and a reference; comparing two "
            f"correlations needs at least {MIN_PAIRS}."
        )
    x_a, x_b, y = x_a[kept], x_b[kept], y[kept]
    _valid(x_a, y, "first metric's score")
    _valid(x_b, y, "second metric's score")
    r_a, r_b = _coefficient(x_a, y, method), _coefficient(x_b, y, method)
    resamples = _Resamples(len(y), n_boot, max_resample, seed)
    boots = resamples.statistic(x_a, y, method, y_key=0) - resamples.statistic(x_b, y, method, y_key=0)
    difference = r_a - r_b
    shifted = difference + resamples.deviations(boots, difference)
    if shifted.size == 0:
        raise StatsError("No bootstrap resample gave both correlations; there are too few pairs.")
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(shifted, [tail, 100 - tail])
    far_side = min(int((shifted <= 0).sum()), int((shifted >= 0).sum()))
    p_value = min(1.0, 2 * (far_side + 1) / (shifted.size + 1))
    return {
        "method": method,
        "r_a": r_a,
        "r_b": r_b,
        "difference": difference,
        "ci_low": float(low),
        "ci_high": float(high),
        "p_value": p_value,
        "n": int(len(y)),
    }


# --------------------------------------------------------------------------- system level


def system_means(scores: Scores, reference, systems) -> pd.DataFrame:
    """Per system (model, or any grouping such as the source sentence): the mean of each metric and
    of the reference over the system's pairs that have a reference (the Revisiting paper, eq. 1),
    and ``n_pairs``. Index: the system."""
    frame, reference = _aligned(scores, reference)
    if isinstance(systems, pd.Series):
        systems = systems.reindex(frame.index)
    else:
        systems = pd.Series(np.asarray(systems), index=frame.index)
    kept = reference.notna() & systems.notna()
    grouped = frame[kept].assign(reference=reference[kept]).groupby(systems[kept].astype(str))
    means = grouped.mean()
    means["n_pairs"] = grouped.size()
    means.index.name = "system"
    return means


def system_level(
    scores: Scores,
    reference,
    systems,
    methods: Sequence[str] = METHODS,
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """``correlate`` on per-system means (``system_means``): n counts systems, and the bootstrap
    resamples systems. Needs at least three systems."""
    means = system_means(scores, reference, systems)
    if len(means) < MIN_PAIRS:
        raise StatsError(
            f"System-level correlation needs at least {MIN_PAIRS} systems with a reference; "
            f"there {'is' if len(means) == 1 else 'are'} {len(means)}."
        )
    metrics = [c for c in means.columns if c not in ("reference", "n_pairs")]
    return correlate(
        means[metrics], means["reference"], methods, n_boot, confidence, max_resample=len(means), seed=seed
    )


# --------------------------------------------------------------------------- references


def mean_levels(labels: pd.DataFrame, level_col: str = "level", pair_col: str = "pair_id") -> pd.Series:
    """The mean level (0-3) of each pair's labels on the five-level scale, Don't know excluded (the
    scale's rule, pluie_core.labels.ordinal_levels); NaN where a pair has only Don't know. Index:
    pair id."""
    if labels.empty:
        return pd.Series(dtype=float, name="mean_level")
    levels = pd.Series(ordinal_levels(labels[level_col]), index=labels.index)
    return levels.groupby(labels[pair_col]).mean().rename("mean_level")
