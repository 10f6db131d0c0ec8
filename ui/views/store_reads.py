"""The analysis pages' reads of the store, cached per store state: the sidebars' choices, the labels
and their views on one scale, the pairs, the scores, the reference labels and the edit distances.
Every read takes store_key() first: new labels, scores, decisions and runs show up at once."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from db import analysis
from pluie_core import analysis as core
from ui import charts
from ui.base.page import get_engine

# Cached reads are keyed on the store's state (store_key): new labels, scores, decisions and runs
# show up at once. The time limit covers what the key does not see (an answer changed in place, a
# dataset renamed); "Reload data" reads everything again at once.
CACHE_SECONDS = 600
CACHE_ENTRIES = 8  # per read: a campaign that runs makes a new key with every label
# The large frames (labels, their matrices, pairs, scores) are kept as they are (st.cache_resource), one
# object shared by every run and session: st.cache_data pickles a frame when it stores it and unpickles it
# on every hit (3 s and a second per run of Agreement at 300,000 labels). Read-only, then: a page that
# changes one works on a copy (scored_frame copies the pairs), as every function of pluie_core does.
shared_frame = st.cache_resource(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)


def store_url() -> str:
    return get_engine().url.render_as_string(hide_password=False)


def store_key() -> str:
    """What every cached read takes first: the store's URL (the cache is per process, and tests and
    users may point the app at different stores) and its state (db.analysis.store_version), so that
    a cached figure is never one the store has outgrown. Read once per run of a page."""
    return f"{store_url()}#{analysis.store_version(get_engine())}"


# Every cached read takes store_key() first.
@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def choices(url: str, preference_runs: bool = False) -> analysis.AnalysisChoices:
    """The sidebars' choices. The pair-level views leave out LLM-choice runs: their 1 / 0 says which
    candidate of a preference item won, not whether a pair is a paraphrase, so they have no threshold
    to read; the Preferences page (``preference_runs=True``) lists them with every other run."""
    found = analysis.analysis_choices(get_engine())
    if not preference_runs:
        found.runs = found.runs[~found.runs["kind"].isin(core.PREFERENCE_ONLY_KINDS)].reset_index(drop=True)
    return found


def labels(url: str, dataset_ids: tuple[int, ...], campaign_id: Optional[int] = None) -> pd.DataFrame:
    """The labels of the datasets (db.analysis.labels_long), with ``campaign_id`` those given in that
    campaign only; read-only. One cache entry however it is called (campaign_id left out or None)."""
    return _labels(url, tuple(dataset_ids), None if campaign_id is None else int(campaign_id))


@shared_frame
def _labels(url: str, dataset_ids: tuple[int, ...], campaign_id: Optional[int]) -> pd.DataFrame:
    return analysis.labels_long(get_engine(), dataset_ids, annotators=choices(url).annotators, campaign_id=campaign_id)


labels.clear = _labels.clear  # as the cached reads: labels.clear() empties its cache


@shared_frame
def hover_labels(url: str, dataset_ids: tuple[int, ...], campaign_id: Optional[int] = None) -> pd.Series:
    """pair_id -> every label of the pair as the scatters' hover names them (charts.labels_text), read-only."""
    return charts.labels_text(labels(url, dataset_ids, campaign_id))


@shared_frame
def label_views(
    url: str, dataset_ids: tuple[int, ...], scale: str, campaign_id: Optional[int] = None
) -> tuple[pd.DataFrame, pd.DataFrame, Optional[pd.DataFrame]]:
    """The labels on one scale (of a campaign, with ``campaign_id``), their values as the agreement
    statistics take them and (five-level scale) binarised, as rows (``pluie_core.analysis.agreement_values``:
    pair_id, annotator, value). Rows, not an items x annotators matrix: a campaign of thousands of
    annotators would make that matrix billions of cells. Half a second at 300,000 labels, on every run of
    the Agreement page before it was shared."""
    rows = core.labels_on_scale(labels(url, dataset_ids, campaign_id), scale)
    return (
        rows,
        core.agreement_values(rows, scale),
        core.agreement_values(rows, scale, binarised=True) if scale == "levels" else None,
    )


def pairs(
    url: str, dataset_ids: tuple[int, ...], texts: bool = False, campaign_id: Optional[int] = None
) -> pd.DataFrame:
    """The pairs of the datasets (db.analysis.pairs_frame; with ``campaign_id`` that campaign's pairs
    only), read-only. One cache entry however it is called: Streamlit keys a cached function on its
    arguments as passed, so pairs(url, ids) and pairs(url, ids, texts=False) would each read a million pairs."""
    return _pairs(url, tuple(dataset_ids), bool(texts), None if campaign_id is None else int(campaign_id))


@shared_frame
def _pairs(url: str, dataset_ids: tuple[int, ...], texts: bool, campaign_id: Optional[int]) -> pd.DataFrame:
    return analysis.pairs_frame(get_engine(), dataset_ids, texts=texts, campaign_id=campaign_id)


@shared_frame
def scores(url: str, run_ids: tuple[int, ...], dataset_ids: tuple[int, ...]) -> pd.DataFrame:
    return analysis.scores_wide(get_engine(), run_ids, dataset_ids)


@shared_frame
def reference_labels(
    url: str,
    dataset_ids: tuple[int, ...],
    kind: str,
    annotator: Optional[str],
    gold_cut: float,
    campaign_id: Optional[int] = None,
) -> pd.Series:
    """The reference labels (0 / 1, NaN where none) of every pair of the datasets (of a campaign, with
    ``campaign_id``: its pairs, its labels), indexed by pair_id: the gold labels cut, the human majority
    or one annotator. A third of a run of the Thresholds page at 1,000,000 pairs, where it was computed
    twice a run before. Callers pass all six. Gold labels read no label."""
    people = None if kind == "gold" else labels(url, dataset_ids, campaign_id)
    return core.reference_labels(
        pairs(url, dataset_ids, False, campaign_id), people, core.Reference(kind, annotator, gold_cut)
    )


def reference_for(
    url: str, dataset_ids: tuple[int, ...], chosen: core.Reference, campaign_id: Optional[int] = None
) -> pd.Series:
    """reference_labels of a core.Reference (read-only, shared)."""
    return reference_labels(url, dataset_ids, chosen.kind, chosen.annotator, float(chosen.gold_cut), campaign_id)


@shared_frame
def edit_distances(url: str, dataset_ids: tuple[int, ...]) -> pd.Series:
    return core.edit_distances(pairs(url, dataset_ids, texts=True))


def reload() -> None:
    """ "Reload data": every cached read of the store is read again when next asked."""
    st.cache_data.clear()
    for read in (_labels, label_views, hover_labels, _pairs, scores, reference_labels, edit_distances):
        read.clear()
