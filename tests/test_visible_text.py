"""What the annotator sees is what is scored (issue 38, item 4): bidi controls and invisible format
characters in a pair or a name are shown as a visible mark, never applied, while the store keeps the
text exactly as imported; the word-difference highlight stays on the words that differ."""

from __future__ import annotations

import html
import re
import sys
import unicodedata
from html.parser import HTMLParser

import pandas as pd
from markdown_it import MarkdownIt
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from db import annotators
from db import campaigns as camp
from db.datasets import import_pairs
from db.engine import read_session
from db.models import Pair
from pluie_core.diff import diff_html
from pluie_core.visible import count_marked, hidden_note, visible_html, visible_text
from tests.annotation_fixtures import make_dataset
from tests.paths import REPO
from ui.base.page import user_text

RLO = "\u202e"
# the characters the issue names, and every other format character (Unicode category Cf)
NAMED = (
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
    "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad"
)
FORMAT = "".join(
    chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf" and not 0xD800 <= c <= 0xDFFF
)


PLAIN = ["A plain sentence.", "Le café d'à côté", "مرحبا بالعالم", "שלום", "❤️ 日本語", "tab\tand\nline", ""]


def test_visible_text_shows_each_hidden_character_as_its_code_point_and_nothing_else():
    assert visible_text(RLO + "ihg fed cba") == "⟨U+202E⟩ihg fed cba"
    assert visible_text("s\u200bam\u00ad") == "s⟨U+200B⟩am⟨U+00AD⟩"
    assert visible_text("tag\U000e0041") == "tag⟨U+E0041⟩"
    for char in NAMED + FORMAT:
        shown = visible_text(f"a{char}b")
        assert shown == f"a⟨U+{ord(char):04X}⟩b"
        assert not any(unicodedata.category(c) == "Cf" for c in shown)
    for text in PLAIN:  # other scripts, accents, an emoji with its variation selector: as they are
        assert visible_text(text) == text and visible_html(text) == html.escape(text, quote=True)


def test_visible_html_escapes_and_names_the_character_it_does_not_apply():
    shown = visible_html(f"<b>x</b>{RLO}y")
    assert RLO not in shown and "<b>" not in shown
    assert (
        '&lt;b&gt;x&lt;/b&gt;<span class="pluie-hidden-char" title="right-to-left override: shown, not applied"'
        in shown
    )
    assert re.sub(r"<[^>]+>", "", html.unescape(shown.replace("&lt;", "‹").replace("&gt;", "›"))) == "‹b›x‹/b›⟨U+202E⟩y"


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.marked, self._depth = "", [], 0

    def handle_starttag(self, tag, attrs):
        if tag == "mark":
            self._depth += 1
            self.marked.append("")

    def handle_endtag(self, tag):
        if tag == "mark":
            self._depth -= 1

    def handle_data(self, data):
        self.text += data
        if self._depth:
            self.marked[-1] += data


def read(fragment: str) -> _Reader:
    reader = _Reader()
    reader.feed(fragment)
    reader.close()
    return reader


def test_the_diff_is_of_the_stored_text_and_its_highlight_stays_on_the_words_that_differ():
    # on screen the override made "ihg fed cba" read "abc def ghi", with the highlight moved onto "abc"
    top, bottom = diff_html(f"{RLO}ihg fed cba", "ihg fed cbx")
    assert RLO not in top
    top, bottom = read(top), read(bottom)
    assert top.text == "⟨U+202E⟩ihg fed cba" and bottom.text == "ihg fed cbx"  # the stored order, marked
    assert top.marked == ["⟨U+202E⟩", "cba"] and bottom.marked == ["cbx"]
    # a zero-width space inside a word is shown where it is, and the words around it still match
    top, bottom = (read(side) for side in diff_html("the cat\u200b sat", "the cat sat"))
    assert top.text == "the cat⟨U+200B⟩ sat" and top.marked == ["⟨U+200B⟩"] and bottom.marked == []


def test_no_hidden_character_reaches_the_rendered_pair():
    top, bottom = diff_html(f"a {FORMAT} b", f"a {NAMED} c")
    assert not any(unicodedata.category(c) == "Cf" for c in top + bottom)


def test_names_in_markdown_are_marked_and_user_texts_own_word_joiner_stays():
    rendered = MarkdownIt("commonmark").render(user_text(f"Team{RLO} alpha\u2060 http://x.example"))
    shown = html.unescape(re.sub(r"</?p>", "", rendered)).strip()
    assert RLO not in shown
    # the joiner the user typed is marked; the one user_text puts after "http" to stop a link is not
    assert shown == "Team⟨U+202E⟩ alpha⟨U+2060⟩ http\u2060:\u2060//x.example"


def test_count_marked_counts_the_sentences_that_hold_a_hidden_character():
    assert count_marked(["plain", f"a{RLO}b", "s\u200bam", None, "\u00ad\u00ad", "❤️"]) == 3
    assert count_marked([]) == 0
    assert hidden_note(["plain"]) is None
    assert hidden_note(["a\u200bb"]) == (
        "1 sentence holds invisible or direction-changing characters (zero-width spaces, bidi controls): it is "
        "imported as it is, and shown with marks such as ⟨U+202E⟩ in their place, never applied."
    )
    assert hidden_note([RLO, "x", "\ufeffy"]).startswith(
        "2 sentences hold invisible or direction-changing "
        "characters (zero-width spaces, bidi controls): they are "
        "imported as they are,"
    )


def test_the_import_preview_counts_the_sentences_it_will_show_marked(app_store, monkeypatch):
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30).run()
    at.switch_page("pages/import_pairs.py").run()
    data = f"source,hypothesis\n{RLO}ihg fed cba,abc def ghi\nplain one,plain two\ns\u200bam,sam\n".encode()
    at.file_uploader[0].set_value(("bidi.csv", data, "text/csv"))
    at.run()
    assert not at.exception, at.exception
    assert [c.value for c in at.caption if "invisible" in c.value] == [hidden_note([f"{RLO}x", "s\u200bam"])]
    # the preview tables (the file as read, the pairs it gives) show the marks, never the characters
    tables = [frame.value.to_csv(index=False) for frame in at.dataframe]
    assert len(tables) >= 2 and all(RLO not in t and "\u200b" not in t for t in tables)
    assert all("⟨U+202E⟩ihg fed cba" in t and "s⟨U+200B⟩am" in t for t in tables)


def test_the_annotate_page_shows_the_mark_and_the_store_keeps_the_override(app_store, monkeypatch):
    monkeypatch.chdir(REPO)
    stored = f"{RLO}ihg fed cba"
    ds, (pair_id,) = make_dataset(app_store, "bidi", [(stored, "ihg fed cbx")])
    cid = camp.create_campaign(app_store, "Bidi", [ds], n_training=0, quota=1)
    aid, token = annotators.create_annotator(app_store, cid, "x")
    annotators.set_annotator_profile(app_store, aid, "X", "good")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30)
    at.query_params["token"] = token
    at.run()
    assert not at.exception
    body = next(h.proto.body for h in at.html if "pluie-pair" in h.proto.body and "<style>" not in h.proto.body)
    assert RLO not in body
    assert 'title="right-to-left override: shown, not applied"' in body
    shown = html.unescape(re.sub(r"<[^>]+>", "", body))
    assert "⟨U+202E⟩ihg fed cba" in shown and "ihg fed cbx" in shown
    with read_session(app_store) as session:
        assert session.scalar(select(Pair.source).where(Pair.id == pair_id)) == stored  # the data as imported


def test_review_and_pairs_show_the_marks_in_place_of_the_override(app_store, monkeypatch):
    monkeypatch.chdir(REPO)
    frame = pd.DataFrame(
        {
            "source": [f"{RLO}ihg fed cba", "c d"],
            "hypothesis": ["ihg fed cbx", "c e"],
            "annotator:x": [0, 3],
            "annotator:y": [3, 3],
        }
    )
    import_pairs(app_store, "bidi", frame, annotator_scale="levels")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30).run()
    at.switch_page("pages/review.py").run()
    assert not at.exception
    body = next(h.proto.body for h in at.html if "review-pair" in h.proto.body)
    assert RLO not in body and "⟨U+202E⟩ihg fed cba" in html.unescape(re.sub(r"<[^>]+>", "", body))

    at.switch_page("pages/pairs.py").run()
    assert not at.exception
    assert [t.value for t in at.text] == ["Source:     ⟨U+202E⟩ihg fed cba\nHypothesis: ihg fed cbx"]
    picker = next(s for s in at.selectbox if s.label == "Pair")
    assert picker.options[0].endswith("· ⟨U+202E⟩ihg fed cba")
    assert list(at.dataframe[0].value["source"]) == ["⟨U+202E⟩ihg fed cba", "c d"]
