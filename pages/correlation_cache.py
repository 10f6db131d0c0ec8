"""The Correlation page's (pages/correlation.py) cached reads and figures, and its first view, read ahead.
The bootstraps (a second or more at 100,000 pairs) are cached on their inputs, so that a widget further
down does not compute them again; the page shows the coefficients alone (n_boot 0) first, with a spinner
meanwhile."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from db import evaluation_reads
from pages.read_ahead import Start, Step
from pages.selection import Selection, scored_frame
from pages.shared import get_engine
from pages.store_reads import CACHE_ENTRIES, CACHE_SECONDS, pairs, scores
from pluie_core import analysis_figures as figures
from pluie_core.evaluation.correlation import METHODS, compare_correlations, graded_reference

CORRELATION_BOOT = 1000  # the Correlation page's default number of resamples
GRADED_REFERENCES = {"gold": "Gold scores", "levels": "Mean level of the labels",
                     "raw": "Mean of imported annotator values", "meta": "A metadata column"}


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


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES,
               show_spinner="Comparing the two runs (paired bootstrap)…")
def correlation_difference(a: pd.Series, b: pd.Series, reference: pd.Series, method: str, n_boot: int,
                           max_resample: int = 1000) -> dict:
    return compare_correlations(a, b, reference, method, n_boot=n_boot, max_resample=max_resample)


def graded(url: str, dataset_ids: tuple, kind: str, campaign_id, column) -> pd.Series:
    """The Correlation page's graded reference, checked and named (graded_reference: StatsError when it
    cannot be one)."""
    return graded_reference(graded_values(url, dataset_ids, kind, campaign_id, column),
                            column or GRADED_REFERENCES[kind].lower())


def _first_figures(start: Start) -> None:
    """Gold scores against every run with scores (the datasets of the first gold scale), the coefficients
    and their bootstrap intervals, and the first two runs' paired test on the first coefficient."""
    url, ds, campaign_id = start.url, start.choices, start.campaign_id
    if ds.runs.empty:
        return
    # as the page builds them: the pairs with every run's scores, then the reference
    dataset_ids = start.gold_ids
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
    """Every run's scores on the first gold scale early (a read); the coefficients and bootstraps later."""
    run_ids = tuple(int(i) for i in start.choices.runs["id"])
    found = [Step(60, lambda: scores(start.url, run_ids, start.gold_ids))] if start.first_run is not None else []
    return found + [Step(100, lambda: _first_figures(start))]
