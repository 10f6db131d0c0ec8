"""Export bytes (CSV / JSONL) read back by load_pairs give the same pairs and labels, and the
CSV is safe to open in a spreadsheet."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pandas as pd
import pytest

from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes
from pluie_core.io import load_pairs
from tests.paths import DATASETS

TRICKY = [
    ('=HYPERLINK("http://evil","x")', "+1 is a number", 1.0),
    ("-2 degrees outside", "@user said hi", 0.0),
    ("'quoted' start", "it's fine", np.nan),
    ("'=already escaped?", "Tab\tinside and\nnewline inside", 1.0),
    ("Café – naïve 東京 😀", "Ünïcödé \u2028 line separator", 0.0),
    ("<script>alert('x')</script>", 'He said "yes", then "no".', 1.0),
    ("comma, separated, text", "semi;colon|pipe", 0.0),
    ("Windows\r\nline ending", "cell ending with a backslash \\", 1.0),
]


def export_frame() -> pd.DataFrame:
    """A table shaped like the export page's: gold label, annotators, aggregates, scores."""
    n = len(TRICKY)
    return pd.DataFrame(
        {
            "external_id": [f"=id{i}" if i == 0 else f"pair-{i}" for i in range(n)],
            "dataset": ["demo"] * n,
            "source": [s for s, _, _ in TRICKY],
            "hypothesis": [h for _, h, _ in TRICKY],
            "label": [label for _, _, label in TRICKY],
            "annotator:alice": [3, 0, 4, 2, np.nan, 1, 0, 3],
            "annotator:bob": [2, 0, 4, np.nan, 1, 1, 0, 3],
            "majority_level": [2, 0, np.nan, 2, 1, 1, 0, 3],
            "majority_label": [
                "Mostly similar",
                "Very different",
                "",
                "Mostly similar",
                "Slightly similar",
                "Slightly similar",
                "Very different",
                "Same meaning",
            ],
            "binary_label": [1, 0, np.nan, 1, 0, 0, 0, 1],
            "score:mistral fs-direct": [-16.976, 3.5, -0.25, 0.0, 12.0, -1e-3, 7.0, -2.0],
        }
    )


def _same_pairs(read_back: pd.DataFrame, original: pd.DataFrame):
    assert read_back["source"].tolist() == original["source"].tolist()
    assert read_back["hypothesis"].tolist() == original["hypothesis"].tolist()
    assert read_back["external_id"].tolist() == original["external_id"].tolist()
    for column in ("label", "annotator:alice", "annotator:bob"):
        np.testing.assert_array_equal(read_back[column].to_numpy(float), original[column].to_numpy(float))
    np.testing.assert_allclose(read_back["score:mistral fs-direct"].astype(float), original["score:mistral fs-direct"])


@pytest.mark.parametrize(
    "writer, name, format_name", [(to_csv_bytes, "export.csv", "csv"), (to_jsonl_bytes, "export.jsonl", "jsonl")]
)
def test_round_trip_of_tricky_text(tmp_path, writer, name, format_name):
    original = export_frame()
    path = tmp_path / name
    path.write_bytes(writer(original))
    read_back = load_pairs(path)
    assert read_back.attrs["format"] == format_name
    assert read_back.attrs["duplicates"] == []
    _same_pairs(read_back, original)
    assert read_back["majority_label"].fillna("").tolist() == original["majority_label"].tolist()


def test_round_trip_from_an_upload_without_a_file_name():
    original = export_frame()
    for payload in (to_csv_bytes(original), to_jsonl_bytes(original)):
        upload = io.BytesIO(payload)
        upload.name = ""
        _same_pairs(load_pairs(upload), original)


def test_csv_cells_cannot_run_as_formulas():
    payload = to_csv_bytes(export_frame())
    assert payload.startswith(b"\xef\xbb\xbf")  # BOM: Excel reads the file as UTF-8
    rows = list(csv.DictReader(io.StringIO(payload.decode("utf-8-sig"), newline="")))
    text_cells = [row[c] for row in rows for c in ("external_id", "source", "hypothesis", "majority_label")]
    assert not [cell for cell in text_cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
    assert rows[0]["source"].startswith("'=HYPERLINK")
    assert rows[0]["external_id"] == "'=id0"
    assert rows[2]["source"] == "''quoted' start"  # an existing apostrophe is doubled ...
    assert rows[2]["hypothesis"] == "it's fine"  # ... only at the start of a cell
    # numbers stay numbers: a negative score is not marked as text
    assert rows[0]["score:mistral fs-direct"] == "-16.976"


def test_jsonl_is_written_as_is():
    # split on "\n" only: str.splitlines would also split at the U+2028 inside a sentence
    lines = to_jsonl_bytes(export_frame()).decode("utf-8").rstrip("\n").split("\n")
    records = [json.loads(line) for line in lines]
    assert len(records) == len(TRICKY)
    assert records[0]["source"].startswith("=HYPERLINK")
    assert records[2]["label"] is None and records[2]["majority_level"] is None
    assert records[4]["source"] == "Café – naïve 東京 😀"


def test_real_dataset_export_round_trip(tmp_path):
    """A whole shared dataset (MRPC test) exported and imported again is unchanged."""
    pairs = load_pairs(DATASETS / "mrpc/msr_paraphrase_test.txt")
    exported = pairs[["external_id", "source", "hypothesis", "label"]].assign(dataset="mrpc-test")
    path = tmp_path / "mrpc.csv"
    path.write_bytes(to_csv_bytes(exported))
    read_back = load_pairs(path)
    assert len(read_back) == len(pairs) == 1725
    assert read_back["source"].tolist() == pairs["source"].tolist()
    assert read_back["hypothesis"].tolist() == pairs["hypothesis"].tolist()
    assert read_back["label"].tolist() == pairs["label"].tolist()
    assert read_back.attrs["label_kind"] == "binary"
