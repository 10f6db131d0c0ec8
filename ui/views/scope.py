"""The scope of every page that reads labels (Review, Agreement, Thresholds, Distributions,
Disagreements, Correlation, Live campaign, Export): one campaign — its pairs and only the labels given
in it — or whole datasets, every label whoever gave it. Two campaigns on the same pairs (a pilot and
its main round) are pooled only when whole datasets are asked for.

One selection per browser session (st.session_state, which a page change keeps: the widgets' own
values it drops): chosen on one page, it holds on the next, and a reload finds it again (kept by
ui.access.keep: for the signed-in person in the store, else per browser in the server's memory). Until a person chooses, it is the campaign
in progress — the one with the latest label (db.analysis.campaign_choices) — or, when no campaign has a
label yet, every dataset (a page about one campaign, Live campaign, then opens on the newest created)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pandas as pd
import streamlit as st

from db import analysis
from ui.access import keep
from ui.base.page import get_engine

SCOPE = "pluie_scope"  # {"campaign": id or None (whole datasets), "datasets": [ids] or None (every one)}
CAMPAIGN_WIDGET, DATASETS_WIDGET, LIVE_WIDGET = "scope_campaign", "analysis_datasets", "scope_live_campaign"
WHOLE_DATASETS = "Whole datasets (every label)"
WHOLE = 0  # the Campaign option of whole datasets (a campaign's id is never 0; None would read as no choice)
HELP = (
    "One scope for every page, kept while you move between pages: a campaign (its pairs, only the labels "
    "given in it) or whole datasets (every label, all campaigns and imported labels together). Pages open on "
    "the campaign with the latest label."
)


@dataclass(frozen=True)
class Scope:
    campaign_id: Optional[int]  # None: whole datasets
    campaign_name: Optional[str]
    dataset_ids: tuple[int, ...]


@st.cache_data(ttl=600, max_entries=8, show_spinner=False)
def campaigns(url: str) -> pd.DataFrame:
    """The campaigns, the one in progress first (db.analysis.campaign_choices), cached on the store's
    state (the key: a new label moves a campaign to the front)."""
    return analysis.campaign_choices(get_engine())


def default(found: pd.DataFrame) -> dict:
    """The scope a session starts with: the campaign in progress (the latest label given), or every
    dataset when no campaign has a label yet (imported labels are then all there is to read)."""
    labelled = found[found["last_label"].notna()]
    return {"campaign": int(labelled["id"].iloc[0]) if len(labelled) else None, "datasets": None}


def _state(found: pd.DataFrame) -> dict:
    """The session's scope, the default the first time (kept then: the person's pages stay on it),
    and again when its campaign is gone."""
    state = st.session_state.get(SCOPE)
    if state is None:  # a new session: this person's (or browser's) scope before, if any (ui.access.keep)
        remembered = keep.recalled(SCOPE)
        state = remembered if isinstance(remembered, dict) else None
        if state is not None:
            st.session_state[SCOPE] = state
    if state is None or (state.get("campaign") is not None and state["campaign"] not in set(found["id"])):
        state = default(found)
        st.session_state[SCOPE] = state
    keep.keep_browser()
    return state


def _choose(**changed) -> None:
    st.session_state[SCOPE] = {**st.session_state.get(SCOPE, {"campaign": None, "datasets": None}), **changed}
    # kept for this person (or browser) too: a reload (a new session) opens on the same scope (ui.access.keep)
    keep.keep_value(SCOPE, st.session_state[SCOPE])


def campaign_datasets(found: pd.DataFrame, campaign_id: int, datasets: dict[int, str]) -> tuple[int, ...]:
    """A campaign's datasets (and those of its gold pairs), in the order of ``datasets`` (id -> name)."""
    members = set(found.set_index("id").loc[campaign_id, "dataset_ids"])
    return tuple(i for i in datasets if i in members)


def resolve(found: pd.DataFrame, state: dict, datasets: dict[int, str]) -> Scope:
    """The Scope a state names (``datasets``: id -> name of every dataset, in the pages' order)."""
    if state.get("campaign") is not None:
        name = found.set_index("id").loc[state["campaign"], "name"]
        return Scope(int(state["campaign"]), name, campaign_datasets(found, state["campaign"], datasets))
    wanted = state.get("datasets")
    return Scope(None, None, tuple(i for i in datasets if wanted is None or i in wanted))


def pick(url: str, datasets: dict[int, str], where=None) -> Scope:
    """Draws the scope (in ``where``, the sidebar by default): the campaign (when there is one), and with
    none the datasets; returns it. ``datasets``: id -> name of every dataset, in the pages' order. The
    widgets show the session's scope, and a change is the session's new scope."""
    where = st.sidebar if where is None else where
    found = campaigns(url)
    state = _state(found)
    if len(found):
        names = dict(zip(found["id"].astype(int), found["name"]))
        closed = set(found.loc[~found["active"], "id"].astype(int))
        # set before the widget: the session's, on every page
        st.session_state[CAMPAIGN_WIDGET] = WHOLE if state["campaign"] is None else state["campaign"]
        where.selectbox(
            "Campaign",
            [*names, WHOLE],
            key=CAMPAIGN_WIDGET,
            help=HELP,
            format_func=lambda i: WHOLE_DATASETS if i == WHOLE else names[i] + (" (closed)" if i in closed else ""),
            on_change=lambda: _choose(campaign=st.session_state[CAMPAIGN_WIDGET] or None),
        )
    scope = resolve(found, state, datasets)
    if scope.campaign_id is not None:
        where.caption(
            "Its pairs and the labels given in it only · "
            + (", ".join(datasets[i] for i in scope.dataset_ids) or "no dataset")
        )
        return scope
    st.session_state[DATASETS_WIDGET] = [datasets[i] for i in scope.dataset_ids]
    by_name = {name: i for i, name in datasets.items()}
    where.multiselect(
        "Datasets",
        list(datasets.values()),
        key=DATASETS_WIDGET,
        help=HELP if not len(found) else "Every label of these datasets, whoever gave it.",
        on_change=lambda: _choose(datasets=[by_name[n] for n in st.session_state[DATASETS_WIDGET]]),
    )
    return scope


def pick_campaign(url: str, where=None, label_of=None) -> Optional[int]:
    """The campaign of a page about one campaign (Live campaign): the session's, or the campaign in
    progress (the newest created when none has a label) when the scope is whole datasets; choosing one
    here makes it the session's scope. None when there is no campaign. ``label_of``: campaign id -> the
    option's text (its name by default)."""
    where = st if where is None else where
    found = campaigns(url)
    if found.empty:
        return None
    state = _state(found)
    names = dict(zip(found["id"].astype(int), found["name"]))
    st.session_state[LIVE_WIDGET] = state["campaign"] if state["campaign"] is not None else int(found["id"].iloc[0])
    return where.selectbox(
        "Campaign",
        list(names),
        key=LIVE_WIDGET,
        help=HELP,
        format_func=label_of or names.get,
        on_change=lambda: _choose(campaign=st.session_state[LIVE_WIDGET]),
    )
