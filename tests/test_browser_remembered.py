"""What the app remembers for a browser, in a real browser (issue 35, items 5 and 6): it survives a page
change and a reload (a new Streamlit session), and the organiser's forms survive a slip."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser import ARTIFACTS, wait_for_app, wait_for_settled_app
from tests.test_browser_review import wait_for_pair
from tests.test_review import build

pytestmark = pytest.mark.browser


def clicks_sent(page, key_part: str) -> list:
    """The clicks the page sends to the server (rerun requests) on buttons whose key holds ``key_part``,
    as they are sent: call before the page opens."""
    from streamlit.proto.BackMsg_pb2 import BackMsg

    sent = []

    def frame(payload) -> None:
        message = BackMsg()
        if isinstance(payload, str):
            return
        message.ParseFromString(payload)
        if message.WhichOneof("type") == "rerun_script":
            sent.extend(
                w.id
                for w in message.rerun_script.widget_states.widgets
                if key_part in w.id and w.WhichOneof("value") == "trigger_value" and w.trigger_value
            )

    page.on("websocket", lambda ws: ws.on("framesent", frame))
    return sent


def name_a_campaign_of_demo(page, url: str, name: str) -> None:
    """Open Campaigns and fill the New campaign form's name and its dataset "demo" (10 pairs)."""
    page.goto(f"{url}/campaigns")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    page.get_by_label("Name", exact=True).fill(name)
    page.keyboard.press("Tab")
    wait_for_app(page)
    page.locator("[data-testid='stMultiSelect'] input").click()
    page.get_by_role("option", name="demo (10 pairs)").click()
    page.keyboard.press("Escape")
    wait_for_app(page)


def value_of(page, label: str) -> str:
    return page.get_by_label(label, exact=True).input_value()


def test_5_the_reviewer_and_a_half_typed_note_survive_a_page_change_and_a_reload(engine, app_server, browser):
    ids = build(engine)
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    page = context.new_page()
    page.goto(f"{app_server.url}/review")
    wait_for_app(page)
    wait_for_pair(page, "cross-3", ids["cross-3"])
    page.get_by_label("Reviewer", exact=True).fill("Lena")
    page.keyboard.press("Enter")
    page.get_by_text("Give your name as reviewer").wait_for(state="hidden", timeout=30_000)
    note = "Note (optional): why this level"
    page.get_by_label(note).fill("two of three")  # half-typed: never sent, the box keeps the cursor

    page.reload()
    wait_for_app(page)
    wait_for_pair(page, "cross-3", ids["cross-3"])
    # the browser's cookies in the message: a reload that once found no reviewer (1 run in about 10 of the
    # whole suite, never alone or under load since) tells whether its id cookie was there
    assert value_of(page, "Reviewer") == "Lena", context.cookies()
    assert value_of(page, note) == "two of three", context.cookies()

    page.get_by_label(note).fill("two of three say same meaning")
    page.get_by_role("link", name="Campaigns").click()  # a page change, straight from the box
    try:
        page.get_by_role("heading", name="Labelling campaigns").wait_for(timeout=30_000)
    except Exception:
        page.screenshot(path="/tmp/fail.png", full_page=True)
        print(page.url, page.get_by_role("link", name="Campaigns").count())
        raise
    wait_for_app(page)
    page.get_by_role("link", name="Review").click()
    wait_for_app(page)
    wait_for_pair(page, "cross-3", ids["cross-3"])
    assert value_of(page, "Reviewer") == "Lena"
    assert value_of(page, note) == "two of three say same meaning"

    other = context.new_page()  # another tab of the same browser knows the reviewer too
    other.goto(f"{app_server.url}/review")
    wait_for_app(other)
    wait_for_pair(other, "cross-3", ids["cross-3"])
    assert value_of(other, "Reviewer") == "Lena"
    other.close()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "review-remembered.png"), full_page=True)

    page.get_by_role("heading", name="Review").click()  # leave the box: 4 decides, the note goes with it
    page.keyboard.press("4")
    page.get_by_text("final level “Same meaning”").wait_for(timeout=30_000)
    wait_for_pair(page, "cross-2", ids["cross-2"])
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT reviewer, note FROM adjudications").all() == [
            ("Lena", "two of three say same meaning")
        ]
    page.reload()  # the note was used: the next pair's box is empty, the reviewer is still known
    wait_for_app(page)
    wait_for_pair(page, "cross-2", ids["cross-2"])
    assert value_of(page, "Reviewer") == "Lena" and value_of(page, note) == ""
    context.close()


def test_6_a_double_click_on_create_personal_links_creates_the_people_once(engine, app_server, browser):
    from db import annotators
    from db import campaigns as camp
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    ds, _ = make_dataset(engine, "demo", numbered_pairs(10))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=3, n_training=0)
    page = browser.new_context(viewport={"width": 1280, "height": 1200}).new_page()
    sent = clicks_sent(page, "links-create-")
    page.goto(f"{app_server.url}/campaigns")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    page.get_by_label("New annotators").fill("Alice\nBob")
    page.get_by_role("button", name="Create personal links").dblclick()
    page.get_by_text("shown only once").wait_for(timeout=30_000)
    wait_for_app(page)
    page.wait_for_timeout(1_000)  # a second run, if the second click started one, has drawn by now
    wait_for_app(page)
    code = page.locator("[data-testid='stCode']").inner_text()
    assert "Alice" in code and "Bob" in code and code.count("?token=") == 2
    assert page.get_by_text("Write at least one name").count() == 0
    assert len(sent) == 1, sent  # the browser let one click of the two through (ui.base.page.one_click)
    assert sorted(r["name"] for r in annotators.annotator_rows(engine, cid)) == ["Alice", "Bob"]


def test_6_a_reload_keeps_a_half_filled_new_campaign_form(engine, app_server, browser):
    from db import campaigns as camp
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    make_dataset(engine, "demo", numbered_pairs(10))
    page = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
    sent = clicks_sent(page, "new-campaign-create-")
    name_a_campaign_of_demo(page, app_server.url, "Half-filled")
    quota = page.get_by_role("spinbutton", name="Pairs per annotator", exact=True)
    wait_for_settled_app(page)  # the dataset's choice has redrawn the form: typing now is not lost in a redraw
    for _ in range(3):  # typed while a run still redraws the form (a loaded machine): lost, again
        quota.click()
        quota.press("Control+a")
        quota.press_sequentially("7")
        quota.press("Enter")  # Enter commits a number input (a run), as a person would
        wait_for_app(page)
        page.wait_for_timeout(300)
        wait_for_app(page)
        if quota.input_value() == "7":
            break
    for _ in range(3):  # a click that lands while the page redraws (a loaded machine) is lost: again
        page.get_by_text("Overlap first:").click()
        wait_for_app(page)
        if page.get_by_label("Overlap first:").is_checked():
            break
    # a value typed while a run redraws the form can come back as the server's older one once that run lands (on
    # a loaded machine the quota read 7, then 1 after the next click's run): settled before the reload, else typed
    # again, so the reload tests what the server was told
    for _ in range(3):
        wait_for_app(page)
        page.wait_for_timeout(500)
        wait_for_app(page)
        if quota.input_value() == "7" and page.get_by_label("Overlap first:").is_checked():
            break
        if quota.input_value() != "7":
            quota.click()
            quota.press("Control+a")
            quota.press_sequentially("7")
            quota.press("Enter")
        if not page.get_by_label("Overlap first:").is_checked():
            page.get_by_text("Overlap first:").click()
    guidelines = page.get_by_label("Guidelines (Markdown)")
    guidelines.fill("Be kind to the cat.")  # half-typed: never sent, the box keeps the cursor

    page.reload()
    wait_for_settled_app(page)  # on a loaded machine the first run after a reload may still be drawing the form
    page.get_by_label("Name", exact=True).wait_for(timeout=30_000)
    # each read waits (Playwright's expect: up to 15 s) for the value the server restores, and fails on another
    expect(page.get_by_label("Name", exact=True)).to_have_value("Half-filled", timeout=15_000)
    assert page.locator("[data-testid='stMultiSelect']").inner_text().count("demo (10 pairs)") == 1
    expect(page.get_by_role("spinbutton", name="Pairs per annotator", exact=True)).to_have_value("7", timeout=15_000)
    expect(page.get_by_label("Overlap first:")).to_be_checked(timeout=15_000)
    expect(page.get_by_label("Guidelines (Markdown)")).to_have_value("Be kind to the cat.", timeout=15_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "new-campaign-kept.png"), full_page=True)

    page.get_by_role("button", name="Create campaign").dblclick()  # once, however many clicks
    page.get_by_text("Campaign “Half-filled” created").wait_for(timeout=30_000)
    wait_for_app(page)
    page.wait_for_timeout(1_000)
    wait_for_app(page)
    assert page.get_by_text("already").count() == 0
    assert len(sent) == 1, sent  # the browser let one click of the two through (ui.base.page.one_click)
    (made,) = camp.list_campaigns(engine)
    assert (made.name, made.quota, made.distribution, made.guidelines) == (
        "Half-filled",
        7,
        "overlap",
        "Be kind to the cat.",
    )
    page.reload()  # created: the form starts afresh
    wait_for_app(page)
    page.locator("[data-testid='stExpander'] summary", has_text="New campaign").click()  # closed once one exists
    page.get_by_label("Name", exact=True).wait_for(timeout=30_000)
    assert page.get_by_label("Name", exact=True).input_value() == ""


def test_6_ctrl_and_a_number_answer_from_inside_the_comment_box(engine, app_server, browser):
    from db import annotators
    from db import campaigns as camp
    from db.export import export_labels
    from pluie_core.labels import ENGLISH_LEVELS
    from tests.annotation_fixtures import make_dataset, numbered_pairs
    from tests.test_browser_annotation import wait_progress

    ds, _ = make_dataset(engine, "demo", numbered_pairs(10))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=3, n_training=0)
    aid, token = annotators.create_annotator(engine, cid, "Ann")
    annotators.set_annotator_profile(engine, aid, "Ann", ENGLISH_LEVELS[-1])
    page = browser.new_context(viewport={"width": 1280, "height": 1000}).new_page()
    page.goto(f"{app_server.url}/?token={token}")
    wait_for_app(page)
    wait_progress(page, "0 / 3", 0)
    comment = page.get_by_role("textbox", name="Comment (optional)")
    comment.click()
    page.keyboard.type("typo in B 2")  # a digit in the box is text
    page.keyboard.press("Control+3")  # answers "Mostly similar" from inside the box, with the comment
    wait_progress(page, "1 / 3", 1)
    labels = export_labels(engine)
    assert labels[["level", "comment"]].values.tolist() == [[2, "typo in B 2"]]


def test_6_a_click_on_a_row_of_the_pairs_table_opens_that_pair(engine, app_server, browser):
    from tests.test_pairs_browser import TEXTS, build

    ds, ids, _ = build(engine)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/pairs")
    wait_for_app(page)
    page.get_by_text("30 pairs match").wait_for(timeout=30_000)
    shown = page.locator("[data-testid='stText']")
    shown.first.wait_for(timeout=30_000)
    assert TEXTS[0][0] in shown.inner_text()  # the first pair, before any click
    grid = page.locator("[data-testid='stDataFrame']").first
    box = grid.bounding_box()
    row_height, header = 35, 35
    page.mouse.click(box["x"] + 15, box["y"] + header + 3 * row_height + row_height / 2)  # the 4th row
    page.wait_for_function(
        "t => [...document.querySelectorAll('[data-testid=\"stText\"]')].some(e => e.innerText.includes(t))",
        arg=TEXTS[3][0],
        timeout=30_000,
    )
    wait_for_app(page)
    assert page.get_by_text(f"Pair {ids[3]} ·").count() == 1


def test_6_two_clicks_in_a_row_on_create_reach_the_server_as_one(engine, app_server, browser):
    """ui.base.page.one_click: the browser sends the first of two clicks in a row on "Create campaign"
    and on "Create personal links" (without it, both reach the server, which then has to tell them apart)."""
    from db import annotators
    from db import campaigns as camp
    from tests.annotation_fixtures import make_dataset, numbered_pairs

    make_dataset(engine, "demo", numbered_pairs(10))
    page = browser.new_context(viewport={"width": 1280, "height": 1400}).new_page()
    created, linked = clicks_sent(page, "new-campaign-create-"), clicks_sent(page, "links-create-")
    name_a_campaign_of_demo(page, app_server.url, "Twice")
    twice = "(key) => { const b = document.querySelector(`[class*='st-key-${key}'] button`); b.click(); b.click(); }"
    page.evaluate(twice, "new-campaign-create-")
    page.get_by_text("Campaign “Twice” created").wait_for(timeout=30_000)
    wait_for_app(page)
    assert len(created) == 1, created
    (made,) = camp.list_campaigns(engine)
    page.get_by_label("New annotators").fill("Alice\nBob")
    page.evaluate(twice, "links-create-")
    page.get_by_text("shown only once").wait_for(timeout=30_000)
    wait_for_app(page)
    page.wait_for_timeout(1_000)  # a second click, had it been sent, has reached the server by now
    assert len(linked) == 1, linked
    assert page.get_by_text("Write at least one name").count() == 0
    assert sorted(r["name"] for r in annotators.annotator_rows(engine, made.id)) == ["Alice", "Bob"]
