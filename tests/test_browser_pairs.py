"""Find any pair, in a real browser (issue 19, items 4 and 6): the organiser finds a pair on the Pairs
page by a piece of its text, marks it as a gold check of a campaign, opens it in Review; then exports
only what the campaign labelled."""

from __future__ import annotations

import pytest

from db import annotators, serving
from db import campaigns as camp
from db.engine import read_session
from db.export import export_frame
from db.models import GoldPair
from tests.browser import ARTIFACTS, choose_option, wait_for_app
from tests.test_pairs_browser import TEXTS, build

pytestmark = pytest.mark.browser


def test_find_a_pair_mark_it_gold_open_it_in_review_and_export_the_campaign(engine, app_server, browser):
    ds, ids, _ = build(engine)
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=3, overlap=1, n_training=0, seed=1)
    aid, _ = annotators.create_annotator(engine, cid, "ann")
    annotators.set_annotator_profile(engine, aid, "Ann", "good")
    for _ in range(3):
        item = serving.serve_next(engine, aid)
        serving.record_label(engine, aid, item.position, 2, 3.0)
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})

    def choose(label, option):
        choose_option(page, page.get_by_role("combobox", name=label), option)

    page.goto(f"{app_server.url}/pairs")
    wait_for_app(page)
    page.get_by_role("heading", name="Pairs").wait_for(timeout=30_000)
    page.get_by_text("30 pairs match").wait_for(timeout=30_000)
    search = page.get_by_label("Text contains")
    search.fill("50% milk")
    search.press("Enter")
    page.get_by_text("1 pair matches").wait_for(timeout=30_000)
    shown = page.locator("[data-testid='stText']", has_text="50% milk")  # drawn after the caption: wait for it
    shown.wait_for(timeout=30_000)
    wait_for_app(page)
    assert shown.inner_text() == f"Source:     {TEXTS[7][0]}\nHypothesis: {TEXTS[7][1]}"

    assert page.locator("[data-testid='stText']").count() == 1
    choose("Known answer", "Same meaning")
    page.get_by_role("button", name="Mark as gold").click()
    page.get_by_text(f"Pair {ids[7]} is a gold check now").wait_for(timeout=30_000)
    with read_session(engine) as s:
        assert [(g.campaign_id, g.pair_id, g.level) for g in s.query(GoldPair)] == [(cid, ids[7], 3)]

    page.get_by_role("button", name="Open in Review").click()
    page.get_by_role("heading", name="Review").wait_for(timeout=30_000)
    page.get_by_text(f"Pair {ids[7]} is not among the pairs listed").wait_for(timeout=30_000)
    box = page.locator("[data-testid='review-pair']")
    assert "drinks" in box.inner_text() and "milk" in box.inner_text()
    page.screenshot(path=str(ARTIFACTS / "pairs-open-in-review.png"), full_page=True)

    page.goto(f"{app_server.url}/export")
    wait_for_app(page)
    page.get_by_role("heading", name="Export").wait_for(timeout=30_000)
    # issue 35: the page opens on the campaign in progress; whole datasets is every pair of the store
    choose("Campaign", "Whole datasets (every label)")
    wait_for_app(page)
    page.get_by_text("35 pairs ·").wait_for(timeout=30_000)
    choose("Campaign", "Pilot")
    page.get_by_text("Labelled pairs").click()
    wait_for_app(page)
    page.get_by_text("3 pairs ·").wait_for(timeout=30_000)
    wait_for_app(page)
    expected = export_frame(engine, campaign_id=cid, pairs="labelled")
    assert len(expected) == 3 and expected["n_labels"].tolist() == [1, 1, 1]
    with page.expect_download() as download:
        page.get_by_role("button", name="Download CSV").click()
    assert download.value.suggested_filename == "Pilot_labelled.csv"
    lines = open(download.value.path(), encoding="utf-8-sig").read().splitlines()
    assert lines[0].startswith("dataset,pair_id,external_id,source,hypothesis")
    assert [int(line.split(",")[1]) for line in lines[1:]] == expected["pair_id"].tolist()
    page.screenshot(path=str(ARTIFACTS / "export-campaign.png"), full_page=True)
