"""The labelling page's Back and the Live campaign's flags, seen where only a browser shows them (issue 19,
item 9): the earlier answer marked on the page, who is flagged and why within 1,400 px."""

from __future__ import annotations

import pytest

from db import annotators
from db import campaigns as camp
from db import quality as qual
from tests.browser import ARTIFACTS, wait_for_app
from tests.test_browser_annotation import store, wait_progress  # noqa: F401 (store: the 30 MRPC pairs)

pytestmark = pytest.mark.browser


def test_back_marks_the_earlier_answer_and_live_campaign_shows_who_is_flagged(store, app_server, browser):
    """Back on an answered pair: the answer given stands out (a dark border and a tick), the others look as
    before. Two identical answers make a streak of 2: at 1,400 px the organiser sees who is flagged, and why."""
    ds = camp.dataset_choices(store)[0][0]
    cid = camp.create_campaign(store, "Back pilot", [ds], quota=3, n_training=0)
    qual.set_quality_settings(store, cid, gold_rate=0.0, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=2)
    aid, token = annotators.create_annotator(store, cid, "alice")
    annotators.set_annotator_profile(store, aid, "Alice A.", "native")
    page = browser.new_context(viewport={"width": 1200, "height": 800}).new_page()
    page.goto(f"{app_server.url}/?token={token}")
    wait_for_app(page)
    wait_progress(page, "0 / 3", 0)
    page.keyboard.press("3")  # Mostly similar
    wait_progress(page, "1 / 3", 1)
    page.keyboard.press("3")
    wait_progress(page, "2 / 3", 2)
    page.get_by_role("button", name="← Back").click()
    page.get_by_text("Your answer was").wait_for(timeout=20_000)
    page.wait_for_function("() => document.querySelector('.st-key-answer-2-1 button')", timeout=20_000)
    # the marking is a style drawn with the buttons' run: wait for the run to end (under load the buttons
    # can be in the page a moment before their style), then read every button's look
    wait_for_app(page)
    try:
        page.wait_for_function(
            "() => { const b = document.querySelector('.st-key-answer-2-1 button');"
            " return b && getComputedStyle(b).borderTopWidth === '3px'; }",
            timeout=20_000,
        )
    except Exception:  # noqa: BLE001 - the assertion below says what the buttons look like
        pass
    looks = page.evaluate("""() => [0,1,2,3,4].map(i => {
        const b = document.querySelector(`.st-key-answer-${i}-1 button`), s = getComputedStyle(b);
        const label = b.querySelector('p');
        return [s.borderTopWidth, s.fontWeight, label ? getComputedStyle(label, '::before').content : '']; })""")
    page.screenshot(path=str(ARTIFACTS / "annotation-back.png"), full_page=True)
    assert looks[2][0] == "3px" and looks[2][2] == '"✓ "' and int(looks[2][1]) >= 700, looks
    assert all(b == "1px" and "✓" not in tick for i, (b, _, tick) in enumerate(looks) if i != 2), looks

    admin = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    admin.goto(f"{app_server.url}/live_campaign")
    wait_for_app(admin)
    flagged = admin.get_by_text("Flagged: Alice A.")
    flagged.wait_for(timeout=20_000)
    box = flagged.bounding_box()
    admin.locator("[data-testid='stDataFrame']").first.wait_for(timeout=20_000)
    admin.screenshot(path=str(ARTIFACTS / "live-campaign-flags.png"), full_page=True)
    assert "2+ same answers in a row" in flagged.inner_text() and box["x"] + box["width"] <= 1400
