"""The Import page's last step (pages/import_pairs.py): the dataset's name and description, the scale of its
annotator columns, and "Import": all or nothing (db.datasets.import_pairs), a large file read again and written in
short transactions with a bar (import_pair_chunks); then what was imported, in one sentence."""

from pathlib import Path

import pandas as pd
import streamlit as st

from db.datasets import ImportRejected, import_pair_chunks, import_pairs, left_out_note
from db.engine import StoreUnavailable
from lab.roles import NotAllowed
from pluie_core.io import PairFileError, read_pair_chunks
from pluie_core.wording import counted
from ui.base.page import user_text
from ui.forms.pair_file import as_mapping, named_buffer


def import_form(
    engine,
    file_name: str,
    data: bytes,
    pairs: pd.DataFrame,
    attrs: dict,
    *,
    columns,
    annotators: list,
    keep_duplicates: bool,
    skip_invalid: bool,
) -> None:
    """The uploaded file's ``pairs`` as validated (their ``attrs``), imported from ``data`` on the click:
    ``columns``, the mapping of a generic file (column_mapping; None for a recognised format), ``annotators``
    its annotator columns."""
    large = bool(attrs.get("large"))
    skipped_rows = attrs.get("skipped_rows") or []
    name = st.text_input("Dataset name", value=Path(file_name).stem)
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
                    named_buffer(data, file_name),
                    format=attrs.get("format") or "auto",
                    columns=as_mapping(columns),
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
                    file_name=file_name,
                    progress=lambda done, total: bar.progress(
                        min(1.0, done / max(total or done, 1)), text=f"{done:,} of {total or done:,} rows written"
                    ),
                )
            else:
                if skipped_rows:  # the dataset says what its file held that it does not
                    left_out = left_out_note(file_name, attrs.get("row_word"), skipped_rows)
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
            # a large file's own repeats are found at import
            repeats = "duplicates skipped" if large else "already there"
            skipped = f", {result.n_skipped_duplicates:,} {repeats}" if result.n_skipped_duplicates else ""
            if result.n_kept_duplicates:
                skipped += f" ({counted(result.n_kept_duplicates, 'exact repeat')} kept)"
            st.success(
                f"Imported {counted(result.n_pairs, 'pair')} into “{user_text(result.dataset_name)}”{skipped}; "
                f"{counted(result.n_labels, 'annotator label')}; {counted(result.n_queued, 'score')} queued."
            )
            st.page_link("pages/home.py", label="See it on the home page", icon=":material/dataset:")
