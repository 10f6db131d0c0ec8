"""The annotator's labelling view (protocol of ParaPLUIE, appendix A.3): one pair at a time, one
sentence above the other, word differences in yellow, five answers (keys 1-5), back, progress,
the guidelines one click away. The annotator is whoever the link's token says, on every run: the
page never takes a pair or an annotator from anywhere else, so a link opens only its own queue.
"""

import dataclasses
import time

import streamlit as st

from db import annotators, serving
from db.engine import StoreUnavailable
from pluie_core.labels import LEVELS
from pluie_core.quality import finished_text
from ui.base.page import user_text
from ui.forms.labelling import (
    ERROR_KEY,
    SAVED_KEY,
    STYLE,
    again,
    answer,
    comment_and_flag,
    pair_box,
    profile_form,
    show_guidelines,
    show_training_feedback,
)
from ui.frame import annotator_page

LAST_KEY = "annotate-last"  # (token, what the last run read): drawn again while the store cannot be reached


def read_screen(token: str | None):
    """Everything this run draws from the store, read at once: (view, training feedback, pair, progress),
    None for a link that is not valid. The pair is the one to answer (or the one gone back to); feedback
    replaces it just after a training answer; none of the three for a profile still to give."""
    annotator = annotators.annotator_for_token(engine, token)
    if annotator is None:
        return None
    view = annotators.annotator_view(engine, annotator.id)
    aid = view.annotator_id
    if view.needs_profile:
        return view, None, None, None
    feedback = None
    if st.session_state.get(f"feedback-{aid}") is not None:
        feedback = serving.training_feedback(engine, aid, st.session_state[f"feedback-{aid}"])
        if feedback is not None:
            return view, feedback, None, None
        st.session_state.pop(f"feedback-{aid}")  # no feedback for this pair: straight on
    revisit = st.session_state.get(f"revisit-{aid}")
    if not view.campaign_active:
        item = None  # a closed campaign takes no answers (record_label refuses them): no pair to answer
    else:
        item = serving.served_at(engine, aid, revisit) if revisit is not None else serving.serve_next(engine, aid)
    return view, None, item, serving.progress(engine, aid)


engine = annotator_page()
token = st.query_params.get("token")
refused = st.session_state.pop(ERROR_KEY, None)
saved = st.session_state.pop(SAVED_KEY, None)
try:
    screen = read_screen(token)
except StoreUnavailable as exc:
    # the store went away (during the answer, or since): the last screen of this link stays, its keys
    # with it, and says why; an answer pressed again is sent again
    last = st.session_state.get(LAST_KEY)
    if last is None or last[0] != token or last[1] is None:
        st.error(user_text(refused or exc))
        st.stop()
    screen = last[1]
    item = screen[2]
    if saved is not None and item is not None and saved[0] == item.position:
        screen = (*screen[:2], dataclasses.replace(item, level=saved[1]), screen[3])
        refused = refused or (
            f"Your answer “{LEVELS[saved[1]]}” is saved, but the next pair cannot be shown "
            f"because {exc.reason}: press it again {again(exc)}."
        )
    refused = refused or str(exc)
st.session_state[LAST_KEY] = (token, screen)
if screen is None:
    # an answer refused because the link was replaced or revoked says so itself; one sentence either way
    st.error(
        refused or "This link is not valid, or it has been revoked. Ask the person who sent it to you for a new one."
    )
    st.stop()
view, feedback, item, progress = screen
aid = view.annotator_id
revisit_key, clock_key = f"revisit-{aid}", f"shown-{aid}"
feedback_key = f"feedback-{aid}"  # the training pair just answered, whose feedback is on screen

if view.needs_profile:
    profile_form(engine, view)
    st.stop()


def go_back(position: int) -> None:
    st.session_state[revisit_key] = position


st.html(STYLE)

header, guide = st.columns([5, 1], vertical_alignment="center")
header.subheader(user_text(view.campaign_name))
with guide:
    show_guidelines(view.guidelines)
if refused:
    st.error(user_text(refused))
if feedback is not None:
    show_training_feedback(feedback, feedback_key)
    st.stop()

revisit = st.session_state.get(revisit_key)
if item is None:
    # nothing left for them: the counter is out of what was served, so the bar ends full
    st.progress(
        1.0 if progress.finished else min(1.0, progress.done / max(progress.quota, 1)),
        text=f"{progress.done} / {progress.quota}",
    )
    if (not progress.finished or progress.queue_ran_out) and not view.campaign_active:
        if not refused:  # the refusal already said that the campaign is closed
            st.info("This campaign is paused for now. Your answers so far are saved; come back to this link later.")
        st.stop()
    st.title("Thank you!")
    # fewer than the counter read out of: say why (the other annotators labelled the pairs left, or fewer checks)
    st.success(finished_text(progress.done, progress.planned, progress.queue_ran_out))
    last = progress.training_done + progress.done - 1
    if last >= 0:
        st.button("← Change my last answer", on_click=go_back, args=(last,))
    st.stop()

if st.session_state.get(clock_key, (None,))[0] != item.position:
    st.session_state[clock_key] = (item.position, time.monotonic())

if item.is_training:
    st.progress(
        (item.number - 1) / item.out_of, text=f"Training {item.number} / {item.out_of} — practice pairs, not counted"
    )
    if item.number == 1:
        st.info(
            "The first pairs are a short training trial, the same for everyone. "
            "Read the guidelines (top right) at any moment."
        )
else:
    st.progress(min(1.0, progress.done / max(progress.quota, 1)), text=f"{progress.done} / {progress.quota}")

pair_box(item.top, item.bottom)
st.caption("Do these two sentences share a common meaning?")
if item.level is not None:
    st.caption(f"Your answer was **{LEVELS[item.level]}**. Choose again to change it.")
if not item.is_training:  # the annotator's voice, saved with the answer
    comment_and_flag(item)

for level, (column, name) in enumerate(zip(st.columns(len(LEVELS)), LEVELS)):
    column.button(
        name,
        key=f"answer-{level}-{item.position}",
        shortcut=str(level + 1),
        on_click=answer,
        args=(engine, aid, token, item.position, level, item.level, item.is_training),
        width="stretch",
        help=f"Keyboard: {level + 1}",
    )

back, resume = st.columns([1, 5])
back.button("← Back", key="back", disabled=item.position == 0, on_click=go_back, args=(item.position - 1,))
if revisit is not None:
    resume.button("Return to my current pair", key="resume", on_click=lambda: st.session_state.pop(revisit_key, None))
if item.level is not None:  # back on an answered pair: the answer given stands out (a dark border and a tick)
    st.html(
        f"<style>div.st-key-answer-{item.level}-{item.position} button {{border:3px solid light-dark(#222, #f0f0f0) !important; "
        f"font-weight:700;}} div.st-key-answer-{item.level}-{item.position} button p::before {{content:'✓ ';}}</style>"
    )
