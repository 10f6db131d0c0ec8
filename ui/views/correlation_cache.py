"""The Correlation page's (pages/correlation.py) cached reads and figures, the reference choices it opens
on (a graded reference first: reference_choices), and its first view, read ahead.
The bootstraps (a second or more at 100,000 pairs) are cached on their inputs, so that a widget further
down does not compute them again; the page shows the coefficients alone (n_boot 0) first, with a spinner
meanwhile."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import streamlit as st

from db import evaluation_reads
from pluie_core import analysis_figures as figures
from pluie_core.analysis import DATASET_REFERENCES, ReferenceScale
from pluie_core.evaluation.correlation import METHODS, compare_correlations, graded_reference
from ui.base.page import get_engine
from ui.views.read_ahead import Start, Step
from ui.views.selection import Selection, dataset_names, scale_groups, scored_frame
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS, hover_labels, pairs, scores

CORRELATION_BOOT = 1000  # the Correlation page's default number of resamples
SOURCE = "(source sentence)"  # the systems named by the source sentence (the Revisiting paper's eq. 1)
GRADED_REFERENCES = {
    "gold": "Gold scores",
    "levels": "Mean level of the labels",
    "raw": "Mean of imported annotator values",
    "meta": "A metadata column",
}


# the scales of a graded reference: a score range (STS-B's 0–5), a dataset's own, the five-level labels
GRADED_SCALES = ("range", "own", "levels")


@dataclass(frozen=True)
class ReferenceChoice:
    """One choice of the Correlation page's *Reference scale*: its text, the datasets it reads, and
    whether it is graded (binary 0/1 gold labels are not)."""

    label: str
    dataset_ids: tuple[int, ...]
    scale: ReferenceScale
    graded: bool


def reference_choices(selection: Selection, kind: str, present=None) -> list[ReferenceChoice]:
    """The selection's datasets as the Correlation page offers them for the reference ``kind``, graded
    first: a page about graded judgments opens on a graded reference where the scope has one. Gold scores
    and imported annotators' values (on their dataset's scale) are offered one dataset at a time (STS-B's
    0–5, then SICK's 1–5, ...), and the datasets that share a score range pooled after them; then the
    binary 0/1 labels (a choice, never the first while a graded reference exists); then datasets with no
    reference. Each choice is on one scale (ui.views.selection.scale_groups): no choice pools two scales.
    ``present``: as scale_groups'."""
    names = dataset_names(selection.choices)
    graded, other = [], []
    for scale, ids in scale_groups(selection, kind, present):
        if scale.kind == "range" and kind in DATASET_REFERENCES:
            graded += [ReferenceChoice(f"{names.get(i, i)}: {scale.describe()}", (i,), scale, True) for i in ids]
            if len(ids) > 1:
                graded.append(
                    ReferenceChoice(
                        f"{scale.describe()}, pooled: {', '.join(str(names.get(i, i)) for i in ids)}", ids, scale, True
                    )
                )
        elif scale.kind in GRADED_SCALES:
            graded.append(ReferenceChoice(scale.describe(), ids, scale, True))
        else:
            other.append(ReferenceChoice(scale.describe(), ids, scale, False))
    return graded + other


def first_reference(selection: Selection, kind: str, present=None) -> tuple[int, ...]:
    """The datasets the Correlation page opens on for ``kind`` (what the read-ahead reads): the first
    choice of reference_choices, or the selection's datasets when there is only one."""
    found = reference_choices(selection, kind, present)
    return found[0].dataset_ids if len(found) > 1 else selection.dataset_ids


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def meta_keys(url: str, dataset_ids: tuple) -> list:
    return evaluation_reads.meta_keys(get_engine(), dataset_ids)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def groups(url: str, dataset_ids: tuple, column: str) -> pd.Series:
    if column == SOURCE:
        return pairs(url, dataset_ids, texts=True)["source"]
    return evaluation_reads.meta_column(get_engine(), column, dataset_ids)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def graded_values(url: str, dataset_ids: tuple, kind: str, campaign_id, column) -> pd.Series:
    """The Correlation page's graded reference, as read: gold scores, a metadata column, or the mean of the
    labels (``levels``, of a campaign or all) or of imported annotators' values (``raw``); with a campaign,
    its pairs' and its labels' only."""
    if kind == "gold":
        return pairs(url, dataset_ids, False, campaign_id)["gold_label"].rename("reference")
    if kind == "meta":
        return evaluation_reads.meta_column(get_engine(), column, dataset_ids)
    return evaluation_reads.label_means(get_engine(), dataset_ids, kind, campaign_id)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def correlations(scores: pd.DataFrame, reference: pd.Series, systems, n_boot: int, coefficients=None) -> pd.DataFrame:
    """pluie_core.analysis_figures.correlation_table, cached on its inputs. ``coefficients``: the n_boot 0
    table of the same data, whose r the bootstrap's table reuses."""
    return figures.correlation_table(scores, reference, systems, n_boot, coefficients)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner="Comparing the two runs (paired bootstrap)…")
def correlation_difference(
    a: pd.Series, b: pd.Series, reference: pd.Series, method: str, n_boot: int, max_resample: int = 1000
) -> dict:
    return compare_correlations(a, b, reference, method, n_boot=n_boot, max_resample=max_resample)


def graded(url: str, dataset_ids: tuple, kind: str, campaign_id, column) -> pd.Series:
    """The Correlation page's graded reference, checked and named (graded_reference: StatsError when it
    cannot be one)."""
    return graded_reference(
        graded_values(url, dataset_ids, kind, campaign_id, column), column or GRADED_REFERENCES[kind].lower()
    )


def _opening_ids(start: Start) -> tuple[int, ...]:
    """The datasets the page opens on: gold scores of the first graded dataset where the scope has one
    (first_reference), else the binary scale."""
    return first_reference(
        Selection(start.url, start.choices, start.dataset_ids, None, None, start.campaign_id), "gold"
    )


def _first_figures(start: Start) -> None:
    """Gold scores against every run with scores (the datasets the page opens on: the first graded one,
    else the binary scale), the coefficients and their bootstrap intervals, and the first two runs' paired
    test on the first coefficient."""
    url, ds, campaign_id = start.url, start.choices, start.campaign_id
    if ds.runs.empty:
        return
    # as the page builds them: the pairs with every run's scores, then the reference
    dataset_ids = _opening_ids(start)
    data = scored_frame(Selection(url, ds, dataset_ids, None, None, campaign_id), ds.runs["name"].tolist())
    data["reference"] = graded(url, dataset_ids, "gold", campaign_id, None).reindex(data.index)
    names = [name for name in ds.runs["name"] if data[name].notna().sum() > 0]
    if not names or data["reference"].notna().sum() == 0:
        return
    first = correlations(data[names], data["reference"], None, 0)
    correlations(data[names], data["reference"], None, CORRELATION_BOOT, first)
    if len(names) >= 2:
        a, b = figures.oriented(data, names[:2], ds.runs).values()
        correlation_difference(a, b, data["reference"], next(iter(METHODS)), CORRELATION_BOOT)


def first_view(start: Start) -> list[Step]:
    """Every run's scores on the datasets the page opens on early (a read), their texts and the scatter's
    hover labels (those of Distributions' when the page opens on the first gold scale: read once); the
    coefficients and bootstraps later."""
    if start.first_run is None:
        return []
    url, campaign_id, run_ids = start.url, start.campaign_id, tuple(int(i) for i in start.choices.runs["id"])
    return [
        Step(60, lambda: scores(url, run_ids, _opening_ids(start))),
        Step(75, lambda: pairs(url, _opening_ids(start), True, campaign_id)),
        Step(75, lambda: hover_labels(url, _opening_ids(start), campaign_id)),
        Step(100, lambda: _first_figures(start)),
    ]
