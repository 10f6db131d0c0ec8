"""The scoring page in a real browser: the done count rises while a worker scores, without reload."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from db.engine import init_db
from db.runs import create_run
from tests.browser import wait_for_app  # app_server, browser: tests/conftest.py plugin
from tests.paths import REPO
from tests.store_fixtures import add_pairs, sentence_pairs


def score_one_batch(db_url: str, run_id: int, batch_size: int) -> None:
    subprocess.run(
        [sys.executable, str(REPO / "worker.py"), "--db", db_url, "--once", "--no-default-runs",
         "--device", "cpu", "--runs", str(run_id), "--claim-size", str(batch_size)],
        cwd=REPO, env={**os.environ, "PLUIE_DB_URL": db_url}, check=True, capture_output=True, timeout=180,
    )


@pytest.mark.browser
def test_progress_rises_without_reloading(app_server, browser):
    if "pages/scoring.py" not in (REPO / "app.py").read_text():
        pytest.fail('app.py does not route to the scoring page: add st.Page("pages/scoring.py", url_path="scoring")')
    engine = init_db(app_server.db_url)
    add_pairs(engine, "live", sentence_pairs(30))
    run = create_run(engine, name="live lev", kind="baseline", model="levenshtein")
    engine.dispose()

    page = browser.new_page()
    page.goto(f"{app_server.url}/scoring")
    wait_for_app(page)
    progress = page.locator("[data-testid='stProgress']", has_text="live lev")
    progress.wait_for(timeout=30_000)
    assert "0 / 30 scored" in progress.inner_text()
    page.evaluate("window.__notReloaded = true")  # gone if the page were reloaded

    for done in (10, 20):
        score_one_batch(app_server.db_url, run, batch_size=10)
        page.locator("[data-testid='stProgress']", has_text=re.compile(rf"\b{done} / 30 scored")).wait_for(timeout=20_000)
    assert page.evaluate("window.__notReloaded === true")
    assert page.url.endswith("/scoring")
    page.close()
