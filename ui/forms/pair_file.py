"""The Import page's reading of an uploaded pair file (pages/import_pairs.py): the file parsed (pluie_core.io's
load_pairs, or a large file's first rows) and its raw table for the preview, each cached per file and choice, and
the mapping of a generic file's columns, the guess of pluie_core.io.guess_columns first."""

import io

import streamlit as st

from pluie_core.io import guess_columns, large_file, load_pairs, read_pair_chunks, read_table

PREVIEW_ROWS = 1_000  # of a large file, read for the preview and the checks before the import


def named_buffer(data: bytes, name: str) -> io.BytesIO:
    buffer = io.BytesIO(data)
    buffer.name = name
    return buffer


@st.cache_data(show_spinner="Reading the file…", max_entries=4)
def parse(
    data: bytes,
    name: str,
    format: str,
    columns: tuple | None,
    keep_duplicates: bool = False,
    skip_invalid: bool = False,
):
    mapping = as_mapping(columns)
    if large_file(data):  # its first rows here: every row is checked as it is written (import_pair_chunks)
        chunks = read_pair_chunks(
            named_buffer(data, name), format=format, columns=mapping, chunk_rows=PREVIEW_ROWS, skip_invalid=skip_invalid
        )
        frame = next(iter(chunks))
        return frame, {**chunks.attrs, "n_rows": chunks.n_rows, "large": True}
    frame = load_pairs(
        named_buffer(data, name),
        format=format,
        columns=mapping,
        keep_duplicates=keep_duplicates,
        skip_invalid=skip_invalid,
    )
    return frame, dict(frame.attrs)


def as_mapping(columns: tuple | None) -> dict | None:
    if columns is None:
        return None
    mapping = {k: v for k, v in columns if k != "annotators" and v}
    annotators = dict(dict(columns).get("annotators") or ())
    if annotators:
        mapping["annotators"] = annotators
    return mapping


@st.cache_data(show_spinner=False, max_entries=4)
def raw_table(data: bytes, name: str):
    if large_file(data):  # the preview reads the first rows only
        return read_pair_chunks(named_buffer(data, name), chunk_rows=PREVIEW_ROWS).head_table()
    return read_table(named_buffer(data, name))


def column_mapping(table) -> tuple:
    """The columns the organiser maps (the two sentences, gold label, pair id, annotators' labels), as parse
    takes them (a tuple: cached on it); the page's run ends here until both sentence columns are chosen."""
    guess = guess_columns(table)
    options = [""] + [str(c) for c in table.columns]

    def pick(label, key, help=None):
        default = guess.get(key) or ""
        return st.selectbox(
            label, options, index=options.index(default) if default in options else 0, key=f"map_{key}", help=help
        )

    c1, c2, c3, c4 = st.columns(4)
    with c1:
        source_col = pick("Source sentence (S)", "source")
    with c2:
        hyp_col = pick("Hypothesis sentence (H)", "hypothesis")
    with c3:
        label_col = pick("Gold label (optional)", "label", "0/1, or a numeric similarity")
    with c4:
        id_col = pick("Pair id (optional)", "external_id")
    default_annotators = [c for c in (guess.get("annotators") or {}).values() if c in options]
    annotator_cols = st.multiselect(
        "Per-annotator label columns (optional)",
        options[1:],
        default=default_annotators,
        help="Each column becomes an annotator whose labels are imported with the pairs.",
    )
    if not source_col or not hyp_col:
        st.warning("Choose the two sentence columns to continue.")
        st.stop()
    return (
        ("source", source_col),
        ("hypothesis", hyp_col),
        ("label", label_col),
        ("external_id", id_col),
        ("annotators", tuple((c, c) for c in annotator_cols)),
    )
