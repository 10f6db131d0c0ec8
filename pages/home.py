"""Home: the datasets in the store, their sizes, and how far labelling and scoring have gone."""
import streamlit as st

from db.analysis import LABELS_COUNTED
from db.datasets import delete_dataset
from pages import analysis_common as common
from pages.shared import admin_page, user_text

engine = admin_page("table")
st.title("PLUIE Lab")
st.caption("Label sentence pairs, score them with PLUIE, and see where people and the metric agree.")


totals, overview = common.store_overview(common.store_key())  # read ahead, cached on the store's state
cols = st.columns(4)
for col, (name, value) in zip(cols, totals.items()):
    col.metric(name.capitalize(), f"{value:,}", help=f"Labels: {LABELS_COUNTED}." if name == "labels" else None)

if overview.empty:
    st.info("No dataset yet. Start by importing sentence pairs.")
    st.page_link("pages/import_pairs.py", label="Import pairs", icon=":material/upload_file:")
    st.stop()

overview["labelling"] = overview["labelled pairs"] / overview["pairs"].clip(lower=1)
overview["scoring"] = overview["scores"] / overview["scores queued"].clip(lower=1)
st.dataframe(
    overview,
    hide_index=True,
    width="stretch",
    column_order=["dataset", "format", "pairs", "gold labels", "labels", "labelling", "scoring", "imported", "description"],
    column_config={
        "labelling": st.column_config.ProgressColumn("labelled", format="percent", min_value=0, max_value=1),
        "scoring": st.column_config.ProgressColumn(
            "scored", format="percent", min_value=0, max_value=1, help="scores written / scores queued, over the active and paused runs (failed and cancelled ones left out)"
        ),
        "imported": st.column_config.DatetimeColumn("imported", format="YYYY-MM-DD HH:mm"),
        "labels": st.column_config.NumberColumn("labels", help=f"Labels of the dataset's pairs: {LABELS_COUNTED}."),
    },
    placeholder="—",
)

with st.expander("Delete a dataset"):
    choice = st.selectbox("Dataset", overview["dataset"].tolist(), index=None, placeholder="Choose a dataset")
    confirm = st.checkbox("I understand its pairs, labels and scores are deleted too.")
    if st.button("Delete", disabled=not (choice and confirm)):
        delete_dataset(engine, int(overview.loc[overview["dataset"] == choice, "id"].iloc[0]))
        st.success(f"Deleted {user_text(choice)}.")
        st.rerun()
