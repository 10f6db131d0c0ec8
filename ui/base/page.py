"""What every page stands on: the store's engine (opened once per server process and URL), the guard every page
runs in (run_page), the switch that keeps every address going through app.py's frame (through_app), scripts in
the page (page_script, one_click), and user_text, through which every page shows text a user typed or imported.
A page's first line, which uses these, is ui.frame's admin_page."""

import json
import logging

import streamlit as st

from db import access, database_url, init_db
from db.accounts import ensure_owner_from_admin_password
from db.engine import StoreUnavailable
from lab.roles import OPEN
from pluie_core.visible import markdown_text
from ui.base import private_api

PAGE_LOG = logging.getLogger("pluie_lab.pages")
PAGE_FAILED = (
    "Something unexpected went wrong on this page, and it is not shown in full: the details are in "
    "the server's log. Reload the page to try again."
)


def page_script(script: str, marker: str) -> None:
    """Run JavaScript in the page itself (st.html runs it there, not in a frame) from an element that
    takes no room: the element's own container, found by ``marker`` (an id), is hidden once drawn."""
    st.html(
        f"<style>[data-testid=stElementContainer]:has(#{marker}){{display:none}}</style>"
        f"<span id={marker}></span><script>{script}</script>",
        unsafe_allow_javascript=True,
    )


ONE_CLICK_MS = 1500  # a double click's second click comes within the system's double-click time (~500 ms)


def one_click(*key_prefixes: str) -> None:
    """Make the buttons whose keys start with one of ``key_prefixes`` take one click per run: the
    browser drops a click on one of them that comes within ONE_CLICK_MS of the last click it let through
    on a button of the same prefix, or while the run that click started has not ended (the second click
    of a double click, or a person clicking again on a loaded server). Only the first click reaches the
    server, so no second write has to be told apart there. A click after the run has ended goes through."""
    script = (
        "(() => {"
        " window.pluieOneClick = window.pluieOneClick || {};"
        f" for (const prefix of {json.dumps(list(key_prefixes))})"
        "   window.pluieOneClick[prefix] = window.pluieOneClick[prefix] || {last: -1e12, ended: true};"
        " if (window.pluieOneClickListening) return; window.pluieOneClickListening = true;"
        " const busy = () => { const app = document.querySelector('[data-testid=\"stApp\"]');"
        "   return app && app.getAttribute('data-test-script-state') !== 'notRunning'; };"
        " document.addEventListener('click', (event) => {"
        "   const box = event.target.closest && event.target.closest('[class*=\"st-key-\"]');"
        "   const name = box && [...box.classList].find(c => c.startsWith('st-key-'));"
        "   if (!name || !event.target.closest('button')) return;"
        "   const key = name.slice(7);"
        "   const prefix = Object.keys(window.pluieOneClick).find(p => key.startsWith(p));"
        "   if (prefix === undefined) return;"
        "   const state = window.pluieOneClick[prefix];"
        f"  if (Date.now() - state.last < {ONE_CLICK_MS} || !state.ended) {{"
        "     event.preventDefault(); event.stopImmediatePropagation(); return; }"
        "   state.last = Date.now(); state.ended = false; let ran = false;"
        "   const watch = setInterval(() => { if (busy()) ran = true;"
        "     else if (ran || Date.now() - state.last > 5000) { state.ended = true; clearInterval(watch); } }, 50);"
        " }, true);"
        "})();"
    )
    with st.sidebar:
        page_script(script, "pluie-one-click")


def run_page(page) -> None:
    """Run a page of st.navigation, the one guard of the frame: an unexpected exception anywhere in
    a page is one sentence on the page and a log line with its traceback on the server, never a
    stack trace in the browser. (st.stop, st.rerun and st.switch_page are not Exceptions: they
    pass. Errors a user can cause are caught where they happen, with their own sentence.)"""
    try:
        page.run()
    except StoreUnavailable as exc:  # a write the store could not take (busy, full, read-only): its sentence
        st.error(str(exc))
    except Exception:
        PAGE_LOG.exception("The page %r failed", getattr(page, "url_path", "") or getattr(page, "title", ""))
        st.error(PAGE_FAILED)


def user_text(value) -> str:
    """Text a user typed or imported — dataset, campaign, run and annotator names, external ids,
    reviewer names and notes, file and column names, folders, and messages that quote any of
    them — made safe to put in anything Streamlit renders as Markdown (st.markdown, st.caption,
    st.title / header / subheader, st.write of a string, st.info / warning / error / success,
    st.progress text, labels of buttons, expanders, tabs, radio options, metrics, help tooltips).
    THE one way every page shows user text:

        st.caption(f"Pair {pair_id} · {user_text(dataset)} · id {user_text(external_id)}")
        st.error(user_text(exc))

    The text then shows as typed: no Markdown, HTML, LaTeX, emoji or Streamlit directive in it
    takes effect, so `![t](http://host/x.png)` fetches nothing and no link or image is made from
    it. How: the signs that make Markdown (backslash ` * [ ] < $ ~ & |, _ unless between letters
    or digits, and # - + = > or "1." at a line's start) are backslash-escaped; an invisible word
    joiner (U+2060) follows `http`, `https` and `www` before ':' / '.', every '@', and ':' before
    a letter, since Markdown makes links of addresses, and Streamlit emoji, icons and colours of
    :name:, even when escaped; line breaks stay line breaks. Bidi controls and invisible characters
    (a right-to-left override, zero-width spaces) are shown as a mark, ⟨U+202E⟩, never applied. App text
    around it stays Markdown. (Tables of st.dataframe, selectbox options and st.text show text as text
    already: pass them through pluie_core.visible.visible_text for the marks.) None shows as "".
    The implementation is pluie_core.visible.markdown_text, which the dataset card uses too."""
    return markdown_text(value)


@st.cache_resource(show_spinner=False)
def _engine_for(url: str):
    engine = init_db(url)
    # a store from before accounts, with an admin password configured: the password becomes the owner
    # account "admin" before anyone signs in (nothing when the store has accounts or no password is set);
    # the server's own act, not the visitor's (whose resolver would need this engine)
    with access.acting_as(OPEN):
        ensure_owner_from_admin_password(engine)
    return engine


def get_engine():
    # the URL comes from PLUIE_DB_URL / pluie_lab.toml / the embedded default (db.engine)
    return _engine_for(database_url())


FRAMED = "_pluie_framed"  # set by app.py: this session has been through the app's frame


def through_app() -> None:
    """Streamlit treats a folder named pages/ as a list of stand-alone pages until app.py has
    called st.navigation once in the server's life: until then a first visit to /export runs
    pages/export.py on its own, without app.py's frame (the access checks below hold anyway).
    Switch that mode off and, for a session that has never been through app.py, run the same URL
    again through it. (Streamlit's AppTest turns the mode back on before each of its runs; its
    sessions start on app.py, so they are never rerun here, which would drop a pending click.)"""
    PagesManager = private_api.pages_manager()
    if PagesManager is None:  # a Streamlit without the v1 pages mode (logged once by private_api)
        return
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if not st.session_state.get(FRAMED):
            st.rerun()


def no_pages_folder() -> None:
    """From the server's start (server.py), never Streamlit's pages/ mode: in it, the first visit to an address
    such as /charts or /shared ran that helper module of pages/ on its own, a blank page, until app.py had
    called st.navigation once. Off from the start, every address goes through app.py, where a name that is
    not one of its pages draws the home page. (`streamlit run app.py` still starts in the mode: there
    through_app switches it off at the first page.)"""
    PagesManager = private_api.pages_manager()
    if PagesManager is not None:
        PagesManager.uses_pages_directory = False


def may(action: str) -> bool:
    """Whether whoever uses this session may do ``action`` (a key of lab.roles.ACTIONS): a page
    draws a form only for those (db.access.require refuses the write itself all the same)."""
    from lab.roles import can

    return can(access.current_actor(), action)
