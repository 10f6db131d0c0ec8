"""A team setting itself up, in a real browser (issue 39): the owner signs in, adds a viewer and a reviewer on
Team › Accounts and hands over each invitation link (shown once); the viewer sets a password through it, signs
in, sees only the reading pages and is refused Import by its address; the owner makes them an organiser, which
ends their session, and once signed in again Import is theirs."""

from __future__ import annotations

import pytest

from db import init_db
from db.accounts import add_account, list_accounts
from lab.auth import ADMIN_COOKIE
from lab.roles import ROLE_HELP
from tests.browser import ARTIFACTS, choose_option, start_app, stop_app, wait_for_app, wait_for_shown_text

pytestmark = pytest.mark.browser
READING = ("Datasets", "Pairs", "Agreement", "Distributions", "Correlation")
ORGANISING = ("Import", "Export", "Scoring", "Campaigns")


def sign_in(page, url: str, name: str, password: str) -> None:
    page.goto(url)
    page.get_by_label("Account", exact=True).fill(name)
    page.get_by_label("Password", exact=True).fill(password)
    before = session_cookie(page)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("button", name="Log out").wait_for(timeout=30_000)
    # the page then sends the browser through /_pluie/session, which sets a new cookie and comes back: a
    # page.goto before that way back ends is aborted by it (net::ERR_ABORTED), so wait for the new cookie
    for _ in range(300):
        if session_cookie(page) not in (None, before):
            break
        page.wait_for_timeout(100)
    page.wait_for_load_state("load")
    page.get_by_role("button", name="Log out").wait_for(timeout=30_000)
    wait_for_app(page)


def session_cookie(page):
    return next((c["value"] for c in page.context.cookies() if c["name"] == ADMIN_COOKIE), None)


def menu(page) -> set[str]:
    # each link reads "<icon name>\n\n<title>": the title is its last line. The menu is drawn by the run
    # after the one that said who is signed in: on a loaded machine, wait for it
    page.locator("[data-testid='stSidebar'] a").first.wait_for(timeout=30_000)
    wait_for_app(page)
    return {text.strip().splitlines()[-1] for text in page.locator("[data-testid='stSidebar'] a").all_inner_texts()}


def add_person(page, name: str, role: str) -> str:
    """Add ``name`` with ``role`` on the Accounts page; the invitation link it shows (once)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wait_for_app(page)
    page.get_by_label("Name (what they sign in with)").fill(name)
    choose_option(page, page.get_by_role("combobox", name="Role").first, f"{role}: {ROLE_HELP[role]}")
    for attempt in range(3):  # a click lost while the page redraws: again (the form adds once per filling)
        page.get_by_role("button", name="Add and make an invitation link").click()
        try:
            wait_for_shown_text(page, f"Copy the invitation link of {name} now", timeout=15_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            wait_for_app(page)
    link = page.locator("[data-testid='stCode'] code").first.inner_text().strip()
    assert "/?invite=" in link and link.startswith(page.url.split("/accounts")[0]), link
    token = link.split("=", 1)[1]
    for attempt in range(3):  # a click that lands while the page redraws (a loaded machine) is lost: again
        copied = page.get_by_role("button", name="I have copied it")
        if copied.count():
            copied.click()
        try:  # shown once: the link leaves the page (the store keeps only its hash)
            page.wait_for_function("t => !document.body.innerText.includes(t)", arg=token, timeout=15_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
        wait_for_app(page)
    wait_for_app(page)
    return link


def change_role(page, attempts: int = 3) -> None:
    """Make vic an organiser on the Accounts page and wait for its sentence. On a loaded machine a choice or
    a click that lands while the page redraws is lost (the Role box then shows vic's role again), so choose
    and click again (setting the same role twice says the same)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    wanted = f"organiser: {ROLE_HELP['organiser']}"
    for attempt in range(attempts):
        wait_for_app(page)
        role = page.get_by_role("combobox", name="Role").last
        if role.input_value() != wanted:
            choose_option(page, role, wanted)
        page.get_by_role("button", name="Change role").click()
        try:
            wait_for_shown_text(page, "The role of vic is now organiser; their sessions ended.", timeout=15_000)
            return
        except PlaywrightTimeout:
            if attempt == attempts - 1:
                page.screenshot(path=str(ARTIFACTS / "team-change-role.png"), full_page=True)
                raise


def test_an_owner_invites_a_viewer_who_reads_only_until_made_an_organiser(tmp_path, browser, migrated_copy):
    db_url = migrated_copy(f"sqlite:///{tmp_path / 'store.db'}")
    engine = init_db(db_url)
    add_account(engine, "olive", "owner", password="olive's long password")
    engine.dispose()
    server = start_app(db_url, tmp_path / "streamlit.log", extra_env={"PLUIE_DATA_DIR": str(tmp_path)})
    try:
        owner = browser.new_context().new_page()
        sign_in(owner, f"{server.url}/accounts", "olive", "olive's long password")
        wait_for_shown_text(owner, "Signed in as olive (owner)")
        link = add_person(owner, "vic", "viewer")
        rita_link = add_person(owner, "rita", "reviewer")
        assert rita_link != link
        with_engine = init_db(db_url)  # the store: both, with their roles, their invitations waiting
        try:
            waiting = {p.name: (p.role, p.invite_expires_at is not None) for p in list_accounts(with_engine)}
        finally:
            with_engine.dispose()
        assert waiting == {"olive": ("owner", False), "vic": ("viewer", True), "rita": ("reviewer", True)}
        body = owner.inner_text("body")
        assert link.split("=", 1)[1] not in body and rita_link.split("=", 1)[1] not in body  # each shown once

        vic = browser.new_context().new_page()  # vic's own browser
        vic.goto(link)
        wait_for_shown_text(vic, "This invitation is for the account vic")
        vic.get_by_label("Password", exact=True).fill("vic's own password")
        vic.get_by_label("The same password again").fill("vic's own password")
        vic.get_by_role("button", name="Set my password").click()
        wait_for_shown_text(vic, "Your password is set: sign in as vic.")
        sign_in(vic, server.url, "vic", "vic's own password")
        wait_for_shown_text(vic, "Signed in as vic (viewer)")
        seen = menu(vic)
        assert set(READING) <= seen and not seen & {*ORGANISING, "Review", "Accounts"}, seen
        vic.goto(f"{server.url}/import_pairs")  # a shared address of a page the role may not open
        wait_for_shown_text(vic, "Your role (viewer) cannot open Import: ask an owner.")
        assert vic.get_by_text("Pair file", exact=True).count() == 0  # no import form

        owner.reload()
        wait_for_app(owner)
        choose_option(owner, owner.get_by_role("combobox", name="Account"), "vic (viewer)")
        change_role(owner)

        vic.goto(f"{server.url}/import_pairs")  # the role change ended vic's sign-in, cookie and all
        vic.get_by_label("Password", exact=True).wait_for(timeout=30_000)
        assert vic.get_by_role("button", name="Log out").count() == 0
        wait_for_shown_text(vic, "Your sign-in on this browser has ended (a changed role")  # said (issue 56, item 8)
        sign_in(vic, f"{server.url}/import_pairs", "vic", "vic's own password")
        wait_for_shown_text(vic, "Signed in as vic (organiser)")
        assert set(ORGANISING) <= menu(vic)
        assert "cannot open Import" not in vic.inner_text("body")
    finally:
        stop_app(server)
