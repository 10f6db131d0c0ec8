"""The Scorecard page's (pages/scorecard.py) cached datasets' table and pairs, and its first view, read ahead."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db import evaluation
from pluie_core.evaluation.paraphrasus import in_paper_order
from ui.base.page import get_engine
from ui.views.read_ahead import Start, Step
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS, choices, shared_frame


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def benchmark_table(url: str) -> pd.DataFrame:
    """The datasets the Scorecard page lists, with their benchmark and challenge (db.evaluation.benchmark_datasets),
    cached per store state."""
    return evaluation.benchmark_datasets(get_engine())


@shared_frame
def scorecard_pairs(url: str, dataset_ids: tuple, run_ids: tuple) -> pd.DataFrame:
    """The Scorecard page's pairs and scores of a benchmark's datasets (db.evaluation.scorecard_frame),
    kept as they are (read-only; pluie_core's scorecard works on its own copy): st.cache_data pickled
    the million-row frame when it stored it and unpickled it on every run of the page. Its default
    (the first benchmark in the paper's order, every run) is read ahead."""
    return evaluation.scorecard_frame(get_engine(), dataset_ids, run_ids)


def _first_scorecard(url: str) -> None:
    """The first benchmark (by name), every run."""
    table = evaluation.benchmark_datasets(get_engine())
    benchmarks = sorted(table["benchmark"].dropna().unique())
    runs = choices(url).runs
    if not benchmarks or runs.empty:
        return
    members = in_paper_order(table[table["benchmark"] == benchmarks[0]])
    scorecard_pairs(url, tuple(int(i) for i in members["id"]), tuple(int(i) for i in runs["id"]))


def first_view(start: Start) -> list[Step]:
    return [Step(90, lambda: _first_scorecard(start.url))]
