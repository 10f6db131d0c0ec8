"""The forms each role is shown (issue 56, item 5): a page draws no form its reader's role cannot use (a
viewer was shown Delete, Rename, the Preferences import and the Scorecard upload, then refused by the store),
and a refusal names the action refused (test_roles_data.py and test_roles_campaigns.py check each write's
sentence; the browser's view: test_browser_role_forms.py)."""

from __future__ import annotations

import pandas as pd

from db import accounts
from db import campaigns as camp
from db.datasets import import_pairs
from tests.test_signin import app_env, sign_in, start  # noqa: F401 (the app on this test's store)

PASSWORDS = {"vic": "vic's password", "rey": "rey's password", "olga": "olga's password"}


def labels(at, kind: str) -> set[str]:
    return {element.label for element in at.get(kind)}


def seen(name: str, page: str) -> dict[str, set[str]]:
    at = sign_in(start(page), name, PASSWORDS[name])
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return {
        "expanders": {e.label for e in at.expander},
        "buttons": labels(at, "button"),
        "uploads": labels(at, "file_uploader"),
        "info": {i.value for i in at.info},
        "captions": {c.value for c in at.caption},
    }


def test_each_role_sees_the_forms_it_may_use(app_env):
    accounts.add_account(app_env, "olga", "organiser", password=PASSWORDS["olga"])
    accounts.add_account(app_env, "rey", "reviewer", password=PASSWORDS["rey"])
    accounts.add_account(app_env, "vic", "viewer", password=PASSWORDS["vic"])
    dataset = import_pairs(
        app_env,
        "pilot",
        pd.DataFrame({"source": ["A cat sits.", "A dog runs."], "hypothesis": ["A cat is sitting.", "A dog walks."]}),
    )
    camp.create_campaign(app_env, "Pilot", [dataset.dataset_id], quota=2, n_training=0)

    for name in ("vic", "rey"):
        home = seen(name, "pages/home.py")
        assert not {"Delete a dataset", "Rename a dataset"} & home["expanders"], (name, home)
        preferences = seen(name, "pages/preferences.py")
        assert "Import preference data" not in preferences["expanders"] and not preferences["uploads"]
        assert "No preference data yet: an organiser imports it on this page." in preferences["info"]
        scorecard = seen(name, "pages/scorecard.py")
        assert not {"Import the benchmark", "Put a dataset in a challenge"} & scorecard["expanders"]
        assert not scorecard["uploads"]
        assert "No benchmark yet: an organiser imports the PARAPHRASUS files on this page." in scorecard["info"]
        pairs = seen(name, "pages/pairs.py")
        assert "Mark as gold" not in pairs["buttons"], (name, pairs)
    assert "Open in Review" not in seen("vic", "pages/pairs.py")["buttons"]  # Review is a reviewer's page
    assert "Open in Review" in seen("rey", "pages/pairs.py")["buttons"]

    home = seen("olga", "pages/home.py")
    assert {"Delete a dataset", "Rename a dataset"} <= home["expanders"]
    assert "Import preference data" in seen("olga", "pages/preferences.py")["expanders"]
    assert {"Import the benchmark", "Put a dataset in a challenge"} <= seen("olga", "pages/scorecard.py")["expanders"]
    assert {"Mark as gold", "Open in Review"} <= seen("olga", "pages/pairs.py")["buttons"]
