"""Bytes for the export page: a pairs table as CSV or JSONL, ready to publish.

The export table has the columns external_id, dataset, source, hypothesis, label,
annotator:<name>..., majority_level, majority_label, binary_label, score:<run name>...;
these functions write whatever columns they are given, in order.

CSV and spreadsheets: a text cell that starts with = + - @, a tab or a carriage return would
be run as a formula by Excel / LibreOffice when the file is opened ("CSV injection"). Such
cells get a leading apostrophe, the spreadsheet's own "this is text" marker. So that the
marker is never ambiguous, a cell that already starts with an apostrophe gets one more.
pluie_core.io.load_pairs removes exactly one leading apostrophe before those characters,
so export -> import gives back the same text. Number columns (labels, scores) are written as
numbers and never marked. The CSV is UTF-8 with a byte-order mark, which Excel needs to
recognise UTF-8; load_pairs ignores it.

JSONL is never opened as a spreadsheet: it is written as is, one JSON object per line,
missing values as null, times as ISO 8601 text.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
from typing import Iterable, Iterator

import numpy as np
import pandas as pd

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
TEXT_MARKER = "'"


def mark_formula_text(cell):
    """Prefix the spreadsheet text marker when a cell could be read as a formula."""
    if isinstance(cell, str) and cell.startswith(FORMULA_TRIGGERS + (TEXT_MARKER,)):
        return TEXT_MARKER + cell
    return cell


def to_csv_bytes(df: pd.DataFrame) -> bytes:
    """The table as CSV (UTF-8 with BOM, comma-separated, quoted where needed)."""
    safe = df.copy()
    for column in safe.columns:
        if not (pd.api.types.is_numeric_dtype(safe[column]) or pd.api.types.is_bool_dtype(safe[column])):
            safe[column] = safe[column].map(mark_formula_text)
    text = safe.to_csv(index=False, lineterminator="\n")
    return text.encode("utf-8-sig")


def to_jsonl_bytes(df: pd.DataFrame) -> bytes:
    """The table as JSON Lines (UTF-8), one object per pair; missing values are null."""
    columns = [str(c) for c in df.columns]
    lines = []
    for values in df.itertuples(index=False, name=None):
        record = {column: _json_value(value) for column, value in zip(columns, values)}
        lines.append(json.dumps(record, ensure_ascii=False))
    return ("\n".join(lines) + "\n").encode("utf-8") if lines else b""


def _json_value(value):
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return None if math.isnan(value) else float(value)
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (pd.Timestamp, dt.datetime, dt.date)):
        return value.isoformat()
    return value


def to_parquet_bytes(df: pd.DataFrame) -> bytes:
    """The table as Parquet (pyarrow), column types kept: levels as integers, scores as floats.
    For a whole dataset folder streamed in chunks, see db.publish."""
    return df.to_parquet(index=False, engine="pyarrow")


STREAM_FORMATS = {
    "csv": "text/csv; charset=utf-8",
    "jsonl": "application/x-ndjson",
    "parquet": "application/vnd.apache.parquet",
}


class _Drain(io.RawIOBase):
    """A file that keeps what is written until drained: a Parquet writer's output, handed out piece by piece."""

    def __init__(self):
        super().__init__()
        self._pieces: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self._pieces.append(bytes(data))
        return len(data)

    def drain(self) -> bytes:
        out, self._pieces = b"".join(self._pieces), []
        return out


def stream_table(chunks: Iterable[pd.DataFrame], format: str) -> Iterator[bytes]:
    """A table given in chunks (the same columns in each), written out as ``format`` (STREAM_FORMATS) piece by
    piece: the bytes of one chunk at a time, so a million rows go out in the memory of one chunk. The pieces
    joined are the file the one-piece writers (to_csv_bytes, to_jsonl_bytes, to_parquet_bytes) give for the
    whole table: one CSV header, a Parquet row group per chunk and one footer."""
    if format not in STREAM_FORMATS:
        raise ValueError(f"Choose one of {', '.join(STREAM_FORMATS)}.")
    writer = sink = None
    first = True
    for chunk in chunks:
        if format == "csv":
            data = to_csv_bytes(chunk)
            if not first:  # the header and the byte-order mark once, at the top
                data = data.removeprefix("\ufeff".encode("utf-8")).split(b"\n", 1)[1]
            yield data
        elif format == "jsonl":
            yield to_jsonl_bytes(chunk)
        else:
            # pyarrow only here: the library's Parquet is an extra (pip install 'pluie-lab[analysis]'), and
            # pluie_core.io, which every command reads pairs with, imports this module
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(chunk, preserve_index=False)
            if writer is None:
                sink = _Drain()
                writer = pq.ParquetWriter(sink, table.schema)
            writer.write_table(table)
            assert sink is not None  # made with the writer
            yield sink.drain()
        first = False
    if format == "parquet":
        if writer is None:  # no chunk at all: still a file, with no column
            yield to_parquet_bytes(pd.DataFrame())
            return
        writer.close()
        assert sink is not None
        yield sink.drain()
