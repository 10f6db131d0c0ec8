"""Import: upload a file, preview it, map its columns, validate, then commit — all or nothing, unless
the organiser asks to skip invalid rows (then each row left out is listed with its reason)."""

import io
import re
from pathlib import Path

import pandas as pd
import streamlit as st

from db.datasets import ImportRejected, import_pair_chunks, import_pairs, left_out_note
from db.engine import StoreUnavailable
from lab.roles import NotAllowed
from pluie_core.io import (
    GENERIC_FORMATS,
    PairFileError,
    guess_columns,
    large_file,
    load_pairs,
    read_pair_chunks,
    read_table,
)
from pluie_core.visible import hidden_note, visible_frame
from pluie_core.wording import counted
from ui.base.page import user_text
from ui.frame import admin_page

engine = admin_page()
st.title("Import pairs")
st.caption(
    "CSV, TSV, JSON, JSONL, Excel, and the original files of MRPC, PAWS, PAWS-X, STS-B, SICK, paraphrasus, "
    "the Twitter URL corpus, Turku, ParaPhraser, ParaReval and BIOSSES. Nothing is stored until you press Import."
)

uploaded = st.file_uploader(
    "Pair file", type=["csv", "tsv", "txt", "json", "jsonl", "xlsx", "xml"], accept_multiple_files=False
)
if uploaded is None:
    st.stop()


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


PREVIEW_ROWS = 1_000  # of a large file, read for the preview and the checks before the import


keep_duplicates = (
    st.radio(
        "Exact duplicate pairs",
        ["Skip them (for labelling)", "Keep every row (for benchmarks)"],
        horizontal=True,
        help="A benchmark counts its repeated pairs (PARAPHRASUS's PAWS-X test: 2,000 rows); a labelling campaign "
        "needs each pair once. The choice is recorded in the dataset's description.",
    )
    == "Keep every row (for benchmarks)"
)
skip_invalid = st.checkbox(
    "Skip invalid rows instead of refusing the file",
    value=False,
    key="import-skip-invalid",
    help="By default a file is imported whole or not at all: one empty sentence, or a label that is not a number "
    "or is outside the scale, refuses it. Ticked, such rows are left out and listed below with the reason, "
    "and the dataset's description records them.",
)
ROW_PROBLEM = re.compile(r"^(Line|Record|Row) \d+: ")  # a refusal that names one row of the file


def refused(exc: Exception) -> None:
    st.error(user_text(exc))
    if not skip_invalid and ROW_PROBLEM.match(str(exc)):
        st.caption(
            "To import the other rows, tick “Skip invalid rows instead of refusing the file” above: "
            "the rows left out are listed with their reason."
        )


data = uploaded.getvalue()
try:
    detected, attrs = parse(data, uploaded.name, "auto", None, keep_duplicates, skip_invalid)
    error = None
except PairFileError as exc:
    detected, attrs, error = None, {}, exc

generic = detected is None or attrs.get("format") in GENERIC_FORMATS
pairs = detected
# a recognised format skips the preview and the column mapping: its steps are numbered from 1 too
steps = iter(range(1, 5))
if generic:
    try:
        table = raw_table(data, uploaded.name)
    except PairFileError as exc:
        st.error(user_text(exc))
        st.stop()
    st.subheader(f"{next(steps)} · Preview")
    for warning in table.attrs.get("warnings") or []:  # what reading the file left aside (sheets, formulas)
        st.warning(user_text(warning))
    st.dataframe(visible_frame(table.head(10)), hide_index=True, width="stretch", placeholder="—")
    st.subheader(f"{next(steps)} · Map the columns")
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
    mapping = (
        ("source", source_col),
        ("hypothesis", hyp_col),
        ("label", label_col),
        ("external_id", id_col),
        ("annotators", tuple((c, c) for c in annotator_cols)),
    )
    try:
        pairs, attrs = parse(data, uploaded.name, attrs.get("format") or "auto", mapping, keep_duplicates, skip_invalid)
    except PairFileError as exc:
        refused(exc)
        st.stop()
elif error is not None:
    refused(error)
    st.stop()

st.subheader(f"{next(steps)} · Validation")
annotators = [c.split(":", 1)[1] for c in pairs.columns if str(c).startswith("annotator:")]
cols = st.columns(4)
large = bool(attrs.get("large"))
cols[0].metric("Rows" if large else "Pairs", f"{attrs['n_rows'] if large else len(pairs):,}")
cols[1].metric(
    "Duplicates kept" if keep_duplicates else "Duplicates skipped",
    "at import" if large else f"{len(attrs.get('duplicates') or []):,}",
)
cols[2].metric("Gold labels", f"{int(pairs['label'].notna().sum()) if 'label' in pairs else 0:,}")
cols[3].metric("Annotators", f"{len(annotators):,}")
st.write(f"Format: **{attrs.get('format', '?')}** · labels: **{attrs.get('label_kind') or 'none'}**")
if large:
    st.info(
        f"A large file: the figures and the table here are of its first {len(pairs):,} rows. The import reads "
        "and checks every row as it writes it, out of sight until the last; a problem in any row refuses "
        "the whole file and nothing is kept."
    )
for note in attrs.get("notes") or []:  # they quote the file's words and columns
    st.info(user_text(note))
shown = set(table.attrs.get("warnings") or []) if generic else set()
for warning in attrs.get("warnings") or []:
    if warning not in shown:
        st.warning(user_text(warning))
skipped_rows = attrs.get("skipped_rows") or []
if skipped_rows:  # asked for: each row left out, and why (the warning above counts them)
    with st.expander(f"Invalid rows left out ({len(skipped_rows):,})", expanded=True):
        st.dataframe(
            pd.DataFrame(skipped_rows).rename(columns={"row": str(attrs.get("row_word") or "Row").lower()}),
            hide_index=True,
            width="stretch",
        )
if attrs.get("duplicates"):
    with st.expander("Duplicate pairs (kept)" if keep_duplicates else "Duplicate pairs (skipped)"):
        st.dataframe(attrs["duplicates"][:200], width="stretch", placeholder="—")
# the short columns first: after two long sentences, the id and the label were off to the right (PAWS-X)
first = [c for c in ("external_id", "label") if c in pairs.columns]
st.dataframe(
    visible_frame(pairs.head(10)[first + [c for c in pairs.columns if c not in first]]),
    hide_index=True,
    width="stretch",
    placeholder="—",
)
if note := hidden_note([*pairs["source"], *pairs["hypothesis"]]):  # bidi controls, zero-width spaces: kept, marked
    st.caption(note)

st.subheader(f"{next(steps)} · Import")
name = st.text_input("Dataset name", value=Path(uploaded.name).stem)
description = st.text_area("Description (optional)", height=68)
levels = False
if annotators:
    levels = st.checkbox(
        "The annotator columns use PLUIE Lab's five-level scale (0 Very different … 3 Same meaning, 4 Don't know)",
        value="majority_level" in pairs.columns,
    )
append = st.checkbox(
    "Add to an existing dataset of that name"
    + (" (pairs already in it are added again)" if keep_duplicates else " (pairs already in it are skipped)")
)
if st.button("Import", type="primary"):
    try:
        scale = "levels" if levels else "raw"
        if large:  # written in short transactions, with a bar of the rows written
            bar = st.progress(0.0, text="Writing the pairs…")
            chunks = read_pair_chunks(
                named_buffer(data, uploaded.name),
                format=attrs.get("format") or "auto",
                columns=as_mapping(mapping) if generic else None,
                skip_invalid=skip_invalid,
            )
            result = import_pair_chunks(
                engine,
                name,
                chunks,
                description=description,
                annotator_scale=scale,
                append=append,
                keep_duplicates=keep_duplicates,
                total=chunks.n_rows,
                file_name=uploaded.name,
                progress=lambda done, total: bar.progress(
                    min(1.0, done / max(total or done, 1)), text=f"{done:,} of {total or done:,} rows written"
                ),
            )
        else:
            if skipped_rows:  # the dataset says what its file held that it does not
                left_out = left_out_note(uploaded.name, attrs.get("row_word"), skipped_rows)
                description = f"{description}\n\n{left_out}" if description.strip() else left_out
            result = import_pairs(
                engine,
                name,
                pairs,
                description=description,
                annotator_scale=scale,
                append=append,
                keep_duplicates=keep_duplicates,
            )
    # all or nothing: nothing was imported; NotAllowed: the role of whoever asked (db.access)
    except (ImportRejected, StoreUnavailable, PairFileError, NotAllowed) as exc:
        st.error(user_text(exc))
    else:
        repeats = "duplicates skipped" if large else "already there"  # a large file's own repeats are found at import
        skipped = f", {result.n_skipped_duplicates:,} {repeats}" if result.n_skipped_duplicates else ""
        if result.n_kept_duplicates:
            skipped += f" ({counted(result.n_kept_duplicates, 'exact repeat')} kept)"
        st.success(
            f"Imported {counted(result.n_pairs, 'pair')} into “{user_text(result.dataset_name)}”{skipped}; "
            f"{counted(result.n_labels, 'annotator label')}; {counted(result.n_queued, 'score')} queued."
        )
        st.page_link("pages/home.py", label="See it on the home page", icon=":material/dataset:")
