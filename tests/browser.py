"""Real-browser test helpers: a Streamlit server on a free loopback port against a given store,
and headless Chromium driven by Playwright (Debian's /usr/bin/chromium, never a downloaded one).

The fixtures `app_server` and `browser` are registered for every test by conftest.py
(pytest_plugins), so one Playwright instance serves the whole session:

    @pytest.mark.browser
    def test_something(app_server, browser):
        page = browser.new_page()
        page.goto(app_server.url)
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO
from tests.preloaded import preloaded

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = REPO / "test-artifacts"


# Servers started by the test suite are children of a parent that has imported these once (tests/preloaded.py;
# conftest.py sets PRELOADED_SERVERS): about 2 s of a server's start, and its first page's imports. A benchmark
# (bench/pages.py) starts them as a person does. The project's own modules are never preloaded.
PRELOADED_SERVERS = False
APP_LIBRARIES = (
    "streamlit",
    "streamlit.web.cli",
    "streamlit.web.bootstrap",
    "streamlit.web.server.server",
    "streamlit.runtime.app_session",
    "streamlit.elements.plotly_chart",
    "streamlit.components.v2",
    "numpy",
    "pandas",
    "pyarrow",
    "scipy.stats",
    "scipy.optimize",
    "scipy.spatial",
    "sqlalchemy",
    "sqlalchemy.orm",
    "sqlalchemy.dialects.sqlite",
    "alembic",
    "alembic.command",
    "alembic.config",
    "alembic.runtime.migration",
    "starlette",
    "uvicorn",
    "huggingface_hub",
    "krippendorff",
    "plotly",
    "bcrypt",
    "yaml",
    "PIL",
    "tqdm",
    "narwhals",
    "fastapi",  # server.py's API (api/app.py)
    "pydantic",
)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class AppServer:
    url: str
    db_url: str
    process: subprocess.Popen  # or a tests.preloaded.PreloadedProcess (its poll, wait, send_signal, pid)
    log: Path


def start_app(
    db_url: str,
    log: Path,
    extra_env: dict | None = None,
    timeout: float = 60,
    app: Path = REPO / "app.py",
    like_make_run: bool = False,
    address: str | None = "127.0.0.1",
) -> AppServer:
    """``like_make_run``: start it as `make run` does (scripts/serve.py beside ``app``: Streamlit in
    the launcher's process, after its warm-up thread has started), without the demo run. Otherwise
    through server.py when there is one beside ``app`` (app.py with the sign-in cookie's routes, as
    `make run` serves it), else ``app`` itself. ``address``: where it listens; None names none, so that it
    listens on every interface as `make run` with a password does (Streamlit binds "::", and a browser on
    127.0.0.1 then reaches it as the IPv4-mapped ::ffff:127.0.0.1); the browser is sent to 127.0.0.1."""
    port = free_port()
    env = {**os.environ, "PLUIE_DB_URL": db_url, "PLUIE_NO_WORKER": "1", **(extra_env or {})}
    served = app.parent / "server.py" if app.name == "app.py" and (app.parent / "server.py").exists() else app
    launcher = [sys.executable, "-m", "streamlit", "run", str(served)]
    if like_make_run and (app.parent / "scripts" / "serve.py").exists():
        launcher = [sys.executable, str(app.parent / "scripts" / "serve.py")]
        env["PLUIE_DEMO_RUN"] = "0"
    options = [
        "--server.headless",
        "true",
        *(["--server.address", address] if address else []),
        "--server.port",
        str(port),
        "--browser.gatherUsageStats",
        "false",
    ]
    if PRELOADED_SERVERS and launcher[1] == "-m":
        # in the test suite: a child of the test process's preloaded parent (tests/preloaded.py), which has
        # imported Streamlit and the libraries the pages use once, instead of a new interpreter importing them
        log.write_bytes(b"")
        process = preloaded(APP_LIBRARIES).start([*launcher[1:], *options], cwd=app.parent, env=env, log=log)
    else:
        process = subprocess.Popen(
            [*launcher, *options], cwd=app.parent, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"streamlit exited early:\n{log.read_text()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return AppServer(url, db_url, process, log)
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"streamlit did not start in {timeout}s:\n{log.read_text()}")


def stop_app(server: AppServer) -> None:
    """Stop the server. Its graceful shutdown waits on the sessions of browser tabs (seconds, each
    test); nothing is asked of it afterwards (no worker, SQLite commits are durable), so it gets a
    moment and is then killed."""
    server.process.terminate()
    try:
        server.process.wait(timeout=1)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)


@pytest.fixture
def app_server(db_url, tmp_path, migrated_copy):
    """The app on a free port, against the test's own SQLite file (PLUIE_NO_WORKER=1): a copy of the session's
    migrated store."""
    from db import init_db

    init_db(migrated_copy(db_url)).dispose()
    server = start_app(db_url, tmp_path / "streamlit.log")
    yield server
    stop_app(server)


@pytest.fixture(scope="session")
def chromium():
    """One headless Chromium for the session (tests use `browser`)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.fail("headless Chromium is missing: apt-get install chromium chromium-driver (make test does it)")
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def browser(chromium):
    """The session's Chromium; the tabs and contexts a test opens are closed after it (left open,
    each kept reconnecting to its test's stopped server for the rest of the session)."""
    yield chromium
    for context in chromium.contexts:
        context.close()


# Streamlit has finished running the page's script: no running icon, the main area drawn, the script state
APP_IDLE = (
    '!document.querySelector(\'[data-testid="stStatusWidget"] [data-testid="stStatusWidgetRunningIcon"]\')'
    " && document.querySelector('[data-testid=\"stMain\"]') !== null"
    " && document.querySelector('[data-testid=\"stApp\"]').getAttribute('data-test-script-state') === 'notRunning'"
)


def wait_for_app(page, timeout: float = 30_000) -> None:
    """Wait until Streamlit has finished running the script for the current page. The status widget's
    running icon shows only a moment into a run, so the app's own script state is read too: without it,
    a wait right after a click could return while the run it started was still drawing (a download
    clicked then came from the run before)."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout)
    page.wait_for_function(f"() => {APP_IDLE}", timeout=timeout)


def wait_for_settled_app(page, quiet_ms: float = 750, timeout: float = 30_000) -> None:
    """wait_for_app, and then no run for ``quiet_ms``: the first page a server is asked for runs its script
    twice (Streamlit runs pages/<page>.py on its own until app.py has called st.navigation once, and
    ui.base.page._through_app runs the same address again through the app; the second run starts about
    0.1 s after the first ends), and wait_for_app can return in between. A form filled during that second
    run loses what was picked when the run redraws it."""
    wait_for_app(page, timeout)
    page.evaluate("window.__pluieBusyAt = performance.now()")
    page.wait_for_function(
        f"""(quiet) => {{
          const now = performance.now();
          if (!({APP_IDLE})) {{ window.__pluieBusyAt = now; return false; }}
          return now - window.__pluieBusyAt >= quiet;
        }}""",
        arg=quiet_ms,
        polling=50,
        timeout=timeout,
    )


def choose_option(page, combobox, option: str, attempts: int = 5) -> None:
    """Open a Streamlit selectbox (a locator of its combobox) and pick ``option``. A click that lands
    while the page redraws leaves the list closed or detaches it: open it again, a few times."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(attempts):
        wait_for_app(page)
        combobox.click()
        try:
            page.get_by_role("option", name=option, exact=True).click(timeout=6_000)
            break
        except PlaywrightTimeout:
            page.keyboard.press("Escape")
    else:
        raise AssertionError(f"the list never offered {option!r}")
    wait_for_app(page)


def open_popover(page, name: str, attempts: int = 5):
    """Click the popover button called ``name`` and return the popover's body once it shows. A click that
    lands while the page redraws (a fresh server's first page runs twice) can be lost, or the popover drawn
    again closed: look again once the page is still, and click only while the body is not shown."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    body = page.locator("[data-testid='stPopoverBody']")
    for _ in range(attempts):
        wait_for_settled_app(page)
        if not body.is_visible():
            page.get_by_role("button", name=name).click()
        try:
            body.wait_for(state="visible", timeout=6_000)
            return body
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the popover {name!r} never opened")


def wait_for_shown_text(page, text: str, timeout: float = 30_000) -> None:
    """Wait until the page shows ``text`` as a person reads it: the invisible word joiners (U+2060)
    that ui.base.page.user_text puts after "http", "@" and the like are left out of the comparison."""
    page.wait_for_function(
        "t => document.body.innerText.replace(/\\u2060/g, '').includes(t)", arg=text, timeout=timeout
    )
