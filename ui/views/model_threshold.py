"""The model threshold, by one rule on every page (pluie_core.analysis.default_threshold): the chosen
run's default and the sidebar's input, where a threshold the user set holds on every page."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from pluie_core import analysis as core
from pluie_core.stats import StatsError
from ui.base.page import user_text
from ui.views.selection import Selection, scale_groups
from ui.views.store_reads import reference_for, scores

USER_THRESHOLDS = "analysis_user_thresholds"  # run id -> the threshold the user set, on any page


def _threshold_reference(selection: Selection) -> tuple[Optional[pd.Series], str]:
    """The reference the default threshold is found against: the page's own, or (on a page
    without a reference picker) the Thresholds page's default: gold labels when the chosen datasets
    have some (on datasets of several gold scales, those of the first scale, as Thresholds first shows
    them), else the human majority."""
    reference, dataset_ids, name = selection.reference, selection.dataset_ids, None
    if reference is None:
        chosen = selection.choices.datasets[selection.choices.datasets["id"].isin(selection.dataset_ids)]
        reference = core.Reference("gold" if chosen["n_gold"].sum() > 0 else "majority")
        groups = scale_groups(selection, reference.kind)
        if len(groups) > 1:
            dataset_ids, name = groups[0][1], f"{reference.describe()} ({groups[0][0].describe()})"
    name = name or reference.describe()
    try:
        return reference_for(selection.url, dataset_ids, reference, selection.campaign_id), name
    except StatsError:
        return None, name


def default_threshold_rule(selection: Selection):
    """The default threshold of the chosen run (pluie_core.analysis.default_threshold), before any the
    user set: what threshold_input shows, and what the read-ahead computes Agreement's tables at."""
    run = selection.run
    values = scores(selection.url, (int(run["id"]),), selection.dataset_ids).get(run["name"], pd.Series(dtype=float))
    reference, reference_name = (
        _threshold_reference(selection) if core.natural_threshold(run["kind"]) is None else (None, "")
    )
    return core.default_threshold(run["kind"], values, reference, bool(run["higher_is_similar"]), reference_name)


def threshold_input(selection: Selection, key: str) -> float:
    """The threshold at which the chosen run calls a pair a paraphrase, by one rule on every page
    (pluie_core.analysis.default_threshold): PLUIE's natural 0; for a metric without one, the
    a-posteriori best against the reference (the Thresholds page's); or the one the user set here
    or on another page. A caption says which."""
    run = selection.run
    run_id = int(run["id"])
    rule = default_threshold_rule(selection)
    user = st.session_state.setdefault(USER_THRESHOLDS, {})
    widget = f"{key}_{run_id}"  # one widget per run: a threshold typed for one run means nothing for another

    def remember() -> None:
        user[run_id] = float(st.session_state[widget])

    # the widget shows the rule's value, or the user's from any page (set before it is drawn)
    st.session_state[widget] = float(user.get(run_id, rule.value))
    threshold = st.sidebar.number_input(
        "Model threshold",
        key=widget,
        format="%.4f",
        on_change=remember,
        help="The same rule on every page: PLUIE's natural threshold 0, an LLM judge's its own (Yes/No 0.5, Likert 4); "
        "a metric without one uses its a-posteriori "
        "best threshold (the Thresholds page's); a threshold you set here holds on every page.",
    )
    if run_id in user and user[run_id] != rule.value:
        st.sidebar.caption(
            f"Threshold {threshold:.4g}: set by you (the default is {user_text(rule.describe())}, {rule.value:.4g})."
        )
        if st.sidebar.button("Back to the default threshold", key=f"{widget}_reset"):
            user.pop(run_id)
            st.session_state.pop(widget, None)
            st.rerun()
    else:
        st.sidebar.caption(f"Threshold {threshold:.4g}: {user_text(rule.describe())}.")  # may name an annotator
    return float(threshold)
