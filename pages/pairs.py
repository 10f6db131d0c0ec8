"""Pairs: any pair of a dataset, before or after labelling. Search by text or id (the pair id or the
file's own id), filter by gold label, label state and a run's score, one page at a time (db.pairs);
from a pair: mark it as a gold check of a campaign on its dataset (db.quality; the known answer starts
from the pair's own gold label), or open it in Review."""

import functools

import pandas as pd
import streamlit as st

from db import campaigns as camp
from db import quality as qual
from db.datasets import list_datasets
from db.pairs import GOLD_FILTERS, LABEL_STATES, PairSearch, PairSearchError, browse_pairs
from pluie_core.labels import LEVELS
from pluie_core.visible import visible_text
from ui.base.page import may, user_text
from ui.forms.explain_view import why_this_score
from ui.frame import admin_page

engine = admin_page("table")
PAGE, SEARCH, FLASH, OPEN_IN_REVIEW = "pairs-page", "pairs-search", "pairs-flash", "review-open-pair"
PAGE_SIZE = 50
SIDES = {"side-1": "Paraphrase (side only)", "side-0": "Not a paraphrase (side only)"}
ANSWERS = [0, 1, 2, 3, *SIDES]  # a known answer: a level, or only the side

st.title("Pairs")
datasets = list_datasets(engine)
if not datasets:
    st.info("No pair yet: import a dataset first.")
    st.stop()
names = {d.id: d.name for d in datasets}
dataset_id = st.selectbox("Dataset", list(names), format_func=names.get, key="pairs-dataset")
c1, c2 = st.columns([3, 2])
# no max_chars: Streamlit would cut a pasted text short without a word; db.pairs says what the limit is
text = c1.text_input("Text contains", key="pairs-text", placeholder="a word or phrase of either sentence")
ref = c2.text_input("Id", key="pairs-id", placeholder="the pair id, or the file's own id")
f1, f2, f3, f4 = st.columns(4)
state = f1.selectbox(
    "Labels",
    list(LABEL_STATES),
    format_func=LABEL_STATES.get,
    key="pairs-state",
    help="Labels outside training trials. Labels disagree: two different levels (Don't know "
    "aside), as in Review's queue. Adjudicated: a reviewer's final level is in force.",
)
gold = f2.selectbox("Gold label", list(GOLD_FILTERS), format_func=GOLD_FILTERS.get, key="pairs-gold")
gold_min = f3.number_input("Gold label at least", value=None, placeholder="any", key="pairs-gold-min")
gold_max = f4.number_input("Gold label at most", value=None, placeholder="any", key="pairs-gold-max")
s1, s2, s3 = st.columns(3)
runs = camp.score_run_choices(engine, kind=None)
run = s1.selectbox(
    "Score of the run",
    runs,
    index=None,
    format_func=lambda r: r[1],
    key="pairs-run",
    placeholder="No score shown" if runs else "No run has scores yet",
)
score_min = s2.number_input(
    "Score at least", value=None, placeholder="any", key="pairs-score-min", disabled=run is None
)
score_max = s3.number_input("Score at most", value=None, placeholder="any", key="pairs-score-max", disabled=run is None)
search = PairSearch(
    text=text,
    pair_ref=ref,
    gold=gold,
    gold_min=gold_min,
    gold_max=gold_max,
    state=state,
    run_id=run[0] if run else None,
    score_min=score_min if run else None,
    score_max=score_max if run else None,
)
if st.session_state.get(SEARCH) != (dataset_id, search):  # a new search starts on its first page
    st.session_state[SEARCH], st.session_state[PAGE] = (dataset_id, search), 0
try:
    result = browse_pairs(engine, dataset_id, search, page=st.session_state.get(PAGE, 0), page_size=PAGE_SIZE)
except PairSearchError as exc:  # too long, or a NUL: what the box can hold, or a forged message
    st.error(user_text(exc))
    st.stop()
st.session_state[PAGE] = result.page

if st.session_state.get(FLASH):
    st.success(st.session_state.pop(FLASH))
if result.total == 0:
    st.info("No pair of this dataset matches: loosen the search or the filters.")
    st.stop()
first = result.page * PAGE_SIZE
st.caption(
    f"{result.total:,} {'pair matches' if result.total == 1 else 'pairs match'} · "
    f"{first + 1:,}–{first + len(result.rows):,} · page {result.page + 1:,} "
    f"of {result.n_pages:,}. pair_id is the id Review, Disagreements, the export and gold checks use; "
    "external_id is the file's own. Click a row to open that pair below."
)
rows = result.rows.astype({"external_id": object}).fillna({"external_id": "—", "final_level": "—"})
rows[["external_id", "source", "hypothesis"]] = rows[["external_id", "source", "hypothesis"]].map(
    visible_text
)  # marks, not bidi
PICK = f"pairs-pick-{result.page}"  # the pair shown under "A pair" (its picker), one per page of the table


def open_row(table_key: str, pair_ids: list) -> None:
    """A row clicked in the table: that pair is the one shown under "A pair"."""
    chosen_rows = st.session_state[table_key].selection.rows
    if chosen_rows:
        st.session_state[PICK] = pair_ids[chosen_rows[0]]


table_key = f"pairs-table-{dataset_id}-{result.page}-{hash(search)}"  # a new search or page: nothing selected
st.dataframe(
    rows if run else rows.drop(columns="score"),
    hide_index=True,
    width="stretch",
    column_config={
        "pair_id": st.column_config.NumberColumn("pair_id", format="%d"),
        "score": st.column_config.NumberColumn(run[1] if run else "score", format="%.3f"),
    },
    key=table_key,
    on_select=functools.partial(open_row, table_key, [int(i) for i in result.rows["pair_id"]]),
    selection_mode="single-row",
)


def turn(step: int) -> None:
    st.session_state[PAGE] = st.session_state.get(PAGE, 0) + step


back, forward, _ = st.columns([1, 1, 4])
back.button("← Previous page", disabled=result.page == 0, on_click=turn, args=(-1,), key="pairs-back")
forward.button("Next page →", disabled=result.page >= result.n_pages - 1, on_click=turn, args=(1,), key="pairs-next")

st.subheader("A pair")
by_id = result.rows.set_index("pair_id")
pair_id = st.selectbox(
    "Pair",
    list(by_id.index),
    key=PICK,
    help="Or click a row of the table.",
    format_func=lambda i: (
        visible_text(f"{i} · id {by_id.loc[i, 'external_id'] or '—'} · {by_id.loc[i, 'source'][:70]}")
    ),
)
chosen = by_id.loc[pair_id]
st.text(visible_text(f"Source:     {chosen['source']}\nHypothesis: {chosen['hypothesis']}"))  # as stored, marked
st.caption(
    f"Pair {pair_id} · {chosen['labels']} label(s) · {chosen['state']}"
    + (" · a gold check (see the table)" if chosen["gold check in"] else "")
)
if may("review") and st.button("Open in Review", key="pairs-open-review", icon=":material/gavel:"):
    st.session_state[OPEN_IN_REVIEW] = int(pair_id)
    st.switch_page("pages/review.py")
why_this_score(engine, pair_id, chosen["source"], chosen["hypothesis"], key="pairs")

if not may("organise"):  # marking gold checks is an organiser's (issue 56: no form the store would refuse)
    st.stop()
campaigns = dict(camp.campaigns_of_dataset(engine, dataset_id))  # a check belongs to a campaign of its dataset
if not campaigns:
    st.caption(
        f"No campaign labels “{user_text(names[dataset_id])}”: a pair becomes a gold check only of a "
        "campaign on its own dataset (create one under Campaigns)."
    )
    st.stop()
own = qual.known_answer(engine, int(pair_id))  # the pair's own gold label, as a known answer
with st.form("pairs-gold"):
    g1, g2 = st.columns(2)
    campaign_id = g1.selectbox(
        "Mark as a gold check of",
        list(campaigns),
        format_func=campaigns.get,
        help="The campaigns that label this pair's dataset.",
    )
    start = None if own is None else (own.level if own.level is not None else f"side-{own.binary_label}")
    answer = g2.selectbox(
        "Known answer",
        ANSWERS,
        format_func=lambda a: SIDES.get(a) or LEVELS[a],
        index=0 if start is None else ANSWERS.index(start),
        key=f"pairs-known-{pair_id}",
    )
    g2.caption(
        own.text + " (change it if you know better)."
        if own is not None
        else "This pair has no gold label of its own: choose its known answer."
    )
    if st.form_submit_button("Mark as gold"):
        known = {"binary_label": [int(answer[-1])]} if answer in SIDES else {"level": [answer]}
        try:
            qual.add_gold_pairs(engine, campaign_id, pd.DataFrame({"pair_id": [int(pair_id)], **known}))
        except (camp.CampaignError, PermissionError) as exc:  # PermissionError: db.access.NotAllowed (a role)
            st.error(user_text(exc))
        else:
            st.session_state[FLASH] = (
                f"Pair {pair_id} is a gold check now (known answer: "
                f"{SIDES.get(answer) or LEVELS[answer]}); the table says of which campaign."
            )
            st.rerun()
