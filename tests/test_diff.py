"""Word differences highlighted in yellow (appendix A.3 of the ParaPLUIE paper)."""

from html.parser import HTMLParser

import pytest

from pluie_core.diff import MARK_STYLE, diff_html, tokenize, word_diff


def changed(ops):
    return [(token, tag) for token, tag in ops if tag != "equal"]


class _Reader(HTMLParser):
    """Reads rendered HTML back: visible text, the text inside each <mark>, and every tag seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.text, self.marked, self.tags, self._in_mark = "", [], [], False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "mark":
            self._in_mark = True
            self.marked.append("")

    def handle_endtag(self, tag):
        if tag == "mark":
            self._in_mark = False

    def handle_data(self, data):
        self.text += data
        if self._in_mark:
            self.marked[-1] += data


def read(html_text):
    reader = _Reader()
    reader.feed(html_text)
    reader.close()
    return reader


# --- the worked examples of appendix A.3 -------------------------------------------------------


def test_substitution_marks_the_changed_word_on_both_sides():
    ops_a, ops_b = word_diff("The cat drinks water.", "The cat drinks milk.")
    assert ops_a == [("The", "equal"), ("cat", "equal"), ("drinks", "equal"), ("water", "replace"), (".", "equal")]
    assert ops_b == [("The", "equal"), ("cat", "equal"), ("drinks", "equal"), ("milk", "replace"), (".", "equal")]


def test_one_word_replaced_by_several():
    ops_a, ops_b = word_diff("The cat drinks water.", "The cat quenches its thirst.")
    assert changed(ops_a) == [("drinks", "replace"), ("water", "replace")]
    assert changed(ops_b) == [("quenches", "replace"), ("its", "replace"), ("thirst", "replace")]


def test_insertion_and_deletion():
    ops_a, ops_b = word_diff("The cat drinks water.", "The black cat drinks.")
    assert changed(ops_a) == [("water", "delete")]
    assert changed(ops_b) == [("black", "insert")]


def test_comparison_is_case_sensitive():
    ops_a, ops_b = word_diff("The cat drinks tomato soup.", "Cat tomato soup.")
    assert changed(ops_a) == [("The", "replace"), ("cat", "replace"), ("drinks", "replace")]
    assert changed(ops_b) == [("Cat", "replace")]


def test_html_highlights_exactly_the_differing_words_in_yellow():
    html_a, html_b = diff_html("The cat drinks water.", "The cat drinks milk.")
    a, b = read(html_a), read(html_b)
    assert a.text == "The cat drinks water." and b.text == "The cat drinks milk."
    assert a.marked == ["water"] and b.marked == ["milk"]
    mark = a.tags[0][1]
    assert mark["class"] == "pluie-diff pluie-diff-replace"
    assert "#fff176" in mark["style"] and mark["style"] == MARK_STYLE


def test_html_tags_insertions_and_deletions_by_side():
    html_a, html_b = diff_html("The cat drinks water.", "The black cat drinks.")
    assert read(html_a).marked == ["water"]
    assert "pluie-diff-delete" in html_a and "pluie-diff-insert" not in html_a
    assert read(html_b).marked == ["black"]
    assert "pluie-diff-insert" in html_b and "pluie-diff-delete" not in html_b


def test_a_run_of_changed_words_is_one_mark_and_keeps_its_spaces():
    html_a, html_b = diff_html("The cat drinks water.", "The cat quenches its thirst.")
    assert read(html_a).marked == ["drinks water"]
    assert read(html_b).marked == ["quenches its thirst"]


# --- spacing, punctuation, escaping, edge cases ------------------------------------------------


def test_punctuation_is_its_own_token_and_words_keep_apostrophes():
    assert [t for _, t in tokenize("Hello, world! Don't stop (now).")] == [
        "Hello",
        ",",
        "world",
        "!",
        "Don't",
        "stop",
        "(",
        "now",
        ")",
        ".",
    ]
    ops_a, ops_b = word_diff("Hello, world!", "Hello world!")
    assert changed(ops_a) == [(",", "delete")] and changed(ops_b) == []


def test_original_spacing_is_kept_in_the_html():
    a, b = "  Two  spaces\tand a tab. ", "Two spaces and a tab!"
    html_a, html_b = diff_html(a, b)
    assert read(html_a).text == a and read(html_b).text == b


@pytest.mark.parametrize(
    "attack", ["<img src=x onerror=alert(1)>", "<script>alert(1)</script>", '"><b onmouseover="x">']
)
def test_markup_in_a_sentence_comes_out_as_inert_text(attack):
    for html_a, html_b in (diff_html(attack, "A harmless sentence."), diff_html("A harmless sentence.", attack)):
        for rendered in (html_a, html_b):
            reader = read(rendered)
            assert {tag for tag, _ in reader.tags} <= {"mark"}  # no img, script or b element
        assert read(html_a).text + read(html_b).text in (
            attack + "A harmless sentence.",
            "A harmless sentence." + attack,
        )
    html_a, html_b = diff_html(attack, attack)
    assert "<" not in html_a.replace("<mark", "").replace("</mark", "")
    assert html_a == html_b and "mark" not in html_a


def test_quotes_are_escaped():
    html_a, _ = diff_html('He said "hi" & left', "He said hello")
    assert "&quot;" in html_a and "&amp;" in html_a and '"hi"' not in html_a


def test_empty_strings():
    assert word_diff("", "") == ([], [])
    assert diff_html("", "") == ("", "")
    ops_a, ops_b = word_diff("", "New words")
    assert ops_a == [] and ops_b == [("New", "insert"), ("words", "insert")]
    html_a, html_b = diff_html("Old words", "")
    assert read(html_a).marked == ["Old words"] and html_b == ""


def test_identical_sentences_have_no_highlight():
    sentence = "The cat eats the mouse."
    ops_a, ops_b = word_diff(sentence, sentence)
    assert all(tag == "equal" for _, tag in ops_a + ops_b)
    assert diff_html(sentence, sentence) == (sentence, sentence)


def test_unicode_words_and_accents():
    ops_a, ops_b = word_diff("Le chat boit du café.", "Le chat boit du thé.")
    assert changed(ops_a) == [("café", "replace")] and changed(ops_b) == [("thé", "replace")]
    ops_a, ops_b = word_diff("Le cafe\u0301 est chaud", "Le cafe\u0301 est froid")  # decomposed accent
    assert ("cafe\u0301", "equal") in ops_a and changed(ops_a) == [("chaud", "replace")]
    html_a, html_b = diff_html("東京 は 大きい 😀", "東京 は 小さい 😀")
    assert read(html_a).marked == ["大きい"] and read(html_b).marked == ["小さい"]


def test_frequent_words_are_still_matched_in_long_sentences():
    # difflib's automatic junk heuristic would drop the 250 "the" from matching; it must be off
    a = "the " * 250 + "cat drinks water"
    b = "cat " + "the " * 250 + "drinks milk"
    ops_a, ops_b = word_diff(a, b)
    assert changed(ops_a) == [("cat", "delete"), ("water", "replace")]
    assert changed(ops_b) == [("cat", "insert"), ("milk", "replace")]
