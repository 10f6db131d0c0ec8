"""Every Streamlit internal the app uses, all in this module: one function per coupling, each returning
what the private path gives (or None when this Streamlit lacks it) and recording which path it took.

    runtime_exists()           # streamlit.runtime.Runtime.exists (scripts/serve.py's read-ahead at start)
    pages_manager()            # streamlit.runtime.pages_manager.PagesManager (ui.base.page.no_pages_folder, _through_app)
    script_run_ctx()           # streamlit.runtime.scriptrunner.get_script_run_ctx (ui.access.signin)
    static_js_files(stems)     # Streamlit's built JavaScript files, by name (ui.frame.preload_views)
    missing_context_logger()   # the logger of Streamlit's "missing ScriptRunContext" warning (ui.views.read_ahead)
    authlib_installed()        # streamlit.auth_util.is_authlib_installed (ui.access.provider_signin)
    drawing_modules()          # the Streamlit modules a first table or chart imports (scripts/serve.py's warm-up)
    streamlit_cli_main()       # streamlit.web.cli.main, the `streamlit` command (scripts/serve.py starts the server)

Each was checked on Streamlit 1.67.0, the version requirements.txt pins. Each coupling is a
``pluie_core.private_api.Coupling``: what it reaches, the version, and what its fallback does and costs.
A fallback keeps the app working and says so in the log, once, as a warning; ``tests/test_private_api.py``
asserts that the private path is the one taken on the pinned version, so an upgrade of Streamlit that
removes one fails there, naming the coupling and the cost of its fallback.

The library's own couplings (scipy's, torch's, crowd-kit's) are in ``pluie_core/private_api.py``: ``pluie_core`` may not import
Streamlit (``tests/test_layers.py``), so there is one module per layer. This one imports Streamlit only
inside its functions: scripts/serve.py imports it before it starts Streamlit.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
from pathlib import Path
from typing import Callable, Optional

from pluie_core.private_api import Coupling

__all__ = [
    "STREAMLIT",
    "COUPLINGS",
    "runtime_exists",
    "pages_manager",
    "script_run_ctx",
    "static_js_files",
    "missing_context_logger",
    "authlib_installed",
    "drawing_modules",
    "streamlit_cli_main",
]

STREAMLIT = "Streamlit 1.67.0"

RUNTIME = Coupling(
    "streamlit.runtime.Runtime.exists",
    STREAMLIT,
    "scripts/serve.py cannot tell when Streamlit's runtime is up, so it does not read the pages' first figures "
    "at start: the read-ahead starts after the first admin page instead (ui.views.read_ahead.read_ahead_once), and "
    "the first visitors wait for their figures (about 5 s at 100,000 pairs, 35 s at 1,000,000).",
)
PAGES_MANAGER = Coupling(
    "streamlit.runtime.pages_manager.PagesManager.uses_pages_directory",
    STREAMLIT,
    "a fresh server's first visit to a page's URL (/export) runs that page on its own, without app.py's frame "
    "(no menu, no sidebar); its access checks still hold (ui.frame.admin_page).",
)
SCRIPT_RUN_CTX = Coupling(
    "streamlit.runtime.scriptrunner.get_script_run_ctx",
    STREAMLIT,
    "every thread of the server process is taken for a page's run, so db.access asks ui.access.signin for the "
    "signed-in person on threads that have none: writes made off a page's run, where accounts are in force, "
    "are refused (as nobody's) instead of allowed.",
)
STATIC_JS = Coupling(
    "streamlit/static/static/js/<Module>.<hash>.js (Streamlit's built JavaScript files)",
    STREAMLIT,
    "ui.frame.preload_views gives the browser no hint: a page's table and chart code loads after the page "
    "is drawn, not while it computes (about 0.6 s of the browser's time for a table, a second for a chart).",
)
MISSING_CONTEXT_LOG = Coupling(
    "the logger streamlit.runtime.scriptrunner_utils.script_run_context",
    STREAMLIT,
    "Streamlit's \"missing ScriptRunContext\" warning is no longer kept out of the log for the read-ahead's "
    "reads (ui.views.read_ahead): the server's log gets that warning for reads made on purpose off a page.",
)
AUTHLIB = Coupling(
    "streamlit.auth_util.is_authlib_installed",
    STREAMLIT,
    "an installed Authlib counts, whatever its version: one older than st.login needs (1.3.2) shows the "
    "provider's button, and st.login says what is wrong when it is clicked.",
)
DRAWING = Coupling(
    "the modules streamlit.elements.arrow, streamlit.elements.vega_charts and streamlit.emojis",
    STREAMLIT,
    "scripts/serve.py's warm-up leaves out a module that is gone, and the first page imports whatever this "
    "Streamlit imports instead while it draws (streamlit.emojis alone: 0.3 s of the first page's run).",
)
STREAMLIT_CLI = Coupling(
    "streamlit.web.cli.main",
    STREAMLIT,
    "scripts/serve.py starts Streamlit as `python -m streamlit` does, by running the module streamlit.__main__ in "
    "its own process: the same server, as long as this Streamlit's __main__ starts it (if not, serve.py stops with "
    "its error, and `streamlit run server.py` starts the app without serve.py's warm start, the worker then "
    "starting with the first page a browser opens).",
)

COUPLINGS: dict[str, Coupling] = {
    c.name: c
    for c in (RUNTIME, PAGES_MANAGER, SCRIPT_RUN_CTX, STATIC_JS, MISSING_CONTEXT_LOG, AUTHLIB, DRAWING, STREAMLIT_CLI)
}

DRAWING_MODULES = ("streamlit.elements.arrow", "streamlit.elements.vega_charts", "streamlit.emojis")
MISSING_CONTEXT_LOGGER = "streamlit.runtime.scriptrunner_utils.script_run_context"


def runtime_exists() -> Optional[Callable[[], bool]]:
    """``streamlit.runtime.Runtime.exists``: True once ``streamlit run`` has created its runtime (whose caches
    the pages use). None when this Streamlit has no such method: scripts/serve.py then does not read ahead
    at start (RUNTIME.fallback)."""
    try:
        from streamlit.runtime import Runtime

        exists = Runtime.exists
    except (ImportError, AttributeError) as exc:
        return RUNTIME.fall_back(exc)
    return RUNTIME.private(exists)


def pages_manager() -> Optional[type]:
    """``streamlit.runtime.pages_manager.PagesManager``, whose class attribute ``uses_pages_directory`` keeps
    the v1 mode (a folder named pages/ is a list of stand-alone pages) until st.navigation is called. None
    when this Streamlit has no such class or attribute: ui.base.page._through_app then leaves the mode as it
    is (PAGES_MANAGER.fallback)."""
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError as exc:
        return PAGES_MANAGER.fall_back(exc)
    if not hasattr(PagesManager, "uses_pages_directory"):
        return PAGES_MANAGER.fall_back("PagesManager has no uses_pages_directory")
    return PAGES_MANAGER.private(PagesManager)


def script_run_ctx() -> Optional[Callable[..., object]]:
    """``streamlit.runtime.scriptrunner.get_script_run_ctx``: called as ``(suppress_warning=True)``, the
    context of the page's run on this thread, None off a page's run. None when this Streamlit has no such
    function: ui.access.signin then treats every thread as a page's run (SCRIPT_RUN_CTX.fallback)."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx
    except ImportError as exc:
        return SCRIPT_RUN_CTX.fall_back(exc)
    return SCRIPT_RUN_CTX.private(get_script_run_ctx)


def static_js_folder() -> Path:
    """Where Streamlit's build keeps its JavaScript (the files its index.html loads)."""
    import streamlit

    return Path(streamlit.__file__).parent / "static" / "static" / "js"


def static_js_files(stems: tuple) -> tuple:
    """The file names of Streamlit's built JavaScript modules named ``stems`` ("DataFrame", "BidiComponent"),
    hashed as ``<stem>.<hash>.js`` in ``static_js_folder()``, each stem's found when there is exactly one
    (in order). A stem with none, or with several, is left out, and recorded as the fallback: the browser
    gets no hint for it (STATIC_JS.fallback)."""
    folder = static_js_folder()
    found = [sorted(folder.glob(f"{stem}.*.js")) for stem in stems]
    names = tuple(files[0].name for files in found if len(files) == 1)
    if not folder.is_dir() or len(names) < len(stems):
        missing = [stem for stem, files in zip(stems, found) if len(files) != 1]
        return STATIC_JS.fall_back(f"no single file for {', '.join(missing)} in {folder}", names)
    return STATIC_JS.private(names)


def missing_context_logger() -> Optional[logging.Logger]:
    """The logger of Streamlit's module that warns of a "missing ScriptRunContext" (a cached read made off a
    page's run), checked to be the logger that module writes to. None when that module is gone or logs
    elsewhere: ui.views.read_ahead then filters nothing (MISSING_CONTEXT_LOG.fallback)."""
    try:
        module = importlib.import_module(MISSING_CONTEXT_LOGGER)
    except ImportError as exc:
        return MISSING_CONTEXT_LOG.fall_back(exc)
    writes_to = getattr(getattr(module, "_LOGGER", None), "name", None)
    if writes_to != MISSING_CONTEXT_LOGGER:
        return MISSING_CONTEXT_LOG.fall_back(f"{MISSING_CONTEXT_LOGGER} logs to {writes_to!r}")
    return MISSING_CONTEXT_LOG.private(logging.getLogger(MISSING_CONTEXT_LOGGER))


def authlib_installed() -> bool:
    """Whether Authlib, which st.login needs, is installed: ``streamlit.auth_util.is_authlib_installed()``
    (Streamlit's own check, a version it supports). Without that function: whether any Authlib is installed
    (AUTHLIB.fallback)."""
    try:
        from streamlit.auth_util import is_authlib_installed
    except ImportError as exc:
        return AUTHLIB.fall_back(exc, importlib.util.find_spec("authlib") is not None)
    return AUTHLIB.private(bool(is_authlib_installed()))


def drawing_modules() -> tuple:
    """The Streamlit modules its first table or chart imports (``DRAWING_MODULES``, for scripts/serve.py's
    warm-up), those this Streamlit has: one that is gone is left out (DRAWING.fallback)."""
    found = tuple(name for name in DRAWING_MODULES if _module_exists(name))
    if len(found) < len(DRAWING_MODULES):
        return DRAWING.fall_back(f"no module {', '.join(sorted(set(DRAWING_MODULES) - set(found)))}", found)
    return DRAWING.private(found)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # its package is gone too
        return False


def streamlit_cli_main() -> Callable[..., object]:
    """Streamlit's command line, ``streamlit.web.cli.main``: the ``streamlit`` command's entry point, called as
    ``(prog_name="streamlit")`` with the command in ``sys.argv``; it imports the server, so scripts/serve.py
    calls this once the worker is started. Without it: a function that runs ``python -m streamlit`` in this
    process instead, with the same ``sys.argv`` (STREAMLIT_CLI.fallback)."""
    try:
        from streamlit.web.cli import main
    except ImportError as exc:
        return STREAMLIT_CLI.fall_back(exc, python_m_streamlit)
    return STREAMLIT_CLI.private(main)


def python_m_streamlit(prog_name: str = "streamlit") -> None:
    """``python -m streamlit`` with this process's ``sys.argv``: Streamlit's own ``__main__`` module, which
    calls its command line by the name ``streamlit`` whatever ``prog_name`` says (the fallback of
    ``streamlit_cli_main``)."""
    import runpy

    runpy.run_module("streamlit", run_name="__main__")
