"""Files a user can get wrong: each gives a PairFileError whose message names the place and
the problem, in words a user understands."""

from __future__ import annotations

import datetime
import io
import json
import zipfile

import openpyxl
import pandas as pd
import pytest
import sqlalchemy as sa

from db import read_session
from db.datasets import ImportRejected, datasets_overview, import_file, import_pairs, store_totals
from db.models import Pair
from db.preferences import import_preferences
from pluie_core.io import PairFileError, load_pairs, read_table
from tests.paths import DATASETS


def _write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def _error(path_or_buffer, **kwargs) -> str:
    with pytest.raises(PairFileError) as caught:
        load_pairs(path_or_buffer, **kwargs)
    message = str(caught.value)
    assert "Traceback" not in message and len(message) < 400
    return message


def _real_lines(relative, n):
    """The first n lines of a shared dataset file, line endings kept."""
    return (DATASETS / relative).read_bytes().splitlines(keepends=True)[:n]


def test_missing_required_column_lists_the_columns(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "first,second,label\na,b,1\n"))
    assert "No source column" in message and "first, second, label" in message


def test_empty_sentence_names_the_line(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis\nA cat.,A dog.\nA bird.,   \n"))
    assert message == "Line 3: the hypothesis is empty."


def test_empty_sentence_in_a_real_paws_file(tmp_path):
    lines = _real_lines("paws_wiki_final/dev.tsv", 6)
    fields = lines[4].split(b"\t")
    fields[1] = b" "
    lines[4] = b"\t".join(fields)
    message = _error(_write(tmp_path, "dev.tsv", b"".join(lines)))
    assert message == "Line 5: the source sentence is empty."


def test_undecodable_bytes_name_line_and_byte(tmp_path):
    content = "source,hypothesis\nA cat.,A dog.\n".encode() + b"Caf\xe9,Coffee\n"
    message = _error(_write(tmp_path, "p.csv", content))
    assert message.startswith("Line 3 (byte 35):") and "not UTF-8" in message


def test_row_with_too_many_fields(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis,label\na,b,1\nc,d,0\ne, f, g,1\n"))
    assert message.startswith("Line 4: the row has 4 fields but the header has 3.")


def test_row_with_too_many_fields_in_a_tsv(tmp_path):
    message = _error(_write(tmp_path, "p.tsv", "source\thypothesis\nA\tB\nC\tD\tE\n"))
    assert message.startswith("Line 3: the row has 3 fields but the header has 2.") and "tab" in message


def test_file_larger_than_the_limit(tmp_path):
    path = _write(tmp_path, "p.csv", "source,hypothesis\n" + "a,b\n" * 1000)
    assert _error(path, max_bytes=1024) == "The file is 3.9 KB; the limit is 1.0 KB."
    upload = io.BytesIO(path.read_bytes())
    upload.name = "p.csv"
    assert _error(upload, max_bytes=1024) == "The file is larger than the limit of 1.0 KB."
    # the default limit is 50 MB
    big = _write(tmp_path, "big.csv", b"source,hypothesis\n" + b"a,b\n" * (13 * 1024 * 1024 + 1))
    assert _error(big) == "The file is 52.0 MB; the limit is 50.0 MB."


def test_empty_file(tmp_path):
    assert _error(_write(tmp_path, "p.csv", "")) == "The file is empty."
    assert _error(_write(tmp_path, "q.jsonl", " \n\n")) == "The file is empty."


def test_header_but_no_rows(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis,label\n"))
    assert "header" in message and "no rows" in message


def test_real_mrpc_header_without_rows(tmp_path):
    message = _error(_write(tmp_path, "msr.txt", b"".join(_real_lines("mrpc/msr_paraphrase_test.txt", 1))))
    assert message == "The MRPC file has a header but no rows."


def test_unknown_format(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis\na,b\n"), format="parquet")
    assert message.startswith("Unknown format 'parquet'") and "csv" in message


def test_malformed_json_names_the_line(tmp_path):
    content = '[\n  {"source": "a", "hypothesis": "b"},\n  {"source": "c" "hypothesis": "d"}\n]\n'
    message = _error(_write(tmp_path, "p.json", content))
    assert message.startswith("Line 3: the JSON is malformed")


def test_jsonl_line_that_is_not_an_object(tmp_path):
    content = '{"source": "a", "hypothesis": "b"}\n["c", "d"]\n'
    assert _error(_write(tmp_path, "p.jsonl", content)) == "Line 2: expected a JSON object, found a list."


def test_jsonl_line_that_is_not_json(tmp_path):
    content = '{"source": "a", "hypothesis": "b"}\n\n{"source": "c", "hypothesis": }\n'
    message = _error(_write(tmp_path, "p.jsonl", content))
    assert message.startswith("Line 3: this line is not valid JSON")


def test_json_record_that_is_not_an_object(tmp_path):
    message = _error(_write(tmp_path, "p.json", json.dumps([{"source": "a", "hypothesis": "b"}, "c"])))
    assert message == "Record 2: expected an object with named fields, found a string."


def test_label_not_a_number(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis,label\na,b,1\nc,d,high\n"))
    assert message == "Line 3: the label 'high' is not a number."


def test_annotator_label_not_a_number(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis,annotator:bob\na,b,1\nc,d,??\n"))
    assert message == "Line 3: the label of annotator bob '??' is not a number."


def test_label_out_of_range_in_a_real_mrpc_file(tmp_path):
    lines = _real_lines("mrpc/msr_paraphrase_test.txt", 10)
    lines[7] = b"2" + lines[7][1:]
    message = _error(_write(tmp_path, "msr.txt", b"".join(lines)))
    assert message == "Line 8: the label 2 is outside the dataset's scale; expected 0 or 1."


def test_score_out_of_range_in_a_real_stsb_file(tmp_path):
    lines = _real_lines("stsbenchmark/sts-dev.csv", 5)
    fields = lines[2].split(b"\t")
    fields[4] = b"7.5"
    lines[2] = b"\t".join(fields)
    message = _error(_write(tmp_path, "sts.csv", b"".join(lines)))
    assert message == "Line 3: the label 7.5 is outside the dataset's scale; expected between 0 and 5."


def test_biosses_annotator_out_of_range(tmp_path):
    lines = _real_lines("biosses/biosses_pairs_with_annotator_scores.tsv", 4)
    fields = lines[3].split(b"\t")
    fields[5] = b"9"
    lines[3] = b"\t".join(fields)
    message = _error(_write(tmp_path, "b.tsv", b"".join(lines)))
    assert message == "Line 4: the label of annotator C 9 is outside the dataset's scale; expected between 0 and 4."


def test_mrpc_row_with_missing_field(tmp_path):
    lines = _real_lines("mrpc/msr_paraphrase_test.txt", 6)
    lines[3] = b"\t".join(lines[3].split(b"\t")[:4]) + b"\n"
    message = _error(_write(tmp_path, "msr.txt", b"".join(lines)))
    assert message == "Line 4: MRPC rows have 5 tab-separated fields; this one has 4."


def test_twitter_votes_malformed(tmp_path):
    lines = _real_lines("twitter_url_corpus/Twitter_URL_Corpus_test.txt", 4)
    fields = lines[2].split(b"\t")
    fields[2] = b"(7;6)"
    lines[2] = b"\t".join(fields)
    message = _error(_write(tmp_path, "t.txt", b"".join(lines)))
    assert message == "Line 3: the vote field '(7;6)' is not of the form (n,6)."


def test_turku_unknown_label(tmp_path):
    records = json.loads((DATASETS / "turku_paraphrase_fi/test.json").read_text(encoding="utf-8"))[:3]
    records[1]["label"] = "5x"
    message = _error(_write(tmp_path, "t.json", json.dumps(records)))
    assert message.startswith("Record 2: the label '5x' is not a Turku label")


def test_excel_file_that_is_not_a_workbook(tmp_path):
    message = _error(_write(tmp_path, "pairs.xlsx", "source,hypothesis\na,b\n"))
    assert "not" in message and "Excel workbook" in message


def test_zip_that_is_not_a_workbook(tmp_path):
    path = tmp_path / "pairs.xlsx"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("hello.txt", "not a sheet")
    assert "not a readable Excel workbook" in _error(path)


def test_excel_missing_column(tmp_path):
    workbook = openpyxl.Workbook()
    workbook.active.append(["text", "other"])
    workbook.active.append(["a", "b"])
    workbook.save(tmp_path / "w.xlsx")
    message = _error(tmp_path / "w.xlsx")
    assert "No source column" in message and "text, other" in message


def test_excel_empty_sentence_names_the_sheet_row(tmp_path):
    workbook = openpyxl.Workbook()
    for row in (["source", "hypothesis"], ["a", "b"], ["c", None]):
        workbook.active.append(row)
    workbook.save(tmp_path / "w.xlsx")
    assert _error(tmp_path / "w.xlsx") == "Row 3: the hypothesis is empty."


def test_xml_not_well_formed(tmp_path):
    text = b"".join(_real_lines("paraphraser_ru/paraphrases_gold.xml", 14))  # cut inside <corpus>
    message = _error(_write(tmp_path, "p.xml", text))
    assert message.startswith("Line ") and "XML is not well-formed" in message


def test_xml_with_entities_is_refused(tmp_path):
    content = '<?xml version="1.0"?><!DOCTYPE d [<!ENTITY a "aaaa">]><data><paraphrase/></data>'
    assert "DOCTYPE" in _error(_write(tmp_path, "p.xml", content))


def test_column_mapped_twice(tmp_path):
    path = _write(tmp_path, "p.csv", "s1,s2,g\na,b,1\n")
    message = _error(path, columns={"source": "s1", "hypothesis": "s2", "annotators": {"ann": "s1"}})
    assert message == "Column 's1' is mapped twice (to source and annotator ann); map each column once."


def test_mapped_column_not_in_file(tmp_path):
    path = _write(tmp_path, "p.csv", "s1,s2,g\na,b,1\n")
    message = _error(path, columns={"source": "s1", "hypothesis": "s2", "label": "gold"})
    assert message == "Column 'gold' is not in the file; its columns are: s1, s2, g."


def test_unknown_mapping_key(tmp_path):
    path = _write(tmp_path, "p.csv", "s1,s2\na,b\n")
    assert "Unknown mapping key(s) target" in _error(path, columns={"source": "s1", "target": "s2"})


def test_header_naming_a_column_twice(tmp_path):
    message = _error(_write(tmp_path, "p.csv", "source,hypothesis,source\na,b,c\n"))
    assert message == "Line 1: the header names the column 'source' twice."


def test_unbalanced_quote_in_csv(tmp_path):
    message = _error(_write(tmp_path, "p.csv", 'source,hypothesis\nx,y\n"a,b\nc,d\n'))
    assert message == "Line 3: a quoted field starts here and its closing quote is missing."


def test_missing_file(tmp_path):
    assert _error(tmp_path / "nothing.csv").startswith("There is no file at")


def test_old_excel_format(tmp_path):
    message = _error(_write(tmp_path, "p.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100))
    assert ".xls" in message and "xlsx" in message


def test_other_xml_is_unsupported(tmp_path):
    message = _error(_write(tmp_path, "p.xml", "<pairs><pair a='x' b='y'/></pairs>"))
    assert "not a ParaPhraser corpus" in message


def test_json_single_object(tmp_path):
    message = _error(_write(tmp_path, "p.json", json.dumps({"source": "a", "hypothesis": "b"}, indent=2)))
    assert message == "The JSON file holds a single object; expected a list of records or objects keyed by id."


# -- hostile files (issue 23): each refused with one sentence before the store is touched --------


def _workbook(path, rows, extra_sheets=()):
    workbook = openpyxl.Workbook()
    for row in rows:
        workbook.active.append(row)
    for title in extra_sheets:
        workbook.create_sheet(title).append(["source", "hypothesis"])
    workbook.save(path)
    return path


def _refused_by_the_store(engine, path_or_buffer) -> str:
    """The import's sentence; the store holds exactly what it held before."""
    import_pairs(engine, "already there", pd.DataFrame({"source": ["A cat."], "hypothesis": ["A dog."]}))
    before = store_totals(engine)
    with pytest.raises((PairFileError, ImportRejected)) as caught:
        import_file(engine, path_or_buffer, name="hostile")
    message = str(caught.value)
    assert "Traceback" not in message and len(message) < 400 and message.count(". ") <= 1
    assert store_totals(engine) == before and "hostile" not in set(datasets_overview(engine)["dataset"])
    return message


def test_excel_dates_and_times_are_stored_as_iso_text(engine, tmp_path):
    when = datetime.datetime(2024, 1, 5, 10, 30)
    path = _workbook(
        tmp_path / "dated.xlsx",
        [
            ["source", "hypothesis", "created", "day", "at", "took"],
            [
                "A cat.",
                "A dog.",
                when,
                datetime.date(2024, 1, 5),
                datetime.time(9, 15),
                datetime.timedelta(hours=1, minutes=30),
            ],
        ],
    )
    assert read_table(path).iloc[0, 2:4].tolist() == ["2024-01-05T10:30:00", "2024-01-05"]
    result = import_file(engine, path)
    with read_session(engine) as session:
        meta = session.scalar(sa.select(Pair.meta).where(Pair.dataset_id == result.dataset_id))
    assert meta == {"created": "2024-01-05T10:30:00", "day": "2024-01-05", "at": "09:15:00", "took": "P0DT1H30M0S"}
    # a frame built elsewhere with pandas' timestamps lands too
    frame = pd.DataFrame({"source": ["x"], "hypothesis": ["y"], "seen": [pd.Timestamp(when)]})
    import_pairs(engine, "from pandas", frame)


def _bomb(path, size):
    """A real workbook whose first sheet holds a sentence of `size` bytes of "a" (past Excel's own
    limit on a cell, as a forged file may): a few KB on disk."""
    _workbook(path, [["source", "hypothesis"], ["x", "y"]])
    sheet = (
        '<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        '<row r="1"><c r="A1" t="inlineStr"><is><t>source</t></is></c><c r="B1" t="inlineStr"><is><t>hypothesis'
        '</t></is></c></row><row r="2"><c r="A2" t="inlineStr"><is><t>' + "a" * size + "</t></is></c>"
        '<c r="B2" t="inlineStr"><is><t>b</t></is></c></row></sheetData></worksheet>'
    )
    with zipfile.ZipFile(path) as original:
        parts = [(info, original.read(info)) for info in original.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as bomb:
        for info, content in parts:
            bomb.writestr(info.filename, sheet if info.filename == "xl/worksheets/sheet1.xml" else content)
    return path


def test_a_zip_bomb_named_xlsx_is_refused_before_it_is_inflated(engine, tmp_path):
    path = _bomb(tmp_path / "bomb.xlsx", 2 * 1024 * 1024)
    assert path.stat().st_size < 20_000  # 2 MB of text in a few KB
    message = _refused_by_the_store(engine, path)
    assert "would expand from" in message and "more than 100 times" in message and "zip bomb" in message
    # LZMA / bzip2 parts inflate a whole read at once, past the sizes the archive declares
    lzma = tmp_path / "lzma.xlsx"
    with (
        zipfile.ZipFile(_workbook(tmp_path / "plain.xlsx", [["source", "hypothesis"], ["a", "b"]])) as plain,
        zipfile.ZipFile(lzma, "w", zipfile.ZIP_LZMA) as repacked,
    ):
        for info in plain.infolist():
            repacked.writestr(info.filename, plain.read(info))
    assert "is not compressed as Excel compresses (deflate)" in _error(lzma)


def test_a_workbook_expanding_past_the_limit_is_refused(engine, tmp_path, monkeypatch):
    import random

    from pluie_core.formats import tables

    words = [f"w{i}" for i in range(3000)]
    rng = random.Random(0)
    rows = [["source", "hypothesis"]] + [[" ".join(rng.choices(words, k=12)), f"h {i}"] for i in range(1500)]
    path = _workbook(tmp_path / "big.xlsx", rows)
    assert len(load_pairs(path)) == 1500  # well under the real limit (200 MB)
    monkeypatch.setattr(tables, "MAX_EXPANDED_BYTES", 100 * 1024)
    message = _refused_by_the_store(engine, path)
    assert message.startswith("The workbook would expand to ") and "the limit is 100.0 KB" in message


def test_a_sentence_longer_than_the_limit(engine, tmp_path):
    from pluie_core.io import MAX_SENTENCE_CHARS

    path = _write(tmp_path, "long.csv", f"source,hypothesis\nA cat.,A dog.\nA bird.,{'b' * (MAX_SENTENCE_CHARS + 1)}\n")
    assert _refused_by_the_store(engine, path) == "Line 3: the hypothesis has 20,001 characters; the limit is 20,000."
    assert len(load_pairs(_write(tmp_path, "ok.csv", f"source,hypothesis\n{'a' * MAX_SENTENCE_CHARS},b\n"))) == 1
    # the store checks it too, for frames that did not come through load_pairs
    before = store_totals(engine)
    with pytest.raises(ImportRejected, match="^Pair 1: the source has 20,001 characters; the limit is 20,000.$"):
        import_pairs(engine, "frame", pd.DataFrame({"source": ["s" * 20_001], "hypothesis": ["h"]}))
    items = pd.DataFrame({"source": ["s"], "candidate_a": ["a" * 20_001], "candidate_b": ["b"], "preferred": ["A"]})
    with pytest.raises(ImportRejected, match="^Item 1: candidate A has 20,001 characters; the limit is 20,000.$"):
        import_preferences(engine, "preferences", items)
    assert store_totals(engine) == before


def test_json_nested_200000_deep_is_refused_with_a_sentence(engine, tmp_path):
    deep = "[" * 200_000 + "]" * 200_000
    message = _refused_by_the_store(engine, _write(tmp_path, "deep.json", deep))
    assert message == "The JSON is nested too deeply; the limit is 100 levels."
    record = '{"source": "a", "hypothesis": "b", "x": ' + deep + "}"
    assert (
        _error(_write(tmp_path, "deep.jsonl", '{"source": "c", "hypothesis": "d"}\n' + record + "\n"))
        == "Line 2: the JSON is nested too deeply; the limit is 100 levels."
    )
    # deep enough to be parsed, still refused: every later step (preview, store) recurses too
    nested = (
        '[{"source": "a", "hypothesis": "b"}, {"source": "c", "hypothesis": "d", "x": ' + "[" * 150 + "]" * 150 + "}]"
    )
    assert (
        _error(_write(tmp_path, "nested.json", nested))
        == "Record 2: the JSON is nested too deeply; the limit is 100 levels."
    )


def test_a_jsonl_label_of_400_digits_is_refused_with_a_sentence(engine, tmp_path):
    content = (
        '{"source": "a", "hypothesis": "b", "label": 1}\n{"source": "c", "hypothesis": "d", "label": '
        + "9" * 400
        + "}\n"
    )
    message = _refused_by_the_store(engine, _write(tmp_path, "big.jsonl", content))
    assert message.startswith("Line 2: the label '999") and message.endswith("(… 400 characters) is too large.")
    huge = '{"source": "a", "hypothesis": "b", "label": ' + "9" * 5000 + "}\n"
    assert (
        _error(_write(tmp_path, "huge.jsonl", huge)) == "Line 1: the JSON holds a number with too many digits to read."
    )


def test_excel_formulas_without_computed_values_and_extra_sheets_are_said(tmp_path):
    path = _workbook(
        tmp_path / "formulas.xlsx",
        [
            ["source", "hypothesis", "note"],
            ["A cat.", "A dog.", "=1+1"],
            ["=A2", "=B2", None],  # only formulas: no values to read
            ["A bird.", "A fish.", None],
        ],
        extra_sheets=["Notes", "Old"],
    )
    frame = load_pairs(path)
    assert frame["source"].tolist() == ["A cat.", "A bird."]
    expected = [
        "The workbook has 3 sheets: only the first, 'Sheet', was read ('Notes' and 'Old' were left aside).",
        "Row 3 held only formulas with no computed value and was left out: open and save the workbook in a "
        "spreadsheet application (Excel, LibreOffice) to compute them.",
        "Row 2 has formulas with no computed value, read as empty cells: open and save the workbook in a "
        "spreadsheet application to compute them.",
    ]
    assert frame.attrs["warnings"] == expected
    assert read_table(path).attrs["warnings"] == expected  # the preview says it before the mapping
    broken = _workbook(tmp_path / "half.xlsx", [["source", "hypothesis"], ["A cat.", "A dog."], ["A bird.", "=A3"]])
    assert _error(broken) == (
        "Row 3: the hypothesis is a formula with no computed value; open and save the "
        "workbook in a spreadsheet application (Excel, LibreOffice) to compute it."
    )


def test_excel_header_naming_a_column_twice_is_refused_as_in_csv(engine, tmp_path):
    path = _workbook(tmp_path / "twice.xlsx", [["source", "hypothesis", "source"], ["a", "b", "c"]])
    assert _refused_by_the_store(engine, path) == "Row 1: the header names the column 'source' twice."


def test_nested_json_values_are_stored_as_json(engine, tmp_path):
    records = [
        {"id": {"k": 1}, "source": "A cat.", "hypothesis": ["A", "dog."], "tags": {"x": [1, None]}, "one": [None]}
    ]
    result = import_file(engine, _write(tmp_path, "nested.json", json.dumps(records)))
    with read_session(engine) as session:
        pair = session.scalars(sa.select(Pair).where(Pair.dataset_id == result.dataset_id)).one()
        stored = (pair.external_id, pair.hypothesis, pair.meta)
    assert stored == ('{"k": 1}', '["A", "dog."]', {"tags": {"x": [1, None]}, "one": [None]})
