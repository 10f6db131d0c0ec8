"""PLUIE Lab — the entry point: a thin frame that opens the store and routes to the pages.

    streamlit run app.py

Access: a personal labelling link (?token=...) opens the labelling page and nothing else; without
a token the admin pages need the admin password when one is configured (pluie_core.auth). A login
lasts its configured time across reloads and tabs (a signed cookie, pages.shared), and the page a
visitor asked for is the one drawn once they have logged in.
st.navigation is called on every run, so the pages/ folder is never listed on its own.
"""
import streamlit as st

from pages.shared import (
    FRAMED, get_engine, keep_login_cookie, log_out, organiser_session_end, require_organiser, run_page,
)
from pages.analysis_common import read_ahead_once
from pages.run_forms import read_hardware
from pluie_core.auth import admin_password_configured
from worker import ensure_worker_running

st.set_page_config(page_title="PLUIE Lab", page_icon="☔", layout="wide")
st.session_state[FRAMED] = True  # see pages.shared._through_app
get_engine()  # opens the store and applies pending migrations before any page draws


@st.cache_resource(show_spinner=False)
def background_worker():
    # once per server process: a scoring worker unless one is alive or PLUIE_NO_WORKER=1; under
    # make run (scripts/serve.py) the server started it already and this finds it
    return ensure_worker_running()


background_worker()
read_hardware()  # on its own thread: the Scoring page's suggestion is ready by the time it is opened

if "token" in st.query_params:
    # an annotator: their own queue only (the page checks the token and says when it is not valid)
    run_page(st.navigation([st.Page("pages/annotate.py", title="Labelling", default=True)], position="hidden"))
    st.stop()


# url paths are the file names (the default): a custom path that differs from the file name
# makes the browser's first request for it land on "Page not found", because pages/ exists.
pages = {
    "Data": [
        st.Page("pages/home.py", title="Datasets", icon=":material/dataset:", default=True),
        st.Page("pages/pairs.py", title="Pairs", icon=":material/manage_search:"),
        st.Page("pages/import_pairs.py", title="Import", icon=":material/upload_file:"),
        st.Page("pages/export.py", title="Export", icon=":material/download:"),
    ],
    "Metric": [
        st.Page("pages/scoring.py", title="Scoring", icon=":material/speed:"),
    ],
    "Labelling": [
        st.Page("pages/campaigns.py", title="Campaigns", icon=":material/label:"),
        st.Page("pages/review.py", title="Review", icon=":material/gavel:"),
        st.Page("pages/live_campaign.py", title="Live campaign", icon=":material/monitoring:"),
    ],
    "Analysis": [
        st.Page("pages/agreement.py", title="Agreement", icon=":material/groups:"),
        st.Page("pages/thresholds.py", title="Thresholds", icon=":material/tune:"),
        st.Page("pages/distributions.py", title="Distributions", icon=":material/bar_chart:"),
        st.Page("pages/disagreements.py", title="Disagreements", icon=":material/compare_arrows:"),
        st.Page("pages/scorecard.py", title="Scorecard", icon=":material/scoreboard:"),
        st.Page("pages/correlation.py", title="Correlation", icon=":material/scatter_plot:"),
        st.Page("pages/preferences.py", title="Preferences", icon=":material/thumbs_up_down:"),
    ],
}
# The menu is drawn here rather than by st.navigation: with client.showSidebarNavigation off, the
# browser never flashes the raw pages/ file list while the first run starts (annotators included).
navigation = st.navigation(pages, position="hidden")
# every page is registered above, so the address asked for (/import_pairs...) stays while the
# login form is drawn, and is the page drawn once the password is right
require_organiser()
with st.sidebar:
    for section, section_pages in pages.items():
        st.caption(section)
        for page in section_pages:
            st.page_link(page)
if admin_password_configured():
    st.sidebar.button("Log out", key="log-out", on_click=log_out, icon=":material/logout:",
                      help=f"Logged in until {organiser_session_end():%Y-%m-%d %H:%M} UTC on this browser.")
    with st.sidebar:  # last, where its hidden element shifts nothing
        keep_login_cookie()
else:
    st.sidebar.caption("No admin password is configured: anyone who can reach this app can use these pages. "
                       "Set PLUIE_ADMIN_PASSWORD or PLUIE_ADMIN_PASSWORD_HASH to protect them.")
run_page(navigation)  # any unexpected error: one sentence here, its traceback in the server's log


@st.cache_resource(show_spinner=False)
def read_ahead_after_first_page():
    # once per server process, after its first admin page has run, unless scripts/serve.py (make run) did
    # it for this store as the server started: the analysis pages' default frames are read on a thread
    # while the person looks at that page (pages.analysis_common.read_ahead)
    return read_ahead_once()


read_ahead_after_first_page()
