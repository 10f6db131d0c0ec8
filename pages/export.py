"""Export: pairs with every raw label, the aggregated and binarised labels and every score."""
import streamlit as st

from db.datasets import list_datasets
from db.export import export_frame
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

frame = export_frame(engine, [names[n] for n in chosen], include_training=include_training)
st.caption(
    f"{len(frame):,} pairs · columns: gold `label`, one `annotator:<name>` column per annotator (level 0–4, "
    "4 = Don't know, or the imported value), `majority_level` / `majority_label` (Don't know ignored; a tie "
    "across the paraphrase boundary gives none), `binary_label`, one `score:<run>` column per score run."
)
st.dataframe(frame.head(50), hide_index=True, width="stretch")
stem = "pluie_lab_export" if len(chosen) > 1 else chosen[0]
c1, c2 = st.columns(2)
c1.download_button("Download CSV", to_csv_bytes(frame), f"{stem}.csv", "text/csv", type="primary")
c2.download_button("Download JSONL", to_jsonl_bytes(frame), f"{stem}.jsonl", "application/jsonl")
