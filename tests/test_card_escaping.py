"""The dataset card carries no markup into a rendered page (issue 38, item 8): the names, title,
descriptions and other user text in its body read as typed once a Markdown renderer has made HTML of
it (no element, link, image or math made of them), and its YAML header still holds the title whole."""

from __future__ import annotations

import datetime as dt
import html
import re

import pandas as pd
import yaml
from markdown_it import MarkdownIt

from db import init_db
from db.analysis import add_score_run
from db.datasets import import_pairs
from db.publish import publish_dataset
from pluie_core.dataset_card import dataset_card, model_text

RENDERER = MarkdownIt("commonmark").enable(["table", "strikethrough"])  # the Hub's Markdown is GFM
# what the card's own text makes: headings, lists, emphasis, code, tables, paragraphs
CARD_TAGS = {
    "h1",
    "h2",
    "p",
    "ul",
    "li",
    "strong",
    "em",
    "code",
    "pre",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "br",
}
SCRIPT, IMAGE, MATH = "<script>alert(1)</script>", "![x](http://evil.example/x.png)", "$$x$$"


def split_card(card: str) -> tuple[dict, str]:
    """The YAML header (between the first two lines that are exactly ---) and the Markdown body."""
    lines = card.split("\n")
    assert lines[0] == "---"
    end = lines.index("---", 1)
    return yaml.safe_load("\n".join(lines[1:end])), "\n".join(lines[end + 1 :])


def rendered(body: str) -> tuple[set, str]:
    """The tags a Markdown renderer makes of the body, and the text a reader sees (word joiners aside)."""
    page = RENDERER.render(body)
    tags = set(re.findall(r"<([a-z][a-z0-9]*)", page))
    return tags, html.unescape(re.sub(r"<[^>]+>", "", page)).replace("\u2060", "")


def facts(**changes) -> dict:
    base = {
        "title": "t",
        "licence": "mit",
        "n_pairs": 2,
        "n_labels": 4,
        "n_annotators": 2,
        "datasets": [{"name": "d", "n_pairs": 2, "description": ""}],
        "annotators": {"native": 2},
        "labels_per_pair": {2: 2},
        "final_sources": {"majority": 2},
        "final_levels": {1: 2},
        "agreement": {
            "n_pairs": 2,
            "n_boot": 10,
            "ordinal": {"alpha": None, "why": "too few"},
            "binary": {"alpha": None, "why": "too few"},
            "unanimous_level": 0.5,
            "unanimous_side": 1.0,
        },
        "runs": [],
        "include_training": False,
        "created_at": dt.datetime(2025, 1, 2, 3, 4),
        "data_file": "data.parquet",
    }
    return {**base, **changes}


def test_every_user_text_in_the_card_reads_as_typed_and_makes_no_markup():
    typed = {
        "title": f"{IMAGE} and {MATH} #",
        "dataset": SCRIPT,
        "description": "**bold** [a](http://evil.example/a) <img src=x onerror=alert(1)>",
        "level": "<b>native</b>",
        "run": "judge|<img src=x>",
        "model": "*m* <i>x",
        "template": "*t* `code`",
        "campaign": "[c](http://evil.example/c)",
        "selection": f"score in {MATH}",
    }
    card = dataset_card(
        facts(
            title=typed["title"],
            datasets=[{"name": typed["dataset"], "n_pairs": 2, "description": typed["description"]}],
            annotators={typed["level"]: 2},
            runs=[
                {
                    "name": typed["run"],
                    "kind": "baseline",
                    "model": typed["model"],
                    "template": typed["template"],
                    "direction": "forward",
                    "answers": None,
                    "higher_is_similar": True,
                    "n_scores": 2,
                }
            ],
            campaign={
                "name": typed["campaign"],
                "datasets": [typed["dataset"]],
                "selection_text": typed["selection"],
                "n_training": 0,
                "n_queue": 2,
                "overlap": 2,
                "quota": 2,
                "seed": 0,
                "n_gold_pairs": 0,
                "gold_rate": 0.0,
            },
        )
    )
    header, body = split_card(card)
    assert header["pretty_name"] == typed["title"]
    tags, text = rendered(body)
    assert tags <= CARD_TAGS, tags - CARD_TAGS  # no script, img, a, b...
    assert not re.search(r"(?<!\\)\$", body)  # no math delimiter left for the Hub's KaTeX
    lines = text.splitlines()
    assert typed["title"] in lines  # the heading, closing " #" included
    typed["model"] = model_text(typed["model"])  # a model not on the Hub is named, not written whole
    for value in typed.values():
        assert value in text, value
    row = next(r for r in re.findall(r"<tr>(.*?)</tr>", RENDERER.render(body), re.S) if "score:" in r)
    cells = [html.unescape(re.sub(r"<[^>]+>", "", c)).replace("\u2060", "") for c in re.findall(r"<td>(.*?)</td>", row)]
    assert cells[:4] == [f"score:{typed['run']}", "baseline", typed["model"], typed["template"]]  # a row, whole


def test_a_title_on_several_lines_cannot_end_the_yaml_header_or_the_heading():
    title = "a\n---\n<script>alert(1)</script>\n# b"
    header, body = split_card(dataset_card(facts(title=title)))
    assert header["pretty_name"] == title
    tags, text = rendered(body)
    assert tags <= CARD_TAGS and "a --- <script>alert(1)</script> # b" in text.splitlines()


def test_a_published_card_shows_the_names_as_typed(store_url, tmp_path):
    engine = init_db(store_url)
    frame = pd.DataFrame(
        {"source": ["a b", "c d"], "hypothesis": ["a c", "c e"], "annotator:x": [0, 3], "annotator:y": [3, 3]}
    )
    import_pairs(engine, SCRIPT, frame, annotator_scale="levels", description=f"From {IMAGE}")
    add_score_run(engine, f"run {MATH}", {1: 0.5, 2: 0.1})
    card = publish_dataset(engine, tmp_path / "out", licence="mit", title=f"{IMAGE} and {MATH}", n_boot=10).card
    header, body = split_card(card)
    assert header["pretty_name"] == f"{IMAGE} and {MATH}"
    tags, text = rendered(body)
    assert tags <= CARD_TAGS, tags - CARD_TAGS
    assert not re.search(r"(?<!\\)\$", body)
    for typed in (SCRIPT, f"From {IMAGE}", f"score:run {MATH}", f"{IMAGE} and {MATH}"):
        assert typed in text, typed
    engine.dispose()


def test_names_and_addresses_in_the_published_card_hold_no_invisible_joiner(store_url, tmp_path):
    """Issue 56 item 10: a word joiner (U+2060) the pages need against Streamlit's links was inside the card's
    names and addresses, so an address copied from the Hub was not the one typed. In the card an address, an
    @name and a :name: are inline code (no renderer links them, and they copy whole); a name with a colon is
    plain text."""
    engine = init_db(store_url)
    frame = pd.DataFrame(
        {"source": ["a b", "c d"], "hypothesis": ["a c", "c e"], "annotator:x": [0, 3], "annotator:y": [3, 3]}
    )
    description = (
        "From https://example.org/sick?v=2 (write to alice@example.org). See www.example.org, "
        "mailto:bob@example.org and :tada:"
    )
    import_pairs(engine, "team:sick @lab", frame, annotator_scale="levels", description=description)
    add_score_run(engine, "judge:v2", {1: 0.5, 2: 0.1})
    card = publish_dataset(engine, tmp_path / "out", licence="mit", title="SICK by carol@example.org", n_boot=10).card
    assert "\u2060" not in card
    header, body = split_card(card)
    page = RENDERER.render(body)
    text = html.unescape(re.sub(r"<[^>]+>", "", page))
    for typed in (description, "team:sick @lab", "score:judge:v2", "SICK by carol@example.org"):
        assert typed in text, typed
    codes = set(re.findall(r"<code>(.*?)</code>", page))
    assert {
        "https://example.org/sick?v=2",
        "alice@example.org",
        "www.example.org",
        "mailto:bob@example.org",
        ":tada:",
        "@lab",
        "carol@example.org",
    } <= codes, codes
    assert "team:sick" in text and "`team:sick`" not in body  # a colon alone is no link: plain text
    tags, _ = rendered(body)
    assert tags <= CARD_TAGS, tags - CARD_TAGS
    engine.dispose()
