"""Generic tables: CSV, TSV, JSON (a list of records), JSONL and Excel, read with their own
column names; the caller maps those columns to ours."""
from __future__ import annotations

import csv
import io
import json
import zipfile

import numpy as np
import pandas as pd

from pluie_core.formats.common import PairFileError, RawTable

# A sentence can be long (ParaReval paragraphs); the csv module's default limit is 128 KiB.
csv.field_size_limit(16 * 1024 * 1024)


def delimited_rows(text: str, delimiter: str, quoted: bool) -> tuple[list[list[str]], np.ndarray]:
    """Split text into rows of fields, skipping blank lines; also return the line each row
    starts on (1-based), which is what error messages quote.

    `quoted=False` reads fields literally (QUOTE_NONE), as the paraphrase corpora need: MRPC,
    STS-B and PAWS have unbalanced double quotes inside sentences.
    """
    reader = csv.reader(
        io.StringIO(text, newline=""),
        delimiter=delimiter,
        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        strict=quoted,
    )
    rows: list[list[str]] = []
    starts: list[int] = []
    previous_end = 0
    try:
        for fields in reader:
            start = previous_end + 1
            previous_end = reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            rows.append(fields)
            starts.append(start)
    except csv.Error as error:
        if "unexpected end of data" in str(error):
            raise PairFileError(f"Line {previous_end + 1}: a quoted field starts here and its closing quote is missing.") from None
        raise PairFileError(
            f"Line {previous_end + 1}: the file cannot be read as "
            f"{'CSV' if delimiter == ',' else 'delimited text'} ({error})."
        ) from None
    return rows, np.asarray(starts, dtype=np.int64)


def header_names(fields: list[str]) -> list[str]:
    names = [name.strip() or f"column_{i + 1}" for i, name in enumerate(fields)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PairFileError(f"Line 1: the header names the column {name!r} twice.")
        seen.add(name)
    return names


def read_delimited_table(text: str, delimiter: str, format_name: str) -> RawTable:
    """A CSV (quoted fields) or TSV whose first line is a header. A TSV is read literally,
    like the corpora, unless its quotes all look like a writer's quoting (pandas, Excel)."""
    quoted = delimiter != "\t" or _tsv_is_quoted(text)
    rows, starts = delimited_rows(text, delimiter, quoted=quoted)
    if not rows:
        raise PairFileError("The file has no rows.")
    names = header_names(rows[0])
    body, body_starts = rows[1:], starts[1:]
    if not body:
        raise PairFileError(f"The file has a header ({', '.join(names)}) but no rows.")
    width = len(names)
    for fields, line in zip(body, body_starts):
        if len(fields) > width:
            raise PairFileError(
                f"Line {line}: the row has {len(fields)} fields but the header has {width}. "
                f"A {'comma' if delimiter == ',' else 'tab'} inside a sentence must be quoted."
            )
    # Short rows (trailing empty fields left out) are padded; a missing sentence is then
    # reported as empty by the validation.
    padded = [fields + [""] * (width - len(fields)) if len(fields) < width else fields for fields in body]
    table = pd.DataFrame(padded, columns=names, dtype=object)
    return RawTable(table, format_name, body_starts, "Line", spreadsheet_text=True)


def _tsv_is_quoted(text: str) -> bool:
    """True when the text reads cleanly as quoted TSV (every row as wide as the header), as
    pandas or Excel write it. Corpora with quotes inside sentences (MRPC, STS-B) do not."""
    if '"' not in text:
        return False
    try:
        rows, _ = delimited_rows(text, "\t", quoted=True)
    except PairFileError:
        return False
    return bool(rows) and all(len(fields) == len(rows[0]) for fields in rows)


def json_error(error: json.JSONDecodeError) -> PairFileError:
    return PairFileError(f"Line {error.lineno}: the JSON is malformed ({error.msg}, column {error.colno}).")


def read_json_records(records: list, format_name: str = "json") -> RawTable:
    """A JSON array of objects, one pair per object."""
    if not records:
        raise PairFileError("The JSON array is empty: the file has no rows.")
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise PairFileError(f"Record {number}: expected an object with named fields, found {_json_kind(record)}.")
    table = pd.DataFrame.from_records(records)
    table = table.astype(object)
    return RawTable(table, format_name, np.arange(1, len(records) + 1, dtype=np.int64), "Record")


def parse_jsonl(text: str) -> tuple[list[dict], np.ndarray]:
    records: list[dict] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise PairFileError(
                f"Line {number}: this line is not valid JSON ({error.msg}, column {error.colno})."
            ) from None
        if not isinstance(record, dict):
            raise PairFileError(f"Line {number}: expected a JSON object, found {_json_kind(record)}.")
        records.append(record)
        lines.append(number)
    if not records:
        raise PairFileError("The file has no rows.")
    return records, np.asarray(lines, dtype=np.int64)


def read_jsonl_table(text: str) -> RawTable:
    records, lines = parse_jsonl(text)
    table = pd.DataFrame.from_records(records).astype(object)
    return RawTable(table, "jsonl", lines, "Line")


def read_excel_table(data: bytes) -> RawTable:
    """The first sheet of an .xlsx workbook; its first row is the header."""
    try:
        table = pd.read_excel(io.BytesIO(data), sheet_name=0, dtype=object, engine="openpyxl")
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as error:
        raise PairFileError(f"The file is not a readable Excel workbook (.xlsx): {error}.") from None
    # Sheet row numbers: the header is row 1, so data row i is row i + 2.
    rows = np.arange(2, len(table) + 2, dtype=np.int64)
    keep = ~table.isna().all(axis=1).to_numpy()
    table, rows = table.loc[keep].reset_index(drop=True), rows[keep]
    if table.empty:
        raise PairFileError("The first sheet of the workbook has no rows.")
    table.columns = [str(name).strip() for name in table.columns]
    return RawTable(table, "excel", rows, "Row", spreadsheet_text=True)


def _json_kind(value) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return type(value).__name__
