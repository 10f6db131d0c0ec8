"""The Review page's (pages/review.py) cached queue and its first view, read ahead."""

from __future__ import annotations

from typing import Optional

import pandas as pd
import streamlit as st

from db import review
from ui.base.page import get_engine
from ui.views.read_ahead import Start, Step
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner="Finding the pairs to review…")
def review_queue(
    url: str,
    dataset_ids: tuple[int, ...],
    show: str = "pending",
    order: Optional[str] = None,
    campaign_id: Optional[int] = None,
) -> pd.DataFrame:
    """The Review page's queue (db.review.review_queue; dataset ids sorted; with ``campaign_id`` the labels
    given in that campaign only): 3 s at 1,000,000 pairs and 3,000,000 labels, and asked again at every
    ← / →. Read again when the store's state changes (a decision, a new label, an answer changed in
    place); read ahead for the default scope. Streamlit keys it on the arguments as passed (a default left
    out is another key): callers pass all five."""
    return review.review_queue(get_engine(), list(dataset_ids), show, aggregation=order, campaign_id=campaign_id)


def first_view(start: Start) -> list[Step]:
    """The scope's pending pairs, in review order, as the page asks for them."""
    return [
        Step(40, lambda: review_queue(start.url, tuple(sorted(start.dataset_ids)), "pending", None, start.campaign_id))
    ]
