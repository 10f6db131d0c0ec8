"""What every page shares: the store's engine (opened once per server process and URL) and the
first line of every page, which keeps the app's frame and its access rules in force."""
import streamlit as st

from db import database_url, init_db
from pluie_core.auth import admin_password_configured


@st.cache_resource(show_spinner=False)
def _engine_for(url: str):
    return init_db(url)


def get_engine():
    # the URL comes from PLUIE_DB_URL / pluie_lab.toml / the embedded default (db.engine)
    return _engine_for(database_url())


FRAMED = "_pluie_framed"  # set by app.py: this session has been through the app's frame


def _through_app() -> None:
    """Streamlit treats a folder named pages/ as a list of stand-alone pages until app.py has
    called st.navigation once in the server's life: until then a first visit to /export runs
    pages/export.py on its own, without app.py's frame (the access checks below hold anyway).
    Switch that mode off and, for a session that has never been through app.py, run the same URL
    again through it. (Streamlit's AppTest turns the mode back on before each of its runs; its
    sessions start on app.py, so they are never rerun here, which would drop a pending click.)"""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # a Streamlit without the v1 pages mode
        return
    if PagesManager.uses_pages_directory:
        PagesManager.uses_pages_directory = False
        if not st.session_state.get(FRAMED):
            st.rerun()


def admin_page():
    """First line of every organiser's page: annotators (a ?token= link) and, when an admin
    password is configured, visitors who have not logged in see a sentence and nothing else.
    app.py routes them away already; this keeps each page closed on its own too."""
    _through_app()
    if "token" in st.query_params:
        st.error("This link opens the labelling view only.")
        st.stop()
    if admin_password_configured() and not st.session_state.get("pluie_admin"):
        st.warning("This page is for the campaign's organisers: log in on the app's main page first.")
        st.stop()
    return get_engine()


def annotator_page():
    """First line of the labelling page (its token is checked by the page)."""
    _through_app()
    return get_engine()
