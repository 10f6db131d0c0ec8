"""Which pairs of its datasets a labelling campaign takes: a range, a gold-label filter, a score
filter and a seeded random sample, applied in that order. A pure function on a frame of pairs, so a
campaign's choice can be reproduced outside the app.

A selection is a plain mapping (stored with the campaign as JSON); every key is optional:

    start, end            1-based positions, inclusive, in the datasets' import order
    gold_min, gold_max    keep pairs whose gold label lies in [gold_min, gold_max] (pairs without one go)
    score_run, score_min, score_max
                          keep pairs whose score in that run lies in the bounds (unscored pairs go)
    sample                keep a random sample of this many of what is left, drawn with ``seed``
    seed                  the sample's seed
"""

from __future__ import annotations

import random
from typing import Any, Mapping, Optional

import pandas as pd

KEYS = ("start", "end", "gold_min", "gold_max", "score_run", "score_min", "score_max", "sample", "seed")


class SelectionError(ValueError):
    """A selection that cannot be applied; the message says what to change."""


def clean_selection(selection: Optional[Mapping[str, Any]]) -> Optional[dict[str, Any]]:
    """The selection with its empty keys dropped (None when it keeps every pair), checked."""
    if not selection:
        return None
    unknown = set(selection) - set(KEYS)
    if unknown:
        raise SelectionError(f"Unknown selection setting(s): {', '.join(sorted(unknown))}.")
    kept = {k: v for k, v in selection.items() if v is not None and not (k in ("sample", "end") and v == 0)}
    if kept.get("start") == 1:
        kept.pop("start")
    for low, high, what in (
        ("start", "end", "range"),
        ("gold_min", "gold_max", "gold-label bounds"),
        ("score_min", "score_max", "score bounds"),
    ):
        if kept.get(low) is not None and kept.get(high) is not None and kept[low] > kept[high]:
            raise SelectionError(f"The {what} are reversed: {kept[low]:g} is above {kept[high]:g}.")
    if kept.get("start", 1) < 1 or kept.get("sample", 1) < 1:
        raise SelectionError("Positions start at 1, and a sample needs at least one pair.")
    if ("score_min" in kept or "score_max" in kept) and kept.get("score_run") is None:
        raise SelectionError("Choose the score run whose scores the filter reads.")
    if set(kept) <= {"seed", "score_run"}:
        return None
    return kept


def select_pairs(pairs: pd.DataFrame, selection: Optional[Mapping[str, Any]]) -> list[int]:
    """The pair ids a selection keeps, in the frame's order. ``pairs``: one row per pair in import
    order, columns pair_id, gold_label (NaN when none) and, for a score filter, score."""
    selection = clean_selection(selection)
    ids = pairs["pair_id"]
    if not selection:
        return [int(i) for i in ids]
    kept = pairs.iloc[int(selection.get("start", 1)) - 1 : selection.get("end")]
    if "gold_min" in selection or "gold_max" in selection:
        gold = kept["gold_label"]
        kept = kept[
            gold.notna()
            & gold.between(selection.get("gold_min", -float("inf")), selection.get("gold_max", float("inf")))
        ]
    if "score_min" in selection or "score_max" in selection:
        score = kept["score"]
        kept = kept[
            score.notna()
            & score.between(selection.get("score_min", -float("inf")), selection.get("score_max", float("inf")))
        ]
    chosen = [int(i) for i in kept["pair_id"]]
    if "sample" in selection and selection["sample"] < len(chosen):
        picked = set(random.Random(f"sample-{selection.get('seed', 0)}").sample(chosen, int(selection["sample"])))
        chosen = [i for i in chosen if i in picked]
    return chosen


def describe_selection(selection: Optional[Mapping[str, Any]], run_name: Optional[str] = None) -> str:
    """One line for the campaign page: what the selection keeps."""
    if not selection:
        return "every pair of its datasets, and pairs imported into them later"

    def bounds(low: str, high: str) -> str:
        shown = [
            f"{selection[k]:g}" if selection.get(k) is not None else none for k, none in ((low, "−∞"), (high, "∞"))
        ]
        return f"[{shown[0]}, {shown[1]}]"

    parts = []
    if "start" in selection or "end" in selection:
        parts.append(
            f"pairs {selection.get('start', 1):,} to {selection['end']:,}"
            if "end" in selection
            else f"pairs from {selection['start']:,} on"
        )
    if "gold_min" in selection or "gold_max" in selection:
        parts.append(f"gold label in {bounds('gold_min', 'gold_max')}")
    if "score_min" in selection or "score_max" in selection:
        parts.append(f"{run_name or 'score'} in {bounds('score_min', 'score_max')}")
    if "sample" in selection:
        parts.append(f"a random sample of {selection['sample']:,} (seed {selection.get('seed', 0)})")
    return ", then ".join(parts)
