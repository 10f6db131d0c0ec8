"""PLUIE Lab — the entry point: a thin frame that opens the store and routes to the pages.

    streamlit run app.py

Access: a personal labelling link (?token=...) opens the labelling page and nothing else, an invitation
link (?invite=...) the page where a new account sets its password. Otherwise, once the store has accounts
(or an admin password is configured, which becomes the owner account "admin"), a visitor signs in
(ui.access.signin) and sees the pages their role may open (lab.roles.PAGE_ROLES); a page opened by its
address that the role may not open is refused. A store without accounts or admin password is open to
whoever reaches it, as the sidebar says. The page a visitor asked for is the one drawn once signed in.
st.navigation is called on every run, so the pages/ folder is never listed on its own.
"""

import streamlit as st

from lab.roles import can_open
from ui.access.signin import install_access, keep_login_cookie, log_out, refuse_page, require_signin, session_end
from ui.base.menu import MENU
from ui.base.page import FRAMED, get_engine, run_page, user_text
from ui.forms.run_forms import read_hardware
from ui.views.read_ahead import read_ahead_once
from worker_launch import ensure_worker_running

st.set_page_config(page_title="PLUIE Lab", page_icon="☔", layout="wide")
st.session_state[FRAMED] = True  # see ui.base.page._through_app
get_engine()  # opens the store and applies pending migrations before any page draws
install_access()  # who the store's writes are done for: the signed-in person (db.access), said here, not by an import


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
if "invite" in st.query_params:
    # a new account's invitation: set a password, nothing else (the page checks the link)
    run_page(st.navigation([st.Page("pages/invitation.py", title="Invitation", default=True)], position="hidden"))
    st.stop()


# url paths are the file names (the default): a custom path that differs from the file name
# makes the browser's first request for it land on "Page not found", because pages/ exists.
pages = {
    section: [
        (key, st.Page(f"pages/{key}.py", title=title, icon=f":material/{icon}:", default=key == "home"))
        for key, title, icon in entries
    ]
    for section, entries in MENU.items()
}
# The menu is drawn here rather than by st.navigation: with client.showSidebarNavigation off, the
# browser never flashes the raw pages/ file list while the first run starts (annotators included).
navigation = st.navigation(
    {section: [page for _, page in entries] for section, entries in pages.items()}, position="hidden"
)
# every page is registered above, so the address asked for (/import_pairs...) stays while the
# sign-in form is drawn, and is the page drawn once signed in
actor = require_signin()
with st.sidebar:
    for section, entries in pages.items():
        allowed = [page for key, page in entries if can_open(actor, key)]
        if allowed:
            st.caption(section)
            for page in allowed:
                st.page_link(page)
if actor.signed_in:
    ends = session_end()
    st.sidebar.caption(f"Signed in as {user_text(actor.name)} ({actor.role})")
    st.sidebar.button(
        "Log out",
        key="log-out",
        on_click=log_out,
        icon=":material/logout:",
        help=f"Signed in until {ends:%Y-%m-%d %H:%M} UTC." if ends else None,
    )
else:
    st.sidebar.caption(
        "No admin password is configured and no account exists: anyone who can reach this app can "
        "use these pages. Add an owner (python -m db accounts add NAME --role owner --password-stdin) "
        "or set PLUIE_ADMIN_PASSWORD to protect them."
    )
with st.sidebar:  # last, where its hidden element shifts nothing
    keep_login_cookie()
asked = next(key for entries in pages.values() for key, page in entries if page is navigation)
refuse_page(actor, asked)  # a page opened by its address that the role may not open: one sentence
run_page(navigation)  # any unexpected error: one sentence here, its traceback in the server's log


@st.cache_resource(show_spinner=False)
def read_ahead_after_first_page():
    # once per server process, after its first admin page has run, unless scripts/serve.py (make run) did
    # it for this store as the server started: the analysis pages' default frames are read on a thread
    # while the person looks at that page (ui.views.read_ahead: each page says what it opens on)
    return read_ahead_once()


read_ahead_after_first_page()
