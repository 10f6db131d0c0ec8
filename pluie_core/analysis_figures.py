"""The analysis pages' figures as pure functions of the frames the store gives (pluie_core.analysis's
label views, pairs, scores, reference labels): Agreement's κ / α and annotator tables, Thresholds'
curve and best thresholds, Correlation's table, Preferences' agreement table. No Streamlit, no
store: the pages cache these on the store's state (ui/views/*_cache.py) and draw what they return."""

from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from pluie_core import analysis as core
from pluie_core.agreement import N_BOOT, count_patterns, level_counts
from pluie_core.agreement import agreement_figures as level_agreement
from pluie_core.evaluation.correlation import correlate, system_level
from pluie_core.evaluation.preference import agreement_table
from pluie_core.stats import (
    StatsError,
    best_threshold,
    category_counts,
    fleiss_kappa,
    human_vs_model_by_annotator,
    item_slots,
    krippendorff_alpha_ci,
    levels_to_matrix,
    metrics_at,
    pairwise_kappa,
    roc_auc,
    threshold_curve,
)

ALPHA_LEVELS = ("nominal", "ordinal", "interval")
# Cohen's κ for every pair of annotators, up to this many (those with the most labels): 1,225 pairs. A
# campaign of 6,000 annotators has 18,000,000 pairs, nearly all with no pair labelled in common.
PAIRWISE_ANNOTATORS = 50


def agreement_figures(rows: pd.DataFrame, view: pd.DataFrame, scale: str, binarised: bool, weights) -> dict:
    """Fleiss' κ, Krippendorff's α with its interval (three levels; binarised: one) and the pairwise κ of
    one view of the labels. ``rows``: the labels on ``scale`` (pluie_core.analysis.labels_on_scale);
    ``view``: their values as the statistics take them (pluie_core.analysis.agreement_values, binarised
    or not: pair_id, annotator, value). ``weights``: Cohen's κ weighting (None, "linear", "quadratic").
    Returns figures (a frame: measure, value and, for α, its interval), errors (measure -> why it is
    undefined), pairwise (pluie_core.stats.pairwise_kappa; None when the values are not whole numbers)
    and annotators (how many gave a value)."""
    # the scale's rules (Don't know is missing, the binarisation) applied once; the statistics take plain values
    values = view["value"].to_numpy()
    figures: list = []
    errors: dict = {}
    slots = item_slots(view, level_col="value")  # each pair's values side by side: what Fleiss' κ and α count
    try:
        figures.append({"measure": "Fleiss' kappa", "value": fleiss_kappa(category_counts(slots))})
    except StatsError as error:
        errors["Fleiss' kappa"] = str(error)
    if scale == "levels":  # the five-level labels: pluie_core.agreement, as on Live campaign and the dataset card
        measures = ("binary",) if binarised else ALPHA_LEVELS
        found = level_agreement(count_patterns(level_counts(rows["pair_id"], rows["level"])), measures=measures)
        for measure in measures:
            figure = dict(found[measure])
            if figure.get("alpha") is None:
                errors[f"Krippendorff's alpha ({measure})"] = figure.get("why")
            else:
                figures.append({"measure": f"Krippendorff's alpha ({measure})", "value": figure.pop("alpha"), **figure})
    else:
        # values imported on their own scale: α counts the values of each pair, whoever gave them
        for level in ALPHA_LEVELS:
            try:
                found = krippendorff_alpha_ci(slots.T, level, n_boot=N_BOOT, seed=0)
                figures.append({"measure": f"Krippendorff's alpha ({level})", "value": found.pop("alpha"), **found})
            except StatsError as error:
                errors[f"Krippendorff's alpha ({level})"] = str(error)
    # five-level labels are whole by construction; values imported on their own scale may not be
    whole = scale == "levels" or bool(np.all(np.isnan(values) | (values == np.round(values))))
    annotators = view["annotator"].nunique()
    shown = core.most_labelled(view, PAIRWISE_ANNOTATORS)  # a heatmap a person can read
    pairwise = pairwise_kappa(levels_to_matrix(shown, level_col="value"), weights) if whole else None
    figures = pd.DataFrame(figures) if figures else pd.DataFrame(columns=["measure", "value"])  # every label missing
    return {"figures": figures, "errors": errors, "pairwise": pairwise, "annotators": annotators}


def annotator_tables(
    rows: pd.DataFrame,
    binary: Optional[pd.DataFrame],
    scale: str,
    run_scores: Optional[pd.Series],
    threshold,
    higher: bool,
):
    """The annotators' summary (pluie_core.analysis.annotator_summary) and, on the five-level scale with a
    run's scores, each annotator's and the majority's agreement with the run at ``threshold`` (None
    otherwise). ``rows``: the labels on ``scale``; ``binary``: their binarised values (five-level scale)."""
    versus = None
    if run_scores is not None and scale == "levels":
        # every annotator on the scale, those whose labels are all Don't know too (a row that says so)
        versus = human_vs_model_by_annotator(
            binary, run_scores, threshold, higher, annotators=sorted(rows["annotator"].unique())
        )
    return core.annotator_summary(rows, scale, versus, binary), versus


def threshold_figures(data: pd.DataFrame, higher: bool, natural: Optional[float]):
    """The Thresholds page's figures of one run against one reference, from ``data`` (a row per pair:
    dataset, score, reference 0/1; rows missing either are left out): the curve, the best threshold,
    ROC AUC and, over several datasets, each one's best threshold, ROC AUC and accuracy at the
    ``natural`` threshold (None when the run has none); per_dataset is None for one dataset."""
    data = data.dropna(subset=["score", "reference"])
    curve = threshold_curve(data["score"], data["reference"], higher)
    best, auc = (
        best_threshold(data["score"], data["reference"], higher),
        roc_auc(data["score"], data["reference"], higher),
    )
    if data["dataset"].nunique() < 2:
        return curve, best, auc, None
    per_dataset = []
    for name, group in data.groupby("dataset"):
        row = {"dataset": name, "n": len(group)}
        try:
            found = best_threshold(group["score"], group["reference"], higher)
            row |= {
                "best threshold": found["threshold"],
                "tied from": found["tie_low"],
                "tied to": found["tie_high"],
                "accuracy": found["accuracy"],
                "f1": found["f1"],
                "precision": found["precision"],
                "recall": found["recall"],
                "roc_auc": roc_auc(group["score"], group["reference"], higher),
            }
            if natural is not None:
                row["accuracy at natural"] = metrics_at(group["score"], group["reference"], natural, higher)["accuracy"]
        except StatsError as error:
            row["note"] = str(error)
        per_dataset.append(row)
    return curve, best, auc, pd.DataFrame(per_dataset)


def preference_agreement(items: pd.DataFrame, scores: pd.DataFrame, direction: dict, chosen) -> pd.DataFrame:
    """The Preferences page's table: every ``chosen`` run's agreement with the human choices
    (pluie_core.evaluation.preference.agreement_table). ``items``: the preference items (pair_a_id,
    pair_b_id, preferred); ``scores``: the runs' scores by pair id, one column per run."""
    found = scores.reindex(columns=list(chosen))
    side_a = found.reindex(items["pair_a_id"]).reset_index(drop=True)
    side_b = found.reindex(items["pair_b_id"]).reset_index(drop=True)
    return agreement_table(items["preferred"].tolist(), side_a, side_b, direction, list(chosen))


def correlation_table(
    scores: pd.DataFrame, reference: pd.Series, systems, n_boot: int, coefficients=None
) -> pd.DataFrame:
    """The Correlation page's table: pair-level (``systems`` None; pluie_core.evaluation.correlation.correlate)
    or system-level (system_level). ``coefficients``: the n_boot 0 table of the same data, whose r the
    bootstrap's table reuses."""
    if systems is None:
        return correlate(scores, reference, n_boot=n_boot, coefficients=coefficients)
    return system_level(scores, reference, systems, n_boot=n_boot)


def oriented(data: pd.DataFrame, names, runs: pd.DataFrame) -> dict:
    """The runs' scores with a distance negated, so that every correlation measures agreement with the
    humans: name -> scores. ``runs``: name and higher_is_similar of each run."""
    direction = runs.set_index("name")["higher_is_similar"]
    return {name: data[name] * (1 if direction.get(name, True) else -1) for name in names}
