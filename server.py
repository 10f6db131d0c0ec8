"""The app as an ASGI application: app.py, plus the routes of the sign-in cookie (ui.access.session_cookie) and
the HTTP API under /api/v1 (api/, for scripts and pipelines: personal tokens, the same accounts), and the chart
component's files with the validators a browser keeps them by (pluie_plotly.caching: ETag, 304 Not Modified).

Streamlit gives a page no way to set a cookie; a cookie written by the page's JavaScript could be read by
any script on the page. Served from here (`streamlit run server.py`, as scripts/serve.py and `make run`
do), the server itself sets it, HttpOnly. `streamlit run app.py` still works, with a sign-in that lasts
the browser tab.
"""

from pathlib import Path

import streamlit as st

from api.app import routes as api_routes
from pluie_plotly import caching
from ui.access import session_cookie
from ui.access.signin import install_access
from ui.base.page import no_pages_folder

no_pages_folder()  # every address through app.py, from the first visit (a helper of pages/ is never run)
install_access()  # who writes (db.access) and the accounts' fingerprints for the cookie routes, before any request
app = st.App(
    str(Path(__file__).resolve().parent / "app.py"),
    routes=session_cookie.routes() + api_routes(),
    middleware=session_cookie.middleware() + caching.middleware(),
)
