"""What the analysis views compute from the store's frames, as pure functions on DataFrames: the
label matrices of each scale, the reference a metric is compared against (gold, the human majority,
one annotator), the per-annotator summary, and the edit distance of figure 2 / table 4.

The frames are those db.analysis reads: labels long (pair_id, annotator, level, value, english_level,
seconds_spent, ...) and pairs (index pair_id; gold_label, label_kind, label_min, label_max,
dataset_id, and source / hypothesis for the edit distance).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from pluie_core.baselines import levenshtein
from pluie_core.labels import DONT_KNOW, binarise_levels, ordinal_levels
from pluie_core.run_kinds import preference_item_kinds
from pluie_core.run_kinds import run_kind as run_kind_record
from pluie_core.stats import (
    StatsError,
    best_threshold,
    cohen_kappa,
    item_slots,
    levels_to_matrix,
    majority_binary_vector,
    positions_by,
)


def edit_distances(pairs: pd.DataFrame) -> pd.Series:
    """Normalised character Levenshtein distance (pluie_core.baselines.levenshtein: 0 = same text,
    1 = nothing in common) of every pair of a ``pairs_frame(..., texts=True)``: the x axis of the
    paper's figure 2 and table 4."""
    if pairs.empty:
        return pd.Series(dtype=float, name="edit_distance")
    distances = levenshtein(pairs["source"].tolist(), pairs["hypothesis"].tolist())
    return pd.Series(distances, index=pairs.index, name="edit_distance")


def label_scales(labels: pd.DataFrame) -> list[str]:
    """Which scales the labels use: "levels" (the app's five-level scale) and / or "raw" (values
    imported on their own scale, such as BIOSSES 0-4)."""
    scales = []
    if labels["level"].notna().any():
        scales.append("levels")
    if (labels["level"].isna() & labels["value"].notna()).any():
        scales.append("raw")
    return scales


def labels_on_scale(labels: pd.DataFrame, scale: str = "levels") -> pd.DataFrame:
    """The labels of one scale: "levels" (five-level) or "raw" (imported values on their own scale)."""
    if scale == "levels":
        return labels[labels["level"].notna()]
    return labels[labels["level"].isna() & labels["value"].notna()]


def label_matrix(labels: pd.DataFrame, scale: str = "levels") -> pd.DataFrame:
    """items x annotators matrix: five-level levels as stored (4 = Don't know) or raw imported values.
    ``agreement_matrix`` gives the values the statistics take."""
    return levels_to_matrix(labels_on_scale(labels, scale), level_col="level" if scale == "levels" else "value")


RAW_SCALE_NO_BINARY = (
    "These labels are values on their own scale (imported raw, like BIOSSES 0–4), so they have no "
    "paraphrase / non-paraphrase binarisation; use gold labels as the reference, or compare them "
    "on their own scale on the Agreement page."
)


def agreement_matrix(matrix: pd.DataFrame, scale: str = "levels", binarised: bool = False) -> pd.DataFrame:
    """What the agreement statistics (pluie_core.stats, plain values) take from a ``label_matrix``:
    the five-level scale's rules applied here, once: Don't know is missing, and ``binarised``
    gives 0 (Very different, Slightly similar) / 1 (Mostly similar, Same meaning). Raw imported
    values are their own scale (BIOSSES' 4 is a score) and stay as they are; they have no
    binarisation."""
    if scale != "levels":
        if binarised:
            raise StatsError(RAW_SCALE_NO_BINARY)
        return matrix
    return binarise_levels(matrix) if binarised else ordinal_levels(matrix)


def agreement_values(labels: pd.DataFrame, scale: str = "levels", binarised: bool = False) -> pd.DataFrame:
    """``agreement_matrix(label_matrix(labels, scale), scale, binarised)`` as rows: ``pair_id``, ``annotator``,
    ``value``, one row per pair and annotator that has a value there (the last label wins, as in the
    matrix; Don't know and missing values leave no row). Its size is the labels', not pairs x annotators:
    a campaign of 6,000 annotators over 100,000 pairs is 600,000,000 cells as a matrix."""
    if scale != "levels" and binarised:
        raise StatsError(RAW_SCALE_NO_BINARY)
    rows = labels_on_scale(labels, scale)
    column = "level" if scale == "levels" else "value"
    rows = rows[["pair_id", "annotator", column]].dropna(subset=["pair_id", "annotator"])
    rows = rows.drop_duplicates(["pair_id", "annotator"], keep="last")
    values = rows[column].to_numpy(dtype=float, na_value=np.nan)
    if scale == "levels":
        values = binarise_levels(values) if binarised else ordinal_levels(values)
    kept = ~np.isnan(values)
    return pd.DataFrame(
        {
            "pair_id": rows["pair_id"].to_numpy()[kept],
            "annotator": rows["annotator"].to_numpy()[kept],
            "value": values[kept],
        }
    )


def most_labelled(values: pd.DataFrame, limit: int) -> pd.DataFrame:
    """The rows of ``values`` (agreement_values) of the ``limit`` annotators with the most of them, ties by
    name; all of them when there are at most ``limit`` annotators."""
    counts = values["annotator"].value_counts()
    if len(counts) <= limit:
        return values
    counts = (
        counts.rename_axis("annotator")
        .reset_index(name="n")
        .sort_values(["n", "annotator"], ascending=[False, True], kind="stable")
    )
    return values[values["annotator"].isin(counts["annotator"].iloc[:limit])]


@dataclass(frozen=True)
class Reference:
    """What a metric (or a person) is compared against: "gold" labels, the human "majority"
    (binarised, Don't know ignored, ties give none) or one "annotator"'s binarised labels.
    ``gold_cut`` binarises scored gold (STS-B 0-5 ...): paraphrase at or above this share of the
    dataset's scale."""

    kind: str = "gold"
    annotator: Optional[str] = None
    gold_cut: float = 0.5

    def describe(self) -> str:
        if self.kind == "gold":
            return "gold labels"
        if self.kind == "majority":
            return "the human majority"
        return f"annotator {self.annotator}"


def gold_binary(pairs: pd.DataFrame, gold_cut: float = 0.5) -> pd.Series:
    """Gold labels as 0/1: binary datasets as they are; scored datasets cut at ``gold_cut`` of their
    scale (label_min + cut x (label_max - label_min)); a dataset of unknown kind counts as binary
    when its gold labels are all 0 or 1."""
    gold = pairs["gold_label"]
    # as numbers: a store read gives None (an object column) where no dataset states its scale, and
    # comparing the labels with an object column warned ("invalid value encountered") and went elementwise
    low = pairs["label_min"].astype(float).fillna(gold.groupby(pairs["dataset_id"]).transform("min"))
    high = pairs["label_max"].astype(float).fillna(gold.groupby(pairs["dataset_id"]).transform("max"))
    scored = pairs["label_kind"].eq("score")
    unknown = pairs["label_kind"].isna()
    if unknown.any():
        binary_looking = gold.isin([0.0, 1.0]) | gold.isna()
        all_binary = binary_looking.groupby(pairs["dataset_id"]).transform("all")
        scored = scored | (unknown & ~all_binary)
    cut = low + gold_cut * (high - low)
    binary = gold.where(~scored, (gold >= cut).astype(float).where(gold.notna()))
    return binary.rename("reference")


@dataclass(frozen=True)
class ReferenceScale:
    """The scale the values of a reference are on: "binary" (0/1), "levels" (the app's five-level
    scale), "range" (numbers from ``low`` to ``high``, STS-B's 0–5), "own" (a scale only the
    ``dataset`` knows: its own, never pooled with another's) or "none" (no dataset has the reference)."""

    kind: str
    low: Optional[float] = None
    high: Optional[float] = None
    dataset: Optional[str] = None

    def describe(self) -> str:
        if self.kind == "binary":
            return "binary 0/1"
        if self.kind == "levels":
            return "the five-level scale"
        if self.kind == "range":
            return f"scores {self.low:g}–{self.high:g}"
        if self.kind == "none":
            return "no reference"
        return f"{self.dataset}'s own scale"


# the references of the five-level labels (the human majority, one annotator, the mean level): one scale
# for every dataset
HUMAN_REFERENCES = ("majority", "annotator", "levels")
# where the values come from the dataset itself: gold labels (0/1 or a score) and imported annotators' values
DATASET_REFERENCES = ("gold", "raw")


def _dataset_scale(row) -> ReferenceScale:
    """A dataset's gold scale (a row of AnalysisChoices.datasets): its label_kind and range, or, a kind
    unknown, binary when every gold label is 0 or 1 (as gold_binary reads it), else its own."""
    if row["label_kind"] == "binary":
        return ReferenceScale("binary")
    if row["label_kind"] == "score" and pd.notna(row["label_min"]) and pd.notna(row["label_max"]):
        return ReferenceScale("range", float(row["label_min"]), float(row["label_max"]))
    if pd.isna(row["label_kind"]) and row.get("n_gold", 0) and not row.get("n_gold_other", 1):
        return ReferenceScale("binary")
    return ReferenceScale("own", dataset=str(row["name"]))


def reference_scale_groups(datasets: pd.DataFrame, reference: str) -> list[tuple[ReferenceScale, tuple[int, ...]]]:
    """The datasets grouped by the scale of ``reference``'s values, so that a figure is only ever
    computed over pairs whose reference shares one scale (PAWS-X's 0/1 and STS-B's 0–5 on one axis gave a
    correlation of 0.04 where STS-B alone gives 0.87): [(scale, dataset ids in the frame's order)], binary
    first, then the five-level scale, score ranges from the lowest, datasets on their own scale by name.

    ``datasets``: id, name, label_kind, label_min, label_max, n_gold and n_gold_other (gold labels other
    than 0 and 1), as db.analysis.analysis_choices reads them. ``reference``: "gold" and "raw" (imported
    annotators' values, on their dataset's scale) follow each dataset's scale; "majority", "annotator" and
    "levels" are the five-level labels, one scale everywhere; "meta" (a metadata column) is each dataset's
    own. Gold: a dataset without a gold label is left out; when none has one, one group of them all (the
    page then says there is no reference)."""
    if datasets.empty:
        return []
    ids = tuple(int(i) for i in datasets["id"])
    if reference in HUMAN_REFERENCES:
        return [(ReferenceScale("levels"), ids)]
    rows = datasets
    if reference == "gold" and "n_gold" in datasets:
        rows = datasets[datasets["n_gold"].fillna(0) > 0]
        if rows.empty:
            return [(ReferenceScale("none"), ids)]
    groups: dict[ReferenceScale, list[int]] = {}
    for _, row in rows.iterrows():
        scale = (
            _dataset_scale(row) if reference in DATASET_REFERENCES else ReferenceScale("own", dataset=str(row["name"]))
        )
        groups.setdefault(scale, []).append(int(row["id"]))
    order = {"binary": 0, "levels": 1, "range": 2, "own": 3}
    ranked = sorted(
        groups,
        key=lambda s: (
            order[s.kind],
            s.low if s.low is not None else 0.0,
            s.high if s.high is not None else 0.0,
            s.dataset or "",
        ),
    )
    return [(scale, tuple(groups[scale])) for scale in ranked]


def scales_sentence(groups: list[tuple[ReferenceScale, tuple[int, ...]]], names: dict) -> str:
    """Why a page shows one scale at a time, in one sentence: each scale with its datasets
    (``names``: dataset id -> name)."""
    parts = "; ".join(f"{scale.describe()}: {', '.join(str(names.get(i, i)) for i in ids)}" for scale, ids in groups)
    return (
        f"These datasets' references are on different scales ({parts}): no figure pools them, so "
        "one scale is shown at a time."
    )


def reference_labels(pairs: pd.DataFrame, labels: pd.DataFrame, reference: Reference) -> pd.Series:
    """The reference as 0/1 per pair (index pair_id, NaN where there is none). Raises StatsError
    with a sentence for the page when the reference does not exist for these pairs."""
    if reference.kind == "gold":
        if pairs["gold_label"].notna().sum() == 0:
            raise StatsError(
                "These datasets have no gold labels: choose the human majority or one annotator as the reference."
            )
        return gold_binary(pairs, reference.gold_cut).reindex(pairs.index)
    chosen = labels if reference.kind == "majority" else labels[labels["annotator"] == reference.annotator]
    if reference.kind == "annotator" and chosen.empty:
        raise StatsError(f"Annotator {reference.annotator} has no label on these datasets.")
    if chosen.empty:
        raise StatsError(
            "No one has labelled these datasets yet: choose gold labels as the reference, or label some pairs first."
        )
    if "levels" not in label_scales(chosen):
        raise StatsError(RAW_SCALE_NO_BINARY)
    binary = agreement_values(chosen, "levels", binarised=True)
    if reference.kind == "majority":  # per pair: who gave which label does not matter
        vector = majority_binary_vector(item_slots(binary, level_col="value"))
    else:
        vector = binary.set_index("pair_id")["value"]
    return vector.reindex(pairs.index).rename("reference")


# Runs whose scores only mean something within a preference item (LLM-choice: 1 when the candidate
# was chosen over its partner; pluie_core.run_kinds): the pair-level views (thresholds, agreement, ...) leave them out.
PREFERENCE_ONLY_KINDS = preference_item_kinds()


def natural_threshold(run_kind: str) -> Optional[float]:
    """The run kind's natural threshold (pluie_core.run_kinds): PLUIE's is 0 (log p(yes) = log p(no)),
    an LLM judge's its registry's (LLM-Yes/No 0.5: a Yes; LLM-Likert 4: good or excellent); baselines
    have none."""
    record = run_kind_record(run_kind)
    return record.natural_threshold if record is not None else None


@dataclass(frozen=True)
class DefaultThreshold:
    """The threshold a view uses for a run unless the user sets one, and which rule gave it:
    "natural" (PLUIE's 0), "best" (the a-posteriori best against the reference, as the Thresholds
    view finds it) or "median" (the median score, only when there is no reference to find a best)."""

    value: float
    rule: str
    reference: Optional[str] = None  # Reference.describe() of the best's reference

    def describe(self) -> str:
        if self.rule == "natural":
            return "PLUIE's natural threshold 0"
        if self.rule == "best":
            return f"the a-posteriori best threshold against {self.reference} (as on the Thresholds page)"
        return "the median score (no reference labels to find a best threshold)"


def default_threshold(
    run_kind: str,
    scores: pd.Series,
    reference: Optional[pd.Series] = None,
    higher_is_similar: bool = True,
    reference_name: str = "the reference",
) -> DefaultThreshold:
    """One rule for every view: a metric with a natural threshold uses it (PLUIE: 0); one without
    (a baseline) uses the a-posteriori best threshold for accuracy against ``reference`` (0/1 per
    pair, aligned with ``scores``), the one the Thresholds view reports; the median score only when
    no best can be found (no reference, or one class only)."""
    natural = natural_threshold(run_kind)
    if natural is not None:
        return DefaultThreshold(natural, "natural")
    if reference is not None:
        try:
            best = best_threshold(scores, reference.reindex(scores.index), higher_is_similar)
            return DefaultThreshold(float(best["threshold"]), "best", reference_name)
        except StatsError:
            pass
    values = pd.to_numeric(scores, errors="coerce").dropna()
    return DefaultThreshold(float(values.median()) if len(values) else 0.0, "median")


# --------------------------------------------------------------------------- per-annotator summary


def annotator_summary(
    labels: pd.DataFrame,
    scale: str = "levels",
    versus_model: Optional[pd.DataFrame] = None,
    binary: Optional[pd.DataFrame] = None,
) -> pd.DataFrame:
    """One row per annotator: english_level, labels, dont_know_rate, median_seconds, kappa_vs_others
    (binarised κ against the majority of the other annotators), and with ``versus_model`` (from
    stats.human_vs_model_table) kappa_vs_model / accuracy_vs_model / n_vs_model. Binarised figures
    are NaN on a raw scale; ``note`` says why a figure is missing. ``binary``: the binarised labels as
    rows (``agreement_values(labels, "levels", binarised=True)``) when the caller has them already."""
    rows = labels_on_scale(labels, scale)
    grouped = rows.groupby("annotator", sort=True)
    table = pd.DataFrame(
        {
            "english_level": grouped["english_level"].first(),
            "labels": grouped.size(),
            "dont_know_rate": rows["level"].eq(DONT_KNOW).groupby(rows["annotator"]).mean()
            if scale == "levels"
            else np.nan,
            "median_seconds": grouped["seconds_spent"].median(),
        }
    )
    table["kappa_vs_others"] = np.nan
    table["n_vs_others"] = 0
    table["note"] = ""
    if scale != "levels":
        table["note"] = "Raw-scale labels: no binarisation, so no binarised κ."
        return table.reset_index()
    if binary is None:
        binary = agreement_values(rows, "levels", binarised=True)
    # each label against the majority of the pair's other labels (majority_binary_vector's rule: NaN on a
    # tie or when no one else labelled), from the pair's totals: at the labels' size, not pairs x annotators
    items, _ = pd.factorize(binary["pair_id"])
    own = binary["value"].to_numpy(dtype=float)
    positive = np.bincount(items, weights=own == 1)[items] - (own == 1)
    negative = np.bincount(items, weights=own == 0)[items] - (own == 0)
    others = np.where(positive > negative, 1.0, np.where(negative > positive, 0.0, np.nan))
    where = positions_by(binary["annotator"])
    notes, n_vs_others, kappas = {}, [], []
    for name in table.index:
        chosen = where.get(name, np.zeros(0, dtype=np.int64))  # only where this annotator has a label
        n_vs_others.append(int((~np.isnan(others[chosen])).sum()))
        try:
            kappas.append(cohen_kappa(own[chosen], others[chosen]))
        except StatsError as error:
            kappas.append(np.nan)
            notes[name] = str(error)
    table["kappa_vs_others"] = np.array(kappas, dtype=float)
    table["n_vs_others"] = np.array(n_vs_others, dtype=np.int64)
    if versus_model is not None:
        versus = versus_model.set_index("annotator")
        table["kappa_vs_model"] = versus["kappa"]
        table["accuracy_vs_model"] = versus["accuracy"]
        table["n_vs_model"] = versus["n"]
        for name, note in versus["note"].items():
            if note and name in table.index:
                notes[name] = "; ".join(filter(None, [notes.get(name), note]))
    table["note"] = pd.Series(notes, dtype=object).reindex(table.index).fillna("")
    return table.reset_index()
