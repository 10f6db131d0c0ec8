"""The Live campaign's gold keys from a dataset in a real browser (issue 53): Enter in "How many" shows the
plan and writes nothing; one click on "Add these 10 gold pairs" adds exactly those keys, once (the plan is
spent: the button goes), and a reload still counts 10. Guards against "Enter in 'How many' then the button
added the gold pairs twice ('10 gold pairs added', total 20)". SICK's own scores, used by path from
../shared/datasets; the keys come from the clear ends of its 1-5 scale, balanced across the two sides."""

from __future__ import annotations

import pytest

from db import campaigns as camp
from db import quality as qual
from db.datasets import import_file
from tests.browser import ARTIFACTS, choose_option, wait_for_app, wait_for_settled_app, wait_for_shown_text
from tests.paths import DATASETS

SICK = DATASETS / "sick" / "SICK_trial.txt"
pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not SICK.exists(), reason="the shared SICK file is not beside the repository"),
]

HOW_MANY = "How many (0 = every key the rule gives)"


def test_enter_shows_the_plan_and_one_click_adds_its_keys_once(engine, app_server, browser):
    dataset = import_file(engine, str(SICK), "SICK").dataset_id
    cid = camp.create_campaign(
        engine, "SICK gold", [dataset], quota=20, overlap=2, n_training=0, selection={"sample": 60}
    )
    assert len(qual.gold_pairs(engine, cid)) == 0
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{app_server.url}/live_campaign")
    wait_for_settled_app(page)  # a fresh server's first page runs twice: fill the form once it is still
    page.get_by_role("heading", name="Live campaign").wait_for(timeout=30_000)

    choose_option(page, page.get_by_role("combobox", name="Take gold pairs from a dataset's gold labels"), "SICK")
    how_many = page.get_by_role("spinbutton", name=HOW_MANY, exact=True)
    how_many.fill("10")
    how_many.press("Enter")  # submits the form: the plan is shown, nothing is written
    wait_for_shown_text(page, "10 keys from “SICK”")
    wait_for_app(page)
    add = page.get_by_role("button", name="Add these 10 gold pairs")
    add.wait_for(timeout=30_000)
    assert len(qual.gold_pairs(engine, cid)) == 0, "Enter in 'How many' added gold pairs"
    plan = page.locator("[data-testid='stAlert']").filter(has_text="10 keys from").inner_text()
    assert "(5 Very different, 5 Same meaning)" in plan, plan
    assert "Rule: score ≤ 1.75 → Very different; score ≥ 4.25 → Same meaning" in plan, plan
    assert "Balance: 5 on the paraphrase side, 5 not" in plan, plan
    page.screenshot(path=str(ARTIFACTS / "gold-form-plan.png"), full_page=True)

    add.click()
    wait_for_shown_text(page, "10 gold pairs added")
    wait_for_app(page)
    assert len(qual.gold_pairs(engine, cid)) == 10
    assert page.get_by_role("button", name="Add these 10 gold pairs").count() == 0  # the plan is spent
    assert page.get_by_role("button", name="Show the keys these settings give").count() == 1
    wait_for_shown_text(page, "Gold pairs: 10")  # the list above the forms counts them in the same run
    page.screenshot(path=str(ARTIFACTS / "gold-form-added.png"), full_page=True)

    page.reload()
    wait_for_settled_app(page)
    wait_for_shown_text(page, "Gold pairs: 10")
    wait_for_shown_text(page, "Balance: 5 on the paraphrase side, 5 not")  # the list's caption (no plan now)
    assert page.get_by_role("button", name="Add these 10 gold pairs").count() == 0
    gold = qual.gold_pairs(engine, cid)
    assert len(gold) == 10 and gold["pair_id"].is_unique
    assert sorted(gold["binary_label"].astype(int)) == [0] * 5 + [1] * 5
    assert ((gold["reference_score"] <= 1.75) | (gold["reference_score"] >= 4.25)).all(), gold["reference_score"]
    assert set(gold["known answer"]) == {"Very different", "Same meaning"}
    ends = gold.set_index("known answer")["reference_score"]
    assert (ends.loc["Very different"] <= 1.75).all() and (ends.loc["Same meaning"] >= 4.25).all()
