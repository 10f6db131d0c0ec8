"""Review: the pairs an annotator flagged, then a campaign's gold pairs whose key disagrees with annotators who
agree, then those whose labels disagree (across the paraphrase boundary first, then by spread), one at a time
with the word diff, the annotators' flags and comments (as text), every label (annotator, English level, time
spent, comment) and every score; the reviewer sets the final level (keys 1-4) with an optional note, or
withdraws it (Delete), and moves with ← / →. Decisions are kept apart from the annotators' labels (db.review)
and become the export's final_level."""

import streamlit as st

from db import access, review
from db.datasets import list_datasets
from db.engine import StoreUnavailable
from pluie_core.aggregation import METHOD_NAMES, METHODS
from pluie_core.diff import diff_html
from pluie_core.labels import LEVELS
from pluie_core.visible import visible_text
from ui.access import keep
from ui.base.page import user_text
from ui.forms.explain_view import why_this_score
from ui.frame import admin_page
from ui.views import scope as scopes
from ui.views import store_reads
from ui.views.review_cache import review_queue

engine = admin_page("table")
BOX = (
    "border:1px solid light-dark(#d0d7de,#3d3b38);border-radius:8px;padding:12px 16px;"
    "background:light-dark(#fafbfc,#1f1e1c);"  # light-dark(): the theme Streamlit chose
    "line-height:1.7;font-size:1.15rem;white-space:pre-wrap;overflow-wrap:anywhere"
)
CAPTION = "font-size:0.8rem;color:light-dark(#57606a,#9aa3ad);margin-bottom:2px"
SHOW = {"pending": "Not yet decided", "adjudicated": "Decided", "flagged": "Flagged by an annotator", "all": "All"}
PAIR, POSITION, FLASH, ERROR = "review-pair", "review-position", "review-flash", "review-error"
OPEN, SINGLE = "review-open-pair", "review-single"  # a pair asked for by the Pairs page (or ?pair=N)
REOPENED = "review-reopened"  # the pair whose final level was just withdrawn: "Not yet decided" opens on it

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


def decide(pair: int, level, seen: int, advance: bool) -> None:
    try:
        review.adjudicate(
            engine,
            pair,
            level,
            st.session_state.get("reviewer", ""),
            st.session_state.get(f"note-{pair}", ""),
            seen_revision=seen,
        )
    except (review.ReviewError, access.NotAllowed, StoreUnavailable) as exc:  # the pair, the note and the keys stay
        st.session_state[ERROR] = str(exc)
        return
    done = "withdrawn: the majority rule applies again" if level is None else f"“{LEVELS[level]}”"
    st.session_state[FLASH] = f"Pair {pair}: final level {done}."
    if advance:  # in a queue that keeps decided pairs, move on by hand
        move(1)
    if level is None:
        st.session_state[REOPENED] = pair
    keep.forget(f"note-{pair}")  # saved with the decision: no draft left to bring back


def move(step: int) -> None:
    st.session_state[POSITION] = st.session_state[POSITION] + step
    st.session_state.pop(PAIR, None)


if row is not None:
    st.progress((position + 1) / len(ids), text=f"Pair {position + 1} of {len(ids):,} · {SHOW[show].lower()}")
pair = item["pair"]
source, hypothesis = diff_html(pair["source"], pair["hypothesis"])
st.html(
    f"<div style='{BOX}' data-testid='review-pair'><div style='{CAPTION}'>Source</div><div>{source}</div>"
    f"<div style='{CAPTION};margin-top:10px'>Hypothesis</div><div>{hypothesis}</div></div>"
)
gold = pair["gold_label"]
majority = item["majority_level"]
st.caption(
    f"Pair {pair_id} · {user_text(pair['dataset'])} · id {user_text(pair['external_id'] or '—')} · gold label "
    f"{'—' if gold is None else f'{gold:g}'} · "
    + (
        ""
        if row is None
        else f"{'across the paraphrase boundary · ' if row['crosses_boundary'] else ''}"
        f"spread {int(row['spread'])} · "
        + (
            ""
            if order is None or "uncertainty" not in row or row["uncertainty"] != row["uncertainty"]
            else f"{METHOD_NAMES[order]}: posterior {row['posterior']:.2f}, uncertainty {row['uncertainty']:.2f} · "
        )
    )
    + f"majority rule: {LEVELS[majority] if majority is not None else 'no label (tie)' if len(item['labels']) else 'no label yet'}"
)
keys = review.campaign_keys(engine, scope.campaign_id)  # the scope's campaign's gold keys (None: datasets)
key = keys.loc[pair_id] if keys is not None and pair_id in keys.index else None
if key is not None:
    said = (
        LEVELS[int(key["level"])]
        if key["level"] == key["level"]
        else ("the paraphrase side" if key["binary_label"] else "the non-paraphrase side")
    )
    st.caption(
        f"Gold key of this campaign: {said}"
        + (" (the adjacent level accepted)" if key["accept_adjacent"] else "")
        + f" · {user_text(key['derivation'])}"
    )
    if row is not None and bool(row.get("key_disagrees", False)):
        st.warning(
            f"The gold key ({said}) disagrees with the annotators, who agree with each other: without a "
            "decision, the export publishes the key (final_source gold). Decide the final level here."
        )
decision = item["adjudication"]
if decision is None:
    st.markdown(
        "**Final level:** not decided — the export uses "
        + ("the gold key." if key is not None and key["level"] == key["level"] else "the majority rule.")
    )
else:
    st.markdown(
        f"**Final level: {LEVELS[int(decision['level'])]}** — decided by {user_text(decision['reviewer'])} on "
        f"{decision['created_at']:%Y-%m-%d %H:%M} UTC"
        + (f": “{user_text(decision['note'])}”" if decision["note"] else ".")
    )

voiced = item["labels"][(item["labels"]["comment"] != "") | item["labels"]["flagged"]]
if len(voiced):  # the annotators' own words, as text
    with st.container(border=True, key="review-voice"):
        st.markdown(f"**From the annotators** · flagged by {item['n_flags']} of {len(item['labels'])}")
        for who, comment, flagged in zip(voiced["annotator"], voiced["comment"], voiced["flagged"]):
            st.text(visible_text(f"{'⚑ flagged · ' if flagged else ''}{who}: {comment or '(no comment)'}"))

LABEL_COLUMNS = {
    "level": st.column_config.NumberColumn(
        "level", format="%d", help="0–3 from Very different to Same meaning; 4: Don't know"
    ),
    "level_name": st.column_config.TextColumn("answer"),
    "english_level": st.column_config.TextColumn("English", help="The level of English the annotator gave"),
    "seconds_spent": st.column_config.NumberColumn("seconds", format="%.1f"),
    "comment": st.column_config.TextColumn("comment", width="large"),
}
SCORE_COLUMNS = {
    "run": st.column_config.TextColumn("run", width="large"),
    "value": st.column_config.NumberColumn("score", format="%.4g"),
}
# one above the other, each the page's width: run names and comments are read whole, not cut in a narrow column
st.markdown("**Labels**")
st.dataframe(
    item["labels"].drop(columns="value"), hide_index=True, width="stretch", column_config=LABEL_COLUMNS, placeholder="—"
)
st.markdown("**Scores**")
if item["scores"].empty:
    st.caption("No score yet for this pair.")
else:
    st.dataframe(item["scores"], hide_index=True, width="stretch", column_config=SCORE_COLUMNS, placeholder="—")

LEAVE_NOTE = (
    "While the note box has the cursor, keys type into it: press Tab or click outside it, and 1–4 set the level again."
)
keep.kept(f"note-{pair_id}", "", typed=True)  # a half-typed note survives a page change and a reload
st.text_input(
    "Note (optional): why this level",
    key=f"note-{pair_id}",
    max_chars=review.MAX_NOTE,
    placeholder="Type, then press Tab (or click outside the box) before the keys 1–4",
)
if not (reviewer or "").strip():
    st.warning("Give your name as reviewer (sidebar) to decide.")
advance = show != "pending" and row is not None
for level, column in enumerate(st.columns(4)):
    column.button(
        LEVELS[level],
        key=f"final-{level}-{pair_id}",
        shortcut=str(level + 1),
        width="stretch",
        type="primary" if decision is not None and int(decision["level"]) == level else "secondary",
        on_click=decide,
        args=(pair_id, level, item["revision"], advance),
        help=f"Keyboard: {level + 1}",
    )
back, forward, withdraw = st.columns([1, 1, 2])
back.button("← Previous", key="review-back", shortcut="Left", disabled=position == 0, on_click=move, args=(-1,))
forward.button(
    "Next →", key="review-next", shortcut="Right", disabled=position == len(ids) - 1, on_click=move, args=(1,)
)
withdraw.button(
    "Withdraw the final level",
    key=f"withdraw-{pair_id}",
    shortcut="Delete",
    disabled=decision is None,
    on_click=decide,
    args=(pair_id, None, item["revision"], False),
)
st.caption(
    "Keys: 1–4 set the final level (the note is saved with it) · ← / → previous / next pair · "
    "Delete withdraws a final level. " + LEAVE_NOTE + " Annotators' labels are never changed."
)
if len(item["history"]):
    with st.expander(f"History of this pair's final level ({len(item['history'])})"):
        st.dataframe(item["history"].drop(columns="level"), hide_index=True, width="stretch", placeholder="—")
keep.save()  # remembers the reviewer and the note for this person (a hidden element)
# last: while it waits for the worker, everything above is on screen already
why_this_score(engine, pair_id, pair["source"], pair["hypothesis"], key="review")
