"""Review: the pairs an annotator flagged, then a campaign's gold pairs whose key disagrees with annotators who
agree, then those whose labels disagree (across the paraphrase boundary first, then by spread), one at a time
with the word diff, the annotators' flags and comments (as text), every label (annotator, English level, time
spent, comment) and every score; the reviewer sets the final level (keys 1-4) with an optional note, or
withdraws it (Delete), and moves with ← / →. Decisions are kept apart from the annotators' labels (db.review)
and become the export's final_level."""

import streamlit as st

from db import access, review
from db.datasets import list_datasets
from pluie_core.aggregation import METHOD_NAMES, METHODS
from ui.access import keep
from ui.base.page import user_text
from ui.forms.explain_view import why_this_score
from ui.forms.review_decision import ERROR, FLASH, PAIR, POSITION, REOPENED, decision_form
from ui.frame import admin_page
from ui.views import scope as scopes
from ui.views import store_reads
from ui.views.review_cache import review_queue
from ui.views.review_pair import review_pair

engine = admin_page("table")
SHOW = {"pending": "Not yet decided", "adjudicated": "Decided", "flagged": "Flagged by an annotator", "all": "All"}
OPEN, SINGLE = "review-open-pair", "review-single"  # a pair asked for by the Pairs page (or ?pair=N)

st.title("Review")
datasets = list_datasets(engine)
if not datasets:
    st.info("Nothing to review yet: import a dataset and collect labels first.")
    st.stop()
signed_in = access.current_actor()
if signed_in.signed_in:  # every decision is the account's (db.review.adjudicate): no name to type
    reviewer = signed_in.name
    st.sidebar.markdown(f"Deciding as **{user_text(reviewer)}**")
else:  # a store without accounts: the reviewer names themselves, as before
    keep.kept("reviewer", "", typed=True)  # the app remembers the reviewer for this person (ui.access.keep)
    reviewer = st.sidebar.text_input(
        "Reviewer",
        key="reviewer",
        max_chars=review.NAME_LENGTH,
        help="Your name: every decision records who took it. Remembered on this browser until it is closed.",
    )
# the scope of every page (ui.views.scope): a campaign (its labels and flags only) or whole datasets
store_key = store_reads.store_key()  # the store's state, read once a run
scope = scopes.pick(store_key, {d.id: d.name for d in datasets})
show = st.sidebar.radio("Pairs", list(SHOW), format_func=SHOW.get, key="review-show")
ORDERS = {
    None: "Review order (flagged, across the boundary, spread)",
    **{m: f"Least certain first: {METHOD_NAMES[m]}" for m in METHODS},
}
order = st.sidebar.selectbox(
    "Order",
    list(ORDERS),
    format_func=ORDERS.get,
    key="review-order",
    on_change=lambda: (st.session_state.pop(PAIR, None), st.session_state.update({POSITION: 0})),
    help="By the uncertainty of the pair's label (1 - the largest posterior) under an "
    "aggregation method: the pairs a method is least sure of come first.",
)


queue = review_queue(store_key, tuple(sorted(scope.dataset_ids)), show, order, scope.campaign_id)
if st.session_state.get(FLASH):
    st.success(st.session_state.pop(FLASH))
if st.session_state.get(ERROR):
    st.error(user_text(st.session_state.pop(ERROR)))  # may quote another reviewer's name
wanted = st.session_state.pop(OPEN, None) or st.query_params.get("pair")
if "pair" in st.query_params:
    del st.query_params["pair"]  # asked once: ← / → move on from it
if wanted is not None and str(wanted).strip().isdigit():
    st.session_state[SINGLE] = int(wanted)
if show == "pending" and st.session_state.get(REOPENED) is not None:  # just withdrawn: open on it
    reopened = st.session_state.pop(REOPENED)
    if reopened in queue.index and st.session_state.get(SINGLE) is None:
        st.session_state[PAIR] = reopened
if st.session_state.get(SINGLE) in queue.index:  # in the list: shown at its place in it
    st.session_state[PAIR] = st.session_state.pop(SINGLE)
single = st.session_state.get(SINGLE)
if queue.empty and single is None:
    st.info(
        {
            "adjudicated": "No pair has a final level set by a reviewer yet.",
            "flagged": "No annotator has flagged a pair of these datasets.",
        }.get(
            show,
            "No pair to review here: no pair of these datasets has five-level labels that disagree, "
            "and no annotator has flagged one.",
        )
    )
    st.stop()

if single is not None:  # a pair the list leaves out, on its own until "Back to the list"
    ids, position, pair_id, row = [single], 0, single, None
    st.info(
        f"Pair {single} is not among the pairs listed here ({SHOW[show].lower()}, the chosen datasets): "
        "it is shown on its own."
    )
    st.button("Back to the list", key="review-back-to-list", on_click=lambda: st.session_state.pop(SINGLE, None))
else:
    # the pair on screen stays on screen while it is in the queue; once decided (and so gone from the
    # "not yet decided" queue) its place shows the next one
    ids = [int(i) for i in queue.index]
    position = (
        ids.index(st.session_state[PAIR]) if st.session_state.get(PAIR) in ids else st.session_state.get(POSITION, 0)
    )
    position = min(max(position, 0), len(ids) - 1)
    pair_id = ids[position]
    st.session_state[PAIR], st.session_state[POSITION] = pair_id, position
    row = queue.loc[pair_id]
item = review.review_item(engine, pair_id)
if item is None:
    st.session_state.pop(SINGLE, None)
    st.error(f"There is no pair {pair_id} (any more): its dataset was deleted.")
    st.stop()

if row is not None:
    st.progress((position + 1) / len(ids), text=f"Pair {position + 1} of {len(ids):,} · {SHOW[show].lower()}")
review_pair(engine, item, pair_id, row, order, scope.campaign_id)
decision_form(engine, item, pair_id, position, ids, reviewer, advance=show != "pending" and row is not None)
keep.save()  # remembers the reviewer and the note for this person (a hidden element)
# last: while it waits for the worker, everything above is on screen already
why_this_score(engine, pair_id, item["pair"]["source"], item["pair"]["hypothesis"], key="review")
