"""The annotator's labelling view (protocol of ParaPLUIE, appendix A.3): one pair at a time, one
sentence above the other, word differences in yellow, five answers (keys 1-5), back, progress,
the guidelines one click away. The annotator is whoever the link's token says, on every run: the
page never takes a pair or an annotator from anywhere else, so a link opens only its own queue.
"""
import time

import streamlit as st

from db import annotation as ann
from pages.shared import annotator_page
from pluie_core.diff import diff_html
from pluie_core.guidelines import guidelines_markdown
from pluie_core.labels import ENGLISH_LEVELS, LEVELS

# Four grey answers and a light-blue "Don't know", as in the paper, so colour biases no choice.
# The keys' containers carry st-key-<key> classes: answer-<level>-<position>.
STYLE = """<style>
div[class*="st-key-answer-"] button {background:#e6e6e6; color:#222; border:1px solid #c4c4c4;}
div[class*="st-key-answer-"] button:hover {background:#d6d6d6; color:#000; border-color:#9e9e9e;}
div[class*="st-key-answer-4-"] button {background:#add8e6; border-color:#8fc1d4;}
div[class*="st-key-answer-4-"] button:hover {background:#9ccddd;}
.pluie-pair {font-size:1.35rem; line-height:1.6; margin:0.5rem 0 1rem 0;}
.pluie-sentence {padding:0.8rem 1rem; border:1px solid #ddd; border-radius:0.5rem; margin:0.4rem 0;
  white-space:pre-wrap; overflow-wrap:anywhere;}
</style>"""

engine = annotator_page()
annotator = ann.annotator_for_token(engine, st.query_params.get("token"))
if annotator is None:
    st.error("This link is not valid, or it has been revoked. Ask the person who sent it to you for a new one.")
    st.stop()
view = ann.annotator_view(engine, annotator.id)
aid = view.annotator_id
revisit_key, clock_key, error_key = f"revisit-{aid}", f"shown-{aid}", f"error-{aid}"


def show_guidelines() -> None:
    with st.popover("Guidelines", icon=":material/menu_book:", width="content"):
        st.markdown(guidelines_markdown(view.guidelines), unsafe_allow_html=True)


if view.needs_profile:
    st.title(view.campaign_name)
    st.write("Welcome, and thank you for helping. Before you start, please tell us who you are.")
    with st.form("profile"):
        display_name = st.text_input("Your name, as shown with your labels", value=view.display_name or "")
        english = st.radio("Your English level", ENGLISH_LEVELS, index=None, horizontal=True)
        if st.form_submit_button("Start", type="primary"):
            try:
                ann.set_annotator_profile(engine, aid, display_name, english)
                st.rerun()
            except ann.CampaignError as exc:
                st.error(str(exc))
    with st.expander("Guidelines", expanded=True):
        st.markdown(guidelines_markdown(view.guidelines), unsafe_allow_html=True)
    st.stop()


def answer(position: int, level: int, shown_level: int | None) -> None:
    shown_position, shown_at = st.session_state.get(clock_key, (None, time.monotonic()))
    if shown_position != position:
        # a stale button: a second key press landed before the next pair was drawn; answering
        # it would silently change the answer just given
        return
    try:
        # only over the answer this page showed: another tab's answer is refused, not replaced
        ann.record_label(engine, aid, position, level, time.monotonic() - shown_at, replacing=shown_level)
        st.session_state.pop(revisit_key, None)
    except ann.CampaignError as exc:
        st.session_state[error_key] = str(exc)


def go_back(position: int) -> None:
    st.session_state[revisit_key] = position


revisit = st.session_state.get(revisit_key)
item = ann.served_at(engine, aid, revisit) if revisit is not None else ann.serve_next(engine, aid)
progress = ann.progress(engine, aid)
st.html(STYLE)

header, guide = st.columns([5, 1], vertical_alignment="center")
header.subheader(view.campaign_name)
with guide:
    show_guidelines()
if st.session_state.get(error_key):
    st.error(st.session_state.pop(error_key))

if item is None:
    st.progress(min(1.0, progress.done / max(progress.quota, 1)), text=f"{progress.done} / {progress.quota}")
    st.title("Thank you!")
    if progress.done >= progress.quota:
        st.success(f"You have labelled your {progress.done} pairs. Your answers are saved; you can close this page.")
    elif not view.campaign_active:
        st.info("This campaign is paused for now. Your answers so far are saved; come back to this link later.")
    else:
        st.success(f"You have labelled {progress.done} pairs: there are no more pairs for you in this campaign. "
                   "Your answers are saved; you can close this page.")
    last = progress.training_done + progress.done - 1
    if last >= 0:
        st.button("← Change my last answer", on_click=go_back, args=(last,))
    st.stop()

if st.session_state.get(clock_key, (None,))[0] != item.position:
    st.session_state[clock_key] = (item.position, time.monotonic())

if item.is_training:
    st.progress((item.number - 1) / item.out_of,
                text=f"Training {item.number} / {item.out_of} — practice pairs, not counted")
    if item.number == 1:
        st.info("The first pairs are a short training trial, the same for everyone. "
                "Read the guidelines (top right) at any moment.")
else:
    st.progress(min(1.0, progress.done / max(progress.quota, 1)), text=f"{progress.done} / {progress.quota}")

top_html, bottom_html = diff_html(item.top, item.bottom)  # both escaped: pair text is never markup
st.html(f'<div class="pluie-pair"><div class="pluie-sentence" data-testid="pluie-top">{top_html}</div>'
        f'<div class="pluie-sentence" data-testid="pluie-bottom">{bottom_html}</div></div>')
st.caption("Do these two sentences share a common meaning?")
if item.level is not None:
    st.caption(f"Your answer was **{LEVELS[item.level]}**. Choose again to change it.")

for level, (column, name) in enumerate(zip(st.columns(len(LEVELS)), LEVELS)):
    column.button(name, key=f"answer-{level}-{item.position}", shortcut=str(level + 1),
                  on_click=answer, args=(item.position, level, item.level), width="stretch",
                  help=f"Keyboard: {level + 1}")

back, resume = st.columns([1, 5])
back.button("← Back", key="back", disabled=item.position == 0, on_click=go_back, args=(item.position - 1,))
if revisit is not None:
    resume.button("Return to my current pair", key="resume", on_click=lambda: st.session_state.pop(revisit_key, None))
if item.level is not None:  # back on an answered pair: the answer given stands out (a dark border and a tick)
    st.html(f"<style>div.st-key-answer-{item.level}-{item.position} button {{border:3px solid #222 !important; "
            f"font-weight:700;}} div.st-key-answer-{item.level}-{item.position} button p::before {{content:'✓ ';}}</style>")
