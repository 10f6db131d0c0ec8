"""The five-level similarity scale of the labelling protocol (ParaPLUIE, appendix A.3)
and the ways labels are reduced: binarisation and the majority label.

Levels are stored as small integers, in the paper's order:

    0 Very different · 1 Slightly similar · 2 Mostly similar · 3 Same meaning · 4 Don't know
"""

from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

import numpy as np
import pandas as pd

LEVELS: tuple[str, ...] = (
    "Very different",
    "Slightly similar",
    "Mostly similar",
    "Same meaning",
    "Don't know",
)
DONT_KNOW = 4
ORDINAL_LEVELS = (0, 1, 2, 3)  # the levels that have an order; "Don't know" is not one of them
ENGLISH_LEVELS: tuple[str, ...] = ("poor", "good", "advanced", "native")


def binarise(level: Optional[int]) -> Optional[int]:
    """Very different / Slightly similar -> 0, Mostly similar / Same meaning -> 1,
    Don't know or missing -> None (excluded from binary views)."""
    if level is None or level == DONT_KNOW:
        return None
    if level not in ORDINAL_LEVELS:
        raise ValueError(f"{level!r} is not a level of the scale (0-4)")
    return 1 if level >= 2 else 0


def _level_array(levels) -> np.ndarray:
    if isinstance(levels, (pd.DataFrame, pd.Series)):  # nullable columns (Int64 with <NA>) become NaN
        dtypes = levels.dtypes if isinstance(levels, pd.DataFrame) else [levels.dtype]
        plain = all(dtype == np.float64 for dtype in dtypes)  # already NaN for missing: no copy
        values = levels.to_numpy() if plain else levels.to_numpy(dtype=float, na_value=np.nan)
    else:
        values = np.asarray(levels, dtype=float)
    known = values[~np.isnan(values)]
    if known.size and not np.isin(known, (*ORDINAL_LEVELS, DONT_KNOW)).all():
        raise ValueError("Labels must be levels of the scale (0-4); found other values.")
    return values


def _like(levels, values: np.ndarray):
    """``values`` with the DataFrame / Series shape and labels of ``levels`` when it is one."""
    if isinstance(levels, pd.DataFrame):  # values is new: no copy (20,000,000 cells at 1,000,000 pairs)
        return pd.DataFrame(values, index=levels.index, columns=levels.columns, copy=False)
    if isinstance(levels, pd.Series):
        return pd.Series(values, index=levels.index, name=levels.name)
    return values


def ordinal_levels(levels):
    """Levels (any array, Series or DataFrame, NaN = not labelled) as the values the agreement
    statistics take: "Don't know" becomes missing (NaN), 0-3 stay. The scale's rule for every
    agreement figure, applied here once so that pluie_core.stats can take plain values."""
    values = _level_array(levels)
    return _like(levels, np.where(values == DONT_KNOW, np.nan, values))


def binarise_levels(levels):
    """``binarise`` element-wise and vectorised: 0 / 1 -> 0, 2 / 3 -> 1, Don't know or missing -> NaN.
    Keeps the DataFrame / Series shape and labels when given one."""
    values = _level_array(levels)
    binary = np.where(values < DONT_KNOW, values >= 2, np.nan)  # NaN fails both comparisons: stays missing
    return _like(levels, binary)


def level_name(level: Optional[int]) -> str:
    return "" if level is None else LEVELS[int(level)]


def majority_level(levels: Iterable[Optional[int]]) -> Optional[int]:
    """Aggregated five-level label of one pair.

    Rules (documented in docs/user-guide/labels-and-export.md and used by the export):
    - "Don't know" and missing labels are ignored; a pair with no other label has none (None).
    - The most frequent level wins.
    - A tie between levels is broken by the median of the tied levels when they are on the
      same side of the binary boundary (e.g. Mostly similar vs Same meaning -> Mostly similar,
      the lower median), and gives None when the tied levels straddle it
      (e.g. Slightly similar vs Mostly similar): there is no majority.
    """
    counts = Counter(int(x) for x in levels if x is not None and int(x) != DONT_KNOW)
    if not counts:
        return None
    top = max(counts.values())
    tied = sorted(level for level, n in counts.items() if n == top)
    if len(tied) == 1:
        return tied[0]
    sides = {binarise(level) for level in tied}
    if len(sides) > 1:
        return None
    return tied[(len(tied) - 1) // 2]


def majority_binary(levels: Iterable[Optional[int]]) -> Optional[int]:
    """Aggregated binary label: majority of the binarised labels ("Don't know" ignored);
    a tie gives None."""
    counts = Counter(b for b in (binarise(x) for x in levels) if b is not None)
    if not counts:
        return None
    if counts[0] == counts[1]:
        return None
    return 1 if counts[1] > counts[0] else 0


def accepted(answer: np.ndarray, gold_level: np.ndarray, gold_binary: np.ndarray, adjacent: np.ndarray) -> np.ndarray:
    """Whether each answer to a check is accepted: on the key's side of the paraphrase boundary, or (a key
    accepting the adjacent level) one level from the key's level. Don't know never is."""
    answer = np.asarray(answer, dtype=float)
    gold_level = np.asarray(gold_level, dtype=float)
    usable = np.isin(answer, ORDINAL_LEVELS)
    side = np.where(usable, (answer >= 2).astype(float), np.nan) == np.asarray(gold_binary, dtype=float)
    with np.errstate(invalid="ignore"):
        near = np.asarray(adjacent, dtype=bool) & (np.abs(answer - gold_level) <= 1)
    return usable & (side | near)
