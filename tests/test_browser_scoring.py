"""The scoring page in a real browser: the done count rises while a worker scores, without reload."""

from __future__ import annotations

import re

import pytest

from db import init_db
from db.runs import create_run
from tests.browser import choose_option, wait_for_app  # app_server, browser: tests/conftest.py plugin
from tests.store_fixtures import add_pairs, sentence_pairs


def score_one_batch(db_url: str, run_id: int, batch_size: int) -> None:
    """One claim of ``batch_size`` pairs scored and written by the worker, as `worker.py --once --runs ID
    --claim-size N` does, in this process (a worker process first spends seconds importing torch): the
    server sees the store change as it does when a worker process writes."""
    from worker import ScoringWorker

    engine = init_db(db_url)
    try:
        assert ScoringWorker(engine, device="cpu", claim_size=batch_size, run_ids=[run_id]).run(once=True) == batch_size
    finally:
        engine.dispose()


@pytest.mark.browser
def test_progress_rises_without_reloading(app_server, browser):
    from ui.base.menu import MENU  # app.py routes every page of the menu

    if "scoring" not in {key for entries in MENU.values() for key, *_ in entries}:
        pytest.fail('app.py does not route to the scoring page: add ("scoring", "Scoring", icon) to ui.base.menu.MENU')
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
        page.locator("[data-testid='stProgress']", has_text=re.compile(rf"\b{done} / 30 scored")).wait_for(
            timeout=20_000
        )
    assert page.evaluate("window.__notReloaded === true")
    assert page.url.endswith("/scoring")
    page.close()


@pytest.mark.browser
def test_a_model_the_hub_cannot_give_is_refused_in_seconds(browser, db_url, engine, tmp_path):
    """Issue 19.2 on a server whose hub does not answer (a local port that takes connections and never
    replies, as a network that drops packets; HF_HUB_OFFLINE unset): a PLUIE run and an S3C baseline
    run on an unknown hub id are each refused in seconds with one sentence, and no run is created."""
    import socket
    import time

    from playwright.sync_api import expect
    from sqlalchemy import func, select

    from db.engine import read_session
    from db.models import ScoreRun
    from tests.browser import start_app, stop_app, wait_for_shown_text

    add_pairs(engine, "d", sentence_pairs(3))
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(64)
        endpoint = f"http://127.0.0.1:{black_hole.getsockname()[1]}"
        server = start_app(
            db_url,
            tmp_path / "streamlit.log",
            extra_env={"HF_HUB_OFFLINE": "0", "TRANSFORMERS_OFFLINE": "0", "HF_ENDPOINT": endpoint},
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1400})
            page.goto(f"{server.url}/scoring")
            wait_for_app(page)
            sentence = (
                "The model {} is not in the local Hugging Face cache, and the Hugging Face hub "
                f"({endpoint}) does not answer from this machine: download the model where there is "
                "internet access, or give a local model directory."
            )
            page.get_by_role("textbox", name="Model").first.fill("someone/no-such-model")
            started = time.monotonic()
            page.get_by_role("button", name="Create run").click()
            wait_for_shown_text(page, sentence.format("someone/no-such-model"), timeout=40_000)
            assert time.monotonic() - started < 20  # before: the hub client's retries, about a minute

            wait_for_app(page)  # the run that showed it has ended: nothing redraws under the next clicks
            page.get_by_text("New baseline run").click()
            choose_option(page, page.get_by_role("combobox", name="Baseline", exact=True), "S3C cosine (s3c)")
            page.get_by_role("textbox", name="Baseline model", exact=True).fill("someone/no-such-encoder")
            page.keyboard.press("Tab")
            started = time.monotonic()
            page.get_by_role("button", name="Create baseline run").click()
            wait_for_shown_text(page, sentence.format("someone/no-such-encoder"), timeout=40_000)
            assert time.monotonic() - started < 20  # before: created, then failed in the worker
            wait_for_app(page)
            # one sentence once the run has ended: the first form's, shown by the run before, is then gone
            # (read as soon as the second appears, both could still be on the page for a moment)
            expect(page.locator("[data-testid='stAlert']").filter(has_text="Hugging Face")).to_have_count(
                1, timeout=20_000
            )
            assert page.locator("[data-testid='stException']").count() == 0
        finally:
            stop_app(server)
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0
    engine.dispose()
