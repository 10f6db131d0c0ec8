"""Quality checks of a labelling campaign: gold / attention-check pairs and the flags of the live view.

Pure functions on plain values and DataFrames (no database), so every figure of the live view can be
recomputed in a notebook. Labels are on the five-level scale (pluie_core.labels): 0-3, 4 = Don't know.

The rules, documented in the README:
- A campaign with gold rate r mixes ``gold_check_count(quota, r, n_gold)`` checks into each annotator's
  queue (r is the share of the pairs served after the training trial that are checks), at positions drawn
  per annotator (``gold_positions``); checks never count in the quota.
- Gold accuracy: binarised (the answer on the known side of the paraphrase boundary) over every check
  answered, and exact (the known level) over the checks whose level is known. "Don't know" counts as a
  miss: a check has a clear answer.
- Flags: gold accuracy (binarised) below the campaign's minimum; a median time per pair under
  ``fast_fraction`` (1/3 by default) of the campaign's median; a streak of ``streak_length`` (10) or more
  identical answers in a row.
"""
from __future__ import annotations

import math
import random
from typing import Optional

import numpy as np
import pandas as pd

from pluie_core.labels import DONT_KNOW, ORDINAL_LEVELS

MAX_GOLD_RATE = 0.5


class QualityError(ValueError):
    """A setting or a gold answer that cannot be used; the message says why, in a sentence."""


def gold_check_count(quota: int, rate: float, n_gold: int) -> int:
    """How many gold checks an annotator with this quota gets: the share ``rate`` of the pairs served
    after training, i.e. round(quota * rate / (1 - rate)), and never more than the gold pairs there are
    (each is served to a person at most once)."""
    if rate <= 0 or n_gold <= 0:
        return 0
    return min(int(n_gold), int(math.floor(quota * rate / (1 - rate) + 0.5)))


def gold_positions(quota: int, n_checks: int, seed: str) -> frozenset[int]:
    """The steps (0-based, counted after the training trial) at which this annotator is served a check:
    ``n_checks`` of the ``quota + n_checks`` steps, drawn with ``seed`` (the campaign's seed and the
    annotator), so each person's checks fall at different places."""
    if n_checks <= 0:
        return frozenset()
    return frozenset(random.Random(seed).sample(range(quota + n_checks), n_checks))


def check_settings(gold_rate: float, gold_min_accuracy: float, fast_fraction: float, streak_length: int) -> None:
    if not 0 <= gold_rate <= MAX_GOLD_RATE:
        raise QualityError(f"The share of gold checks must lie between 0 and {MAX_GOLD_RATE:g}.")
    if not 0 <= gold_min_accuracy <= 1:
        raise QualityError("The minimum gold accuracy must lie between 0 and 1.")
    if not 0 < fast_fraction < 1:
        raise QualityError("The “too fast” fraction of the median time must lie strictly between 0 and 1.")
    if int(streak_length) < 2:
        raise QualityError("A streak needs at least 2 identical answers in a row.")


def gold_answer(level=None, *, binary=None) -> tuple[Optional[int], int]:
    """(level, binary label) of a gold pair from a known level (0-3) or only its side (0 / 1)."""
    if level is not None and not (isinstance(level, float) and math.isnan(level)):
        if level not in ORDINAL_LEVELS:
            raise QualityError(f"The known answer {level!r} is not a level of the scale (0-3; Don't know cannot be one).")
        return int(level), int(level >= 2)
    if binary in (0, 1):
        return None, int(binary)
    raise QualityError("A gold pair needs its known level (0-3) or its side (1 paraphrase, 0 not).")


def gold_from_labels(gold_labels: pd.Series, label_kind: Optional[str], label_min=None, label_max=None) -> pd.DataFrame:
    """A dataset's gold labels as gold answers: binary 1 / 0 give only the side (level unknown); a score
    on [label_min, label_max] (e.g. STS-B 0-5) is cut into four equal bands, levels 0-3, and its side is the
    level's. Rows without a gold label are left out. Returns columns level (nullable) and binary_label."""
    values = pd.to_numeric(gold_labels, errors="coerce").dropna()
    if label_kind == "binary":
        return pd.DataFrame({"level": pd.array([pd.NA] * len(values), dtype="Int64"),
                             "binary_label": (values >= 0.5).astype(int)}, index=values.index)
    if label_kind == "score":
        low = values.min() if label_min is None else label_min
        high = values.max() if label_max is None else label_max
        if not high > low:
            raise QualityError("The dataset's gold scores all have one value: they cannot be mapped to levels.")
        levels = np.clip(np.floor((values - low) / (high - low) * 4), 0, 3).astype(int)
        return pd.DataFrame({"level": pd.array(levels, dtype="Int64"), "binary_label": (levels >= 2).astype(int)},
                            index=values.index)
    raise QualityError("This dataset has no gold labels to take known answers from.")


def gold_accuracy(answers: pd.DataFrame) -> pd.DataFrame:
    """Per annotator, from one row per gold check answered (columns annotator, level, gold_level,
    gold_binary): gold answered, binarised accuracy, exact-level accuracy (NaN where no check had a
    known level). Don't know is a miss."""
    if answers.empty:
        return pd.DataFrame(columns=["gold answered", "gold accuracy", "gold exact accuracy"], dtype=float)
    level = answers["level"].to_numpy(dtype=float)
    binary = np.where(level == DONT_KNOW, np.nan, (level >= 2).astype(float))
    frame = pd.DataFrame({
        "annotator": answers["annotator"].to_numpy(),
        "binary_hit": (binary == answers["gold_binary"].to_numpy(dtype=float)).astype(float),
        "exact_hit": np.where(answers["gold_level"].isna().to_numpy(), np.nan,
                              (level == answers["gold_level"].to_numpy(dtype=float, na_value=np.nan)).astype(float)),
    })
    grouped = frame.groupby("annotator")
    return pd.DataFrame({"gold answered": grouped.size(), "gold accuracy": grouped["binary_hit"].mean(),
                         "gold exact accuracy": grouped["exact_hit"].mean()})


def longest_streaks(annotators: np.ndarray, levels: np.ndarray) -> pd.Series:
    """The longest run of one answer in a row per annotator; rows in answer order within each annotator
    (the rows of different annotators may interleave)."""
    frame = pd.DataFrame({"annotator": annotators, "level": levels})
    if frame.empty:
        return pd.Series(dtype=int)
    frame = frame.sort_values("annotator", kind="stable")
    new_run = (frame["level"].ne(frame["level"].shift()) | frame["annotator"].ne(frame["annotator"].shift()))
    run_id = new_run.cumsum()
    lengths = frame.groupby(run_id).agg(annotator=("annotator", "first"), n=("level", "size"))
    return lengths.groupby("annotator")["n"].max()


def kappa_against_others(labels: pd.DataFrame) -> pd.Series:
    """Cohen's κ of each annotator against the others, on the binarised scale (Don't know left out):
    every (their label, another annotator's label) on a pair both labelled, pooled over the others into
    one 2x2 table. NaN where an annotator shares no pair with anyone, or where κ is undefined (one
    category only). ``labels``: columns annotator, pair_id, level."""
    known = labels[labels["level"].isin(ORDINAL_LEVELS)]
    known = pd.DataFrame({"annotator": known["annotator"].to_numpy(), "pair_id": known["pair_id"].to_numpy(),
                          "b": (known["level"].to_numpy() >= 2).astype(np.int8)})
    if known.empty:
        return pd.Series(dtype=float)
    # per pair: how many binarised labels on each side; each label is compared with the others' on its pair
    per_pair = known.groupby("pair_id")["b"].agg(["size", "sum"])
    ones = per_pair["sum"].reindex(known["pair_id"]).to_numpy() - known["b"].to_numpy()
    others = per_pair["size"].reindex(known["pair_id"]).to_numpy() - 1
    zeros = others - ones
    mine = known["b"].to_numpy()
    cells = pd.DataFrame({
        "annotator": known["annotator"].to_numpy(),
        "n11": np.where(mine == 1, ones, 0), "n10": np.where(mine == 1, zeros, 0),
        "n01": np.where(mine == 0, ones, 0), "n00": np.where(mine == 0, zeros, 0),
    }).groupby("annotator").sum()
    total = cells.sum(axis=1).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (cells["n11"] + cells["n00"]).to_numpy() / total
        mine_1 = (cells["n11"] + cells["n10"]).to_numpy() / total
        theirs_1 = (cells["n11"] + cells["n01"]).to_numpy() / total
        expected = mine_1 * theirs_1 + (1 - mine_1) * (1 - theirs_1)
        kappa = (observed - expected) / (1 - expected)
    kappa[(total == 0) | ~np.isfinite(kappa)] = np.nan
    return pd.Series(kappa, index=cells.index)


def annotator_flags(table: pd.DataFrame, campaign_median: float, *, gold_min_accuracy: float,
                    fast_fraction: float, streak_length: int) -> pd.Series:
    """The flags of each annotator as one string ("" = none), from the live table's columns
    ``gold accuracy``, ``median s per pair`` and ``longest streak``."""
    flags = pd.Series([[] for _ in range(len(table))], index=table.index, dtype=object)
    low_gold = table["gold accuracy"].notna() & (table["gold accuracy"] < gold_min_accuracy)
    fast = np.isfinite(campaign_median) & (table["median s per pair"] < fast_fraction * campaign_median)
    streak = table["longest streak"].fillna(0) >= streak_length
    for mask, text in ((low_gold, f"gold accuracy < {gold_min_accuracy:.0%}"),
                       (fast, f"faster than {fast_fraction:.2g} × median"),
                       (streak, f"{int(streak_length)}+ same answers in a row")):
        for key in table.index[mask.to_numpy()]:
            flags[key].append(text)
    return flags.map("; ".join)
