"""Reading sentence-pair files into a DataFrame: one row per pair.

    df = load_pairs("msr_paraphrase_test.txt")            # format detected from the content
    df = load_pairs(upload, columns={"source": "q1", "hypothesis": "q2", "label": "gold"})

Result columns
    source, hypothesis   text, stripped of surrounding whitespace, never empty
    label                float, missing allowed: 0/1 for binary datasets, the dataset's own
                         number for scored ones (STS-B 0-5, SICK relatedness 1-5, BIOSSES 0-4)
    external_id          text or missing: the pair's id in the file
    annotator:<name>     float, missing allowed: one column per annotator
    ...                  every other column of the file, unchanged (free metadata)

df.attrs
    format       "mrpc", "paws", "stsb", "sick", "paraphrasus", "twitter_url", "turku",
                 "paraphraser_xml", "parareval", "biosses", "csv", "tsv", "json", "jsonl", "excel"
    label_kind   "binary" | "score" | None (no labels)
    label_range  (min, max) of the scale when label_kind is "score" (the dataset's scale when
                 known, otherwise the values seen); absent otherwise
    duplicates   [{"row": n, "duplicate_of": m}, ...]: exact repeats of a (source, hypothesis)
                 pair, dropped (the first is kept) unless keep_duplicates=True. n and m are
                 numbered like error messages: file lines for text tables and JSONL, records for
                 JSON and XML, sheet rows for Excel.
    keep_duplicates  whether the repeats were kept (True: every row of the file is a pair, as
                 benchmarks count them) or dropped (False, the default: right for labelling)
    warnings     [str, ...]
    notes        [str, ...]: how the file was read where it could surprise, e.g. labels
                 written as words ("yes" read as 1, "no" as 0)
    n_rows_read  pairs read from the file, before duplicates were dropped
    skipped_rows [{"row": n, "why": str}, ...]: with skip_invalid=True only, the rows that could
                 not be pairs (an empty or too long sentence, a label that is not a number or is
                 outside the dataset's scale), left out and listed, numbered like duplicates
    row_word     "Line", "Record" or "Row": what those numbers count

Label conventions per dataset are documented beside each reader in
pluie_core/formats/corpora.py: MRPC Quality and PAWS label are 0/1; STS-B keeps its 0-5 score;
SICK keeps relatedness (1-5) as the label and the entailment judgment as a column; Twitter URL
votes (n of 6) give 1 for n >= 4, 0 for n <= 2, no label for n = 3; Turku levels 3-4 give 1,
levels 1-2 give 0; ParaPhraser classes 0 and 1 give 1, -1 gives 0; ParaReval gives two pairs
per record labelled by the annotator's correctness judgment; BIOSSES labels are the mean of
the five annotators.

Binary labels written as words are read as numbers, in any case, and said so in attrs["notes"]:
yes / true / paraphrase as 1, no / false / non-paraphrase (also "not paraphrase",
"non_paraphrase") as 0.

Spreadsheet text marker: in CSV, TSV and Excel files a leading apostrophe before = + - @,
a tab, a carriage return or another apostrophe is removed, so that our own CSV export
(pluie_core.export_format), which adds it to keep spreadsheets from running formulas, reads
back unchanged.

NUL characters (0x00) are removed from every cell and column name, in every format, with a
warning naming the lines (records, sheet rows) they were on: no store can hold one in text
(PostgreSQL refuses it), none is ever part of a sentence, and removing them gives the same pairs
on every store. Other control characters are kept as the file has them: every store holds them
alike, and published benchmarks contain a few (MRPC train line 1766 writes an apostrophe as
0x12) that removing would change. A file with NUL in half its bytes is UTF-16 text and is
refused with a request to save it as UTF-8.

Limits: a file of at most MAX_BYTES (50 MB); an Excel workbook that expands to at most
MAX_EXPANDED_BYTES (200 MB), no part of it more than MAX_EXPANSION_RATIO (100) times; JSON
nested at most MAX_JSON_DEPTH (100) levels; a sentence of at most MAX_SENTENCE_CHARS (20,000)
characters. Nested JSON values in a text column (sentence, id) are kept as JSON text.

Every problem a user can cause raises PairFileError (a ValueError) with one or two sentences
naming the line / record and the problem; nothing is returned half-read.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
from pathlib import Path
from typing import IO, Callable, Optional

import numpy as np
import pandas as pd

from pluie_core.export_format import FORMULA_TRIGGERS, TEXT_MARKER
from pluie_core.formats import corpora, tables
from pluie_core.formats.common import PairFileError, RawTable
from pluie_core.formats.common import listed as _listed
from pluie_core.formats.common import places as _places
from pluie_core.formats.common import size_text as _megabytes
from pluie_core.formats.tables import MAX_COLUMNS, MAX_EXPANDED_BYTES, MAX_EXPANSION_RATIO, MAX_JSON_DEPTH
from pluie_core.wording import counted

__all__ = [
    "load_pairs",
    "read_table",
    "read_pair_chunks",
    "PairChunks",
    "guess_columns",
    "PairFileError",
    "FORMATS",
    "MAX_BYTES",
    "MAX_COLUMNS",
    "MAX_EXPANDED_BYTES",
    "MAX_EXPANSION_RATIO",
    "MAX_JSON_DEPTH",
    "MAX_SENTENCE_CHARS",
]

# Limits on what a file may hold (docs/user-guide/import.md, "Limits"): its size as uploaded; for an Excel workbook,
# what it expands to (pluie_core.formats.tables); JSON nesting; one sentence's length. The longest
# sentence of the shared datasets (a ParaReval paragraph) has 1,876 characters.
MAX_BYTES = 50 * 1024 * 1024
MAX_SENTENCE_CHARS = 20_000
GENERIC_FORMATS = ("csv", "tsv", "json", "jsonl", "excel")
CORPUS_FORMATS = (
    "mrpc",
    "paws",
    "stsb",
    "sick",
    "paraphrasus",
    "twitter_url",
    "turku",
    "paraphraser_xml",
    "parareval",
    "biosses",
)
FORMATS = ("auto",) + CORPUS_FORMATS + GENERIC_FORMATS
MAPPING_KEYS = ("source", "hypothesis", "label", "external_id", "annotators")
ANNOTATOR_PREFIX = "annotator:"

# Column names recognised without a mapping, compared lower-cased with spaces, dashes and
# dots turned into underscores. Pairs are tried first so that s1 goes with s2.
SENTENCE_PAIRS = [
    ("source", "hypothesis"),
    ("sentence1", "sentence2"),
    ("sentence_1", "sentence_2"),
    ("s1", "s2"),
    ("text_a", "text_b"),
    ("text1", "text2"),
    ("text_1", "text_2"),
    ("txt1", "txt2"),
    ("sentence_a", "sentence_b"),
    ("premise", "hypothesis"),
    ("question1", "question2"),
    ("#1_string", "#2_string"),
    ("reference", "candidate"),
    ("original", "paraphrase"),
    ("source", "target"),
]
LABEL_NAMES = [
    "label",
    "gold",
    "gold_label",
    "score",
    "quality",
    "similarity",
    "relatedness_score",
    "relatedness",
    "is_paraphrase",
    "paraphrase",
    "class",
    "y",
]
ID_NAMES = ["external_id", "id", "pair_id", "pairid", "uid", "guid"]
MISSING_TEXT = {"", "na", "nan", "null", "none", "n/a"}
# The apostrophe our CSV export puts before formula-like text (see export_format).
# Binary labels written as words, compared lower-cased with runs of spaces, "_" and "-" made one "-".
LABEL_WORDS = {
    "yes": 1.0,
    "no": 0.0,
    "true": 1.0,
    "false": 0.0,
    "paraphrase": 1.0,
    "non-paraphrase": 0.0,
    "nonparaphrase": 0.0,
    "not-paraphrase": 0.0,
    "not-a-paraphrase": 0.0,
}
NUL = "\x00"  # removed from every cell and column name (see the module's docstring)
SPREADSHEET_MARKER = re.compile(
    "^" + re.escape(TEXT_MARKER) + "(?=[" + re.escape("".join(FORMULA_TRIGGERS) + TEXT_MARKER) + "])"
)


def load_pairs(
    path_or_buffer,
    format: str = "auto",
    columns: Optional[dict] = None,
    max_bytes: int = MAX_BYTES,
    keep_duplicates: bool = False,
    skip_invalid: bool = False,
) -> pd.DataFrame:
    """Read a pair file (path, or binary file object with .name such as a Streamlit upload).

    `format` is "auto" (sniffed from the content, the file name as a hint) or one of FORMATS.
    `columns` maps the file's columns to ours: {"source": ..., "hypothesis": ...,
    "label": ..., "external_id": ..., "annotators": {name: column}}; without it the usual
    names are recognised (see guess_columns). Exact repeats of a (source, hypothesis) pair are
    dropped, the first kept, unless `keep_duplicates` is True (every row kept: a benchmark's
    own count); either way attrs["duplicates"] lists them. Raises PairFileError for any problem
    in the file: all or nothing, invalid rows refuse the file (InvalidRows names each, the first ten
    and how many more), unless `skip_invalid` is
    True: then the rows that cannot be pairs (an empty or too long sentence, a label that is not a
    number or outside the scale) are left out and listed in attrs["skipped_rows"] (a file with no
    valid row is still refused).
    """
    raw = _read_raw(path_or_buffer, format, max_bytes)
    if columns is None:
        mapping = guess_columns(raw.table) if raw.format in GENERIC_FORMATS else _own_columns(raw.table)
    else:
        mapping = _checked_mapping(columns, raw.table)
    return _pairs_from(raw, mapping, bool(keep_duplicates), bool(skip_invalid))


def read_table(path_or_buffer, format: str = "auto", max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """The file's rows with its own column names (for a preview and the column-mapping step).
    Dataset formats (MRPC, STS-B, ...) come back already named source / hypothesis / label.
    attrs["format"] says what was detected."""
    raw = _read_raw(path_or_buffer, format, max_bytes)
    table = raw.table.apply(_strip_spreadsheet_marker) if raw.spreadsheet_text else raw.table.copy()
    table.attrs["format"] = raw.format
    table.attrs["warnings"] = list(raw.warnings)
    return table


def guess_columns(df: pd.DataFrame) -> dict:
    """The mapping load_pairs would use for these columns: keys source, hypothesis, label,
    external_id (each present only when a column was recognised) and annotators
    ({name: column} for columns named "annotator:<name>" or "annotator_<name>")."""
    by_key: dict = {}
    for column in df.columns:
        by_key.setdefault(_normalised(column), column)
    mapping: dict = {}
    for first, second in SENTENCE_PAIRS:
        if first in by_key and second in by_key:
            mapping["source"], mapping["hypothesis"] = by_key[first], by_key[second]
            break
    for key, names in (("label", LABEL_NAMES), ("external_id", ID_NAMES)):
        for name in names:
            if name in by_key and by_key[name] not in mapping.values():
                mapping[key] = by_key[name]
                break
    annotators = {}
    for column in df.columns:
        text = str(column)
        for prefix in (ANNOTATOR_PREFIX, "annotator_"):
            if text.startswith(prefix) and len(text) > len(prefix):
                annotators[text[len(prefix) :]] = column
                break
    mapping["annotators"] = annotators
    return mapping


def _own_columns(df: pd.DataFrame) -> dict:
    """Dataset readers name their columns ours already."""
    mapping: dict = {key: key for key in ("source", "hypothesis", "label", "external_id") if key in df.columns}
    mapping["annotators"] = {
        str(c)[len(ANNOTATOR_PREFIX) :]: c for c in df.columns if str(c).startswith(ANNOTATOR_PREFIX)
    }
    return mapping


# -- reading bytes and choosing the reader ---------------------------------------------------


def _read_raw(path_or_buffer, format: str, max_bytes: int) -> RawTable:
    return _without_nul(_read_raw_table(path_or_buffer, format, max_bytes))


def _read_raw_table(path_or_buffer, format: str, max_bytes: int) -> RawTable:
    if format not in FORMATS:
        raise PairFileError(f"Unknown format {format!r}; choose one of: {', '.join(FORMATS)}.")
    data, name = _read_bytes(path_or_buffer, max_bytes)
    if not data.strip():
        raise PairFileError("The file is empty.")
    if format == "excel" or (format == "auto" and _looks_like_excel(data, name)):
        return tables.read_excel_table(data)
    text = _decode(data)
    if format == "auto":
        format = _sniff(text, name)
    return _read_text(text, format, name)


def _read_bytes(path_or_buffer, max_bytes: int) -> tuple[bytes, str]:
    if isinstance(path_or_buffer, (str, os.PathLike)):
        path = Path(path_or_buffer)
        if not path.is_file():
            raise PairFileError(f"There is no file at {str(path)!r}.")
        size = path.stat().st_size
        if size > max_bytes:
            raise PairFileError(f"The file is {_megabytes(size)}; the limit is {_megabytes(max_bytes)}.")
        return path.read_bytes(), path.name
    name = str(getattr(path_or_buffer, "name", "") or "")
    if hasattr(path_or_buffer, "seek"):
        try:
            path_or_buffer.seek(0)  # an upload may already have been read for a preview
        except (OSError, ValueError):
            pass
    data = path_or_buffer.read(max_bytes + 1)
    if isinstance(data, str):
        data = data.encode("utf-8")
    if len(data) > max_bytes:
        raise PairFileError(f"The file is larger than the limit of {_megabytes(max_bytes)}.")
    return data, os.path.basename(name)


def _looks_like_excel(data: bytes, name: str) -> bool:
    if data.startswith(b"PK\x03\x04"):  # a zip archive: .xlsx is one
        return True
    if name.lower().endswith((".xlsx", ".xlsm")):
        raise PairFileError(f"{name} is named like an Excel workbook but is not one (an .xlsx file is a zip archive).")
    if data.startswith(b"\xd0\xcf\x11\xe0"):
        raise PairFileError("This is an old Excel .xls workbook; save it as .xlsx or CSV.")
    return False


def _decode(data: bytes) -> str:
    if data.count(b"\x00") * 4 >= len(data):
        raise PairFileError(
            "The file looks like UTF-16 text (every other byte is NUL); save it as UTF-8 and try again."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise PairFileError(
            f"Line {line} (byte {error.start}): the file is not UTF-8 text; save it as UTF-8 and try again."
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


def _sniff(text: str, name: str) -> str:
    """Decide the format from the content; the file name only breaks ties."""
    lower_name = name.lower()
    head = text.lstrip()
    if head.startswith("<"):
        if "<paraphrase" in head[:5000]:
            return "paraphraser_xml"
        raise PairFileError("This XML file is not a ParaPhraser corpus; XML is read only in that layout.")
    if head.startswith(("{", "[")):
        return _sniff_json(text, lower_name)
    # Not head: a leading tab is an empty first header field (pandas' index column).
    first_line = text.lstrip("\r\n").split("\n", 1)[0].rstrip("\r")
    fields = first_line.split("\t")
    stripped = [f.strip() for f in fields]
    if stripped == corpora.MRPC_HEADER:
        return "mrpc"
    if stripped == corpora.PAWS_HEADER:
        return "paws"
    if stripped == corpora.SICK_HEADER:
        return "sick"
    if len(fields) > 2 and "sentence1" in stripped and "sentence2" in stripped:
        if stripped[0] in ("", "Unnamed: 0") and (
            "score" in stripped or corpora.STS_H_PREFIX + "Consensus" in stripped
        ):
            return "paraphrasus"
        annotators = [f for f in stripped if f.startswith("annotator_")]
        if len(annotators) >= 2 and not any(_normalised(f) in LABEL_NAMES for f in stripped):
            return "biosses"
    if len(fields) in (7, 9) and _is_number(fields[4]) and fields[3].strip().isdigit():
        return "stsb"
    if (
        len(fields) == 5
        and fields[0].strip().isdigit()
        and _is_number(fields[3])
        and fields[4].strip() in corpora.SICK_JUDGMENTS
    ):
        return "sick"
    if len(fields) in (4, 5) and corpora.VOTES.match(fields[2].strip()):
        return "twitter_url"
    if lower_name.endswith(".tsv") or (not lower_name.endswith(".csv") and "\t" in first_line):
        return "tsv"
    return "csv"


def _sniff_json(text: str, lower_name: str) -> str:
    if lower_name.endswith(".jsonl"):
        return _sniff_jsonl(text)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        # Several objects one per line is JSONL, not a broken JSON document.
        if error.msg == "Extra data" and text.lstrip().startswith("{"):
            return _sniff_jsonl(text)
        raise tables.json_error(error) from None
    except (RecursionError, ValueError):
        document = tables.parse_json(text)  # says why in a sentence
    if isinstance(document, dict):
        values = list(document.values())
        if values and all(isinstance(v, dict) for v in values):
            return "paraphrasus" if all("sentence1" in v for v in values[:50]) else "json"
        if len(text.strip().split("\n")) == 1:
            return "jsonl"  # a single record on one line
        raise PairFileError("The JSON file holds a single object; expected a list of records or objects keyed by id.")
    if isinstance(document, list):
        first = document[0] if document else None
        if isinstance(first, dict) and {"txt1", "txt2", "label"} <= set(first):
            return "turku"
        return "json"
    raise PairFileError("The JSON file holds a single value; expected a list of records or objects keyed by id.")


def _sniff_jsonl(text: str) -> str:
    first = text.lstrip().split("\n", 1)[0]
    try:
        record = json.loads(first)
    except (json.JSONDecodeError, RecursionError, ValueError):
        return "jsonl"  # the JSONL reader reports the line
    if isinstance(record, dict) and {"original_paragraph", "model_A_paragraph", "model_B_paragraph"} <= set(record):
        return "parareval"
    return "jsonl"


def _read_text(text: str, format: str, name: str) -> RawTable:
    if format == "csv":
        # Spreadsheets in many European locales write CSV with semicolons.
        header = text.lstrip("\r\n").split("\n", 1)[0]
        delimiter = ";" if ";" in header and "," not in header else ","
        return tables.read_delimited_table(text, delimiter, "csv")
    if format == "tsv":
        return tables.read_delimited_table(text, "\t", "tsv")
    if format == "jsonl":
        return tables.read_jsonl_table(text)
    if format == "parareval":
        return corpora.read_parareval(text)
    if format == "paraphraser_xml":
        return corpora.read_paraphraser_xml(text)
    readers = {
        "mrpc": corpora.read_mrpc,
        "paws": corpora.read_paws,
        "stsb": corpora.read_stsb,
        "sick": corpora.read_sick,
        "twitter_url": corpora.read_twitter_url,
        "biosses": corpora.read_biosses,
    }
    if format in readers:
        return readers[format](text)
    if format == "paraphrasus" and not text.lstrip().startswith("{"):
        return corpora.read_paraphrasus_tsv(text)
    document = tables.parse_json(text)
    tables.check_document_depth(document)
    if format == "paraphrasus":
        if not isinstance(document, dict):
            raise PairFileError("A paraphrasus JSON file is an object keyed by pair id.")
        return corpora.read_paraphrasus_json(document, name)
    if isinstance(document, dict) and document and all(isinstance(v, dict) for v in document.values()):
        # records keyed by id: the key becomes the "id" column
        document = [{"id": key, **record} if "id" not in record else record for key, record in document.items()]
    if not isinstance(document, list):
        raise PairFileError("Expected a JSON array of records.")
    if format == "turku":
        return corpora.read_turku(document)
    return tables.read_json_records(document)


# -- from a raw table to pairs ------------------------------------------------------------


def _normalised(column) -> str:
    return re.sub(r"[\s\-.]+", "_", str(column).strip().lower())


def _checked_mapping(columns: dict, table: pd.DataFrame) -> dict:
    unknown = set(columns) - set(MAPPING_KEYS)
    if unknown:
        raise PairFileError(f"Unknown mapping key(s) {', '.join(sorted(unknown))}; use {', '.join(MAPPING_KEYS)}.")
    targets: dict = {}
    for key in ("source", "hypothesis", "label", "external_id"):
        if columns.get(key) is not None:
            targets.setdefault(columns[key], []).append(key)
    annotators = columns.get("annotators") or {}
    for annotator, column in annotators.items():
        targets.setdefault(column, []).append(f"annotator {annotator}")
    for column, keys in targets.items():
        if len(keys) > 1:
            raise PairFileError(f"Column {column!r} is mapped twice (to {' and '.join(keys)}); map each column once.")
        if column not in table.columns:
            raise PairFileError(
                f"Column {column!r} is not in the file; its columns are: {', '.join(map(str, table.columns))}."
            )
    return {**{k: v for k, v in columns.items() if k != "annotators" and v is not None}, "annotators": dict(annotators)}


def _pairs_from(
    raw: RawTable,
    mapping: dict,
    keep_duplicates: bool = False,
    skip_invalid: bool = False,
    words: Optional[dict] = None,
    part: bool = False,
) -> pd.DataFrame:
    """The pairs of a raw table. `part`: the table is one chunk of a file read in chunks (PairChunks):
    repeats are left to the import, a chunk whose rows are all invalid is empty (the file as a whole
    decides), and `words` gathers the label words of every chunk."""
    table = raw.table
    skipped: dict = {}  # position -> why: set aside (skip_invalid), else named by the refusal

    def invalid(bad: np.ndarray, why: Callable[[int], str]) -> None:
        """Rows that cannot be pairs, each with the reason it is refused for (the first found, when
        several): set aside (skip_invalid), else all named by the file's refusal once every check ran."""
        for i in np.flatnonzero(bad):
            skipped.setdefault(int(i), why(int(i)))

    for key in ("source", "hypothesis"):
        if key not in mapping:
            raise PairFileError(
                f"No {key} column: name one in the column mapping. The file's columns are: "
                f"{', '.join(map(str, table.columns))}."
            )
    if raw.spreadsheet_text:
        table = table.apply(_strip_spreadsheet_marker)

    out: dict = {}
    for key, what in (("source", "source sentence"), ("hypothesis", "hypothesis")):
        text = _text(table[mapping[key]])
        invalid(
            (text == "").to_numpy(),
            lambda i, key=key, what=what: (  # type: ignore[misc]
                f"the {what} is a formula with no computed value; open and save the workbook in a spreadsheet "
                "application (Excel, LibreOffice) to compute it."
                if (i, mapping[key]) in raw.uncomputed
                else f"the {what} is empty."
            ),
        )
        lengths = text.str.len().to_numpy()
        invalid(
            lengths > MAX_SENTENCE_CHARS,
            lambda i, what=what, lengths=lengths: (  # type: ignore[misc]
                f"the {what} has {int(lengths[i]):,} characters; the limit is {MAX_SENTENCE_CHARS:,}."
            ),
        )
        out[key] = text
    label_column = mapping.get("label")
    words = {} if words is None else words  # label words read as numbers, per column: {what: {word: number}}
    out["label"] = _numbers(table[label_column], raw, "label", words, invalid) if label_column is not None else np.nan
    id_column = mapping.get("external_id")
    if id_column is not None:
        ids = _text(table[id_column])
        out["external_id"] = ids.where(ids != "", None)
    else:
        out["external_id"] = pd.Series(None, index=table.index, dtype=object)
    for annotator, column in mapping["annotators"].items():
        out[ANNOTATOR_PREFIX + str(annotator)] = _numbers(
            table[column], raw, f"label of annotator {annotator}", words, invalid
        )
    used = {mapping.get(k) for k in ("source", "hypothesis", "label", "external_id")} | set(
        mapping["annotators"].values()
    )
    for column in table.columns:
        if column not in used:
            name = str(column)
            out[name if name not in out else f"original_{name}"] = table[column]
    pairs = pd.DataFrame(out, index=table.index)

    _check_ranges(pairs, raw, invalid)
    if skipped and not skip_invalid:
        raise InvalidRows(raw, skipped)
    n_read, skipped_rows, skip_warnings = int(len(pairs)), [], []
    if skipped:
        if len(skipped) == len(pairs) and not part:
            first = min(skipped)
            raise PairFileError(f"No row of the file is a valid pair: {raw.where(first)}: {skipped[first]}")
        kept = np.setdiff1d(np.arange(len(pairs)), np.fromiter(skipped, dtype=int))
        skipped_rows = [{"row": int(raw.rows[i]), "why": skipped[i]} for i in sorted(skipped)]
        skip_warnings = [] if part else [_skip_warning(raw.row_word, skipped_rows)]
        pairs = pairs.iloc[kept]
        raw = copy.copy(raw)  # the kept rows' numbers, for the duplicates' (positions in pairs from here on)
        raw.rows = raw.rows[kept]
    label_kind, label_range = _label_kind(pairs["label"], raw)
    duplicated, duplicates, warnings = (
        (np.zeros(len(pairs), dtype=bool), [], []) if part else _duplicates(pairs, raw, keep_duplicates)
    )
    result = (pairs if keep_duplicates else pairs.loc[~duplicated]).reset_index(drop=True)
    result.attrs = {
        "format": raw.format,
        "label_kind": label_kind,
        "duplicates": duplicates,
        "keep_duplicates": keep_duplicates,
        "warnings": list(raw.warnings) + skip_warnings + warnings,
        "notes": _word_notes(words),
        "n_rows_read": n_read,
        "row_word": raw.row_word,
    }
    if skip_invalid:
        result.attrs["skipped_rows"] = skipped_rows
    if label_kind == "score":
        result.attrs["label_range"] = label_range
    return result


class InvalidRows(PairFileError):
    """A file refused for rows that cannot be pairs: the message names each (in the file's order, the
    first NAMED_ROWS of them, and how many more), with the reason it is refused for. ``rows``: every one,
    [{"row": n, "why": str}, ...]."""

    NAMED_ROWS = 10

    def __init__(self, raw: RawTable, found: dict, after: str = ""):
        self.rows = [{"row": int(raw.rows[i]), "why": found[i]} for i in sorted(found)]
        self.row_word = raw.row_word
        super().__init__(self.sentence(self.rows, self.row_word, after))

    @classmethod
    def sentence(cls, rows: list[dict], row_word: str, after: str = "") -> str:
        named = " ".join(f"{row_word} {r['row']}: {r['why']}" for r in rows[: cls.NAMED_ROWS])
        more = len(rows) - cls.NAMED_ROWS
        return (
            named + (f" And {counted(more, 'more invalid row')}." if more > 0 else "") + (f" {after}" if after else "")
        )


def _skip_warning(row_word: str, skipped_rows: list[dict]) -> str:
    return (
        f"{counted(len(skipped_rows), 'invalid row')} left out, as asked: "
        f"{_places(row_word, [r['row'] for r in skipped_rows])} (each with its reason below)."
    )


def _duplicates(pairs: pd.DataFrame, raw: RawTable, keep: bool = False) -> tuple[np.ndarray, list[dict], list[str]]:
    """Which rows repeat an earlier (source, hypothesis) pair, the attrs entries, warnings
    (worded for repeats kept when `keep`, skipped otherwise)."""
    duplicated = pairs.duplicated(["source", "hypothesis"], keep="first").to_numpy()
    if not duplicated.any():
        return duplicated, [], []
    group = pairs.groupby(["source", "hypothesis"], sort=False).ngroup().to_numpy()
    _, first_positions = np.unique(group, return_index=True)  # group g first appears at first_positions[g]
    repeats = np.flatnonzero(duplicated)
    originals = first_positions[group[repeats]]
    duplicates = [{"row": int(raw.rows[r]), "duplicate_of": int(raw.rows[o])} for r, o in zip(repeats, originals)]
    if keep:
        warnings = [
            f"{counted(len(duplicates), 'exact duplicate pair')} "
            f"{'was' if len(duplicates) == 1 else 'were'} kept (every row of the file is a pair)."
        ]
    else:
        warnings = [
            f"{counted(len(duplicates), 'exact duplicate pair')} "
            f"{'was' if len(duplicates) == 1 else 'were'} skipped (the first of each is kept)."
        ]
    labels = pairs["label"].to_numpy(dtype=float)
    same = (labels[repeats] == labels[originals]) | (np.isnan(labels[repeats]) & np.isnan(labels[originals]))
    if not same.all():
        kept = "the first of their pair" if keep else "the pair kept"
        warnings.append(
            f"{int((~same).sum())} of the {'kept' if keep else 'skipped'} duplicates had a different label from {kept}."
        )
    return duplicated, duplicates, warnings


def _without_nul(raw: RawTable) -> RawTable:
    """Remove NUL characters from every text cell and column name, with a warning that names
    the rows (and the header) they were found on."""
    table, found_rows = raw.table, np.zeros(len(raw.table), dtype=bool)
    for column in table.columns:
        values = table[column]
        if values.dtype != object and not pd.api.types.is_string_dtype(values):
            continue
        hit = values.map(lambda v: isinstance(v, str) and NUL in v).to_numpy(dtype=bool)
        if hit.any():
            table = table.copy() if table is raw.table else table
            table[column] = values.map(lambda v: v.replace(NUL, "") if isinstance(v, str) else v)
            found_rows |= hit
    header = [c for c in table.columns if isinstance(c, str) and NUL in c]
    if header:
        table = table.rename(columns={c: c.replace(NUL, "") for c in header})
    if not header and not found_rows.any():
        return raw
    positions = np.flatnonzero(found_rows)
    places = [f"{raw.row_word.lower()} {int(raw.rows[i])}" for i in positions[:10]]
    if len(positions) > 10:
        places.append(f"{len(positions) - 10} more")
    if header:
        places.insert(0, "the header")
    raw.table = table
    raw.warnings.append(f"NUL characters (0x00) were removed from {_listed(places)}.")
    return raw


def _strip_spreadsheet_marker(column: pd.Series) -> pd.Series:
    if column.dtype != object and not pd.api.types.is_string_dtype(column):
        return column
    return column.map(lambda v: SPREADSHEET_MARKER.sub("", v) if isinstance(v, str) else v)


def _text(values: pd.Series) -> pd.Series:
    """Cells as stripped text; missing cells become ""; a JSON object or list stays JSON (not
    Python's repr of it)."""

    def as_text(v):
        if v is None or (isinstance(v, float) and np.isnan(v)):
            return ""
        if isinstance(v, (dict, list)):
            return json.dumps(v, ensure_ascii=False)
        return str(v).strip()

    return values.map(as_text).astype(object)


def _numbers(
    values: pd.Series, raw: RawTable, what: str, words: Optional[dict] = None, invalid: Optional[Callable] = None
) -> pd.Series:
    """Numbers from cells (binary label words such as yes/no read as 1/0, each word met recorded
    in words[what]); empty or NA cells are missing. A cell that is not a number refuses the file,
    or is handed to ``invalid`` (rows set aside) and read as missing."""
    seen: dict = {}

    def as_number(v):
        if v is None or isinstance(v, bool):
            return v if v is None else float(v)
        if isinstance(v, (int, float, np.integer, np.floating)):
            try:
                return float(v)
            except OverflowError:  # an integer of hundreds of digits (JSON): reported below
                return np.inf
        written = str(v).strip()
        text = written.lower()
        if text in MISSING_TEXT:
            return None
        word = re.sub(r"[\s_\-]+", "-", text)
        if word in LABEL_WORDS:
            seen.setdefault(written, LABEL_WORDS[word])
            return LABEL_WORDS[word]
        return text

    cells = values.map(as_number)
    numbers = pd.to_numeric(cells, errors="coerce").astype(float)
    bad = (numbers.isna() & cells.notna()).to_numpy() | np.isinf(numbers.to_numpy())
    if bad.any():

        def why(i: int) -> str:
            written = str(values.iloc[i]).strip()
            shown = repr(written) if len(written) <= 40 else repr(written[:30]) + f" (… {len(written):,} characters)"
            kind = "is not a number"
            if np.isinf(numbers.iloc[i]) and written.lower().lstrip("+-") not in ("inf", "infinity"):
                kind = "is too large"  # 1e400, or hundreds of digits: no float holds it
            return f"the {what} {shown} {kind}."

        if invalid is None:
            i = int(np.argmax(bad))
            raise PairFileError(f"{raw.where(i)}: {why(i)}")
        invalid(bad, why)
        numbers = numbers.where(~bad)
    if seen and words is not None:
        words[what] = seen
    return numbers


def _word_notes(words: dict) -> list[str]:
    """One sentence per column whose labels were written as words."""
    notes = []
    for what, seen in words.items():
        ordered = sorted(seen.items(), key=lambda item: (-item[1], item[0].lower()))  # the 1s first
        readings = [f"{word!r} as {number:g}" for word, number in ordered]
        notes.append(f"The {what} is written as words, read as numbers: {_listed(readings)}.")
    return notes


def _check_ranges(pairs: pd.DataFrame, raw: RawTable, invalid: Optional[Callable] = None) -> None:
    checks = [("label", "label", raw.label_range)]
    if raw.annotator_range:
        checks += [
            (c, f"label of annotator {c[len(ANNOTATOR_PREFIX) :]}", raw.annotator_range)
            for c in pairs.columns
            if str(c).startswith(ANNOTATOR_PREFIX)
        ]
    for column, what, scale in checks:
        if scale is None:
            continue
        values = pairs[column]
        low, high = scale
        if raw.label_kind == "binary" and column == "label":
            outside = values.notna() & ~values.isin([low, high])
            expected = f"{low:g} or {high:g}"
        else:
            outside = (values < low) | (values > high)
            expected = f"between {low:g} and {high:g}"
        outside = outside.to_numpy()
        if outside.any():

            def why(i: int, values=values, what=what, expected=expected) -> str:
                return f"the {what} {values.iloc[i]:g} is outside the dataset's scale; expected {expected}."

            if invalid is None:
                i = int(np.argmax(outside))
                raise PairFileError(f"{raw.where(i)}: {why(i)}")
            invalid(outside, why)


def _label_kind(labels: pd.Series, raw: RawTable) -> tuple[Optional[str], Optional[tuple[float, float]]]:
    known = labels.dropna()
    if known.empty:
        return None, None
    kind = raw.label_kind or ("binary" if known.isin([0.0, 1.0]).all() else "score")
    if kind != "score":
        return kind, None
    if raw.label_range is not None:
        return kind, (float(raw.label_range[0]), float(raw.label_range[1]))
    return kind, (float(known.min()), float(known.max()))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# -- large files, a chunk of rows at a time ------------------------------------------------

STREAM_FORMATS = ("csv", "tsv", "jsonl")  # JSON, Excel and the corpora files are read whole
CHUNK_ROWS = 5_000
LARGE_FILE_ROWS = 20_000  # a file with this many lines is read in chunks by the Import page
_HEAD_BYTES = 64 * 1024


def large_file(data: bytes) -> bool:
    """Whether the Import page reads this upload in chunks: a CSV, TSV or JSONL file of at least
    LARGE_FILE_ROWS lines (the others, and every corpus file, are read whole)."""
    return data.count(b"\n") + 1 >= LARGE_FILE_ROWS and stream_format(data) is not None


def stream_format(path_or_buffer, format: str = "auto") -> Optional[str]:
    """The format of a file that read_pair_chunks can read a chunk at a time ("csv", "tsv",
    "jsonl"), or None: read it whole with load_pairs. Sniffed from the first 64 KB as load_pairs
    sniffs the whole."""
    if format not in FORMATS:
        raise PairFileError(f"Unknown format {format!r}; choose one of: {', '.join(FORMATS)}.")
    if format != "auto":
        return format if format in STREAM_FORMATS else None
    if isinstance(path_or_buffer, (bytes, bytearray)):
        head, name = bytes(path_or_buffer[:_HEAD_BYTES]), ""
    elif isinstance(path_or_buffer, (str, os.PathLike)):
        if not Path(path_or_buffer).is_file():
            raise PairFileError(f"There is no file at {str(path_or_buffer)!r}.")
        with open(path_or_buffer, "rb") as file:
            head, name = file.read(_HEAD_BYTES), Path(path_or_buffer).name
    else:
        path_or_buffer.seek(0)
        head, name = path_or_buffer.read(_HEAD_BYTES), os.path.basename(str(getattr(path_or_buffer, "name", "") or ""))
        path_or_buffer.seek(0)
    if (
        not head.strip()
        or head.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0"))
        or head.count(b"\x00") * 4 >= len(head)
    ):
        return None  # empty, a workbook or UTF-16: load_pairs says what it is
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff")
    start = text.lstrip()
    if start.startswith("["):
        return None
    if start.startswith("{"):
        first = start.split("\n", 1)[0]
        try:
            single = isinstance(json.loads(first), dict)
        except (json.JSONDecodeError, RecursionError, ValueError):
            single = False
        if name.lower().endswith(".jsonl") or single:
            found = _sniff_jsonl(start)
            return found if found in STREAM_FORMATS else None
        return None
    if start.startswith("<"):
        return None
    found = _sniff(text, name)
    return found if found in STREAM_FORMATS else None


class PairChunks:
    """A large CSV, TSV or JSONL pair file read a chunk of rows at a time: the memory it takes is a
    chunk's, whatever the number of rows (the file's bytes are read as they are parsed).

        chunks = read_pair_chunks("big.csv")          # the header is read and checked at once
        chunks.n_rows                                  # its rows, counted in a first pass
        for frame in chunks: ...                       # frames of at most chunk_rows pairs

    Each frame has load_pairs's columns, read by the same rules (load_pairs's own code runs on each
    chunk), except that exact repeats are not dropped: the import skips them against the store
    (db.datasets.import_pair_chunks), where the whole file is. `attrs` is load_pairs's, filled in as
    the chunks are read and complete after the last: format, label_kind, label_range (the values of
    every chunk), warnings, notes, n_rows_read, row_word, skipped_rows (skip_invalid), and
    keep_duplicates True with no duplicates listed (the import counts them). A problem in the file
    raises PairFileError from the chunk that holds it (invalid rows: each of that chunk's, and the line
    after which the file was not read)."""

    def __init__(
        self,
        path_or_buffer,
        format: str = "auto",
        columns: Optional[dict] = None,
        chunk_rows: int = CHUNK_ROWS,
        skip_invalid: bool = False,
        max_bytes: int = MAX_BYTES,
    ):
        found = stream_format(path_or_buffer, format)
        if found is None:
            raise PairFileError("This file is read whole (load_pairs): only CSV, TSV and JSONL are read in chunks.")
        self.format, self.chunk_rows, self.skip_invalid = found, max(1, int(chunk_rows)), bool(skip_invalid)
        self.row_word = "Line"
        if isinstance(path_or_buffer, (str, os.PathLike)):
            self._path: Optional[Path] = Path(path_or_buffer)
            self._data: Optional[bytes] = None
            size = self._path.stat().st_size
            if size > max_bytes:
                raise PairFileError(f"The file is {_megabytes(size)}; the limit is {_megabytes(max_bytes)}.")
        else:
            data = path_or_buffer if isinstance(path_or_buffer, (bytes, bytearray)) else None
            if data is None:
                path_or_buffer.seek(0)
                data = path_or_buffer.read(max_bytes + 1)
            if len(data) > max_bytes:
                raise PairFileError(f"The file is larger than the limit of {_megabytes(max_bytes)}.")
            self._path, self._data = None, bytes(data)
        self.delimiter = "\t" if found == "tsv" else ","
        self.quoted = found == "csv"
        self.columns, self.n_rows = self._first_pass()
        empty = pd.DataFrame(columns=self.columns)
        self.mapping = guess_columns(empty) if columns is None else _checked_mapping(columns, empty)
        self.attrs: dict = {
            "format": found,
            "label_kind": None,
            "duplicates": [],
            "keep_duplicates": True,
            "warnings": [],
            "notes": [],
            "n_rows_read": 0,
            "row_word": self.row_word,
        }
        if self.skip_invalid:
            self.attrs["skipped_rows"] = []

    def _text(self):
        if self._path is not None:
            binary: IO[bytes] = open(self._path, "rb")
        else:
            assert self._data is not None  # __init__ keeps one of the two
            binary = io.BytesIO(self._data)
        return io.TextIOWrapper(binary, encoding="utf-8-sig", newline="\n" if self.format == "jsonl" else "")

    def _rows(self, quoted: Optional[bool] = None):
        """(fields, line) of a delimited file, the header first."""
        with self._text() as text:
            yield from tables.iter_delimited_rows(text, self.delimiter, self.quoted if quoted is None else quoted)

    def _records(self):
        """(record, line) of a JSONL file."""
        with self._text() as text:
            number = 0
            try:
                for number, line in enumerate(text, start=1):
                    if not line.strip():
                        continue
                    record = tables.parse_json(line, f"Line {number}")
                    if not isinstance(record, dict):
                        raise PairFileError(
                            f"Line {number}: expected a JSON object, found {tables._json_kind(record)}."
                        )
                    tables.check_json_depth(record, f"Line {number}")
                    if len(record) > tables.MAX_COLUMNS:
                        tables.check_width(len(record), f"Line {number}")
                    yield record, number
            except UnicodeDecodeError:
                raise PairFileError(
                    f"Line {number + 1}: the file is not UTF-8 text; save it as UTF-8 and try again."
                ) from None

    def _first_pass(self) -> tuple[list, int]:
        """The columns (the header is checked before any row is read) and the number of rows. A TSV
        is read quoted when every row reads quoted as wide as its header, as read_table decides."""
        if self.format == "jsonl":
            keys: dict = {}
            n = 0
            for record, number in self._records():
                n += 1
                for key in record:
                    if key not in keys:
                        keys[key] = None
                        if len(keys) > tables.MAX_COLUMNS:
                            tables.check_width(len(keys), "The file's records together")
            if not n:
                raise PairFileError("The file has no rows.")
            return list(keys), n
        if self.format == "csv":
            with self._text() as text:
                header = text.readline().lstrip("\r\n")
            self.delimiter = ";" if ";" in header and "," not in header else ","
        rows = self._rows(quoted=self.delimiter != "\t")
        header = next(rows, None)
        if header is None:
            raise PairFileError("The file has no rows.")
        tables.check_width(len(header[0]))
        names = tables.header_names(header[0])
        n, same_width = 0, True
        try:
            for fields, _ in rows:
                n += 1
                same_width = same_width and len(fields) == len(header[0])
        except PairFileError:
            if self.delimiter != "\t":
                raise
            same_width = False
        if self.delimiter == "\t":
            self.quoted = same_width
            if not same_width:
                n = sum(1 for _ in self._rows()) - 1
        if not n:
            raise PairFileError(f"The file has a header ({', '.join(names)}) but no rows.")
        return names, n

    def raw_chunks(self):
        """The file's rows as RawTables of at most chunk_rows rows, with its own column names."""
        if self.format == "jsonl":
            batch: list = []
            for record, number in self._records():
                batch.append((record, number))
                if len(batch) == self.chunk_rows:
                    yield self._json_chunk(batch)
                    batch = []
            if batch:
                yield self._json_chunk(batch)
            return
        rows = self._rows()
        header = next(rows)
        width = len(header[0])
        batch = []
        for fields, line in rows:
            if len(fields) > width:
                raise PairFileError(
                    f"Line {line}: the row has {len(fields)} fields but the header has {width}. "
                    f"A {'comma' if self.delimiter == ',' else 'tab'} inside a sentence must be quoted."
                )
            batch.append((fields + [""] * (width - len(fields)) if len(fields) < width else fields, line))
            if len(batch) == self.chunk_rows:
                yield self._table_chunk(batch)
                batch = []
        if batch:
            yield self._table_chunk(batch)

    def _table_chunk(self, batch) -> RawTable:
        table = pd.DataFrame([fields for fields, _ in batch], columns=self.columns, dtype=object)
        lines = np.asarray([line for _, line in batch], dtype=np.int64)
        return _without_nul(RawTable(table, self.format, lines, "Line", spreadsheet_text=True))

    def _json_chunk(self, batch) -> RawTable:
        table = pd.DataFrame.from_records([r for r, _ in batch]).astype(object).reindex(columns=self.columns)
        lines = np.asarray([n for _, n in batch], dtype=np.int64)
        return _without_nul(RawTable(table, "jsonl", lines, "Line"))

    def head_table(self) -> pd.DataFrame:
        """The first chunk as read_table returns a file: its own column names, for a preview."""
        raw = next(iter(self.raw_chunks()))
        table = raw.table.apply(_strip_spreadsheet_marker) if raw.spreadsheet_text else raw.table.copy()
        table.attrs["format"] = self.format
        table.attrs["warnings"] = list(raw.warnings)
        return table

    def __iter__(self):
        for key in ("source", "hypothesis"):
            if key not in self.mapping:
                raise PairFileError(
                    f"No {key} column: name one in the column mapping. The file's columns are: "
                    f"{', '.join(map(str, self.columns))}."
                )
        words: dict = {}
        low, high, binary, any_label, n_kept = np.inf, -np.inf, True, False, 0
        skipped_rows: list = []
        for raw in self.raw_chunks():
            try:
                frame = _pairs_from(
                    raw, self.mapping, keep_duplicates=True, skip_invalid=self.skip_invalid, words=words, part=True
                )
            except InvalidRows as exc:  # the chunk's invalid rows are named; say where the reading stopped
                if self.attrs["n_rows_read"] + len(raw.table) >= self.n_rows:
                    raise
                raise PairFileError(
                    InvalidRows.sentence(
                        exc.rows, exc.row_word, f"The lines after line {int(raw.rows[-1]):,} were not checked."
                    )
                ) from None
            self.attrs["n_rows_read"] += frame.attrs["n_rows_read"]
            for warning in frame.attrs["warnings"]:
                if warning not in self.attrs["warnings"]:
                    self.attrs["warnings"].append(warning)
            skipped_rows += frame.attrs.get("skipped_rows") or []
            known = frame["label"].dropna()
            if len(known):
                any_label = True
                low, high = min(low, float(known.min())), max(high, float(known.max()))
                binary = binary and bool(known.isin([0.0, 1.0]).all())
            self.attrs["notes"] = _word_notes(words)
            if skipped_rows:
                self.attrs["skipped_rows"] = skipped_rows
            n_kept += len(frame)
            if len(frame):
                frame.attrs = {k: v for k, v in self.attrs.items() if k != "skipped_rows"}
                yield frame
        if skipped_rows:
            if not n_kept:
                first = skipped_rows[0]
                raise PairFileError(
                    f"No row of the file is a valid pair: {self.row_word} {first['row']}: {first['why']}"
                )
            self.attrs["warnings"].append(_skip_warning(self.row_word, skipped_rows))
        if any_label:
            self.attrs["label_kind"] = "binary" if binary else "score"
            if not binary:
                self.attrs["label_range"] = (low, high)


def read_pair_chunks(
    path_or_buffer,
    format: str = "auto",
    columns: Optional[dict] = None,
    chunk_rows: int = CHUNK_ROWS,
    skip_invalid: bool = False,
    max_bytes: int = MAX_BYTES,
) -> PairChunks:
    """A CSV, TSV or JSONL pair file as PairChunks (see there); PairFileError at once for a header
    that cannot be read (too many columns, a column named twice, no sentence columns), later from
    the chunk that holds any other problem."""
    return PairChunks(path_or_buffer, format, columns, chunk_rows, skip_invalid, max_bytes)
