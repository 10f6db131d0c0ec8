"""A page helper's name opened as an address on a fresh server (issue 56 item 3, issue 57). Streamlit treats a folder
named pages/ as a list of stand-alone pages until app.py has called st.navigation once in the server's life, so the
first visit to /charts once ran the chart helper on its own: a blank page with no menu. Now the helpers live in ui/,
pages/ holds page scripts only, and the server never uses that mode anyway: the address is not one of the app's
pages, and the app draws its home page and its menu."""

from __future__ import annotations

import pytest

from tests.browser import wait_for_settled_app

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("helper", ["charts", "shared", "signin", "frame"])
def test_a_helper_module_opened_by_its_address_on_a_fresh_server_is_never_run(app_server, browser, helper):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{app_server.url}/{helper}")  # the server's first visit
    wait_for_settled_app(page)
    # the app's frame: its menu and its home page, not the helper module's empty run
    page.get_by_role("link", name="Import").first.wait_for(timeout=30_000)
    page.get_by_role("heading", name="PLUIE Lab").first.wait_for(timeout=30_000)
    assert page.locator("[data-testid='stException']").count() == 0
