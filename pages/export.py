"""Export: pairs with every raw label, the aggregated and binarised labels and every score (wide), or
one row per label with everything collected about it (long)."""
import streamlit as st

from db.datasets import list_datasets
from db.export import export_frame, export_labels
from pages.shared import admin_page
from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes

engine = admin_page()
st.title("Export")
datasets = list_datasets(engine)
if not datasets:
    st.info("Nothing to export yet: import a dataset first.")
    st.stop()

names = {d.name: d.id for d in datasets}
chosen = st.multiselect("Datasets", list(names), default=list(names))
include_training = st.checkbox("Include training-trial labels", value=False)
if not chosen:
    st.warning("Choose at least one dataset.")
    st.stop()

LAYOUTS = {"wide": "One row per pair (wide)", "long": "One row per label (long)"}
layout = st.radio("Layout", list(LAYOUTS), format_func=LAYOUTS.get, horizontal=True)
ids = [names[n] for n in chosen]
if layout == "wide":
    frame = export_frame(engine, ids, include_training=include_training)
    st.caption(
        f"{len(frame):,} pairs · columns: gold `label`, one `annotator:<name>` column per annotator (level 0–4, "
        "4 = Don't know, or the imported value), `majority_level` / `majority_label` (Don't know ignored; a tie "
        "across the paraphrase boundary gives none), `binary_label`, one `score:<run>` column per score run"
        + (", `n_training_labels` (labels from a training trial, counted in the majority)." if include_training else ".")
    )
else:
    frame = export_labels(engine, ids, include_training=include_training)
    st.caption(
        f"{len(frame):,} labels · one row per label: the pair, the annotator (`annotator` as on every page, "
        "`display_name` they chose, `link_name` of their personal link), `campaign`, `english_level`, `level` "
        "0–4 (or the imported `value`), `is_training`, `sentence_on_top`, `seconds_spent`, `created_at` / "
        "`updated_at` (UTC)."
    )
st.dataframe(frame.head(50), hide_index=True, width="stretch")
stem = ("pluie_lab_export" if len(chosen) > 1 else chosen[0]) + ("_labels" if layout == "long" else "")
c1, c2 = st.columns(2)
c1.download_button("Download CSV", to_csv_bytes(frame), f"{stem}.csv", "text/csv", type="primary")
c2.download_button("Download JSONL", to_jsonl_bytes(frame), f"{stem}.jsonl", "application/jsonl")
