"""The invalid rows an import names (issue 56, item 9): an import refused for invalid rows names every one of
them (the first ten, and how many more), in the file's order, not only the one the first check happened to
meet (row 41's empty source was named while row 40's label, checked later, was not)."""

from __future__ import annotations

import io

import pytest

from pluie_core.io import PairFileError, load_pairs, read_pair_chunks
from tests.test_pages_data import app  # noqa: F401 (the app on a fresh store, a page at a time)


def pair_file(bad: dict[int, str], n: int = 60) -> bytes:
    """A CSV of n pairs (lines 2 .. n + 1), with the lines of ``bad`` replaced."""
    lines = ["source,hypothesis,label"] + [f"Source {i}.,Hypothesis {i}.,1" for i in range(2, n + 2)]
    for line, text in bad.items():
        lines[line - 1] = text
    return ("\n".join(lines) + "\n").encode()


def refusal(data: bytes, **kwargs) -> str:
    with pytest.raises(PairFileError) as caught:
        load_pairs(io.BytesIO(data), format="csv", **kwargs)
    return str(caught.value)


def test_two_invalid_rows_of_different_kinds_are_both_named_in_the_files_order():
    data = pair_file({40: "Source 40.,Hypothesis 40.,maybe", 41: ",Hypothesis 41.,1"})
    assert refusal(data) == "Line 40: the label 'maybe' is not a number. Line 41: the source sentence is empty."
    assert refusal(pair_file({7: "Source 7.,,1"})) == "Line 7: the hypothesis is empty."  # one row: as before


def test_many_invalid_rows_name_the_first_ten_and_count_the_rest():
    bad = {line: f"Source {line}.,Hypothesis {line}.,x{line}" for line in range(10, 23)}  # 13 rows
    message = refusal(pair_file(bad))
    for line in range(10, 20):
        assert f"Line {line}: the label 'x{line}' is not a number." in message
    assert "Line 20" not in message and message.endswith("And 3 more invalid rows.")


def test_a_file_read_in_chunks_names_the_chunks_rows_and_says_where_it_stopped():
    data = pair_file({4: "Source 4.,,1", 6: "Source 6.,Hypothesis 6.,nope"}, n=30)
    chunks = read_pair_chunks(io.BytesIO(data), format="csv", chunk_rows=10)
    with pytest.raises(PairFileError) as caught:
        list(chunks)
    assert str(caught.value) == (
        "Line 4: the hypothesis is empty. Line 6: the label 'nope' is not a number. "
        "The lines after line 11 were not checked."
    )
    last = read_pair_chunks(io.BytesIO(pair_file({28: "Source 28.,,1", 31: ",x,1"}, n=30)), format="csv", chunk_rows=10)
    with pytest.raises(PairFileError) as caught:
        list(last)  # the last chunk: nothing after it
    assert str(caught.value) == "Line 28: the hypothesis is empty. Line 31: the source sentence is empty."


def test_the_import_page_names_both_rows_and_offers_to_skip_them(app):
    at = app("pages/import_pairs.py")
    at.file_uploader[0].set_value(
        ("pairs.csv", pair_file({40: "Source 40.,Hypothesis 40.,maybe", 41: ",Hypothesis 41.,1"}), "text/csv")
    )
    at.run()
    assert not at.exception, at.exception
    shown = " ".join(e.value for e in at.error)
    assert "Line 40: the label" in shown and "Line 41: the source sentence is empty." in shown
    assert any("Skip invalid rows instead of refusing the file" in c.value for c in at.caption)
