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

from pluie_core.labels import DONT_KNOW, LEVELS, ORDINAL_LEVELS, accepted  # noqa: F401 (accepted: the rule of a key)
from pluie_core.wording import counted

MAX_GOLD_RATE = 0.5
MIN_KAPPA_LABELS = 30  # shared labels (the annotator's, on pairs someone else labelled) before κ may flag
MIN_RELIABILITY_LABELS = 30  # the annotator's labels in the aggregation's fit before reliability may flag
MAX_MIN_GOLD_CHECKS = 100
RATE_MIN_HOURS = 0.25  # labels must span this long before a campaign's labels per hour mean anything


def labels_per_hour(n_labels: int, hours: float) -> float:
    """A campaign's labels per hour since its first label, NaN before RATE_MIN_HOURS have passed: forty labels in
    the first 35 seconds are not 4,105 an hour."""
    return n_labels / hours if hours >= RATE_MIN_HOURS else float("nan")


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


def finished_text(done: int, planned: int, queue_ran_out: bool) -> str:
    """What the labelling page tells an annotator with nothing left to label: the pairs they labelled and,
    when that is fewer than the ``planned`` their counter read out of (their quota and its gold checks),
    why, so that "64 / 71" ending at 64 is not a silent stop. ``queue_ran_out``: the campaign's pairs ran
    out before their quota (the other annotators gave the pairs the labels they need: a fixed overlap, or
    an adaptive one that asks for more only where the answers disagree); otherwise the count planned
    included pairs that check the labelling, and fewer of those could be given to them."""
    saved = "Your answers are saved; you can close this page."
    if done >= planned:
        return f"You have labelled your {counted(done, 'pair')}. {saved}"
    if queue_ran_out:
        why = (
            "every pair of the campaign already has the labels it needs, from you and the other annotators, so "
            "none is left for you"
        )
    else:
        why = (
            "the count included pairs that check the labelling, and fewer of those were left to give you "
            "(you never get the same pair twice)"
        )
    return f"You have labelled {counted(done, 'pair')}, fewer than the {planned:,} first counted: {why}. {saved}"


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


def check_settings(
    gold_rate: float,
    gold_min_accuracy: float,
    fast_fraction: float,
    streak_length: int,
    kappa_min: float = 0.2,
    reliability_min: float = 0.5,
    min_gold_checks: int = 5,
) -> None:
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
        raise QualityError(
            f"The number of gold checks needed to judge gold accuracy must be a whole number "
            f"from 1 to {MAX_MIN_GOLD_CHECKS}."
        )


def gold_answer(level=None, *, binary=None) -> tuple[Optional[int], int]:
    """(level, binary label) of a gold pair from a known level (0-3) or only its side (0 / 1)."""
    if level is not None and not (isinstance(level, float) and math.isnan(level)):
        if level not in ORDINAL_LEVELS:
            raise QualityError(
                f"The known answer {level!r} is not a level of the scale (0-3; Don't know cannot be one)."
            )
        return int(level), int(level >= 2)
    if binary in (0, 1):
        return None, int(binary)
    raise QualityError("A gold pair needs its known level (0-3) or its side (1 paraphrase, 0 not).")


# Keys from a graded reference (gold_keys): only the clear ends of the scale by default, and never a score
# near a band edge inside the scale, where careful people disagree (a SICK 3 is "somewhat related")
KEY_LEVELS: tuple[int, ...] = (0, 3)
KEY_MARGIN = 0.25  # the share of its band's width a key's score keeps from every cut point
SIDES = ("not a paraphrase", "paraphrase")


def band_cuts(low: float, high: float, cuts=None) -> tuple[float, float, float]:
    """The three cut points of the four bands of levels 0-3 on [low, high]: the organiser's (strictly
    increasing, inside the scale), or the equal bands'. Refused with a sentence (QualityError)."""
    if not high > low:
        raise QualityError("The dataset's gold scores all have one value: they cannot be mapped to levels.")
    if cuts is None:
        first, second, third = (float(low + (high - low) * k / 4) for k in (1, 2, 3))
        return first, second, third
    try:
        cuts = tuple(float(c) for c in cuts)
    except (TypeError, ValueError):
        raise QualityError("The cut points between levels must be three numbers.") from None
    if len(cuts) != 3 or not all(np.isfinite(cuts)):
        raise QualityError("The cut points between levels must be three numbers.")
    if not low < cuts[0] < cuts[1] < cuts[2] < high:
        raise QualityError(
            f"The cut points between levels must increase and lie inside the scale "
            f"({low:g}–{high:g}); got {', '.join(f'{c:g}' for c in cuts)}."
        )
    return cuts


def key_rule_text(low: float, high: float, *, levels=KEY_LEVELS, margin: float = KEY_MARGIN, cuts=None) -> str:
    """The rule gold_keys applies, in words: "score ≤ 1.75 → Very different; score ≥ 4.25 → Same meaning
    (four equal bands of 1–5, a quarter of a band's width kept from each cut)"."""
    edges = (low, *band_cuts(low, high, cuts), high)
    parts = []
    for level in sorted(int(v) for v in levels):
        start, end = edges[level], edges[level + 1]
        keep = margin * (end - start)
        lo = None if level == 0 else start + keep
        hi = None if level == 3 else end - keep
        if lo is None and hi is None:
            span = "any score"
        elif lo is None:
            span = f"score ≤ {hi:g}"
        elif hi is None:
            span = f"score ≥ {lo:g}"
        else:
            span = f"{lo:g} ≤ score ≤ {hi:g}"
        parts.append(f"{span} → {LEVELS[level]}")
    bands = "four equal bands" if cuts is None else "bands cut at " + ", ".join(f"{c:g}" for c in edges[1:-1])
    return "; ".join(parts) + f" ({bands} of {low:g}–{high:g}; {margin:g} of a band's width kept from each cut)"


def gold_keys(
    scores: pd.Series, low: float, high: float, *, levels=KEY_LEVELS, margin: float = KEY_MARGIN, cuts=None
) -> pd.DataFrame:
    """Each graded gold score's derived level and whether it makes a key. The level is its band (band_cuts:
    four equal bands of [low, high], or the organiser's cut points); a score is a key when its level is one
    of ``levels`` (by default the clear ends, Very different and Same meaning) and it keeps ``margin`` of
    its band's width from every cut point (the scale's own ends are no edge: a score there is as clear as
    it gets). Returns, indexed like ``scores`` (rows without a number left out): score, level, binary_label,
    is_key and ``why`` (a non-key's reason, "" for a key)."""
    if not 0 <= margin < 0.5:
        raise QualityError("The share of a band's width kept from each cut must lie between 0 and 0.5.")
    levels = {int(v) for v in levels}
    if not levels or not levels <= set(ORDINAL_LEVELS):
        raise QualityError("Choose at least one level of the scale (0-3) to take keys from.")
    values = pd.to_numeric(scores, errors="coerce").dropna().astype(float)
    cut = np.asarray(band_cuts(low, high, cuts))
    edges = np.concatenate([[low], cut, [high]])
    level = np.clip(np.searchsorted(cut, values.to_numpy(), side="right"), 0, 3)
    width = edges[level + 1] - edges[level]
    # distance to the nearest cut point (inner edge); the scale's own ends do not count
    distance = np.min(np.abs(values.to_numpy()[:, None] - cut[None, :]), axis=1)
    near = distance < margin * width - 1e-12
    wanted = np.isin(level, sorted(levels))
    why = np.where(
        ~wanted,
        [f"at {LEVELS[v]}, a level keys are not taken from" for v in level],
        np.where(near, [f"near a cut (within {margin:g} of a band's width)" for _ in level], ""),
    )
    return pd.DataFrame(
        {
            "score": values.to_numpy(),
            "level": level.astype(int),
            "binary_label": (level >= 2).astype(int),
            "is_key": wanted & ~near,
            "why": why,
        },
        index=values.index,
    )


def balanced_keys(keys: pd.DataFrame, n: int, seed: int = 0, have: tuple[int, int] = (0, 0)) -> pd.DataFrame:
    """``n`` rows of ``keys`` (a binary_label column: 0 / 1) drawn so that the keys on each side, counting
    the ``have`` (not paraphrase, paraphrase) already there, are as even as the candidates allow: each draw
    goes to the side with fewer keys that still has a candidate (ties to the not-paraphrase side). Each side
    is drawn in a seeded random order. ``n`` 0 (or more than there are): every candidate (balance_text then
    says how even they are). Rows keep ``keys``' index."""
    if not n or n >= len(keys):
        return keys
    rng = np.random.default_rng(int(seed))
    pools = {side: list(rng.permutation(keys.index[keys["binary_label"].to_numpy() == side])) for side in (0, 1)}
    count = [int(have[0]), int(have[1])]
    taken: list = []
    while len(taken) < n and (pools[0] or pools[1]):
        side = 0 if (count[0] <= count[1] and pools[0]) or not pools[1] else 1
        taken.append(pools[side].pop(0))
        count[side] += 1
    return keys.loc[taken]


def constant_answer_shares(keys: pd.DataFrame) -> np.ndarray:
    """For each answer 0-3 given to every key of ``keys`` (columns level, binary_label, and where present
    accept_adjacent), the share of the keys that would accept it (accepted): what a person who always presses
    that button scores on these checks."""
    level = pd.to_numeric(keys["level"], errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    adjacent = (
        keys["accept_adjacent"].fillna(False).to_numpy(dtype=bool)
        if "accept_adjacent" in keys
        else np.zeros(len(keys), dtype=bool)
    )
    return np.array(
        [
            accepted(np.full(len(keys), a), level, keys["binary_label"].to_numpy(), adjacent).mean()
            for a in ORDINAL_LEVELS
        ],
        dtype=float,
    )


def constant_answer_ceiling(keys: pd.DataFrame) -> tuple[int, float]:
    """The answer (0-3) that a person who always presses one button would get accepted most often on
    ``keys`` (constant_answer_shares), and that share; (DONT_KNOW, 0.0) with no key."""
    if keys.empty:
        return DONT_KNOW, 0.0
    shares = constant_answer_shares(keys)
    best = int(np.argmax(shares))
    return best, float(shares[best])


def balance_text(keys: pd.DataFrame, minimum: Optional[float] = None) -> str:
    """How balanced a campaign's keys are, in a sentence: "10 on the paraphrase side, 10 not; the best a
    constant answer scores is 50% (always “Same meaning”)", with a warning when that reaches ``minimum``
    (the campaign's minimum gold accuracy)."""
    if keys.empty:
        return "No gold key yet."
    ones = int(pd.to_numeric(keys["binary_label"]).sum())
    shares = constant_answer_shares(keys)
    share = float(shares.max())
    best = [a for a in ORDINAL_LEVELS if np.isclose(shares[a], share)]
    which = (
        "whichever answer" if len(best) == len(ORDINAL_LEVELS) else " or ".join(f"always “{LEVELS[a]}”" for a in best)
    )
    text = (
        f"{ones:,} on the paraphrase side, {len(keys) - ones:,} not; the best a constant answer scores is "
        f"{share:.0%} ({which})"
    )
    if minimum is not None and share >= minimum:
        text += (
            f", which reaches the minimum gold accuracy ({minimum:.0%}): add keys on the other side, or a "
            "person who always presses one button passes the checks"
        )
    return text + "."


def key_origins(derivations) -> dict[str, int]:
    """How a campaign's keys were made, counted: each key's derivation (db.quality) without its own score,
    e.g. {"the rule score ≤ 1.75 → Very different; … of “SICK”": 12, "set by id": 2}."""
    counts: dict[str, int] = {}
    for text in derivations:
        text = str(text or "set by id")
        if "; rule: " in text:
            head, rule = text.split("; rule: ", 1)
            source = head.split(" gold ", 1)[0]
            adjacent = " (the adjacent level accepted)" if head.endswith("(the adjacent level accepted)") else ""
            text = f"{source}'s gold labels, rule: {rule}{adjacent}"
        counts[text] = counts.get(text, 0) + 1
    return counts


def gold_from_labels(gold_labels: pd.Series, label_kind: Optional[str], label_min=None, label_max=None) -> pd.DataFrame:
    """A dataset's gold labels as gold answers: binary 1 / 0 give only the side (level unknown); a score
    on [label_min, label_max] (e.g. STS-B 0-5) is cut into four equal bands, levels 0-3, and its side is the
    level's. Rows without a gold label are left out. Returns columns level (nullable) and binary_label."""
    values = pd.to_numeric(gold_labels, errors="coerce").dropna()
    if label_kind == "binary":
        return pd.DataFrame(
            {"level": pd.array([pd.NA] * len(values), dtype="Int64"), "binary_label": (values >= 0.5).astype(int)},
            index=values.index,
        )
    if label_kind == "score":
        low = values.min() if label_min is None else label_min
        high = values.max() if label_max is None else label_max
        if not high > low:
            raise QualityError("The dataset's gold scores all have one value: they cannot be mapped to levels.")
        levels = np.clip(np.floor((values - low) / (high - low) * 4), 0, 3).astype(int)
        return pd.DataFrame(
            {"level": pd.array(levels, dtype="Int64"), "binary_label": (levels >= 2).astype(int)}, index=values.index
        )
    raise QualityError("This dataset has no gold labels to take known answers from.")


def gold_accuracy(answers: pd.DataFrame) -> pd.DataFrame:
    """Per annotator, from one row per gold check answered (columns annotator, level, gold_level,
    gold_binary, and where present gold_adjacent: the key accepts the adjacent level): gold answered,
    accuracy (an answer on the key's side, or one level from a key that accepts the adjacent level:
    accepted), exact-level accuracy (the key's level, or an adjacent one where accepted; NaN where no
    check had a known level). Don't know is a miss."""
    if answers.empty:
        return pd.DataFrame(columns=["gold answered", "gold accuracy", "gold exact accuracy"], dtype=float)
    level = answers["level"].to_numpy(dtype=float)
    gold_level = answers["gold_level"].to_numpy(dtype=float, na_value=np.nan)
    adjacent = (
        answers["gold_adjacent"].fillna(False).to_numpy(dtype=bool)
        if "gold_adjacent" in answers
        else np.zeros(len(answers), dtype=bool)
    )
    with np.errstate(invalid="ignore"):
        exact = (level == gold_level) | (adjacent & (np.abs(level - gold_level) <= 1) & (level != DONT_KNOW))
    frame = pd.DataFrame(
        {
            "annotator": answers["annotator"].to_numpy(),
            "binary_hit": accepted(level, gold_level, answers["gold_binary"].to_numpy(dtype=float), adjacent).astype(
                float
            ),
            "exact_hit": np.where(np.isnan(gold_level), np.nan, exact.astype(float)),
        }
    )
    grouped = frame.groupby("annotator")
    return pd.DataFrame(
        {
            "gold answered": grouped.size(),
            "gold accuracy": grouped["binary_hit"].mean(),
            "gold exact accuracy": grouped["exact_hit"].mean(),
        }
    )


def longest_streaks(annotators: np.ndarray, levels: np.ndarray) -> pd.Series:
    """The longest run of one answer in a row per annotator; rows in answer order within each annotator
    (the rows of different annotators may interleave)."""
    frame = pd.DataFrame({"annotator": annotators, "level": levels})
    if frame.empty:
        return pd.Series(dtype=int)
    frame = frame.sort_values("annotator", kind="stable")
    new_run = frame["level"].ne(frame["level"].shift()) | frame["annotator"].ne(frame["annotator"].shift())
    run_id = new_run.cumsum()
    lengths = frame.groupby(run_id).agg(annotator=("annotator", "first"), n=("level", "size"))
    return lengths.groupby("annotator")["n"].max()


def kappa_against_others(labels: pd.DataFrame) -> pd.Series:
    """Cohen's κ of each annotator against the others, on the binarised scale (Don't know left out):
    every (their label, another annotator's label) on a pair both labelled, pooled over the others into
    one 2x2 table. NaN where an annotator shares no pair with anyone, or where κ is undefined (one
    category only). ``labels``: columns annotator, pair_id, level."""
    known = labels[labels["level"].isin(ORDINAL_LEVELS)]
    known = pd.DataFrame(
        {
            "annotator": known["annotator"].to_numpy(),
            "pair_id": known["pair_id"].to_numpy(),
            "b": (known["level"].to_numpy() >= 2).astype(np.int8),
        }
    )
    if known.empty:
        return pd.Series(dtype=float)
    # per pair: how many binarised labels on each side; each label is compared with the others' on its pair
    per_pair = known.groupby("pair_id")["b"].agg(["size", "sum"])
    ones = per_pair["sum"].reindex(known["pair_id"]).to_numpy() - known["b"].to_numpy()
    others = per_pair["size"].reindex(known["pair_id"]).to_numpy() - 1
    zeros = others - ones
    mine = known["b"].to_numpy()
    cells = (
        pd.DataFrame(
            {
                "annotator": known["annotator"].to_numpy(),
                "n11": np.where(mine == 1, ones, 0),
                "n10": np.where(mine == 1, zeros, 0),
                "n01": np.where(mine == 0, ones, 0),
                "n00": np.where(mine == 0, zeros, 0),
            }
        )
        .groupby("annotator")
        .sum()
    )
    total = cells.sum(axis=1).to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        observed = (cells["n11"] + cells["n00"]).to_numpy() / total
        mine_1 = (cells["n11"] + cells["n10"]).to_numpy() / total
        theirs_1 = (cells["n11"] + cells["n01"]).to_numpy() / total
        expected = mine_1 * theirs_1 + (1 - mine_1) * (1 - theirs_1)
        kappa = (observed - expected) / (1 - expected)
    kappa[(total == 0) | ~np.isfinite(kappa)] = np.nan
    return pd.Series(kappa, index=cells.index)


# The consensus the flags measure people against (consensus_checks): Dawid–Skene over the binarised labels,
# anchored by the campaign's gold keys, each person's labels measured against the others' answers weighed by
# the fit (the person's own left out). A consensus read only where it is sure; answers that barely depend on
# the pair measured by their spread and against the consensus' share.
CONSENSUS_SURE = 0.8  # the posterior the others' consensus needs before a pair counts in κ vs consensus
DOMINANCE_MARGIN = 0.3  # a side this much more often than the consensus of the same pairs expects
ENTROPY_MIN = 0.3  # the answers' entropy over the five answers, as a share of its maximum (log 5)
MIN_ANSWER_LABELS = 20  # answers before the "barely depend on the pair" checks may flag
CONSENSUS_COLUMNS = (
    "κ vs consensus",
    "consensus labels",
    "answers",
    "answer entropy",
    "top answer",
    "top answer share",
    "side share",
    "consensus side share",
)


def consensus_checks(labels: pd.DataFrame, ordinary=None, gold: Optional[pd.Series] = None) -> pd.DataFrame:
    """Per annotator, agreement with a consensus that discounts unreliable people, and how much their answers
    depend on the pair. ``labels``: one row per label (annotator, pair_id, level 0-4), every label the
    campaign counts (answers to gold checks included: they tell the fit who is reliable); ``ordinary``: a
    boolean mask of the rows that are ordinary labels (not answers to checks; all by default); ``gold``: the
    keys' sides (pair_id -> 0 / 1), which anchor the fit.

    The fit is pluie_core.aggregation.fit_adaptive_model (Dawid–Skene over the binarised labels, smoothed
    confusion matrices): an annotator whose answers do not follow the pairs gets a confusion matrix whose two
    rows are alike, and their answers then weigh nothing. For each ordinary label, the consensus is the
    posterior of the pair's side from the *other* annotators' labels on it (the person left out), under the
    fit. Columns:

    - ``κ vs consensus`` and ``consensus labels``: Cohen's κ of their binarised labels against the consensus
      side, on the pairs where that posterior is at least CONSENSUS_SURE, the others' answers alone (under a
      flat prior) being that sure too (a consensus made of noise, or of the prior, is no reference: such
      pairs do not count), and how many pairs that was; NaN where that consensus has one side only;
    - ``answers`` (ordinary labels, Don't know included), ``answer entropy`` (the entropy of their answers over
      the five, as a share of log 5), ``top answer`` (0-4) and its ``top answer share``;
    - ``side share`` and ``consensus side share``: the share of their usable answers on their more frequent
      side, and the share the consensus expects on that side for the same pairs (the mean posterior; a pair no
      one else labelled reads the fit's prior).
    """
    from pluie_core.aggregation import fit_adaptive_model

    levels = pd.to_numeric(labels["level"], errors="coerce").to_numpy(dtype=float)
    annotators = labels["annotator"].to_numpy()
    pair_ids = labels["pair_id"].to_numpy()
    ordinary = np.ones(len(labels), dtype=bool) if ordinary is None else np.asarray(ordinary, dtype=bool)
    out = pd.DataFrame(
        index=pd.Index(pd.unique(annotators[ordinary]), name="annotator"), columns=list(CONSENSUS_COLUMNS), dtype=float
    )
    if out.empty:
        return out
    fit = fit_adaptive_model(pd.DataFrame({"pair_id": pair_ids, "annotator": annotators, "level": levels}), gold)
    usable = np.isin(levels, ORDINAL_LEVELS)
    given = (levels >= 2).astype(int)
    names = pd.Series(annotators).astype(str).to_numpy()
    if fit is not None:
        logs = {name: np.log(np.asarray(m, dtype=float)) for name, m in fit["confusion"].items()}
        pooled = np.log(np.asarray(fit["pooled"], dtype=float))
        matrices = np.stack([logs.get(name, pooled) for name in names])
        rows = np.arange(len(names))
        own = np.where(usable[:, None], np.stack([matrices[rows, 0, given], matrices[rows, 1, given]], axis=1), 0.0)
        log_prior = np.log(np.asarray(fit["priors"], dtype=float))
    else:
        own, log_prior = np.zeros((len(labels), 2)), np.log([0.5, 0.5])
    frame = pd.DataFrame({"pair_id": pair_ids, "l0": own[:, 0], "l1": own[:, 1], "u": usable.astype(int)})
    totals = frame.groupby("pair_id")[["l0", "l1", "u"]].transform("sum").to_numpy()
    others = totals - frame[["l0", "l1", "u"]].to_numpy()
    logit = (log_prior[1] + others[:, 1]) - (log_prior[0] + others[:, 0])
    p_one = 1.0 / (1.0 + np.exp(-np.clip(logit, -700, 700)))
    n_others = others[:, 2]
    # sure by the others' answers themselves (a flat prior): a skewed prior alone never makes a reference
    evidence = np.abs(others[:, 1] - others[:, 0])
    sure = (
        (n_others >= 1)
        & (evidence >= np.log(CONSENSUS_SURE / (1 - CONSENSUS_SURE)))
        & (np.maximum(p_one, 1 - p_one) >= CONSENSUS_SURE)
    )

    for annotator in out.index:
        mine = ordinary & (annotators == annotator)
        answers = levels[mine]
        counts = np.bincount(answers[np.isfinite(answers)].astype(int), minlength=5)[:5]
        n = int(counts.sum())
        out.at[annotator, "answers"] = n
        if n:
            shares = counts / n
            nonzero = shares[shares > 0]
            out.at[annotator, "answer entropy"] = max(0.0, float(-(nonzero * np.log(nonzero)).sum() / np.log(5)))
            out.at[annotator, "top answer"] = int(np.argmax(counts))
            out.at[annotator, "top answer share"] = float(shares.max())
        use = mine & usable
        if use.any():
            ones = float(given[use].mean())
            side = int(ones >= 0.5)
            out.at[annotator, "side share"] = ones if side else 1 - ones
            expected = float(p_one[use].mean())
            out.at[annotator, "consensus side share"] = expected if side else 1 - expected
        judged = use & sure
        out.at[annotator, "consensus labels"] = int(judged.sum())
        if judged.any():
            out.at[annotator, "κ vs consensus"] = _cohen_kappa(given[judged], (p_one[judged] >= 0.5).astype(int))
    for column in ("consensus labels", "answers"):
        out[column] = out[column].fillna(0).astype(int)
    return out


def _cohen_kappa(a: np.ndarray, b: np.ndarray) -> float:
    """pluie_core.stats.cohen_kappa of a person's binary labels ``a`` against the consensus ``b``; NaN where
    the consensus has one side only: a one-sided reference cannot tell agreement from chance."""
    from pluie_core.stats import cohen_kappa

    if len(np.unique(b)) < 2:
        return float("nan")
    return cohen_kappa(np.asarray(a, dtype=float), np.asarray(b, dtype=float))


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
    """ "value < threshold", with one more digit where rounding would show them equal; a minus sign."""
    for digits in (0, 1, 2) if percent else (2, 3, 4):
        shown = [f"{v:.{digits}%}" if percent else f"{v:.{digits}f}" for v in (value, threshold)]
        if shown[0] != shown[1]:
            break
    return " < ".join(shown).replace("-", "−")


FLAG_COLUMNS = ("flags", "not judged yet")
# the Live campaign's table of annotators, a group of columns at a time beside the name and the counter, so
# that each view fits the page (all 27 columns at once were 2,900 px wide in a 940 px frame at a 1,400 px window);
# a column of db.quality.campaign_live named in none goes with the last group
LIVE_COLUMN_GROUPS = {
    "Flags": (*FLAG_COLUMNS, "last activity", "status"),
    "Gold checks": (
        "gold answered",
        "gold accuracy",
        "gold exact accuracy",
        "gold checks planned",
        "gold checks served",
    ),
    "Agreement": ("κ vs consensus", "consensus labels", "κ vs others", "shared labels", "reliability", "labels in fit"),
    "Answers": ("answers", "answer entropy", "top answer", "top answer share", "side share", "consensus side share"),
    "Pace": ("median s per pair", "Don't know rate", "longest streak"),
}


def live_columns(columns, group: str, always=("annotator", "progress")) -> list[str]:
    """The columns of the Live campaign's table shown in ``group`` (a key of LIVE_COLUMN_GROUPS; an unknown one
    reads as the first): ``always``, then the group's, in the group's order; the last group also takes any
    column no group names (a column added to campaign_live is never lost)."""
    groups = list(LIVE_COLUMN_GROUPS)
    group = group if group in LIVE_COLUMN_GROUPS else groups[0]
    named = {c for names in LIVE_COLUMN_GROUPS.values() for c in names} | set(always)
    chosen = [*always, *(c for c in LIVE_COLUMN_GROUPS[group] if c in columns)]
    if group == groups[-1]:
        chosen += [c for c in columns if c not in named]
    return [c for c in chosen if c in columns]


def annotator_checks(
    table: pd.DataFrame,
    campaign_median: float,
    *,
    gold_min_accuracy: float,
    fast_fraction: float,
    streak_length: int,
    kappa_min: float = 0.2,
    reliability_min: float = 0.5,
    min_gold_checks: int = 5,
    method: str = "Majority vote",
    reliability_flags: bool = True,
) -> pd.DataFrame:
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
    needed)"; a check with no evidence at all says nothing.

    Agreement is κ vs consensus (consensus_checks) where the table has that column, κ vs others (the raw
    pool) only where it has not. ``reliability_flags`` False: the reliability column does not flag (the live
    view under majority vote, whose "reliability" is agreement with the raw pool). Where the table has
    consensus_checks' ``answers`` and ``answer entropy``, an annotator with at least MIN_ANSWER_LABELS
    answers whose answers barely depend on the pair is flagged, with the evidence: their more frequent
    side DOMINANCE_MARGIN or more above the share the others' consensus expects of the same pairs, or an
    entropy under ENTROPY_MIN of its maximum ("answers barely depend on the pair: 100% on one side vs 46%
    in the others' consensus of the same pairs, and “Same meaning” 100% of 40 answers (entropy 0.00 < 0.30)"),
    whatever their longest streak."""
    n = len(table)
    flags: list[list[str]] = [[] for _ in range(n)]
    unjudged: list[list[str]] = [[] for _ in range(n)]

    def column(name: str) -> np.ndarray:
        return (
            pd.to_numeric(table[name], errors="coerce").to_numpy(dtype=float) if name in table else np.full(n, np.nan)
        )

    def count(values: np.ndarray, i: int) -> int:
        return int(values[i]) if np.isfinite(values[i]) else 0

    answered, accuracy = column("gold answered"), column("gold accuracy")
    for i in range(n):
        checks = count(answered, i)
        if not checks or not np.isfinite(accuracy[i]):
            continue
        right = int(round(accuracy[i] * checks))
        if checks < min_gold_checks:
            unjudged[i].append(
                f"gold {right} of {checks} right: too few checks ({checks} of {int(min_gold_checks)} needed)"
            )
        elif accuracy[i] < gold_min_accuracy:
            flags[i].append(
                f"gold accuracy {_below(accuracy[i], gold_min_accuracy, percent=True)} "
                f"({right} of {checks} checks right)"
            )
    # agreement: against the consensus where the table has it (the live view), else against the raw pool
    agreement = (
        ("κ vs consensus", "consensus labels")
        if "κ vs consensus" in table and "consensus labels" in table
        else ("κ vs others", "shared labels")
    )
    rated = [(*agreement, MIN_KAPPA_LABELS, kappa_min)]
    if reliability_flags:
        rated.append(("reliability", "labels in fit", MIN_RELIABILITY_LABELS, reliability_min))
    for value_column, count_column, minimum, threshold in rated:
        if value_column not in table or count_column not in table:
            continue
        values, counts = column(value_column), column(count_column)
        for i in range(n):
            k = count(counts, i)
            if value_column == "κ vs others":
                evidence, too_few = f"on {k:,} shared labels", "too few shared labels"
            elif value_column == "κ vs consensus":
                evidence = f"on {k:,} pairs where the others' consensus is sure"
                too_few = "too few pairs where the others' consensus is sure"
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
    if "answers" in table and "answer entropy" in table:
        answers, entropy = column("answers"), column("answer entropy")
        top, top_share = column("top answer"), column("top answer share")
        side, expected = column("side share"), column("consensus side share")
        for i in range(n):
            k = count(answers, i)
            if not k:
                continue
            if k < MIN_ANSWER_LABELS:
                unjudged[i].append(f"answers' spread: too few answers ({k:,} of {MIN_ANSWER_LABELS} needed)")
                continue
            signs: list[str] = []
            if np.isfinite(side[i]) and np.isfinite(expected[i]) and side[i] - expected[i] >= DOMINANCE_MARGIN:
                signs.append(
                    f"{side[i]:.0%} on one side vs {expected[i]:.0%} in the others' consensus of the same pairs"
                )
            if np.isfinite(entropy[i]) and entropy[i] < ENTROPY_MIN:
                signs.append(
                    f"“{LEVELS[int(top[i])]}” {top_share[i]:.0%} of {k:,} answers "
                    f"(entropy {_below(entropy[i], ENTROPY_MIN)})"
                )
            if signs:
                flags[i].append("answers barely depend on the pair: " + ", and ".join(signs))
    medians, streaks = column("median s per pair"), column("longest streak")
    for i in range(n):
        if np.isfinite(campaign_median) and medians[i] < fast_fraction * campaign_median:
            flags[i].append(
                f"faster than {fast_fraction:.2g} × median ({medians[i]:.1f} s vs {campaign_median:.1f} s per pair)"
            )
        if np.isfinite(streaks[i]) and streaks[i] >= streak_length:
            flags[i].append(f"{int(streak_length)}+ same answers in a row (longest {int(streaks[i])})")
    return pd.DataFrame(
        {"flags": ["; ".join(f) for f in flags], "not judged yet": ["; ".join(u) for u in unjudged]}, index=table.index
    )


def annotator_flags(
    table: pd.DataFrame,
    campaign_median: float,
    *,
    gold_min_accuracy: float,
    fast_fraction: float,
    streak_length: int,
    kappa_min: float = 0.2,
    reliability_min: float = 0.5,
    min_gold_checks: int = 5,
    method: str = "Majority vote",
    reliability_flags: bool = True,
) -> pd.Series:
    """The flags of each annotator as one string ("" = none): annotator_checks' ``flags``."""
    return annotator_checks(
        table,
        campaign_median,
        gold_min_accuracy=gold_min_accuracy,
        fast_fraction=fast_fraction,
        streak_length=streak_length,
        kappa_min=kappa_min,
        reliability_min=reliability_min,
        min_gold_checks=min_gold_checks,
        method=method,
        reliability_flags=reliability_flags,
    )["flags"]


def evidence_rank(table: pd.DataFrame) -> pd.Index:
    """The live table's rows in the order an organiser should look at them: most flags first, then the
    lowest gold accuracy, then the lowest κ vs consensus (missing values last), then the table's order."""
    flags = table["flags"].map(lambda f: 0 if not f else len(str(f).split("; ")))
    key = pd.DataFrame(
        {
            "flags": -flags.to_numpy(),
            "gold": pd.to_numeric(table.get("gold accuracy", np.nan), errors="coerce"),
            "kappa": pd.to_numeric(table.get("κ vs consensus", np.nan), errors="coerce"),
            "order": np.arange(len(table)),
        },
        index=table.index,
    )
    return key.sort_values(["flags", "gold", "kappa", "order"], na_position="last", kind="stable").index
