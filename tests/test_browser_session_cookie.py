"""The sign-in cookie in a real browser (issue 39, item 4): it is set by the server (server.py's routes,
ui.access.session_cookie), so the page's scripts cannot read it (HttpOnly), and it is SameSite=Strict; it
keeps the person signed in across reloads and new tabs; logging out clears it, and a copy of it kept from
before is refused. (The routes themselves: test_session_cookie.py.)"""

from __future__ import annotations

import time

import pytest

from db import init_db
from tests.browser import start_app, stop_app, wait_for_app

pytestmark = pytest.mark.browser
PASSWORD = "correct horse"
COOKIE = "pluie_admin"


def session_cookie(context) -> dict | None:
    return next((c for c in context.cookies() if c["name"] == COOKIE), None)


def wait_for_cookie(context, present: bool, timeout: float = 20.0) -> dict | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = session_cookie(context)
        if (found is not None) == present:
            return found
        time.sleep(0.2)
    raise AssertionError(f"the browser's {COOKIE} cookie was {'never set' if present else 'never cleared'}")


def signed_in(page) -> bool:
    """The page is drawn for a signed-in person (the sidebar's Log out), with no sign-in form."""
    page.get_by_role("button", name="Log out").wait_for(timeout=30_000)
    wait_for_app(page)
    return page.get_by_label("Password", exact=True).count() == 0


def asked_to_sign_in(page) -> bool:
    page.get_by_label("Password", exact=True).wait_for(timeout=30_000)
    wait_for_app(page)
    return page.get_by_role("button", name="Log out").count() == 0


def test_the_cookie_is_the_servers_and_the_scripts_cannot_read_it(tmp_path, browser, migrated_copy):
    db_url = migrated_copy(f"sqlite:///{tmp_path / 'store.db'}")
    init_db(db_url).dispose()
    server = start_app(
        db_url,
        tmp_path / "streamlit.log",
        extra_env={"PLUIE_ADMIN_PASSWORD": PASSWORD, "PLUIE_DATA_DIR": str(tmp_path)},
    )
    try:
        first = browser.new_context()
        page = first.new_page()
        page.goto(f"{server.url}/import_pairs")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        page.get_by_role("button", name="Sign in").click()
        cookie = wait_for_cookie(first, present=True)
        assert signed_in(page) and page.url == f"{server.url}/import_pairs"  # back on the page asked for
        assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["secure"] is False
        assert cookie["path"] == "/" and 11.9 * 3600 < cookie["expires"] - time.time() <= 12 * 3600
        seen_by_scripts = page.evaluate("() => document.cookie")
        assert COOKIE not in seen_by_scripts and cookie["value"] not in seen_by_scripts

        page.reload()  # the websocket handshake carries the HttpOnly cookie: still signed in
        assert signed_in(page)
        tab = first.new_page()
        tab.goto(f"{server.url}/campaigns")
        assert signed_in(tab)

        page.get_by_role("button", name="Log out").click()
        assert asked_to_sign_in(page)
        wait_for_cookie(first, present=False)
        tab.reload()
        assert asked_to_sign_in(tab)

        replayed = browser.new_context()  # a copy of the cookie kept from before the log-out
        replayed.add_cookies([{"name": COOKIE, "value": cookie["value"], "url": server.url}])
        stranger = replayed.new_page()
        stranger.goto(f"{server.url}/import_pairs")
        assert asked_to_sign_in(stranger)
    finally:
        stop_app(server)
