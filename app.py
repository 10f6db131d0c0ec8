"""PLUIE Lab — the entry point: a thin frame that opens the store and routes to the pages.

    streamlit run app.py

Access: a personal labelling link (?token=...) opens the labelling page and nothing else; without
a token the admin pages need the admin password when one is configured (pluie_core.auth).
st.navigation is called on every run, so the pages/ folder is never listed on its own.
"""
import streamlit as st

from pages.shared import FRAMED, get_engine
from pluie_core.auth import admin_password_configured, check_admin_password
from worker import ensure_worker_running

st.set_page_config(page_title="PLUIE Lab", page_icon="☔", layout="wide")
st.session_state[FRAMED] = True  # see pages.shared._through_app
get_engine()  # opens the store and applies pending migrations before any page draws


@st.cache_resource(show_spinner=False)
def background_worker():
    # once per server process: a scoring worker unless one is alive or PLUIE_NO_WORKER=1
    return ensure_worker_running()


background_worker()

if "token" in st.query_params:
    # an annotator: their own queue only (the page checks the token and says when it is not valid)
    st.navigation([st.Page("pages/annotate.py", title="Labelling", default=True)], position="hidden").run()
    st.stop()


def admin_login() -> None:
    st.title("PLUIE Lab")
    with st.form("admin-login"):
        password = st.text_input("Admin password", type="password")
        if st.form_submit_button("Log in", type="primary"):
            if check_admin_password(password):
                st.session_state["pluie_admin"] = True
                st.rerun()
            st.error("Wrong password.")


if admin_password_configured() and not st.session_state.get("pluie_admin"):
    st.navigation([st.Page(admin_login, title="Log in", default=True)], position="hidden").run()
    st.stop()

# url paths are the file names (the default): a custom path that differs from the file name
# makes the browser's first request for it land on "Page not found", because pages/ exists.
pages = {
    "Data": [
        st.Page("pages/home.py", title="Datasets", icon=":material/dataset:", default=True),
        st.Page("pages/import_pairs.py", title="Import", icon=":material/upload_file:"),
        st.Page("pages/export.py", title="Export", icon=":material/download:"),
    ],
    "Metric": [
        st.Page("pages/scoring.py", title="Scoring", icon=":material/speed:"),
    ],
    "Labelling": [
        st.Page("pages/campaigns.py", title="Campaigns", icon=":material/label:"),
    ],
    "Analysis": [
        st.Page("pages/agreement.py", title="Agreement", icon=":material/groups:"),
        st.Page("pages/thresholds.py", title="Thresholds", icon=":material/tune:"),
        st.Page("pages/distributions.py", title="Distributions", icon=":material/bar_chart:"),
        st.Page("pages/disagreements.py", title="Disagreements", icon=":material/compare_arrows:"),
        st.Page("pages/correlation.py", title="Correlation", icon=":material/scatter_plot:"),
        st.Page("pages/preferences.py", title="Preferences", icon=":material/thumbs_up_down:"),
    ],
}
# The menu is drawn here rather than by st.navigation: with client.showSidebarNavigation off, the
# browser never flashes the raw pages/ file list while the first run starts (annotators included).
navigation = st.navigation(pages, position="hidden")
with st.sidebar:
    for section, section_pages in pages.items():
        st.caption(section)
        for page in section_pages:
            st.page_link(page)
if not admin_password_configured():
    st.sidebar.caption("No admin password is configured: anyone who can reach this app can use these pages. "
                       "Set PLUIE_ADMIN_PASSWORD or PLUIE_ADMIN_PASSWORD_HASH to protect them.")
navigation.run()
