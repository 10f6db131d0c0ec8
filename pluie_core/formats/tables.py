"""Generic tables: CSV, TSV, JSON (a list of records), JSONL and Excel, read with their own
column names; the caller maps those columns to ours."""

from __future__ import annotations

import csv
import datetime
import io
import json
import math
import re
import zipfile
from typing import Optional

import numpy as np
import pandas as pd

from pluie_core.formats.common import PairFileError, RawTable, listed, places, size_text

# A sentence can be long (ParaReval paragraphs); the csv module's default limit is 128 KiB.
csv.field_size_limit(16 * 1024 * 1024)

# What an .xlsx upload (a zip archive) may expand to before openpyxl reads it: a zip bomb is a
# small file whose parts inflate a thousandfold. Python's zipfile never inflates a part past the
# size its directory declares (a mismatch is a bad CRC), so checking the declared sizes bounds
# what is read.
MAX_EXPANDED_BYTES = 200 * 1024 * 1024
MAX_EXPANSION_RATIO = 100
_RATIO_CHECKED_FROM = 1024 * 1024  # small parts (styles, themes) may compress very well
# JSON nested deeper than this is refused: Python's parser and every later step (the preview,
# the store's JSON) recurse, and no pair file needs it.
MAX_JSON_DEPTH = 100
# A table wider than this is refused as soon as its header is read (check_width): a 20,000-column,
# one-row CSV took 47 s and 468 MB to be read whole before.
MAX_COLUMNS = 1000


def delimited_rows(text: str, delimiter: str, quoted: bool) -> tuple[list[list[str]], np.ndarray]:
    """Split text into rows of fields, skipping blank lines; also return the line each row
    starts on (1-based), which is what error messages quote.

    `quoted=False` reads fields literally (QUOTE_NONE), as the paraphrase corpora need: MRPC,
    STS-B and PAWS have unbalanced double quotes inside sentences.
    """
    rows: list[list[str]] = []
    starts: list[int] = []
    for fields, start in iter_delimited_rows(io.StringIO(text, newline=""), delimiter, quoted):
        rows.append(fields)
        starts.append(start)
    return rows, np.asarray(starts, dtype=np.int64)


def iter_delimited_rows(lines, delimiter: str, quoted: bool):
    """delimited_rows one row at a time, from any iterable of lines (a text file opened with
    newline=""): (fields, the line the row starts on), blank lines skipped."""
    reader = csv.reader(
        lines,
        delimiter=delimiter,
        quoting=csv.QUOTE_MINIMAL if quoted else csv.QUOTE_NONE,
        strict=quoted,
    )
    previous_end = 0
    try:
        for fields in reader:
            start = previous_end + 1
            previous_end = reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            yield fields, start
    except csv.Error as error:
        if "unexpected end of data" in str(error):
            raise PairFileError(
                f"Line {previous_end + 1}: a quoted field starts here and its closing quote is missing."
            ) from None
        raise PairFileError(
            f"Line {previous_end + 1}: the file cannot be read as "
            f"{'CSV' if delimiter == ',' else 'delimited text'} ({error})."
        ) from None
    except UnicodeDecodeError:  # a file read as it streams (pluie_core.io.read_pair_chunks)
        raise PairFileError(
            f"Line {previous_end + 1}: the file is not UTF-8 text; save it as UTF-8 and try again."
        ) from None


def check_width(n_columns: int, where: str = "The file") -> None:
    """Refuse a table wider than MAX_COLUMNS before its rows are read: no pair file needs that many
    columns, and each one costs time and memory on every row."""
    if n_columns > MAX_COLUMNS:
        raise PairFileError(
            f"{where} has {n_columns:,} columns; the limit is {MAX_COLUMNS:,} (two sentences, a label, "
            "an id, the annotators and the other columns kept as metadata)."
        )


def header_names(fields: list[str], where: str = "Line 1") -> list[str]:
    names = [name.strip() or f"column_{i + 1}" for i, name in enumerate(fields)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise PairFileError(f"{where}: the header names the column {name!r} twice.")
        seen.add(name)
    return names


def read_delimited_table(text: str, delimiter: str, format_name: str) -> RawTable:
    """A CSV (quoted fields) or TSV whose first line is a header. A TSV is read literally,
    like the corpora, unless its quotes all look like a writer's quoting (pandas, Excel)."""
    header = next(iter_delimited_rows(io.StringIO(text, newline=""), delimiter, delimiter != "\t"), None)
    check_width(len(header[0]) if header else 0)  # before the rows are read
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


def parse_json(text: str, where: str = ""):
    """json.loads, with every way it can fail on a hostile file (malformed, nested past Python's
    recursion limit, a number of thousands of digits) turned into a PairFileError; `where`
    ("Line 3") names a JSONL line."""

    def sentence(text: str) -> PairFileError:
        return PairFileError(f"{where}: {text}" if where else text[0].upper() + text[1:])

    try:
        return json.loads(text, parse_float=_json_float, parse_constant=_json_constant)
    except json.JSONDecodeError as error:
        if where:
            raise sentence(f"this line is not valid JSON ({error.msg}, column {error.colno}).") from None
        raise json_error(error) from None
    except RecursionError:
        raise sentence(f"the JSON is nested too deeply; the limit is {MAX_JSON_DEPTH} levels.") from None
    except ValueError:  # an integer past Python's limit on digits (4,300)
        raise sentence("the JSON holds a number with too many digits to read.") from None


def _json_float(text: str):
    """A JSON number as a float, or as the text the file wrote when no float holds it (1e400 would be
    infinity): the label check then quotes "1e400", not "inf"."""
    value = float(text)
    return value if math.isfinite(value) else text


def _json_constant(text: str):
    """JavaScript's NaN (read as missing), Infinity and -Infinity (kept as written: not a number)."""
    return None if text == "NaN" else text


def check_json_depth(value, where: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Refuse a value nested more than `limit` levels deep (a record counts as one level)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            raise PairFileError(f"{where}: the JSON is nested too deeply; the limit is {limit} levels.")
        children = item.values() if isinstance(item, dict) else item
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def check_document_depth(document, row_word: str = "Record") -> None:
    """check_json_depth for each record of a JSON document (a list, or objects keyed by id)."""
    items = document.values() if isinstance(document, dict) else document if isinstance(document, list) else []
    for number, item in enumerate(items, start=1):
        if isinstance(item, (dict, list)):
            check_json_depth(item, f"{row_word} {number}")


def read_json_records(records: list, format_name: str = "json") -> RawTable:
    """A JSON array of objects, one pair per object."""
    if not records:
        raise PairFileError("The JSON array is empty: the file has no rows.")
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise PairFileError(f"Record {number}: expected an object with named fields, found {_json_kind(record)}.")
    check_records_width(records, "Record")
    table = pd.DataFrame.from_records(records)
    table = table.astype(object)
    return RawTable(table, format_name, np.arange(1, len(records) + 1, dtype=np.int64), "Record")


def parse_jsonl(text: str) -> tuple[list[dict], np.ndarray]:
    records: list[dict] = []
    lines: list[int] = []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        record = parse_json(line, f"Line {number}")
        if not isinstance(record, dict):
            raise PairFileError(f"Line {number}: expected a JSON object, found {_json_kind(record)}.")
        check_json_depth(record, f"Line {number}")
        if len(record) > MAX_COLUMNS:
            check_width(len(record), f"Line {number}")
        records.append(record)
        lines.append(number)
    if not records:
        raise PairFileError("The file has no rows.")
    return records, np.asarray(lines, dtype=np.int64)


def check_records_width(records: list[dict], row_word: str, numbers=None) -> None:
    """check_width for records: one with too many fields is named, and so are all of them together
    (their fields make the table's columns)."""
    names: set = set()
    for i, record in enumerate(records):
        if len(record) > MAX_COLUMNS:
            check_width(len(record), f"{row_word} {int(numbers[i]) if numbers is not None else i + 1}")
        names.update(record)
        if len(names) > MAX_COLUMNS:
            check_width(len(names), "The file's records together")


def read_jsonl_table(text: str) -> RawTable:
    records, lines = parse_jsonl(text)
    check_records_width(records, "Line", lines)
    table = pd.DataFrame.from_records(records).astype(object)
    return RawTable(table, "jsonl", lines, "Line")


def read_excel_table(data: bytes) -> RawTable:
    """The first sheet of an .xlsx workbook; its first non-empty row is the header.

    Dates and times are read as ISO text (2024-01-05, 2024-01-05T10:30:00, 10:30:00). What could
    pass unseen is said in warnings: sheets other than the first, and formulas with no computed
    value (a workbook written by a program that does not compute them): such cells read as empty
    and rows left with nothing are skipped. A header naming a column twice is refused, as in CSV."""
    check_archive(data)
    import openpyxl
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        sheets, grid = _sheet_grid(openpyxl, data, data_only=True)
        uncomputed = set()
        if _has_formulas(data):
            _, formulas = _sheet_grid(openpyxl, data, data_only=False, cells=True)
            uncomputed = {
                (r, c)
                for r, row in enumerate(formulas)
                for c, cell in enumerate(row)
                if getattr(cell, "data_type", None) == "f"
                and (r >= len(grid) or c >= len(grid[r]) or grid[r][c] is None)
            }
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, SyntaxError, InvalidFileException) as error:
        raise PairFileError(f"The file is not a readable Excel workbook (.xlsx): {error}.") from None
    warnings = []
    if len(sheets) > 1:
        others = [repr(name) for name in sheets[1:]]
        warnings.append(
            f"The workbook has {len(sheets)} sheets: only the first, {sheets[0]!r}, was read "
            f"({listed(others[:10] + ([f'{len(others) - 10} more'] if len(others) > 10 else []))} "
            f"{'was' if len(others) == 1 else 'were'} left aside)."
        )
    filled = [r for r, row in enumerate(grid) if any(v is not None for v in row)]
    if not filled:
        raise PairFileError("The first sheet of the workbook has no rows.")
    header_at = filled[0]
    width = max(max((c + 1 for c, v in enumerate(row) if v is not None), default=0) for row in grid)
    check_width(width, "The first sheet")
    header = grid[header_at] + [None] * (width - len(grid[header_at]))
    names = header_names(["" if v is None else str(_cell(v)) for v in header[:width]], f"Row {header_at + 1}")
    body = [r for r in filled if r > header_at]
    if not body:
        raise PairFileError("The first sheet of the workbook has no rows.")
    skipped = sorted({r for r, _ in uncomputed if r > header_at and r not in body})
    if skipped:
        one = len(skipped) == 1
        warnings.append(
            f"{places('Row', [r + 1 for r in skipped]).capitalize()} held only formulas with no computed "
            f"value and {'was' if one else 'were'} left out: open and save the workbook in a spreadsheet "
            "application (Excel, LibreOffice) to compute them."
        )
    position = {r: i for i, r in enumerate(body)}
    empty = sorted({r for r, _ in uncomputed if r in position})
    if empty:
        warnings.append(
            f"{places('Row', [r + 1 for r in empty]).capitalize()} {'has' if len(empty) == 1 else 'have'} "
            "formulas with no computed value, read as empty cells: open and save the workbook in a "
            "spreadsheet application to compute them."
        )
    rows = [[_cell(v) for v in grid[r][:width]] + [None] * (width - len(grid[r][:width])) for r in body]
    table = pd.DataFrame(rows, columns=names, dtype=object)
    return RawTable(
        table,
        "excel",
        np.asarray(body, dtype=np.int64) + 1,
        "Row",
        warnings=warnings,
        spreadsheet_text=True,
        uncomputed={(position[r], names[c]) for r, c in uncomputed if r in position and c < width},
    )


def check_archive(data: bytes, max_expanded: Optional[int] = None, max_ratio: Optional[int] = None) -> None:
    """Refuse a zip archive that would expand past `max_expanded` bytes in all (default
    MAX_EXPANDED_BYTES), or a part of it (over 1 MB) that would expand more than `max_ratio` times
    (default MAX_EXPANSION_RATIO): read from its directory, before anything is inflated."""
    max_expanded = MAX_EXPANDED_BYTES if max_expanded is None else max_expanded
    max_ratio = MAX_EXPANSION_RATIO if max_ratio is None else max_ratio
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            parts = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise PairFileError(f"The file is not a readable Excel workbook (.xlsx): {error}.") from None
    total = sum(part.file_size for part in parts)
    if total > max_expanded:
        raise PairFileError(
            f"The workbook would expand to {size_text(total)} when opened; the limit is "
            f"{size_text(max_expanded)} (save it as CSV, or split it)."
        )
    for part in parts:
        if part.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            # bzip2 / LZMA parts inflate a whole read at once, past the declared size; Excel never writes them
            raise PairFileError(
                f"The workbook's part {part.filename!r} is not compressed as Excel compresses "
                "(deflate): the file is not a workbook Excel wrote."
            )
        packed = max(1, min(part.compress_size, len(data)))
        if part.file_size > _RATIO_CHECKED_FROM and part.file_size > max_ratio * packed:
            raise PairFileError(
                f"The workbook's part {part.filename!r} would expand from {size_text(packed)} to "
                f"{size_text(part.file_size)}, more than {max_ratio} times: it is refused as a zip bomb."
            )


_FORMULA = re.compile(rb"<(?:\w+:)?f[\s>/]")


def _has_formulas(data: bytes) -> bool:
    """Whether a worksheet of the workbook holds a formula (an <f> element), read in chunks."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        for name in archive.namelist():
            if not (name.startswith("xl/worksheets/") and name.endswith(".xml")):
                continue
            with archive.open(name) as part:
                tail = b""
                while chunk := part.read(1 << 20):
                    if _FORMULA.search(tail + chunk):
                        return True
                    tail = chunk[-16:]
    return False


def _sheet_grid(openpyxl, data: bytes, data_only: bool, cells: bool = False) -> tuple[list[str], list[list]]:
    """The workbook's sheet names and its first sheet as rows of values (or of cells), row i of
    the list being sheet row i + 1."""
    book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=data_only, keep_links=False)
    try:
        sheet = book.worksheets[0]
        sheet.reset_dimensions()  # some writers record wrong dimensions (pandas does the same)
        grid = [list(row) for row in sheet.iter_rows(values_only=not cells)]
        return list(book.sheetnames), grid
    finally:
        book.close()


def _cell(value):
    """A cell's value as the rest of the reader takes it: dates and times as ISO text, whole
    numbers as integers (as pandas reads them)."""
    if isinstance(value, datetime.datetime):
        if value.time() == datetime.time(0) and value.tzinfo is None:
            return value.date().isoformat()
        return value.isoformat()
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return pd.Timedelta(value).isoformat()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


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
