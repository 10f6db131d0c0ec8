"""ui.base.page.user_text (issue 23, item 7): user text put into Markdown reads as typed and makes no
markup, by a CommonMark parser (with GFM tables and strikethrough) and on the pages through AppTest.
The browser's side (links GFM makes of bare addresses, Streamlit's emoji and colours, requests for
images) is tests/test_browser_user_text.py."""

from __future__ import annotations

import html
import re

import pandas as pd
import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from db import annotators
from db import campaigns as camp
from db.datasets import import_pairs
from db.review import adjudicate
from tests.paths import REPO
from ui.base.page import user_text

PAYLOADS = [
    "![t](http://127.0.0.1:9/x.png)",
    "[click](http://127.0.0.1:9/a)",
    "<img src=x onerror=alert(1)>",
    "<http://127.0.0.1:9/c>",
    "**bold** *it* _it_ __b__ `code` ~~gone~~ $x^2$",
    "a\\*b \\ &amp; &lt;b&gt; &#33;",
    "# heading",
    "- item",
    "+ item",
    "* item",
    "1. one",
    "2) two",
    "> quote",
    "title\n===",
    "title\n---",
    "```\ncode\n```",
    "    indented",
    "a | b\n--|--\nc | d",
    "[x]: http://127.0.0.1:9/ref\n\n[x]",
    "line\n\nparagraph",
    "snake_case_name",
    "tab\there",
    "",
    "plain text, with: colons; and (brackets).",
]
RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])


@pytest.mark.parametrize("payload", PAYLOADS)
def test_user_text_reads_as_typed_and_makes_no_markup(payload):
    rendered = RENDERER.render(f"Before {user_text(payload)} after.")
    tags = set(re.findall(r"</?([a-z0-9]+)", rendered))
    assert tags <= {"p", "br"}, rendered  # no link, image, emphasis, code, heading, list, table...
    text = html.unescape(re.sub(r"<br />\n|</?p>", lambda m: "\n" if m.group(0).startswith("<br") else "", rendered))
    expected = "\n".join(line.lstrip() for line in f"Before {payload} after.".splitlines())  # indents aside
    assert text.replace("\u2060", "").strip() == expected


def test_user_text_leaves_plain_text_alone():
    assert user_text("Choose at least one dataset.") == "Choose at least one dataset."
    assert user_text("snake_case, 12 pairs (3 kept); done") == "snake_case, 12 pairs (3 kept); done"
    assert user_text(None) == "" and user_text(ValueError("A “name”.")) == "A “name”."


def test_pages_show_the_campaign_name_ids_reviewer_and_note_as_text(engine, db_url, monkeypatch):
    image = "![t](http://127.0.0.1:9/x.png)"
    frame = pd.DataFrame(
        {
            "external_id": [f"[id]({'http://127.0.0.1:9/id'})", "b"],
            "source": ["a b", "c d"],
            "hypothesis": ["a c", "c e"],
            "annotator:x": [0, 3],
            "annotator:y": [3, 3],
        }
    )
    done = import_pairs(engine, f"data {image}", frame, annotator_scale="levels")
    with engine.connect() as conn:
        first = conn.exec_driver_sql("SELECT MIN(id) FROM pairs").scalar()
    cid = camp.create_campaign(engine, f"Pilot {image}", [done.dataset_id], quota=1, n_training=0)
    aid, token = annotators.create_annotator(engine, cid, "a")
    annotators.set_annotator_profile(engine, aid, "A", "good")
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    monkeypatch.chdir(REPO)

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30)
    at.query_params["token"] = token
    at.run()
    assert [h.value for h in at.subheader] == [user_text(f"Pilot {image}")]  # the annotator's heading

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30).run()
    at.switch_page("pages/review.py").run()
    at.text_input(key="reviewer").input(f"Rev {image}").run()
    at.text_input(key=f"note-{first}").input(f"note {image}").run()
    at.button(key=f"final-2-{first}").click().run()
    assert not at.exception, at.exception
    at.radio(key="review-show").set_value("all").run()
    shown = [e.value for kind in ("caption", "markdown") for e in at.get(kind)]
    assert not [s for s in shown if image in s]  # the raw payload is nowhere in what is rendered
    assert any(f"{user_text(f'data {image}')} · id {user_text('[id](http://127.0.0.1:9/id)')}" in s for s in shown)
    assert any(f"decided by {user_text(f'Rev {image}')}" in s and user_text(f"note {image}") in s for s in shown)
    adjudicate(engine, first, 1, f"Other {image}", seen_revision=1)  # a second reviewer meanwhile
    at.button(key=f"final-3-{first}").click().run()
    assert [e.value for e in at.error] == [
        user_text(
            f"Other {image} decided on this pair meanwhile (now “Slightly "
            "similar”): your decision was not saved, and the page shows "
            "the queue as it stands now."
        )
    ]
