"""What an analysis page shows, chosen in its sidebar: the scope (a campaign or datasets, ui.views.scope),
the score run, the reference, and one reference scale at a time; and the frame of the chosen pairs
with their reference and scores (scored_frame)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

import pandas as pd
import streamlit as st

from db import analysis
from pluie_core import analysis as core
from pluie_core.stats import StatsError
from ui import charts
from ui.base.page import user_text
from ui.views import scope as scopes
from ui.views.store_reads import choices, pairs, reference_for, reload, scores, store_key

REFERENCES = {"gold": "Gold labels", "majority": "Human majority", "annotator": "One annotator"}


@dataclass
class Selection:
    url: str
    choices: analysis.AnalysisChoices
    dataset_ids: tuple[int, ...]
    run: Optional[pd.Series]  # a row of choices.runs, None when no run is chosen
    reference: Optional[core.Reference]
    campaign_id: Optional[int] = None  # the scope's campaign (its pairs and labels only); None: whole datasets


def _reference_picker(
    ds: analysis.AnalysisChoices, dataset_ids: tuple[int, ...], campaign_id: Optional[int] = None
) -> core.Reference:
    kind = st.radio(
        "Reference",
        list(REFERENCES),
        format_func=REFERENCES.get,
        key="analysis_reference",
        help="What the metric is compared against: gold labels, the binarised majority of the "
        "annotators (Don't know ignored, ties give none) or one annotator.",
    )
    annotator = None
    if kind == "annotator":
        people = ds.annotators[ds.annotators["dataset_id"].isin(dataset_ids) | ds.annotators["dataset_id"].isna()]
        if campaign_id is not None:  # the campaign's own people
            people = people[people["campaign_id"] == campaign_id]
        people = people[people["has_labels"]]
        if people.empty:
            st.warning("No one has labelled these datasets yet.")
            st.stop()
        annotator = st.selectbox("Annotator", people["annotator"].tolist(), key="analysis_reference_annotator")
    cut = 0.5
    scored = ds.datasets[ds.datasets["id"].isin(dataset_ids) & ds.datasets["label_kind"].eq("score")]
    if kind == "gold" and not scored.empty:
        cut = st.slider(
            "Gold paraphrase cut (share of the scale)",
            0.0,
            1.0,
            0.5,
            0.05,
            key="analysis_gold_cut",
            help="Scored gold labels (STS-B 0–5, BIOSSES 0–4, …) count as paraphrase at or above this point.",
        )
        cuts = scored["label_min"] + cut * (scored["label_max"] - scored["label_min"])
        st.caption(
            "Paraphrase when gold ≥ " + ", ".join(f"{c:g} ({user_text(n)})" for n, c in zip(scored["name"], cuts))
        )
    return core.Reference(kind, annotator, cut)


def dataset_names(ds: analysis.AnalysisChoices) -> dict[int, str]:
    """id -> name of every dataset, in the sidebars' order (by name)."""
    return dict(zip(ds.datasets["id"].astype(int), ds.datasets["name"]))


def sidebar(run: str = "required", reference: bool = True) -> Selection:
    """Draws the shared filters — the scope (ui.views.scope: a campaign or whole datasets, the same on every
    page), the run, the reference — and stops the page with a sentence when there is nothing to show.
    With a reference, datasets whose references are on different scales are shown one scale at a time
    (one_scale). ``run``: "required", "optional" or "none"."""
    url = store_key()
    ds = choices(url)
    if ds.datasets.empty:
        st.info("No dataset yet: import sentence pairs on the Import page first.")
        st.stop()
    with st.sidebar:
        scope = scopes.pick(url, dataset_names(ds))
        if not scope.dataset_ids:
            st.warning(
                "Choose at least one dataset."
                if scope.campaign_id is None
                else "This campaign has no dataset any more: choose another campaign, or whole datasets."
            )
            st.stop()
        dataset_ids = scope.dataset_ids
        chosen_run = None
        if run != "none" and not ds.runs.empty:
            options = ds.runs["name"].tolist() + ([None] if run == "optional" else [])
            name = st.selectbox("Score run", options, key="analysis_run", format_func=lambda n: n or "None")
            chosen_run = ds.runs[ds.runs["name"] == name].iloc[0] if name else None
        chosen_reference = _reference_picker(ds, dataset_ids, scope.campaign_id) if reference else None
        charts.download_choice()
        if st.button(
            "Reload data", help="Read the store again (new labels and scores show up within a minute anyway)."
        ):
            reload()
    if run == "required" and chosen_run is None:
        st.info("No scores yet: start a score run (PLUIE or a baseline) and come back when some pairs are scored.")
        st.stop()
    selection = Selection(url, ds, dataset_ids, chosen_run, chosen_reference, scope.campaign_id)
    return one_scale(selection, chosen_reference.kind) if reference else selection


SCALE_WIDGET = "analysis_reference_scale"


def scale_groups(selection: Selection, kind: str, present=None) -> list:
    """The selection's datasets grouped by the scale of the reference ``kind`` (pluie_core.analysis.
    reference_scale_groups: gold, majority, annotator; levels, raw, meta). ``present``: the ids of the
    datasets that have the reference at all (the others are left out), when known."""
    chosen = selection.choices.datasets[selection.choices.datasets["id"].isin(selection.dataset_ids)]
    if present is not None and chosen["id"].isin(present).any():
        chosen = chosen[chosen["id"].isin(present)]
    return core.reference_scale_groups(chosen, kind)


def first_scale(selection: Selection, kind: str) -> tuple[int, ...]:
    """The dataset ids one_scale first shows (what the read-ahead reads)."""
    groups = scale_groups(selection, kind)
    return groups[0][1] if len(groups) > 1 else selection.dataset_ids


def one_scale(selection: Selection, kind: str, present=None) -> Selection:
    """The selection narrowed to datasets whose reference shares one scale: when the chosen datasets'
    references are on several (PAWS-X's 0/1 and STS-B's 0–5), the page says so in one sentence and
    shows one scale at a time (a choice above the figures), never one figure over them all. The
    selection as it is when they share one."""
    groups = scale_groups(selection, kind, present)
    if len(groups) < 2:
        return selection
    st.info(user_text(core.scales_sentence(groups, dataset_names(selection.choices))))
    options = [scale.describe() for scale, _ in groups]
    shown = scale_radio(options, help="Figures are computed over pairs whose reference shares one scale.")
    return replace(selection, dataset_ids=groups[options.index(shown)][1])


def scale_radio(options: list[str], help: str, **radio) -> str:
    """The "Reference scale" radio of the analysis pages (one widget key for them all), back at its first option
    when the one kept is not among ``options`` (another reference's scales); ``radio``: more of st.radio's
    arguments."""
    if st.session_state.get(SCALE_WIDGET) not in options:
        st.session_state.pop(SCALE_WIDGET, None)
    return st.radio("Reference scale", options, horizontal=True, key=SCALE_WIDGET, help=help, **radio)


def reference_or_stop(selection: Selection, pair_frame: pd.DataFrame) -> pd.Series:
    """The selection's reference labels, or a sentence saying why there are none (and the page stops)."""
    try:
        return reference_for(selection.url, selection.dataset_ids, selection.reference, selection.campaign_id).reindex(
            pair_frame.index
        )
    except StatsError as error:
        st.info(user_text(error))
        st.stop()


def scored_frame(selection: Selection, run_names: Optional[list[str]] = None, texts: bool = False) -> pd.DataFrame:
    """Pairs of the chosen datasets with the reference (0/1) and the scores of the chosen run (or
    ``run_names``), one column per run."""
    frame = pairs(selection.url, selection.dataset_ids, texts, selection.campaign_id).copy()
    runs = selection.choices.runs
    names = run_names if run_names is not None else ([selection.run["name"]] if selection.run is not None else [])
    if names:
        run_ids = tuple(int(i) for i in runs.set_index("name").loc[names, "id"])
        frame = frame.join(scores(selection.url, run_ids, selection.dataset_ids))
        for name in names:
            if name not in frame.columns:
                frame[name] = float("nan")
    if selection.reference is not None:
        frame["reference"] = reference_or_stop(selection, frame)
    return frame
