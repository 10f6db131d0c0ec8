"""User text is shown as text, never as Markdown (issue 23, item 7), in a real browser: names, ids,
notes and a campaign's name that carry a Markdown image, links, a bare address and HTML, all pointing
at a local HTTP server that records every request. On the pages that show them (the annotator's
heading, Review, Disagreements, Campaigns, Scoring, Agreement) the text reads as typed, no request
reaches the server, and no link or image is made from it."""

from __future__ import annotations

import http.server
import threading

import pandas as pd
import pytest

from db import annotators
from db import campaigns as camp
from db.analysis import add_score_run
from db.datasets import import_pairs
from db.review import adjudicate
from tests.browser import wait_for_app

pytestmark = pytest.mark.browser
JOINER = "\u2060"  # ui.base.page.user_text's invisible word joiner: not part of the text as read


@pytest.fixture
def recorder():
    """A local HTTP server that records the paths asked for (none may be)."""
    asked = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the standard library's name)
            asked.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/png")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", asked
    server.shutdown()


def payloads(base: str) -> dict[str, str]:
    return {
        "dataset": f"data ![t]({base}/dataset.png)",
        "external_id": f"[click]({base}/id)",
        "annotator": f"ann ![a]({base}/annotator.png)",
        "run": f"run ![r]({base}/run.png) **bold**",
        "campaign": f"Pilot ![c]({base}/campaign.png) <img src={base}/html.png>",
        "reviewer": f"Rev [me]({base}/reviewer)",
        "note": f"note ![n]({base}/note.png) {base}/bare www.example.org :red[x]",
    }


def build(engine, text: dict[str, str]) -> dict:
    frame = pd.DataFrame(
        {
            "external_id": [text["external_id"], "plain-2", "plain-3"],
            "source": ["The cat drinks water.", "A dog runs.", "It rains."],
            "hypothesis": ["The cat drinks milk.", "A dog walks.", "It pours."],
            "label": [1, 0, 1],
            f"annotator:{text['annotator']}": [0, 3, 0],
            "annotator:bob": [3, 3, 3],
        }
    )
    result = import_pairs(engine, text["dataset"], frame, annotator_scale="levels")
    with engine.connect() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM pairs ORDER BY id")]
    # PLUIE's natural threshold 0: every pair against its gold label, the first the most confidently
    add_score_run(engine, text["run"], {ids[0]: -9.0, ids[1]: 3.0, ids[2]: -1.0}, kind="pluie")
    adjudicate(engine, ids[0], 2, text["reviewer"], text["note"])
    campaign = camp.create_campaign(engine, text["campaign"], [result.dataset_id], quota=2, n_training=0)
    aid, token = annotators.create_annotator(engine, campaign, "someone")
    annotators.set_annotator_profile(engine, aid, "Someone", "good")
    return {"token": token, "pairs": ids}


def visible(page) -> str:
    return page.locator("[data-testid='stApp']").inner_text().replace(JOINER, "")


def no_markup_from(page, base: str) -> None:
    """No link or image in the page points at the recorder (Streamlit's own anchors aside)."""
    made = page.evaluate(
        """(base) => [...document.querySelectorAll('a[href], img[src], [style*="url("]')]
        .map(e => e.outerHTML.slice(0, 200)).filter(h => h.includes(base) || h.includes('example.org'))""",
        base,
    )
    assert made == [], made


def test_names_ids_notes_and_campaign_names_are_shown_as_text(engine, app_server, browser, recorder):
    base, asked = recorder
    text = payloads(base)
    store = build(engine, text)
    page = browser.new_page(viewport={"width": 1280, "height": 1000})

    # an annotator's link: the campaign's name heads the page, as typed
    page.goto(f"{app_server.url}/?token={store['token']}")
    wait_for_app(page)
    page.locator("[data-testid='pluie-top']").wait_for(timeout=30_000)
    assert text["campaign"] in visible(page)
    no_markup_from(page, base)

    # Review, every pair ("All"): the dataset and the external id in the caption, the reviewer and the note
    page.goto(f"{app_server.url}/review")
    wait_for_app(page)
    page.get_by_role("heading", name="Review").wait_for(timeout=30_000)
    page.get_by_text("All", exact=True).click()
    page.get_by_text("Pair 2 of 2").wait_for(timeout=30_000)  # the undecided pair stays on screen: go back
    wait_for_app(page)
    page.get_by_role("button", name="← Previous").click()
    page.get_by_text("decided by", exact=False).wait_for(timeout=30_000)
    shown = visible(page)
    for part in ("dataset", "external_id", "reviewer", "note"):
        assert text[part] in shown, part
    no_markup_from(page, base)

    # Disagreements: the run in the captions, the dataset and the external id of the chosen pair
    page.goto(f"{app_server.url}/disagreements")
    wait_for_app(page)
    page.get_by_text("Inspect a pair").wait_for(timeout=30_000)
    wait_for_app(page)
    shown = visible(page)
    assert f"Pair {store['pairs'][0]} · {text['dataset']} · id {text['external_id']}" in shown
    assert f"{text['run']} at threshold" in shown
    no_markup_from(page, base)

    # Campaigns (the campaign in its list), Scoring and Agreement (the run in a caption)
    for path, heading, wanted in (
        ("campaigns", "Labelling campaigns", None),
        ("scoring", "Scoring", "run"),
        ("agreement", "Agreement", "run"),
    ):
        page.goto(f"{app_server.url}/{path}")
        wait_for_app(page)
        page.get_by_role("heading", name=heading).wait_for(timeout=30_000)
        wait_for_app(page)
        if wanted:
            page.wait_for_function(
                "(t) => document.querySelector('[data-testid=stApp]').innerText.replaceAll('\u2060', '').includes(t)",
                arg=text[wanted],
                timeout=30_000,
            )
        no_markup_from(page, base)

    page.wait_for_timeout(1000)  # any image the pages asked for has had its time to be fetched
    assert asked == [], f"the browser fetched {asked} from addresses in user text"
    page.close()
