"""The labelling view's parts (pages/annotate.py): its style, the pair with its word differences, the guidelines,
the profile form, the training feedback, the comment and flag, and the answer's callback, which records the
answer with the time the pair was shown (db.serving.record_label: the link checked inside the write)."""

import time

import streamlit as st

from db import annotators, serving
from db import campaigns as camp
from db.engine import StoreUnavailable
from db.limits import NAME_LENGTH
from pluie_core.diff import diff_html
from pluie_core.guidelines import guidelines_markdown
from pluie_core.labels import ENGLISH_LEVELS, LEVELS
from ui.base.page import PAGE_LOG, page_script, user_text

# Four grey answers and a light-blue "Don't know", as in the paper, so colour biases no choice; in a dark
# theme dark grey and dark blue (light-dark() reads the color-scheme Streamlit sets for its theme).
# The keys' containers carry st-key-<key> classes: answer-<level>-<position>. Streamlit rings its main area
# (focusable, for keyboard scrolling) once a key is pressed after a click on the page's background: here the
# keys 1-5 answer, and that grey frame around the whole page meant nothing, so it is not drawn. The guidelines'
# popover is drawn outside the app's element, where light-dark() sees no theme: its marks are a see-through
# yellow under the popover's own text colour, readable on either theme.
STYLE = """<style>
body > div:not(#root) mark.pluie-diff {color:inherit !important; background:rgba(255, 214, 0, 0.4) !important;}
div[class*="st-key-answer-"] button {background:light-dark(#e6e6e6, #3a3a3a); color:light-dark(#222, #ededed);
  border:1px solid light-dark(#c4c4c4, #5a5a5a);}
div[class*="st-key-answer-"] button:hover {background:light-dark(#d6d6d6, #4a4a4a); color:light-dark(#000, #fff);
  border-color:light-dark(#9e9e9e, #7a7a7a);}
div[class*="st-key-answer-4-"] button {background:light-dark(#add8e6, #1f4f63); border-color:light-dark(#8fc1d4, #3d7891);}
div[class*="st-key-answer-4-"] button:hover {background:light-dark(#9ccddd, #2a6079);}
.pluie-pair {font-size:1.35rem; line-height:1.6; margin:0.5rem 0 1rem 0;}
.pluie-sentence {padding:0.8rem 1rem; border:1px solid light-dark(#ddd, #444); border-radius:0.5rem; margin:0.4rem 0;
  white-space:pre-wrap; overflow-wrap:anywhere;}
main[data-testid="stMain"]:focus-visible::before {content:none;}
</style>"""

ERROR_KEY = "answer-error"  # a refused answer's sentence, drawn by the run that follows its callback
SAVED_KEY = "answer-saved"  # (position, level) of the answer the callback just saved
# Inside the comment box the keys 1-5 are text; Ctrl+1-5 (⌘+1-5 on a Mac) answer from there: the box
# gives up the cursor, which sends its comment, then the answer's button is pressed, so the comment is
# saved with the answer. Installed once per tab (the listener outlives the runs).
ANSWER_FROM_COMMENT = (
    "(() => { if (window.pluieAnswerFromComment) return; window.pluieAnswerFromComment = true;"
    " document.addEventListener('keydown', (event) => {"
    "   if (!(event.ctrlKey || event.metaKey) || event.altKey || event.shiftKey) return;"
    "   const digit = /^(?:Digit|Numpad)([1-5])$/.exec(event.code);"
    "   const box = digit && event.target.closest && event.target.closest('[class*=\"st-key-comment-\"]');"
    "   if (!box) return;"
    '   const button = document.querySelector(`[class*="st-key-answer-${Number(digit[1]) - 1}-"] button`);'
    "   if (!button || button.disabled) return;"
    "   event.preventDefault(); event.stopPropagation();"
    "   event.target.blur(); button.click();"
    " }, true); })();"
)


def again(exc: StoreUnavailable) -> str:
    """When pressing an answer again may work."""
    return "in a moment" if exc.transient else "once the person who runs the app has fixed it"


def show_guidelines(guidelines) -> None:
    with st.popover("Guidelines", icon=":material/menu_book:", width="content"):
        st.markdown(guidelines_markdown(guidelines), unsafe_allow_html=True)


def profile_form(engine, view) -> None:
    """Who the annotator is (the name shown with their labels, their English level), asked once before the
    first pair, with the guidelines open below."""
    st.title(user_text(view.campaign_name))
    st.write("Welcome, and thank you for helping. Before you start, please tell us who you are.")
    with st.form("profile"):
        display_name = st.text_input(
            "Your name, as shown with your labels", value=view.display_name or "", max_chars=NAME_LENGTH
        )
        english = st.radio("Your English level", ENGLISH_LEVELS, index=None, horizontal=True)
        if st.form_submit_button("Start", type="primary"):
            try:
                annotators.set_annotator_profile(engine, view.annotator_id, display_name, english)
                st.rerun()
            except (camp.CampaignError, StoreUnavailable) as exc:
                st.error(user_text(exc))
    with st.expander("Guidelines", expanded=True):
        st.markdown(guidelines_markdown(view.guidelines), unsafe_allow_html=True)


def answer(
    engine, annotator_id: int, link: str, position: int, level: int, shown_level: int | None, is_training: bool
) -> None:
    # everything comes from the run that drew the buttons (args): the write checks that this link
    # is still the annotator's, so a tab open on a replaced or revoked link stores nothing
    shown_position, shown_at = st.session_state.get(f"shown-{annotator_id}", (None, time.monotonic()))
    if shown_position != position:
        # a stale button: a second key press landed before the next pair was drawn; answering
        # it would silently change the answer just given
        return
    try:
        # only over the answer this page showed: another tab's answer is refused, not replaced
        serving.record_label(
            engine,
            annotator_id,
            position,
            level,
            time.monotonic() - shown_at,
            replacing=shown_level,
            token=link,
            comment=st.session_state.get(f"comment-{position}"),
            flagged=st.session_state.get(f"flag-{position}", False),
        )
        st.session_state[SAVED_KEY] = (position, level)
        st.session_state.pop(f"revisit-{annotator_id}", None)
        if is_training:
            st.session_state[f"feedback-{annotator_id}"] = position
            # a second key press now lands on nothing
            st.session_state[f"shown-{annotator_id}"] = (None, time.monotonic())
        else:  # pressed again (the next pair could not be shown), the time is not counted twice
            st.session_state[f"shown-{annotator_id}"] = (position, time.monotonic())
    except camp.CampaignError as exc:
        st.session_state[ERROR_KEY] = str(exc)
    except StoreUnavailable as exc:  # the pair and its answers stay on screen: the same key sends it again
        st.session_state[ERROR_KEY] = (
            f"Your answer “{LEVELS[level]}” was not saved because {exc.reason}: press it again {again(exc)}."
        )
    except Exception:  # a callback runs outside the page's guard (ui.base.page.run_page): never a traceback
        PAGE_LOG.exception("An answer on the labelling page failed")
        st.session_state[ERROR_KEY] = (
            f"Your answer “{LEVELS[level]}” was not saved because something went "
            "wrong on the server (the details are in its log): press it again in a moment."
        )


def pair_box(top: str, bottom: str) -> None:
    top_html, bottom_html = diff_html(top, bottom)  # both escaped: pair text is never markup
    st.html(
        f'<div class="pluie-pair"><div class="pluie-sentence" data-testid="pluie-top">{top_html}</div>'
        f'<div class="pluie-sentence" data-testid="pluie-bottom">{bottom_html}</div></div>'
    )


def show_training_feedback(feedback: serving.TrainingFeedback, feedback_key: str) -> None:
    """After a training answer: the answer, the level the organiser expects and why; then on."""
    st.progress(
        feedback.number / feedback.out_of,
        text=f"Training {feedback.number} / {feedback.out_of} — practice pairs, not counted",
    )
    pair_box(feedback.top, feedback.bottom)
    given = f"Your answer: **{LEVELS[feedback.answer]}**"
    if feedback.expected_level is None:
        st.info(given + ".")
    elif feedback.expected_level == feedback.answer:
        st.success(f"{given} — the expected answer.")
    else:
        st.warning(f"{given} · expected: **{LEVELS[feedback.expected_level]}**.")
    if feedback.explanation:
        with st.container(border=True, key="training-explanation"):
            st.text(feedback.explanation)  # the organiser's words, as text
    st.button(
        "Continue",
        key=f"continue-{feedback.position}",
        type="primary",
        shortcut="Enter",
        on_click=lambda: st.session_state.pop(feedback_key, None),
        help="Keyboard: Enter",
    )


def comment_and_flag(item) -> None:
    """The annotator's voice on a pair, saved with the answer: an optional comment, and a flag for the
    organiser's review."""
    note, flag = st.columns([4, 1], vertical_alignment="bottom")
    note.text_input(
        "Comment (optional)",
        value=item.comment or "",
        key=f"comment-{item.position}",
        max_chars=serving.MAX_COMMENT,
        placeholder="e.g. ungrammatical, typo in B · Ctrl+1–5 answers from here",
        help="Saved with your answer. While you type here, keys 1–5 are text: press Ctrl+1–5 "
        "(⌘+1–5 on a Mac) to answer from the box, or click outside it (or press Tab) and "
        "answer with 1–5 again.",
    )
    flag.checkbox(
        "Flag this pair",
        value=item.flagged,
        key=f"flag-{item.position}",
        help="Something is wrong with this pair: it goes to the organiser's review.",
    )
    page_script(ANSWER_FROM_COMMENT, "pluie-comment-keys")  # Ctrl/⌘+1-5 answer from inside the box
