"""The frame of every page, the top floor of ui/: the first line of an organiser's page (admin_page: the
app's frame and access rules in force, what the browser keeps, the views' code preloaded), the labelling
page's (annotator_page), and the preloading of the browser's table and chart code (preload_views)."""

import functools
import inspect
import json
from pathlib import Path

import streamlit as st

from ui.access.keep import remember
from ui.access.signin import install_access, refuse_page, require_signin
from ui.base import private_api
from ui.base.page import get_engine, page_script, through_app

# The browser's table and chart code: Streamlit loads a table's the first time a page draws one (about
# 0.6 s of the browser's time on 2 cores); a chart's is Streamlit's small component module, then the chart
# component's assets: its module and plotly.js (ui.charts.PLOTLY_MODULE and PLOTLY_JS: about 0.3 s to evaluate).
# preload_views starts loading them while the server still computes the page, rather than after (bench/pages.py).
VIEW_MODULES = {"table": ("DataFrame",), "chart": ("BidiComponent",)}
LATER_MS = 2000  # the views a page does not draw: loaded when the browser is idle, this long after the page


@functools.cache
def view_modules(kinds: tuple) -> tuple:
    """The file names of the kinds' modules in this Streamlit's build (hashed names), those found once each
    (ui.base.private_api.static_js_files)."""
    return private_api.static_js_files(tuple(stem for kind in kinds for stem in VIEW_MODULES[kind]))


def preload_views(*kinds: str) -> None:
    """Ask the browser to load the code of the views a page is about to draw ("table", "chart") now,
    with an invisible element: a page calls it first thing, before it computes. Loading twice is a no-op,
    so later runs cost nothing. The other views' code is loaded once the browser is idle, LATER_MS after
    the page is drawn, so that the first chart or table a person opens through the menu does not wait for
    it (bench/results/2026-11-26-pages.md). plotly.js is added to the page as the script charts load (the
    chart component's module finds it by its id), and that module is imported as the component will import it,
    from the component's assets (the same address: the browser loads it once). A Streamlit build whose files
    are named otherwise gets no hint for its modules, not an error."""
    from ui.charts import PLOTLY_JS, PLOTLY_MODULE

    now, later = set(kinds), set(VIEW_MODULES) - set(kinds)
    script = (
        "(() => {const index = document.querySelector('script[src*=\"static/js/index.\"]');"
        " if (!index) return; const base = index.src.replace(/[^/]*$/, '');"
        " const load = (names, plotly) => { for (const name of names) import(base + name).catch(() => {});"
        "  if (!plotly) return;"
        f" import(new URL('../../{PLOTLY_MODULE}', index.src).href).catch(() => {{}});"
        "  if (window.Plotly || document.getElementById('pluie-plotly')) return;"
        "  const s = document.createElement('script'); s.id = 'pluie-plotly';"
        f" s.src = new URL('../../{PLOTLY_JS}', index.src).href; s.onerror = () => s.remove();"
        "  document.head.appendChild(s); };"
        f" load({json.dumps(list(view_modules(tuple(sorted(now)))))}, {json.dumps('chart' in now)});"
        f" const later = {json.dumps(list(view_modules(tuple(sorted(later)))))};"
        f" const plotly = {json.dumps('chart' in later)}; if (!later.length && !plotly) return;"
        " const idle = window.requestIdleCallback || ((f) => setTimeout(f, 0));"
        f" setTimeout(() => idle(() => load(later, plotly)), {LATER_MS});}})();"
    )
    with st.sidebar:
        page_script(script, "pluie-preload")


def require_organiser() -> None:
    """Unless this session may use the app's pages (signed in, or a store without accounts), draw the
    sign-in form and stop (ui.access.signin.require_signin)."""
    require_signin()


def admin_page(*views: str):
    """First line of every organiser's page: annotators (a ?token= link) see a sentence and
    nothing else and, when sign-in is needed (accounts, or an admin password), visitors who have not
    signed in see the sign-in form (ui.access.signin), and a role that may not open the page a sentence.
    app.py does the same already; this keeps each page closed on its own too.
    ``views``: what the page draws first, "table" (st.dataframe) or "chart" (a plotly chart: charts.draw), for
    the browser to load while the page computes (preload_views). A chart page names its charts alone: the
    table code, evaluated while the charts drew, held them back (Distributions in a new tab at 100,000 pairs,
    eight tabs each: 2.4–3.2 s naming both, 2.3–2.9 s naming the chart: bench/results/2026-11-26-pages.md);
    the tables below the charts load their code as they arrive."""
    through_app()
    install_access()  # a page run on its own (a fresh server's first visit) says who writes too
    if "token" in st.query_params:
        st.error("This link opens the labelling view only.")
        st.stop()
    # the page's own file names it (Streamlit runs each page with its __file__): its role is checked here
    # too, for a page run on its own (a fresh server's first visit, see through_app)
    caller = inspect.currentframe().f_back
    refuse_page(require_signin(), Path(caller.f_globals.get("__file__", "")).stem)
    remember()  # what this browser keeps (reviewer, notes, New campaign), before a page change drops it
    preload_views(*views)
    return get_engine()


def annotator_page():
    """First line of the labelling page (its token is checked by the page)."""
    through_app()
    install_access()
    return get_engine()
