"""Start PLUIE Lab as `make run` does: the scoring worker first, then the Streamlit server of app.py
(served through server.py, whose routes set the sign-in cookie HttpOnly: ui.access.session_cookie) in this
same process, so the worker scores from the start (no browser needed) and stops with it.

    python scripts/serve.py [streamlit options, e.g. --server.port 8501]

The worker is the one ensure_worker_running starts (none with PLUIE_NO_WORKER=1, none when one is
alive on the store); app.py's own call then finds it and starts no second one. Its parent is this
process, the server: when the server stops, the worker finishes its batch and exits.
`streamlit run app.py` still works; the worker then starts with the first page a browser opens, and a
sign-in lasts the browser tab (no cookie routes).

Safe by default: with no admin password configured (lab.auth), the server listens on this
machine only (localhost), since anyone who reaches it could use the admin pages, and says so at
start. Set an admin password to listen on every interface, or name the address yourself
(`--server.address 0.0.0.0`, STREAMLIT_SERVER_ADDRESS, or `address` under [server] in
.streamlit/config.toml) to open it without one.
On a fresh store, the first start also creates a PLUIE run on the demonstration judge (SmolLM2-135M,
installed by `make run`; db.runs.ensure_first_start_runs), so PLUIE scores appear beside the
baselines with nobody typing a model id; PLUIE_DEMO_RUN=0 leaves it out (the tests do).

Warm start: right before Streamlit starts, a thread imports what app.py and its pages import
(scipy.stats, sklearn.metrics, pandas, sqlalchemy, the charting library, pyarrow for the tables...,
torch for the GPU reading: about 3.5 s on 2 cores), so the first person to open a page does not
wait for them (bench/pages.py); then, once Streamlit's runtime is up, the same thread reads what the
pages draw first from the store (read_ahead_at_start: about 5 s at 100,000 pairs, 35 s at 1,000,000),
and says so ("the pages' first figures are read").
"""

from __future__ import annotations

import ast
import gc
import importlib
import logging
import os
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


LOCAL_ONLY = "localhost"


def listening_options(argv: list[str]) -> tuple[list[str], str | None]:
    """Streamlit's options for this start and what to tell the person who started it: without an
    admin password, without an account in the store (either means signing in) and without an address
    of their own choosing, listen on localhost only."""
    from lab.auth import admin_password_configured

    if admin_password_configured() or _address_chosen(argv) or _accounts_in_force():
        return argv, None
    port = _option(argv, "--server.port") or "8501"
    return [*argv, "--server.address", LOCAL_ONLY], (
        f"serve: no admin password is set, so PLUIE Lab listens on this machine only: http://localhost:{port}. "
        "To open it to the network, set PLUIE_ADMIN_PASSWORD (or PLUIE_ADMIN_PASSWORD_HASH), or add an owner "
        "account (python -m db accounts add NAME --role owner --password-stdin), and start again; "
        "to open it without a password, pass --server.address 0.0.0.0 (e.g. make run ARGS='--server.address 0.0.0.0')."
    )


def _accounts_in_force() -> bool:
    """Whether the store has an active account, so that every visitor signs in; False when there is no
    store yet or it cannot be read (then the safe answer: this machine only)."""
    from sqlalchemy.engine import make_url

    from db import database_url, init_db
    from db.accounts import accounts_in_force

    try:
        url = make_url(database_url())
        if url.get_backend_name() == "sqlite" and not Path(url.database or "").is_file():
            return False  # not made here: a new store has no account
        engine = init_db(url.render_as_string(hide_password=False))
        try:
            return accounts_in_force(engine)
        finally:
            engine.dispose()
    except Exception:  # noqa: BLE001 - the pages say what is wrong with the store, in their words
        return False


def _option(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def _address_chosen(argv: list[str]) -> bool:
    import os
    import tomllib

    if _option(argv, "--server.address") is not None or os.environ.get("STREAMLIT_SERVER_ADDRESS"):
        return True
    for config in (Path.home() / ".streamlit" / "config.toml", Path.cwd() / ".streamlit" / "config.toml"):
        try:
            with config.open("rb") as fh:
                if tomllib.load(fh).get("server", {}).get("address"):
                    return True
        except (OSError, tomllib.TOMLDecodeError):
            pass
    return False


# what Streamlit itself imports on a page's first table or chart, beside what the pages name; torch,
# which app.py's reading of the GPUs (ui.forms.run_forms.read_hardware, on a thread of its own) imports with
# the first page where a GPU driver is (lab.hardware.gpu_driver_present): 1.5 s on an idle machine,
# taken from that page while it drew (Datasets, first visit: 5.4 s, bench/pages.py)
# streamlit.emojis: what set_page_config imports to check the page icon (☔), a regular expression of every
# emoji compiled as it loads: 0.3 s of the first page's run (bench/pages.py)
# Streamlit's own modules among them are its internals: ui.base.private_api.drawing_modules (DRAWING_MODULES
# there), those this Streamlit has, between these two.
DRAWING_MODULES = ("pyarrow", "torch")
# what the statistics import inside the functions that compute (pluie_core.stats, so that a worker or a test
# server does not pay 1-2 s for them at start), which the analysis pages' first figures need: warmed too
STATISTICS_MODULES = ("scipy.stats", "sklearn.metrics")


WARMED_UP = "serve: the pages' modules are loaded"
READ_AHEAD = "serve: the pages' first figures are read"  # bench/pages.py waits for this line


def page_imports(repo: Path = REPO) -> list[str]:
    """The modules app.py and pages/*.py import (read from their source, so a page's new import is
    warmed with no list to keep in step), then the ones Streamlit imports to draw (DRAWING_MODULES, with
    Streamlit's own: ui.base.private_api.drawing_modules) and those the statistics import where they compute
    (STATISTICS_MODULES)."""
    from ui.base.private_api import drawing_modules

    found: dict[str, None] = {}
    for path in [repo / "app.py", *sorted((repo / "pages").glob("*.py"))]:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(dict.fromkeys(alias.name for alias in node.names))
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found[node.module] = None
                folder = repo.joinpath(*node.module.split("."))  # `from db import review`: a module of ours
                found.update(
                    dict.fromkeys(
                        f"{node.module}.{alias.name}" for alias in node.names if (folder / f"{alias.name}.py").exists()
                    )
                )
    first, *rest = DRAWING_MODULES
    found.update(dict.fromkeys([first, *drawing_modules(), *rest, *STATISTICS_MODULES]))
    return [name for name in found if name != "streamlit"]


WARM_UP_THREAD = "pluie-warm-up"
NO_RUNTIME = "No runtime found"  # streamlit.runtime.caching.cache_data_api, as a decorator is applied


class QuietWarmUp(logging.Filter):
    """Streamlit checks an st.cache_data's options as the decorator is applied and, before its runtime
    exists (the warm-up imports the pages while Streamlit starts), logs "No runtime found, using
    MemoryCacheStorageManager" for each one: a warning in the console of every `make run` that means
    nothing here (the caches themselves are made at their first call, in the runtime's storage). Dropped
    when it comes from the warm-up thread; everything else passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.threadName == WARM_UP_THREAD and record.getMessage().startswith(NO_RUNTIME))


def warm_up(modules: list[str]) -> threading.Thread:
    """Import `modules` on a background thread (the first page's run finds them loaded, or waits
    only for the rest); one that cannot be imported is left to the page that needs it to report.
    Then read what the pages draw first (read_ahead_at_start)."""
    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")  # the one Streamlit logs with
    if not any(isinstance(f, QuietWarmUp) for f in cache_log.filters):
        cache_log.addFilter(QuietWarmUp())

    def load() -> None:
        started = time.monotonic()
        for name in modules:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the page that imports it says what is wrong
                pass
        print(f"{WARMED_UP} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)
        read_ahead_at_start()
        # what is loaded now (the modules, mostly, for the server's life) is left out of the garbage collector's
        # full passes, which otherwise walk its ~400,000 objects each time (0.2-0.4 s holding the GIL, every
        # session's messages waiting: bench/results/2026-11-26-pages.md); a frozen object is still freed when
        # nothing refers to it any more (a first figure its cache replaces), only not searched for cycles
        gc.freeze()

    thread = threading.Thread(target=load, name=WARM_UP_THREAD, daemon=True)
    thread.start()
    return thread


def read_ahead_at_start(timeout: float = 60.0) -> None:
    """Once Streamlit's runtime is up (its caches are the pages'), read the pages' first figures from the
    store (ui.views.read_ahead.read_ahead: the Datasets page's counts, the analysis pages' default views;
    about 5 s at 100,000 pairs and 300,000 labels, 35 s at 1,000,000, on a thread at a lower priority), so
    that the first person to open a page finds them instead of waiting, or sharing the 2 cores with that
    reading, while their page draws. A store that cannot be read is left to the pages to report, but
    whatever stops the read-ahead itself (a broken import, a bug) is logged as a warning with its
    traceback, and the server stays up. Without Streamlit's ``Runtime.exists`` (ui.base.private_api.runtime_exists)
    it reads nothing: the read-ahead then starts after the first admin page."""
    from ui.base.private_api import runtime_exists

    exists = runtime_exists()
    if exists is None:
        return
    started = time.monotonic()
    while not exists():
        if time.monotonic() - started > timeout:
            return
        time.sleep(0.1)
    try:
        from ui.views.read_ahead import read_ahead_once

        read_ahead_once().join()
    except Exception:  # noqa: BLE001 - the server stays up; the pages read on their own
        logging.getLogger("pluie_lab.serve").warning(
            "the read-ahead at start failed: the pages read their figures when they are opened", exc_info=True
        )
        return
    print(f"{READ_AHEAD} in {time.monotonic() - started:.1f} s", file=sys.stderr, flush=True)


def demo_run_wanted() -> bool:
    return os.environ.get("PLUIE_DEMO_RUN", "").strip().lower() not in ("0", "false", "no")


def main(argv: list[str]) -> int:
    from worker_launch import ensure_worker_running

    try:
        ensure_worker_running(demo_run=demo_run_wanted())  # the first start's runs, then the worker
    except Exception as exc:  # the store cannot be opened: say so; the app shows the same on its pages
        print(f"serve: no scoring worker started: {str(exc).strip().splitlines()[0]}", file=sys.stderr)
    from ui.base.private_api import streamlit_cli_main

    streamlit_main = streamlit_cli_main()  # streamlit.web.cli.main, after the worker's start: it loads while this does

    argv, notice = listening_options(argv)
    if notice:
        print(notice, file=sys.stderr, flush=True)
    sys.argv = ["streamlit", "run", str(REPO / "server.py"), *argv]  # app.py, with the cookie's routes
    warm_up(page_imports())
    return streamlit_main(prog_name="streamlit")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
