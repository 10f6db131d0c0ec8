"""The Datasets page's (pages/home.py) cached figures and its first view, read ahead."""

from __future__ import annotations

import streamlit as st

from db import datasets as dataset_reads
from ui.base.page import get_engine
from ui.views.read_ahead import Start, Step
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner="Counting pairs, labels and scores…")
def store_overview(url: str):
    """The Datasets page's figures (the store's totals, each dataset's progress): seconds at 300,000 labels,
    read again when the store's state (the key) changes; read ahead."""
    return dataset_reads.store_totals(get_engine()), dataset_reads.datasets_overview(get_engine())


def first_view(start: Start) -> list[Step]:
    """The first page opened: the store's totals and every dataset's progress."""
    return [Step(10, lambda: store_overview(start.url))]
