"""The forms each role is shown, in a real browser (issue 56, item 5): a viewer reads Datasets, Preferences,
Scorecard and Pairs without the forms the store would refuse them (Delete, Rename, the preference import, the
benchmark upload, the challenge form, gold checks); an organiser has them. (Each role's forms with AppTest:
test_role_forms.py.)"""

from __future__ import annotations

import pandas as pd
import pytest

from db import init_db
from db.accounts import add_account
from db.datasets import import_pairs
from tests.browser import start_app, stop_app, wait_for_settled_app, wait_for_shown_text
from tests.test_browser_team import sign_in

pytestmark = pytest.mark.browser
FORMS = {
    "home": ("PLUIE Lab", ["Delete a dataset", "Rename a dataset"]),
    "preferences": ("Preference agreement", ["Import preference data"]),
    "scorecard": ("PARAPHRASUS scorecard", ["Import the benchmark", "Put a dataset in a challenge"]),
}


def shown_forms(page, url: str, key: str) -> list[str]:
    title, forms = FORMS[key]
    page.goto(f"{url}/{key}")
    wait_for_shown_text(page, title)
    wait_for_settled_app(page)
    body = page.inner_text("[data-testid='stMain']")
    return [form for form in forms if form in body]


def test_a_viewer_is_shown_no_form_the_store_would_refuse(tmp_path, browser, migrated_copy):
    db_url = migrated_copy(f"sqlite:///{tmp_path / 'store.db'}")
    engine = init_db(db_url)
    add_account(engine, "vic", "viewer", password="vic's own password")
    add_account(engine, "olga", "organiser", password="olga's own password")
    import_pairs(
        engine,
        "pilot",
        pd.DataFrame({"source": ["A cat sits.", "A dog runs."], "hypothesis": ["A cat is sitting.", "A dog walks."]}),
    )
    engine.dispose()
    server = start_app(db_url, tmp_path / "streamlit.log", extra_env={"PLUIE_DATA_DIR": str(tmp_path)})
    try:
        viewer = browser.new_context().new_page()
        sign_in(viewer, server.url, "vic", "vic's own password")
        wait_for_shown_text(viewer, "Signed in as vic (viewer)")
        for key in FORMS:
            assert shown_forms(viewer, server.url, key) == [], key
        assert viewer.locator("[data-testid='stFileUploader']").count() == 0
        wait_for_shown_text(viewer, "No benchmark yet: an organiser imports the PARAPHRASUS files on this page.")

        organiser = browser.new_context().new_page()
        sign_in(organiser, server.url, "olga", "olga's own password")
        for key, (_, forms) in FORMS.items():
            assert shown_forms(organiser, server.url, key) == forms, key
    finally:
        stop_app(server)
