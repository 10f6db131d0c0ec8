"""The Agreement page's (pages/agreement.py) cached figures and tables, and its first view, read ahead."""

from __future__ import annotations

import streamlit as st

from pluie_core import analysis as core
from pluie_core import analysis_figures as figures
from ui.views.model_threshold import default_threshold_rule
from ui.views.read_ahead import Start, Step
from ui.views.selection import Selection
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS, label_views, labels, scores

ALPHA_LEVELS = figures.ALPHA_LEVELS


@st.cache_data(
    ttl=CACHE_SECONDS,
    max_entries=CACHE_ENTRIES,
    show_spinner="Computing Fleiss' κ, Krippendorff's α with its bootstrap intervals and the pairwise κ…",
)
def agreement_figures(url: str, dataset_ids: tuple, scale: str, binarised: bool, weights, campaign_id=None) -> dict:
    """The Agreement page's Fleiss' κ, Krippendorff's α with its interval (three levels) and pairwise κ
    of one view (pluie_core.analysis_figures.agreement_figures), cached: on a large campaign they take
    seconds (2 s at 3,000,000 labels), and other widgets of the page should not wait for them. Its default
    view is read ahead. Streamlit keys it on the arguments as passed: callers pass all six (``campaign_id``:
    the labels of that campaign only)."""
    rows, values, binary = label_views(url, dataset_ids, scale, campaign_id)
    return figures.agreement_figures(rows, binary if binarised else values, scale, binarised, weights)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def people_tables(url: str, dataset_ids: tuple, scale: str, run_id, threshold, higher: bool, campaign_id=None):
    """The Agreement page's annotators' summary and, on the five-level scale with a run, each annotator's
    and the majority's agreement with the run at ``threshold`` (pluie_core.analysis_figures.annotator_tables):
    a second a run at 3,000,000 labels, so cached on what they depend on (the store's state first). Its
    default view is read ahead. Streamlit keys it on the arguments as passed: callers pass all seven
    (``campaign_id``: its labels only)."""
    rows, _, binary = label_views(url, dataset_ids, scale, campaign_id)
    run_scores = None
    if run_id is not None and scale == "levels":
        run_scores = scores(url, (run_id,), dataset_ids).iloc[:, 0]
    return figures.annotator_tables(rows, binary, scale, run_scores, threshold, higher)


def _label_frames(start: Start) -> None:
    """The labels of the scope and their views on each scale (Agreement, Distributions, Disagreements)."""
    for scale in core.label_scales(labels(start.url, start.dataset_ids, start.campaign_id)):
        label_views(start.url, start.dataset_ids, scale, start.campaign_id)


def _first_figures(start: Start) -> None:
    """The first scale, not binarised, unweighted κ."""
    url, dataset_ids, campaign = start.url, start.dataset_ids, start.campaign_id
    agreement_figures(url, dataset_ids, core.label_scales(labels(url, dataset_ids, campaign))[0], False, None, campaign)


def _first_tables(start: Start) -> None:
    """The first tables: the first scale, the first run at its default threshold."""
    url, ds, dataset_ids, campaign_id = start.url, start.choices, start.dataset_ids, start.campaign_id
    scale = core.label_scales(labels(url, dataset_ids, campaign_id))[0]
    if ds.runs.empty:
        people_tables(url, dataset_ids, scale, None, None, False, campaign_id)
        return
    run = ds.runs.iloc[0]
    if scores(url, (int(run["id"]),), dataset_ids).get(run["name"]) is None:
        return  # the page says there is no score yet and draws no run table
    rule = default_threshold_rule(Selection(url, ds, dataset_ids, run, None, campaign_id))
    people_tables(
        url, dataset_ids, scale, int(run["id"]), float(rule.value), bool(run["higher_is_similar"]), campaign_id
    )


def first_view(start: Start) -> list[Step]:
    """The labels and their views, the first figures; the annotator tables last (a second or two at
    1,000,000 labels, which would otherwise delay every other page's first view)."""
    return [
        Step(20, lambda: _label_frames(start)),
        Step(30, lambda: _first_figures(start)),
        Step(110, lambda: _first_tables(start)),
    ]
