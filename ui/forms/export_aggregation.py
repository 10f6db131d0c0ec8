"""The Export page's aggregation (pages/export.py): the method fitted over the labels exported (a campaign's own
by default) and, for a model's method, the two thresholds that make its level final. The rules are
pluie_core.aggregation's (final_rule_text says which applied) and db.export's."""

import streamlit as st

from pluie_core.aggregation import DEFAULT_CONFIDENCE, DEFAULT_MIN_LABELS, METHOD_NAMES, METHODS, MODEL_METHODS

AGGREGATIONS = {None: "None: the majority rule only", **{m: METHOD_NAMES[m] for m in METHODS}}


def aggregation_choice(where, campaign_list: list, campaign_id) -> tuple:
    """(method, thresholds): the method chosen in ``where`` (None: the majority rule only), and for a model's
    method its ``confidence`` and ``min_labels``, as db.export and db.publish take them (else {})."""
    # a campaign's own choice (Campaigns → Final labels by) is the default when the export is that campaign's
    default_method = next((c.aggregation for c in campaign_list if c.id == campaign_id), None)
    method = where.selectbox(
        "Aggregation",
        list(AGGREGATIONS),
        format_func=AGGREGATIONS.get,
        index=list(AGGREGATIONS).index(default_method),
        key=f"export-aggregation-{campaign_id}",
        help="Adds `aggregation`, `aggregated_level` / `aggregated_label`, `posterior` (the "
        "probability of that level) and `uncertainty` (1 - the largest probability), fitted "
        "over the five levels on the labels exported; the final level then follows the "
        "method where no reviewer decided, when it is sure enough (below). With a campaign, "
        "its gold answers anchor Dawid–Skene and are held out for the others.",
    )
    thresholds = {}
    if method in MODEL_METHODS:  # when the model's level is final: both thresholds are the user's
        left, right = st.columns(2)
        thresholds["confidence"] = left.number_input(
            "Confidence a model's level needs (posterior at least)",
            min_value=0.0,
            max_value=1.0,
            value=DEFAULT_CONFIDENCE,
            step=0.05,
            format="%.2f",
            key="export-confidence",
            help="Where the method's posterior for its level is lower, the majority rule decides the final level "
            "(or none does): a reviewer's decision wins over both.",
        )
        thresholds["min_labels"] = int(
            right.number_input(
                "Labels per annotator in the fit (median, at least)",
                min_value=0,
                value=DEFAULT_MIN_LABELS,
                step=1,
                key="export-min-labels",
                help="With fewer labels for the median annotator, the method cannot learn the annotators: the majority "
                "rule decides every pair no reviewer settled.",
            )
        )
    return method, thresholds
