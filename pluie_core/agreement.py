"""Agreement on the five-level labels: the one computation behind every Krippendorff's α the app
shows (Live campaign, the Agreement page, the dataset card), so the same labels give the same α.

What α counts (AGREEMENT_RULE): every label the database reads as counted (db.analysis.counted_label:
training-trial labels left out, answers to gold checks counted like any other label), on levels 0-3
(Don't know is missing), over the pairs with two or more such labels. Ordinal α on the four levels,
nominal α on the binarised labels (0-1 -> 0, 2-3 -> 1); nominal and interval α on the four levels for
the Agreement page. Each with a 95% percentile bootstrap interval over pairs (1,000 resamples, seed 0).

α depends on nothing but each pair's counts of each level: a pair's labels, whoever gave them, are
one unit of the reliability data. Pairs with the same counts are interchangeable, so a million pairs
come down to a table of a few dozen distinct counts and how many pairs have each (count_patterns),
which can be gathered chunk by chunk (db.publish). The patterns are sorted before the bootstrap, so
the interval does not depend on the order the pairs were read in.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from pluie_core.labels import ORDINAL_LEVELS
from pluie_core.stats.errors import StatsError
from pluie_core.stats.reliability import krippendorff_alpha_ci_from_patterns

__all__ = ["AGREEMENT_RULE", "N_BOOT", "level_counts", "count_patterns", "agreement_figures"]

N_BOOT = 1000
AGREEMENT_RULE = (
    "Krippendorff's α over the pairs with two or more labels on levels 0–3: every label except the "
    "training trial's, answers to gold checks included; Don't know counts as missing. Binarised: "
    "0–1 non-paraphrase, 2–3 paraphrase. 95% interval: 1,000 bootstrap resamples of pairs."
)

# measure -> (level of measurement, binarised)
MEASURES = {
    "ordinal": ("ordinal", False),
    "nominal": ("nominal", False),
    "interval": ("interval", False),
    "binary": ("nominal", True),
}


def level_counts(pair_ids: Sequence, levels: Sequence) -> np.ndarray:
    """Per pair, how many of its labels are each of levels 0-3 (pairs x 4), from one row per label
    (``pair_ids``, ``levels``; Don't know and missing levels are left out)."""
    pair_ids, levels = np.asarray(pair_ids), np.asarray(levels, dtype=float)
    known = np.isin(levels, ORDINAL_LEVELS)
    if not known.any():
        return np.zeros((0, 4), dtype=np.int64)
    _, unit = np.unique(pair_ids[known], return_inverse=True)
    cells = unit * 4 + levels[known].astype(np.int64)
    return np.bincount(cells, minlength=(unit.max() + 1) * 4).reshape(-1, 4)


def count_patterns(level_counts, into: Optional[dict] = None) -> dict:
    """Add pairs' counts of levels 0-3 (pairs x 4) to ``into``: {counts tuple: number of pairs}.
    What agreement_figures needs of a million pairs is this small table, gathered chunk by chunk."""
    into = {} if into is None else into
    counts = np.asarray(level_counts, dtype=np.int64).reshape(-1, 4)
    counts = counts[counts.sum(axis=1) >= 2]
    if len(counts):
        # one whole number per row (its counts as digits in base max + 1): a 1-d unique, far faster than rows
        base = int(counts.max()) + 1
        if base**4 < 2**62:
            keys, frequency = np.unique(counts @ base ** np.arange(4, dtype=np.int64), return_counts=True)
            patterns = (keys[:, None] // base ** np.arange(4, dtype=np.int64)) % base
        else:  # tens of thousands of labels on one pair: rows as they are
            patterns, frequency = np.unique(counts, axis=0, return_counts=True)
        for pattern, n in zip(map(tuple, patterns.tolist()), frequency.tolist()):
            into[pattern] = into.get(pattern, 0) + n
    return into


def _alpha(patterns: np.ndarray, frequencies: np.ndarray, level: str, values, n_boot: int, seed: int) -> dict:
    try:
        return krippendorff_alpha_ci_from_patterns(patterns, frequencies, values, level=level, n_boot=n_boot, seed=seed)
    except StatsError as exc:
        return {"alpha": None, "why": str(exc)}


def agreement_figures(
    patterns: dict, n_boot: int = N_BOOT, seed: int = 0, measures: Sequence[str] = ("ordinal", "binary")
) -> dict:
    """Agreement from count_patterns' table (module docstring): for each of ``measures`` (ordinal,
    nominal, interval on the four levels; binary: nominal on the binarised labels) a dict with alpha,
    ci_low, ci_high, n_boot, n_items (or alpha None and why, where α is undefined); n_pairs (pairs with
    two or more labels on levels 0-3) and the share of those pairs whose labels are all the same
    level / on the same side of the paraphrase boundary."""
    ordered = sorted(patterns.items())  # one order, whatever order the pairs came in
    counts = np.array([p for p, _ in ordered], dtype=float).reshape(-1, 4)
    frequencies = np.array([n for _, n in ordered], dtype=float)
    binary = np.stack([counts[:, :2].sum(axis=1), counts[:, 2:].sum(axis=1)], axis=1)
    n = int(frequencies.sum())
    same_level = (counts > 0).sum(axis=1) == 1
    same_side = (binary > 0).sum(axis=1) == 1
    figures: dict[str, Any] = {
        "n_pairs": n,
        "n_boot": n_boot,
        "unanimous_level": float(frequencies[same_level].sum() / n) if n else None,
        "unanimous_side": float(frequencies[same_side].sum() / n) if n else None,
    }
    for measure in measures:
        level, binarised = MEASURES[measure]
        figures[measure] = (
            _alpha(binary, frequencies, level, [0, 1], n_boot, seed)
            if binarised
            else _alpha(counts, frequencies, level, list(ORDINAL_LEVELS), n_boot, seed)
        )
    return figures
