"""Quality checks of a labelling campaign: gold / attention-check pairs and the flags of the live view.

Pure functions on plain values and DataFrames (no database), so every figure of the live view can be
recomputed in a notebook. Labels are on the five-level scale (pluie_core.labels): 0-3, 4 = Don't know.

The rules, documented in docs/user-guide/campaigns.md:
- A campaign with gold rate r plans ``gold_check_count(quota, r, n_gold)`` checks for each annotator
  (r is the share of the pairs served after the training trial that are checks); checks never count in
  the quota. They are served within the pairs the annotator can actually get: at each step
  (``serve_check_now``) a check comes with the chance of the checks still due among the steps left, the
  checks due being the share r of the ordinary pairs served and still reachable (the quota left, or the
  queue left when it is shorter). A queue that empties early thus gives fewer checks, spread over the
  pairs the person got, and those still due when it has emptied are served at the end.
- Gold accuracy: binarised (the answer on the known side of the paraphrase boundary) over every check
  answered, and exact (the known level) over the checks whose level is known. "Don't know" counts as a
  miss: a check has a clear answer.
- Flags (``annotator_checks``), each text saying its value, its threshold and what it rests on:
  gold accuracy (binarised) below the campaign's minimum, once the annotator has answered at least
  ``min_gold_checks`` (5) checks (before that it reads "too few checks (2 of 5 needed)", not a verdict);
  κ against the others below ``kappa_min`` (0.2), on at least ``MIN_KAPPA_LABELS`` shared labels; the
  reliability estimated by the campaign's aggregation method below ``reliability_min`` (0.5), on at least
  ``MIN_RELIABILITY_LABELS`` labels in the fit; a median time per pair under ``fast_fraction`` (1/3 by
  default) of the campaign's median; a streak of ``streak_length`` (10) or more identical answers in a row.
  A check resting on less than its minimum is listed under "not judged yet" and never flags.
- The two fixed minimums, 30 labels each: at 30 binarised labels the standard error of a κ near 0.5 is
  about 0.18, so an annotator answering at random (κ ≈ 0) stays under 0.2 most of the time while a
  careful one (κ ≈ 0.6) falls under it about once in a hundred; 30 labels also bound the error of a
  reliability share to about ±0.09. Below them, one bad afternoon would decide.
"""
from __future__ import annotations

import math
import random
from typing import Optional

import numpy as np
import pandas as pd

from pluie_core.labels import DONT_KNOW, ORDINAL_LEVELS

MAX_GOLD_RATE = 0.5
MIN_KAPPA_LABELS = 30  # shared labels (the annotator's, on pairs someone else labelled) before κ may flag
MIN_RELIABILITY_LABELS = 30  # the annotator's labels in the aggregation's fit before reliability may flag
MAX_MIN_GOLD_CHECKS = 100


class QualityError(ValueError):
    """A setting or a gold answer that cannot be used; the message says why, in a sentence."""


def gold_check_count(quota: int, rate: float, n_gold: int) -> int:
    """How many gold checks go with ``quota`` ordinary pairs: the share ``rate`` of the pairs served
    after training, i.e. round(quota * rate / (1 - rate)), and never more than the gold pairs there are
    (each is served to a person at most once). Of the campaign's quota: the checks planned per annotator;
    of the pairs a person got and can still get: the checks due (serve_check_now)."""
    if rate <= 0 or n_gold <= 0:
        return 0
    return min(int(n_gold), int(math.floor(quota * rate / (1 - rate) + 0.5)))


def serve_check_now(checks_left: int, pairs_left: int, seed: str) -> bool:
    """Whether the next step serves a check: with the chance ``checks_left / (checks_left + pairs_left)``
    (the checks still due, the ordinary pairs the annotator can still get), drawn with ``seed`` (the
    campaign's seed, the annotator and the step), so each person's checks fall at different places and
    a run is reproducible. Decided step by step, the checks are spread uniformly over the steps left; with
    no pair left, every check still due is served (at the end)."""
    if checks_left <= 0:
        return False
    if pairs_left <= 0:
        return True
    return random.Random(seed).random() * (checks_left + pairs_left) < checks_left


def served_checks_text(counts) -> str:
    """The checks actually served per annotator, in words: "4 to each of the 3 annotators", "2–5 per
    annotator (3 annotators, 11 in all)", "none (no annotator yet)". ``counts``: one count per annotator."""
    counts = [int(c) for c in counts]
    if not counts:
        return "none (no annotator yet)"
    low, high, n = min(counts), max(counts), len(counts)
    if low == high:
        return f"{low:,} to {'the one annotator' if n == 1 else f'each of the {n:,} annotators'}"
    return f"{low:,}–{high:,} per annotator ({n:,} annotators, {sum(counts):,} in all)"


def check_settings(gold_rate: float, gold_min_accuracy: float, fast_fraction: float, streak_length: int,
                   kappa_min: float = 0.2, reliability_min: float = 0.5, min_gold_checks: int = 5) -> None:
    """Refuse a setting out of bounds with a sentence (QualityError): the share of checks 0-0.5, the
    minimum gold accuracy and reliability 0-1, the minimum κ -1-1, the "too fast" fraction 0.01-0.99, a
    streak of at least 2, and 1 to 100 gold checks (whole) before gold accuracy judges."""
    if not 0 <= gold_rate <= MAX_GOLD_RATE:
        raise QualityError(f"The share of gold checks must lie between 0 and {MAX_GOLD_RATE:g}.")
    if not 0 <= gold_min_accuracy <= 1:
        raise QualityError("The minimum gold accuracy must lie between 0 and 1.")
    if not 0.01 <= fast_fraction <= 0.99:  # the Live campaign form's own range: a stored value always fits it
        raise QualityError("The “too fast” fraction of the median time must lie between 0.01 and 0.99.")
    if int(streak_length) < 2:
        raise QualityError("A streak needs at least 2 identical answers in a row.")
    if not -1 <= kappa_min <= 1:
        raise QualityError("The minimum κ against the others must lie between -1 and 1.")
    if not 0 <= reliability_min <= 1:
        raise QualityError("The minimum reliability must lie between 0 and 1.")
    if not (float(min_gold_checks).is_integer() and 1 <= min_gold_checks <= MAX_MIN_GOLD_CHECKS):
        raise QualityError(f"The number of gold checks needed to judge gold accuracy must be a whole number "
                           f"from 1 to {MAX_MIN_GOLD_CHECKS}.")


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


def shared_labels(labels: pd.DataFrame) -> pd.Series:
    """How many labels each annotator's κ against the others rests on: their binarised labels (Don't know
    left out) on pairs that at least one other annotator labelled too (not Don't know); 0 where none.
    ``labels``: as kappa_against_others."""
    known = labels[labels["level"].isin(ORDINAL_LEVELS)]
    if known.empty:
        return pd.Series(dtype=int)
    on_shared = known.groupby("pair_id")["annotator"].transform("size").to_numpy() > 1
    return pd.Series(on_shared.astype(int)).groupby(known["annotator"].to_numpy()).sum()


def _below(value: float, threshold: float, percent: bool = False) -> str:
    """"value < threshold", with one more digit where rounding would show them equal; a minus sign."""
    for digits in (0, 1, 2) if percent else (2, 3, 4):
        shown = [f"{v:.{digits}%}" if percent else f"{v:.{digits}f}" for v in (value, threshold)]
        if shown[0] != shown[1]:
            break
    return " < ".join(shown).replace("-", "−")


FLAG_COLUMNS = ("flags", "not judged yet")


def annotator_checks(table: pd.DataFrame, campaign_median: float, *, gold_min_accuracy: float,
                     fast_fraction: float, streak_length: int, kappa_min: float = 0.2, reliability_min: float = 0.5,
                     min_gold_checks: int = 5, method: str = "Majority vote") -> pd.DataFrame:
    """Each annotator's flags and the checks not judged yet, as two strings ("; "-joined, "" = none)
    indexed like ``table`` (the live table: columns ``gold answered``, ``gold accuracy``, ``median s per
    pair``, ``longest streak``, and where present ``κ vs others`` with ``shared labels`` and
    ``reliability`` with ``labels in fit``; a check whose columns are absent is skipped). ``method``: the
    name of the aggregation method the reliability comes from, said in its flag.

    Each flag says its value, its threshold and what it rests on, e.g. "κ vs others −0.39 < 0.20 (on 48
    shared labels)", "reliability 0.36 < 0.50 (Dawid–Skene, on 50 labels)", "gold accuracy 40% < 70%
    (2 of 5 checks right)". A check with some evidence but less than its minimum (``min_gold_checks``
    answered checks, ``MIN_KAPPA_LABELS`` shared labels, ``MIN_RELIABILITY_LABELS`` labels in the fit) is
    no verdict: it is listed under "not judged yet", e.g. "gold 1 of 2 right: too few checks (2 of 5
    needed)"; a check with no evidence at all says nothing."""
    n = len(table)
    flags: list[list[str]] = [[] for _ in range(n)]
    unjudged: list[list[str]] = [[] for _ in range(n)]

    def column(name: str) -> np.ndarray:
        return pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=float) if name in table else np.full(n, np.nan)

    def count(values: np.ndarray, i: int) -> int:
        return int(values[i]) if np.isfinite(values[i]) else 0

    answered, accuracy = column("gold answered"), column("gold accuracy")
    for i in range(n):
        checks = count(answered, i)
        if not checks or not np.isfinite(accuracy[i]):
            continue
        right = int(round(accuracy[i] * checks))
        if checks < min_gold_checks:
            unjudged[i].append(f"gold {right} of {checks} right: too few checks ({checks} of {int(min_gold_checks)} needed)")
        elif accuracy[i] < gold_min_accuracy:
            flags[i].append(f"gold accuracy {_below(accuracy[i], gold_min_accuracy, percent=True)} "
                            f"({right} of {checks} checks right)")
    for value_column, count_column, minimum, threshold in (("κ vs others", "shared labels", MIN_KAPPA_LABELS, kappa_min),
                                                           ("reliability", "labels in fit", MIN_RELIABILITY_LABELS,
                                                            reliability_min)):
        if value_column not in table or count_column not in table:
            continue
        values, counts = column(value_column), column(count_column)
        for i in range(n):
            k = count(counts, i)
            if value_column == "κ vs others":
                evidence, too_few = f"on {k:,} shared labels", "too few shared labels"
            else:
                evidence, too_few = f"{method}, on {k:,} labels", "too few labels in the fit"
            if not k:
                continue
            if k < minimum:
                unjudged[i].append(f"{value_column}: {too_few} ({k:,} of {minimum} needed)")
            elif not np.isfinite(values[i]):
                unjudged[i].append(f"{value_column}: not defined ({evidence})")
            elif values[i] < threshold:
                flags[i].append(f"{value_column} {_below(values[i], threshold)} ({evidence})")
    medians, streaks = column("median s per pair"), column("longest streak")
    for i in range(n):
        if np.isfinite(campaign_median) and medians[i] < fast_fraction * campaign_median:
            flags[i].append(f"faster than {fast_fraction:.2g} × median "
                            f"({medians[i]:.1f} s vs {campaign_median:.1f} s per pair)")
        if np.isfinite(streaks[i]) and streaks[i] >= streak_length:
            flags[i].append(f"{int(streak_length)}+ same answers in a row (longest {int(streaks[i])})")
    return pd.DataFrame({"flags": ["; ".join(f) for f in flags], "not judged yet": ["; ".join(u) for u in unjudged]},
                        index=table.index)


def annotator_flags(table: pd.DataFrame, campaign_median: float, *, gold_min_accuracy: float,
                    fast_fraction: float, streak_length: int, kappa_min: float = 0.2, reliability_min: float = 0.5,
                    min_gold_checks: int = 5, method: str = "Majority vote") -> pd.Series:
    """The flags of each annotator as one string ("" = none): annotator_checks' ``flags``."""
    return annotator_checks(table, campaign_median, gold_min_accuracy=gold_min_accuracy, fast_fraction=fast_fraction,
                            streak_length=streak_length, kappa_min=kappa_min, reliability_min=reliability_min,
                            min_gold_checks=min_gold_checks, method=method)["flags"]
