"""The pages' guard in a real browser (issue 19, item 3): a page that fails unexpectedly (here a store damaged
by hand after the server started: its datasets table renamed away) shows one sentence and the app's menu,
never a stack trace, and the server's log holds the traceback; other pages still work."""

from __future__ import annotations

import sqlite3

import pytest

from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.browser import wait_for_app
from ui.base.page import PAGE_FAILED

pytestmark = pytest.mark.browser


def test_an_unexpected_error_is_one_sentence_in_the_browser_and_a_traceback_in_the_log(
    engine, app_server, browser, tmp_path
):
    make_dataset(engine, "demo", numbered_pairs(4))
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(app_server.url)
    wait_for_app(page)
    page.get_by_role("heading", name="PLUIE Lab").first.wait_for(timeout=30_000)  # the Datasets page, working
    assert page.get_by_text(PAGE_FAILED).count() == 0

    with sqlite3.connect(tmp_path / "store.db") as damaged:  # a fault no user action on the page can cause
        damaged.execute("ALTER TABLE datasets RENAME TO datasets_moved_away")
    page.reload()
    wait_for_app(page)
    page.get_by_text(PAGE_FAILED).wait_for(timeout=30_000)
    assert page.locator("[data-testid='stException']").count() == 0
    assert "Traceback" not in page.locator("[data-testid='stMain']").inner_text()
    page.get_by_role("link", name="Import").first.wait_for(timeout=30_000)  # the frame (its menu) is still drawn
    log = app_server.log.read_text()
    assert "The page 'Datasets' failed" in log and "Traceback" in log and "datasets" in log

    page.goto(f"{app_server.url}/import_pairs")  # a page that does not read the table is unharmed
    wait_for_app(page)
    page.get_by_role("heading", name="Import pairs").first.wait_for(timeout=30_000)
    assert page.get_by_text(PAGE_FAILED).count() == 0
