"""Review and adjudication in a real browser (issue 11, item 1): the organiser opens Review, names
themself, reads the queue's first pair, writes a note and settles it with the keyboard, moves on,
settles the next one; the store and the export hold the decisions, the labels are untouched."""

from __future__ import annotations

import pytest

from db.export import export_frame
from tests.browser import ARTIFACTS, wait_for_app
from tests.test_review import build, labels_snapshot

pytestmark = pytest.mark.browser


def wait_for_pair(page, external_id: str, pair_id: int) -> None:
    """The pair box shows this pair and the level buttons of this very pair are drawn (a key pressed
    before they are would hit the previous pair's)."""
    page.wait_for_function(
        """([ext, id]) => { const box = document.querySelector('[data-testid="review-pair"]');
            return box && box.innerText.includes(ext) && document.querySelector(`.st-key-final-0-${id} button`)
                && !document.querySelector('[data-testid="stStatusWidgetRunningIcon"]'); }""",
        arg=[external_id, pair_id],
        timeout=30_000,
    )


def test_a_reviewer_settles_the_queue_with_the_keyboard(engine, app_server, browser):
    ids = build(engine)
    before = labels_snapshot(engine)
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    page.goto(f"{app_server.url}/review")
    wait_for_app(page)
    page.get_by_role("heading", name="Review").wait_for(timeout=30_000)
    wait_for_pair(page, "cross-3", ids["cross-3"])  # across the boundary and the widest spread: first
    assert (
        page.locator("[data-testid='review-pair'] mark.pluie-diff").count() == 4
    )  # the word diff: cat/dog, water/milk

    page.get_by_label("Reviewer", exact=True).fill("Lena")
    page.keyboard.press("Enter")
    page.get_by_text("Give your name as reviewer").wait_for(state="hidden", timeout=30_000)
    note = page.get_by_label("Note (optional): why this level")
    note.fill("two of three say same meaning")
    note.press("Enter")  # the note is kept; keys typed in a text box are text, not answers
    wait_for_app(page)
    page.get_by_role("heading", name="Review").click()  # leave the text box: keys are shortcuts again
    page.screenshot(path=str(ARTIFACTS / "review-pair.png"), full_page=True)
    page.keyboard.press("4")
    page.get_by_text("final level “Same meaning”").wait_for(timeout=30_000)
    wait_for_pair(page, "cross-2", ids["cross-2"])  # the next pending pair
    page.keyboard.press("1")
    page.get_by_text("final level “Very different”").wait_for(timeout=30_000)
    wait_for_pair(page, "cross-1", ids["cross-1"])

    out = export_frame(engine).set_index("external_id")
    assert (out.loc["cross-3", "final_level"], out.loc["cross-3", "final_source"]) == (3, "adjudicated")
    assert out.loc["cross-3", "adjudication_note"] == "two of three say same meaning"
    assert (out.loc["cross-2", "final_level"], out.loc["cross-2", "adjudicated_by"]) == (0, "Lena")
    assert out.loc["cross-1", "final_source"] == "none" and out.loc["same-side", "final_source"] == "majority"
    assert labels_snapshot(engine) == before
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM adjudications").scalar() == 2
