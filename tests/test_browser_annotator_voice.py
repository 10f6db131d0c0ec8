"""The annotator's voice and training that trains, in a real browser (issue 19, items 7 and 8): the organiser
gives a training pair its expected level and an explanation on Campaigns; the annotator answers it and sees
them, continues, then answers a pair with a comment and a flag; the organiser finds the pair in Review with
the comment and the flag; both exports hold them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from db import annotators
from db import campaigns as camp
from db.export import export_frame, export_labels
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.browser import ARTIFACTS, choose_option, wait_for_app, wait_for_settled_app
from tests.test_browser_annotation import wait_progress

pytestmark = pytest.mark.browser
EXPLANATION = "Both say the cat drinks; *milk* is not water, so only part is shared."


def test_training_feedback_then_a_comment_and_a_flag_reach_review_and_the_export(engine, app_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    ds, _ = make_dataset(engine, "demo", numbered_pairs(10))
    cid = camp.create_campaign(engine, "Voices", [ds], quota=2, n_training=2)
    aid, token = annotators.create_annotator(engine, cid, "Ann")
    training = camp.training_pairs(engine, cid)

    # the organiser: the first training pair's expected level and explanation, on Campaigns
    admin = browser.new_context(viewport={"width": 1280, "height": 1200}).new_page()
    admin.goto(f"{app_server.url}/campaigns")
    wait_for_settled_app(admin)  # a form filled during the page's second run lost its level (seen under load)
    admin.get_by_text("Feedback on the 2 training pairs").click()
    admin.get_by_text(training.loc[0, "source"]).first.wait_for(timeout=30_000)
    choose_option(admin, admin.get_by_label("Expected level").first, "Mostly similar")
    expect(admin.get_by_label("Expected level").first).to_have_value("Mostly similar")
    expect(admin.get_by_label("Expected level").nth(1)).to_have_value("— none —")
    admin.get_by_label("Explanation").first.fill(EXPLANATION)
    admin.get_by_role("button", name="Save the training feedback").click()
    admin.get_by_text("Saved: annotators see this feedback").wait_for(timeout=30_000)
    admin.screenshot(path=str(ARTIFACTS / "training-feedback-campaigns.png"), full_page=True)
    saved = camp.training_pairs(engine, cid)
    assert (saved.loc[0, "expected_level"], saved.loc[0, "explanation"]) == (2, EXPLANATION)

    # the annotator: a training answer, its feedback, then on
    page = browser.new_context(viewport={"width": 1200, "height": 900}).new_page()
    page.goto(f"{app_server.url}/?token={token}")
    wait_for_app(page)
    page.get_by_label("Your name, as shown with your labels").fill("Ann")
    page.get_by_text("good", exact=True).click()
    page.get_by_role("button", name="Start").click()
    wait_progress(page, "Training 1 / 2", 0)
    page.keyboard.press("4")  # Same meaning; expected Mostly similar
    page.get_by_text("expected: Mostly similar").wait_for(timeout=30_000)
    explanation = page.locator(".st-key-training-explanation")
    expect(explanation).to_contain_text(EXPLANATION, timeout=30_000)  # drawn a moment after the verdict
    assert explanation.inner_text().strip() == EXPLANATION  # as typed: the asterisks are not emphasis
    assert explanation.locator("em").count() == 0
    assert page.get_by_text("Your answer: Same meaning").is_visible()
    page.screenshot(path=str(ARTIFACTS / "training-feedback-annotator.png"), full_page=True)
    page.keyboard.press("1")  # no answer buttons on the feedback: a key lands on nothing
    page.get_by_role("button", name="Continue").click()
    wait_progress(page, "Training 2 / 2", 1)
    page.keyboard.press("3")  # no feedback for this one: straight to the queue
    wait_progress(page, "0 / 2", 2)

    # a counted pair with a comment and a flag, answered with a click while the comment box has focus
    top = page.locator("[data-testid='pluie-top']").inner_text()
    page.get_by_role("textbox", name="Comment (optional)").fill("typo in B: “hte”")
    page.get_by_text("Flag this pair").click()
    page.get_by_role("button", name="Slightly similar").click()
    wait_progress(page, "1 / 2", 3)
    assert page.get_by_role("textbox", name="Comment (optional)").input_value() == ""  # the next pair starts clean

    labels = export_labels(engine, include_training=True).sort_values("created_at")
    assert labels["level"].tolist() == [3, 2, 1] and labels["is_training"].tolist() == [True, True, False]
    flagged = labels.iloc[2]
    assert (flagged["comment"], bool(flagged["flagged"])) == ("typo in B: “hte”", True)
    assert " ".join(top.split()) in (" ".join(flagged["source"].split()), " ".join(flagged["hypothesis"].split()))
    pair_id = int(flagged["pair_id"])

    # the organiser: the pair is in Review's queue (its one label agrees with itself), flag and comment shown
    admin.goto(f"{app_server.url}/review")
    wait_for_app(admin)
    admin.get_by_role("heading", name="Review").wait_for(timeout=30_000)
    voice = admin.locator(".st-key-review-voice")
    voice.wait_for(timeout=30_000)
    expect(voice).to_contain_text("⚑ flagged · Ann: typo in B: “hte”", timeout=30_000)  # its lines follow the box
    assert "flagged by 1 of 1" in voice.inner_text()
    assert admin.get_by_text(f"Pair {pair_id} · demo").is_visible()
    admin.screenshot(path=str(ARTIFACTS / "review-flagged.png"), full_page=True)

    # the exports: wide (one row per pair) and long (one row per label)
    wide = export_frame(engine).set_index("external_id")
    row = wide[wide["n_flags"] > 0]
    assert len(row) == 1 and row.iloc[0]["flagged_by"] == "Ann" and row.iloc[0]["comments"] == "Ann: typo in B: “hte”"
    assert row.iloc[0]["source"] == flagged["source"]
    long = export_labels(engine)
    assert long[["comment", "flagged"]].values.tolist() == [["typo in B: “hte”", True]]
