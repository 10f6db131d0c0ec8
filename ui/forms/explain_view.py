"""Why this score, under a pair (Review, Disagreements, Pairs): which words move the pair's PLUIE score.

For the PLUIE runs that cover the pair, a button asks the worker (db.explanations) to score the pair with
each word left out, with the run's own model where it is already loaded; the page waits under a spinner
that says so, then draws the two sentences with each word coloured by its contribution
(pluie_core.explain.explanation_html: the number on hover) beside the pair's score, and, when the run
computes in bfloat16 or float16, how far its rounding reaches (pluie_core.explain.precision_note). Kept
once computed: the next visit draws it at once.

    from ui.forms.explain_view import why_this_score
    why_this_score(engine, pair_id, source, hypothesis, key="review")
"""

from __future__ import annotations

import time

import streamlit as st

from db import explanations as expl
from db.engine import StoreUnavailable
from db.queue import alive_workers
from pluie_core.explain import explanation_html, precision_note
from ui.base.page import may, user_text

WAIT_SECONDS = 60.0  # how long the page waits for the worker before saying it has not answered
POLL_SECONDS = 0.5
NO_WORKER = (
    "No worker is running, so nothing computes it: start one (`python worker.py`) and press the button "
    "again. The request is kept."
)
BOX = (
    "border:1px solid light-dark(#d0d7de,#3d3b38);border-radius:8px;padding:12px 16px;"
    "background:light-dark(#fafbfc,#1f1e1c);line-height:1.9;font-size:1.1rem;white-space:pre-wrap;"
    "overflow-wrap:anywhere"
)
CAPTION = "font-size:0.8rem;color:light-dark(#57606a,#9aa3ad);margin-bottom:2px"


def _wait(engine, run: expl.PluieRun, pair_id: int, n_words: int):
    """Ask for the explanation and wait for the worker, up to WAIT_SECONDS; the state it ends in."""
    try:
        state = expl.request_explanation(engine, run.id, pair_id)
    except (expl.ExplanationError, StoreUnavailable, PermissionError) as exc:  # PermissionError: NotAllowed (a role)
        st.error(user_text(exc))
        return None
    if state is not None and state.status in ("queued", "claimed") and not alive_workers(engine):
        st.warning(NO_WORKER)  # nothing would answer: no reason to keep the person waiting
        return state
    deadline = time.monotonic() + WAIT_SECONDS
    with st.spinner(
        f"Asking the worker to score the pair with each word left out ({n_words} words, run {user_text(run.name)})…"
    ):
        while state is not None and state.status in ("queued", "claimed") and time.monotonic() < deadline:
            time.sleep(POLL_SECONDS)
            state = expl.explanation(engine, run.id, pair_id)
    if state is not None and state.status in ("queued", "claimed"):
        if not alive_workers(engine):
            st.warning(NO_WORKER)
        else:
            st.info(
                f"The worker has not finished within {WAIT_SECONDS:.0f} s (it may be loading the model or "
                "scoring other pairs first): press the button again in a moment. The request is kept."
            )
    return state


def _draw(state: expl.ExplanationState, run: expl.PluieRun) -> None:
    first, second = run.answers
    source, hypothesis = explanation_html(state.explanation, run.answers)
    st.html(
        f"<div style='{BOX}' data-testid='why-this-score'><div style='{CAPTION}'>Source</div><div>{source}</div>"
        f"<div style='{CAPTION};margin-top:10px'>Hypothesis</div><div>{hypothesis}</div></div>"
    )
    stored = "" if run.score is None else f" · the run's stored score {run.score:+.3f}"
    st.markdown(
        f"**Score {state.explanation.score:+.3f}** (log p({user_text(first)}) − log p({user_text(second)}), "
        f"run {user_text(run.name)}){stored}"
    )
    st.caption(
        f"Blue words push the score towards “{user_text(first)}”, red ones towards “{user_text(second)}”: "
        "the stronger the colour, the larger the push (the score minus the score with that word left "
        "out). Hover a word for its number. Underlined: the words the diff marks."
    )
    note = precision_note(state.explanation)
    if note:  # half precision: small numbers are within the rounding
        st.caption(f":material/info: {note}")


def why_this_score(engine, pair_id: int, source: str, hypothesis: str, key: str) -> None:
    """The "Why this score" expander of a pair; ``key``: the page's own prefix for its widgets."""
    pair_id = int(pair_id)
    with st.expander("Why this score", icon=":material/insights:"):
        runs = expl.pluie_runs_for_pair(engine, pair_id)
        if not runs:
            st.caption(
                "No PLUIE run covers this pair's dataset: create one under Scoring to see which words move its score."
            )
            return
        run = (
            runs[0]
            if len(runs) == 1
            else st.selectbox("PLUIE run", runs, key=f"{key}-why-run", format_func=lambda r: user_text(r.name))
        )
        state = expl.explanation(engine, run.id, pair_id)
        if state is None or state.status != "done":
            if state is not None and state.status == "failed":
                st.error(user_text(state.error))
            elif state is not None:
                st.caption("Asked already: the worker has not answered yet.")
            if not may("explain"):  # asking is a reviewer's (issue 56: no button the store would refuse)
                st.caption("Not asked yet: a reviewer or above can ask which words move this score.")
                return
            n_words = expl.words_of_pair(source, hypothesis)
            label = "Try again" if state is not None and state.status == "failed" else "Show which words move the score"
            if not st.button(label, key=f"{key}-why-{run.id}-{pair_id}", icon=":material/insights:"):
                return
            state = _wait(engine, run, pair_id, n_words)
            if state is None or state.status != "done":
                if state is not None and state.status == "failed":
                    st.error(user_text(state.error))
                return
        _draw(state, run)
