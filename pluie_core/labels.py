"""The five-level similarity scale of the labelling protocol (ParaPLUIE, appendix A.3)
and the ways labels are reduced: binarisation and the majority label.

Levels are stored as small integers, in the paper's order:

    0 Very different · 1 Slightly similar · 2 Mostly similar · 3 Same meaning · 4 Don't know
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Optional

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


def level_name(level: Optional[int]) -> str:
    return "" if level is None else LEVELS[int(level)]


def majority_level(levels: Iterable[Optional[int]]) -> Optional[int]:
    """Aggregated five-level label of one pair.

    Rules (documented in the README and used by the export):
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
