"""Import: upload a file, preview it, map its columns, validate, then commit — all or nothing, unless
the organiser asks to skip invalid rows (then each row left out is listed with its reason)."""

import re

import pandas as pd
import streamlit as st

from pluie_core.io import GENERIC_FORMATS, PairFileError
from pluie_core.visible import hidden_note, visible_frame
from ui.base.page import user_text
from ui.forms.import_form import import_form
from ui.forms.pair_file import column_mapping, parse, raw_table
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
    mapping = column_mapping(table)
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
import_form(
    engine,
    uploaded.name,
    data,
    pairs,
    attrs,
    columns=mapping if generic else None,
    annotators=annotators,
    keep_duplicates=keep_duplicates,
    skip_invalid=skip_invalid,
)
