"""Review and adjudication on the five-level scale: which pairs need a reviewer, in which order,
and the final label of a pair (a reviewer's decision when there is one, else the majority rule).

Pure functions on plain frames; db.review reads the store and writes the decisions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pluie_core.labels import DONT_KNOW, LEVELS, ORDINAL_LEVELS, accepted, binarise, level_name

__all__ = [
    "REVIEW_COLUMNS",
    "FINAL_SOURCES",
    "disagreement_queue",
    "final_labels",
    "check_final_level",
    "majority_levels",
]

REVIEW_COLUMNS = [
    "n_labels",
    "n_dont_know",
    "n_non_paraphrase",
    "n_paraphrase",
    "min_level",
    "max_level",
    "spread",
    "crosses_boundary",
    "minority_share",
    "majority_level",
    "n_flags",
    "key_disagrees",
]


def majority_levels(counts) -> np.ndarray:
    """pluie_core.labels.majority_level for many pairs at once, from their counts of levels 0-3
    (pairs x 4): the most frequent level; a tie on one side of the paraphrase boundary goes to the
    lower median of the tied levels, a tie across it (or no label) gives NaN."""
    counts = np.asarray(counts, dtype=float).reshape(-1, len(ORDINAL_LEVELS))
    top = counts.max(axis=1, keepdims=True)
    tied = (counts == top) & (top > 0)
    n_tied = tied.sum(axis=1)
    across = tied[:, :2].any(axis=1) & tied[:, 2:].any(axis=1)
    # the ((n_tied - 1) // 2)-th tied level, counting from the lowest: the lower median
    wanted = (np.maximum(n_tied, 1) - 1) // 2 + 1
    pick = np.argmax(tied & (np.cumsum(tied, axis=1) == wanted[:, None]), axis=1).astype(float)
    return np.where((n_tied == 0) | across, np.nan, pick)


# every final_source a pair can have: a reviewer's decision, a campaign's gold key (its known level), a model
# method of pluie_core.aggregation (MODEL_METHODS) whose level was sure enough (model_final_levels), the
# majority rule, or none
FINAL_SOURCES = ("adjudicated", "gold", "dawid_skene", "glad", "mace", "majority", "none")


def key_conflicts(labels: pd.DataFrame, keys: "pd.DataFrame | None") -> pd.Index:
    """The gold pairs whose key disagrees with annotators who agree with each other: at least two labels
    other than Don't know, all on one side of the paraphrase boundary, and the key accepts none of them
    (pluie_core.labels.accepted: its side, or its level and, where it accepts it, the adjacent one, for a
    key that knows its level). Such a key would set the pair's final label against everyone who labelled
    it (final_source gold): a pair for a reviewer to decide. ``labels``: pair_id, level; ``keys``: indexed
    by pair_id, columns level (NaN: side only), binary_label, accept_adjacent."""
    if keys is None or keys.empty or labels.empty:
        return pd.Index([], name="pair_id", dtype="int64")
    known = labels[labels["pair_id"].isin(keys.index) & labels["level"].isin(ORDINAL_LEVELS)]
    if known.empty:
        return pd.Index([], name="pair_id", dtype="int64")
    key = keys.reindex(known["pair_id"].to_numpy())
    hit = accepted(
        known["level"].to_numpy(dtype=float),
        key["level"].to_numpy(dtype=float, na_value=np.nan),
        key["binary_label"].to_numpy(dtype=float),
        key["accept_adjacent"].fillna(False).to_numpy(dtype=bool),
    )
    frame = pd.DataFrame({"pair_id": known["pair_id"].to_numpy(), "side": (known["level"].to_numpy() >= 2), "hit": hit})
    per_pair = frame.groupby("pair_id").agg(n=("side", "size"), sides=("side", "nunique"), hits=("hit", "sum"))
    return per_pair.index[(per_pair["n"] >= 2) & (per_pair["sides"] == 1) & (per_pair["hits"] == 0)]


def disagreement_queue(
    labels: pd.DataFrame, flags: "pd.Series | None" = None, keys: "pd.DataFrame | None" = None
) -> pd.DataFrame:
    """The pairs whose labels disagree, and the pairs an annotator flagged, in review order.

    ``labels``: one row per label with ``pair_id`` and ``level`` (0-4 of the five-level scale, 4 =
    Don't know; NaN rows, e.g. imported values on another scale, are ignored). A pair disagrees
    when its labels hold two or more different levels, Don't know aside. ``flags``: how many
    annotators flagged each pair (indexed by pair_id); a flagged pair with a label is in the queue
    whether its labels disagree or not. Order: flagged pairs first (an annotator asked for a
    look), then the pairs whose labels fall on both sides of the paraphrase boundary (0-1 against
    2-3), then the widest spread of levels, then the most even split between the two sides, then
    pair id.

    Returns a frame indexed by pair_id with REVIEW_COLUMNS: n_labels (Don't know included),
    n_dont_know, n_non_paraphrase, n_paraphrase, min_level, max_level (missing when every label
    is Don't know), spread (max - min), crosses_boundary, minority_share (the smaller side's share
    of the binary labels), majority_level (the majority rule, Int64, missing on a tie across the
    boundary), n_flags, key_disagrees.

    ``keys``: a campaign's gold keys (key_conflicts): a gold pair whose key disagrees with annotators who
    agree is in the queue too (key_disagrees), right after the flagged pairs: its key would otherwise
    publish a label no annotator gave.
    """
    known = labels.dropna(subset=["level"])
    if known.empty:
        return pd.DataFrame(columns=REVIEW_COLUMNS, index=pd.Index([], name="pair_id"))
    levels = known["level"].astype(int)
    if not levels.isin([*ORDINAL_LEVELS, DONT_KNOW]).all():
        raise ValueError("Labels must be levels of the scale (0-4); found other values.")
    # counts of each level per pair: one bincount over (pair, level) cells (a crosstab costs seconds at 300k labels)
    pairs = known["pair_id"].to_numpy(dtype=np.int64)
    if pairs.min() >= 0 and pairs.max() <= 4 * len(pairs) + 100_000:
        # ids of a store (dense, from 1): count straight into a row per id, no sort (3M labels: 1 s less)
        counts = np.bincount(pairs * len(LEVELS) + levels.to_numpy(), minlength=(pairs.max() + 1) * len(LEVELS))
        counts = counts.reshape(-1, len(LEVELS))
        pair_ids = np.flatnonzero(counts.any(axis=1))
        counts = counts[pair_ids]
    else:
        pair_ids, pair_index = np.unique(pairs, return_inverse=True)
        counts = np.bincount(pair_index * len(LEVELS) + levels.to_numpy(), minlength=len(pair_ids) * len(LEVELS))
        counts = counts.reshape(len(pair_ids), len(LEVELS))
    ordinal = counts[:, list(ORDINAL_LEVELS)]
    present = ordinal > 0
    n_flags = np.zeros(len(pair_ids), dtype=int)
    if flags is not None and len(flags):
        n_flags = pd.Series(flags, dtype=float).reindex(pair_ids).fillna(0).to_numpy(dtype=int)
    conflicts = np.isin(pair_ids, key_conflicts(known, keys).to_numpy())
    keep = (present.sum(axis=1) >= 2) | (n_flags > 0) | conflicts
    conflicts = conflicts[keep]
    counts, ordinal, present, pair_ids, n_flags = (
        counts[keep],
        ordinal[keep],
        present[keep],
        pair_ids[keep],
        n_flags[keep],
    )
    values = np.array(ORDINAL_LEVELS)
    any_level = present.any(axis=1)  # a flagged pair may hold Don't know alone
    low = np.where(present, values, 99).min(axis=1)
    high = np.where(present, values, -1).max(axis=1)
    non_paraphrase = ordinal[:, :2].sum(axis=1)
    paraphrase = ordinal[:, 2:].sum(axis=1)
    binary = non_paraphrase + paraphrase
    table = pd.DataFrame(
        {
            "n_labels": counts.sum(axis=1),
            "n_dont_know": counts[:, DONT_KNOW],
            "n_non_paraphrase": non_paraphrase,
            "n_paraphrase": paraphrase,
            "min_level": pd.array(np.where(any_level, low, np.nan), dtype="Float64").astype("Int64"),
            "max_level": pd.array(np.where(any_level, high, np.nan), dtype="Float64").astype("Int64"),
            "spread": np.where(any_level, high - low, 0),
            "crosses_boundary": (non_paraphrase > 0) & (paraphrase > 0),
            "minority_share": np.divide(
                np.minimum(non_paraphrase, paraphrase), binary, out=np.zeros(len(binary)), where=binary > 0
            ),
            "majority_level": pd.array(majority_levels(ordinal), dtype="Float64").astype("Int64"),
            "n_flags": n_flags,
            "key_disagrees": conflicts,
        },
        index=pd.Index(pair_ids, name="pair_id"),
    )
    table["flagged"] = table["n_flags"] > 0
    table = table.reset_index().sort_values(
        ["flagged", "key_disagrees", "crosses_boundary", "spread", "minority_share", "pair_id"],
        ascending=[False, False, False, False, False, True],
        kind="stable",
    )
    return table.drop(columns="flagged").set_index("pair_id")


def check_final_level(level) -> int:
    """A final level must be one of the four ordinal levels: a reviewer settles the meaning."""
    if level is None or isinstance(level, bool) or int(level) != level or int(level) not in ORDINAL_LEVELS:
        raise ValueError(
            "A final level is one of Very different, Slightly similar, Mostly similar or Same meaning (0-3)."
        )
    return int(level)


def final_labels(
    majority: pd.Series, adjudicated: pd.Series, source: "pd.Series | None" = None, keys: "pd.Series | None" = None
) -> pd.DataFrame:
    """The final label of each pair: the reviewer's level where one is in force (``adjudicated``,
    NaN elsewhere), else the majority level (``majority``, pluie_core.labels.majority_level, NaN
    when there is none). Both indexed alike. ``source``: which rule gave each level of ``majority``
    when it is not the majority rule throughout (pluie_core.aggregation.model_final_levels: its level
    and source). Columns: final_level (Int64), final_label (the level's name), final_binary (0 / 1,
    pluie_core.labels.binarise), final_source (adjudicated, else ``source``: majority, none or the
    model method whose level was taken; FINAL_SOURCES). ``keys``: a campaign's gold keys with a known
    level (pair_id -> 0-3): where no reviewer decided, the key's level is final, with final_source "gold"
    (never a model's name: a key is the organiser's known answer, not what the labels say)."""
    majority = pd.to_numeric(majority, errors="coerce").astype("Float64")
    adjudicated = pd.to_numeric(adjudicated.reindex(majority.index), errors="coerce").astype("Float64")
    key = (
        pd.Series(np.nan, index=majority.index)
        if keys is None
        else pd.to_numeric(keys, errors="coerce").reindex(majority.index)
    ).astype("Float64")
    by_rule = (
        np.where(majority.notna(), "majority", "none")
        if source is None
        else source.reindex(majority.index).to_numpy(dtype=object)
    )
    by_rule = np.where(key.notna().to_numpy(), "gold", by_rule)
    majority = key.where(key.notna(), majority)
    level = adjudicated.where(adjudicated.notna(), majority).round().astype("Int64")
    source = np.where(adjudicated.notna(), "adjudicated", by_rule)
    return pd.DataFrame(
        {
            "final_level": level,
            "final_label": level.map(lambda v: level_name(None if pd.isna(v) else int(v))),
            "final_binary": level.map(lambda v: pd.NA if pd.isna(v) else binarise(int(v))).astype("Int64"),
            "final_source": pd.Series(source, index=majority.index, dtype=object),
        },
        index=majority.index,
    )
