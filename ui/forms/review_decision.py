"""The Review page's decision (pages/review.py): the reviewer's note, the four final levels (keys 1-4), ← / →
through the queue, "Withdraw the final level" (Delete) and the history of the pair's final level; the callbacks
write through db.review.adjudicate, which checks the revision the reviewer saw."""

import streamlit as st

from db import access, review
from db.engine import StoreUnavailable
from pluie_core.labels import LEVELS
from ui.access import keep

PAIR, POSITION, FLASH, ERROR = "review-pair", "review-position", "review-flash", "review-error"
REOPENED = "review-reopened"  # the pair whose final level was just withdrawn: "Not yet decided" opens on it
LEAVE_NOTE = (
    "While the note box has the cursor, keys type into it: press Tab or click outside it, and 1–4 set the level again."
)


def decide(engine, pair: int, level, seen: int, advance: bool) -> None:
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


def decision_form(engine, item: dict, pair_id: int, position: int, ids: list, reviewer: str, advance: bool) -> None:
    """The note, the level keys, the moves and the withdrawal of the pair on screen (at ``position`` of ``ids``);
    ``advance``: a decision moves on to the next pair (a queue that keeps decided pairs)."""
    decision = item["adjudication"]
    keep.kept(f"note-{pair_id}", "", typed=True)  # a half-typed note survives a page change and a reload
    st.text_input(
        "Note (optional): why this level",
        key=f"note-{pair_id}",
        max_chars=review.MAX_NOTE,
        placeholder="Type, then press Tab (or click outside the box) before the keys 1–4",
    )
    if not (reviewer or "").strip():
        st.warning("Give your name as reviewer (sidebar) to decide.")
    for level, column in enumerate(st.columns(4)):
        column.button(
            LEVELS[level],
            key=f"final-{level}-{pair_id}",
            shortcut=str(level + 1),
            width="stretch",
            type="primary" if decision is not None and int(decision["level"]) == level else "secondary",
            on_click=decide,
            args=(engine, pair_id, level, item["revision"], advance),
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
        args=(engine, pair_id, None, item["revision"], False),
    )
    st.caption(
        "Keys: 1–4 set the final level (the note is saved with it) · ← / → previous / next pair · "
        "Delete withdraws a final level. " + LEAVE_NOTE + " Annotators' labels are never changed."
    )
    if len(item["history"]):
        with st.expander(f"History of this pair's final level ({len(item['history'])})"):
            st.dataframe(item["history"].drop(columns="level"), hide_index=True, width="stretch", placeholder="—")
