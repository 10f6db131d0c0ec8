"""The Preferences page's (pages/preferences.py) cached reads and table, and its first view, read ahead."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from db import evaluation_reads
from pluie_core import analysis_figures as figures
from ui.base.page import get_engine
from ui.views.read_ahead import Start, Step
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS, choices, scores


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def preference_datasets(url: str) -> pd.DataFrame:
    return evaluation_reads.preference_datasets(get_engine())


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner=False)
def preferences(url: str, dataset_ids: tuple) -> pd.DataFrame:
    return evaluation_reads.preferences_frame(get_engine(), dataset_ids)


@st.cache_data(
    ttl=CACHE_SECONDS,
    max_entries=CACHE_ENTRIES,
    show_spinner="Calibrating each run's ties and comparing its choices with the people's…",
)
def preference_agreement(url: str, dataset_ids: tuple, run_ids: tuple, chosen: tuple, direction: dict) -> pd.DataFrame:
    """The Preferences page's table: every chosen run's agreement with the human choices
    (pluie_core.analysis_figures.preference_agreement; a second or more at 500,000 items, so cached: the
    key is the store's state, so a new score or choice shows at once). Its default (every preference
    dataset, every run) is read ahead. Streamlit keys it on the arguments as passed: callers pass all five."""
    return figures.preference_agreement(
        preferences(url, dataset_ids), scores(url, run_ids, dataset_ids), direction, chosen
    )


def _first_table(url: str) -> None:
    """Every preference dataset, every run (LLM-choice runs too)."""
    available = preference_datasets(url)
    runs = choices(url, preference_runs=True).runs
    if available.empty or runs.empty:
        return
    dataset_ids = tuple(int(i) for i in available["id"])
    names = runs["name"].tolist()
    preferences(url, dataset_ids)
    preference_agreement(
        url,
        dataset_ids,
        tuple(int(i) for i in runs.set_index("name").loc[names, "id"]),
        tuple(names),
        runs.set_index("name")["higher_is_similar"].astype(bool).to_dict(),
    )


def first_view(start: Start) -> list[Step]:
    return [Step(80, lambda: _first_table(start.url))]
