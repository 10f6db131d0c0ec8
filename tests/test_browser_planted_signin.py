"""A planted sign-in link (issue 56, item 2), through real HTTP against the server `make run` serves
(server.py): a person who stops their own sign-in redirect and keeps the /_pluie/session?grant=... link cannot
sign someone else in as themselves with it (login CSRF): the grant is good only in the browser that signed in.
And a browser signed in as one account is never switched to another by the route: it stays signed in, and the
page says why. (The route and its nonce on their own: test_session_cookie.py.)"""

from __future__ import annotations

import time

import pytest

from db import init_db
from db.accounts import add_account
from tests.browser import start_app, stop_app, wait_for_app, wait_for_shown_text
from tests.test_browser_session_cookie import asked_to_sign_in, session_cookie, signed_in, wait_for_cookie

pytestmark = pytest.mark.browser
MALLORY, VICTOR = ("mallory", "mallory's long password"), ("victor", "victor's long password")


def fill_sign_in(page, account: tuple[str, str]) -> None:
    page.get_by_label("Account", exact=True).wait_for(timeout=30_000)
    wait_for_app(page)
    page.get_by_label("Account", exact=True).fill(account[0])
    page.get_by_label("Password", exact=True).fill(account[1])
    page.get_by_role("button", name="Sign in", exact=True).click()


def stopped_grant_link(browser, url: str) -> str:
    """Sign in as mallory in a browser of mallory's, stop the redirect to the cookie's route and keep its link."""
    context = browser.new_context()
    page = context.new_page()
    kept: list[str] = []

    def stop(route):
        kept.append(route.request.url)
        route.abort()

    page.route("**/_pluie/session*", stop)
    page.goto(f"{url}/pairs")
    fill_sign_in(page, MALLORY)
    deadline = time.monotonic() + 30
    while not kept and time.monotonic() < deadline:
        page.wait_for_timeout(200)
    assert kept and "/_pluie/session?grant=" in kept[0], kept
    assert session_cookie(context) is None  # mallory's own browser never got the cookie
    return kept[0]


@pytest.fixture
def two_people(tmp_path, migrated_copy):
    db_url = migrated_copy(f"sqlite:///{tmp_path / 'store.db'}")
    engine = init_db(db_url)
    add_account(engine, MALLORY[0], "organiser", password=MALLORY[1])
    add_account(engine, VICTOR[0], "viewer", password=VICTOR[1])
    engine.dispose()
    # started as `make run` starts it with accounts (scripts/serve.py, server.py, every interface)
    server = start_app(
        db_url,
        tmp_path / "streamlit.log",
        extra_env={"PLUIE_DATA_DIR": str(tmp_path)},
        like_make_run=True,
        address=None,
    )
    yield server
    stop_app(server)


def test_a_stopped_sign_in_link_signs_nobody_else_in(two_people, browser):
    url = two_people.url
    stranger = browser.new_context()  # nobody signed in: the link is opened within the minute
    page = stranger.new_page()
    page.goto(f"{url}/pairs")
    assert asked_to_sign_in(page)
    page.goto(stopped_grant_link(browser, url))
    assert asked_to_sign_in(page) and session_cookie(stranger) is None
    assert "mallory" not in page.inner_text("body")

    victim = browser.new_context()  # victor, signed in: stays victor
    page = victim.new_page()
    page.goto(f"{url}/pairs")
    fill_sign_in(page, VICTOR)
    before = wait_for_cookie(victim, present=True)["value"]
    assert signed_in(page)
    wait_for_shown_text(page, "Signed in as victor (viewer)")
    page.goto(stopped_grant_link(browser, url))
    assert signed_in(page)
    wait_for_shown_text(page, "Signed in as victor (viewer)")
    assert session_cookie(victim)["value"] == before and "mallory" not in page.inner_text("body")


def test_a_second_sign_in_in_the_same_browser_does_not_switch_accounts(two_people, browser):
    url = two_people.url
    context = browser.new_context()
    first = context.new_page()
    first.goto(f"{url}/pairs")  # a tab asking to sign in, opened before the other tab signs in
    assert asked_to_sign_in(first)
    second = context.new_page()
    second.goto(f"{url}/pairs")
    fill_sign_in(second, VICTOR)
    victors = wait_for_cookie(context, present=True)["value"]
    assert signed_in(second)

    fill_sign_in(first, MALLORY)  # the first tab's form, still drawn: another account
    wait_for_shown_text(first, "This browser is already signed in as victor, so the other sign-in was not used")
    wait_for_shown_text(first, "Signed in as victor (viewer)")
    assert session_cookie(context)["value"] == victors
    assert "pluie_signin" not in first.url  # said once: a reload does not say it again
    first.reload()
    assert signed_in(first) and "already signed in" not in first.inner_text("body")
