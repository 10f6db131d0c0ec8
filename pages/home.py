"""Home: the datasets in the store, their sizes, and how far labelling and scoring have gone."""

import streamlit as st

from db.analysis import LABELS_COUNTED
from db.datasets import RenameRefused, delete_dataset, rename_dataset
from db.limits import NAME_LENGTH
from lab.roles import NotAllowed
from pluie_core.wording import one_line
from ui.base.page import may, user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.home_cache import store_overview

engine = admin_page("table")
st.title("PLUIE Lab")
st.caption("Label sentence pairs, score them with PLUIE, and see where people and the metric agree.")


totals, overview = store_overview(store_reads.store_key())  # read ahead, cached on the store's state
cols = st.columns(4)
for col, (name, value) in zip(cols, totals.items()):
    col.metric(name.capitalize(), f"{value:,}", help=f"Labels: {LABELS_COUNTED}." if name == "labels" else None)

if overview.empty:
    st.info("No dataset yet. Start by importing sentence pairs.")
    st.page_link("pages/import_pairs.py", label="Import pairs", icon=":material/upload_file:")
    st.stop()

overview["labelling"] = overview["labelled pairs"] / overview["pairs"].clip(lower=1)
overview["scoring"] = overview["scores"] / overview["scores queued"].clip(lower=1)
# a cell shows no line breaks: the description and the note each import added under it stay apart
overview["description"] = overview["description"].map(one_line)
st.dataframe(
    overview,
    hide_index=True,
    width="stretch",
    # who imported each dataset, where an account did (a store without accounts names nobody)
    column_order=[
        "dataset",
        "format",
        "pairs",
        "gold labels",
        "labels",
        "labelling",
        "scoring",
        "imported",
        *(["imported by"] if overview["imported by"].astype(bool).any() else []),
        "description",
    ],
    column_config={
        "labelling": st.column_config.ProgressColumn("labelled", format="percent", min_value=0, max_value=1),
        "scoring": st.column_config.ProgressColumn(
            "scored",
            format="percent",
            min_value=0,
            max_value=1,
            help="scores written / scores queued, over the active and paused runs (failed and cancelled ones left out)",
        ),
        "imported": st.column_config.DatetimeColumn("imported", format="YYYY-MM-DD HH:mm"),
        "labels": st.column_config.NumberColumn("labels", help=f"Labels of the dataset's pairs: {LABELS_COUNTED}."),
    },
    placeholder="—",
)

if not may("organise"):  # a viewer or reviewer: no form the store would refuse (issue 56)
    st.stop()
with st.expander("Delete a dataset"):
    choice = st.selectbox("Dataset", overview["dataset"].tolist(), index=None, placeholder="Choose a dataset")
    confirm = st.checkbox("I understand its pairs, labels and scores are deleted too.")
    if st.button("Delete", disabled=not (choice and confirm)):
        try:
            delete_dataset(engine, int(overview.loc[overview["dataset"] == choice, "id"].iloc[0]))
        except NotAllowed as exc:  # the role of whoever asked (db.access): nothing deleted
            st.error(user_text(exc))
        else:
            st.success(f"Deleted {user_text(choice)}.")
            st.rerun()

RENAMED = "datasets-renamed"  # the sentence of a rename just made, shown by the run that follows it
names = dict(zip(overview["id"].astype(int), overview["dataset"]))
with st.expander("Rename a dataset"):
    # several benchmark files are all called "dev" (PAWS-X, PAWS, STS-B): the name is the dataset's
    # everywhere (sidebars, exports, the card), its pairs, labels, scores and campaigns stay as they are
    with st.form("rename-dataset"):
        which = st.selectbox(
            "Dataset to rename",
            list(names),
            index=None,
            format_func=names.get,
            placeholder="Choose a dataset",
            key="rename-dataset-which",
        )
        new_name = st.text_input(
            "New name",
            max_chars=NAME_LENGTH,
            key="rename-dataset-name",
            placeholder="e.g. paws-x-en-dev",
            help="Unique among the datasets.",
        )
        if st.form_submit_button("Rename"):
            if which is None:
                st.error("Choose the dataset to rename.")
            else:
                try:
                    given = rename_dataset(engine, which, new_name)
                except (RenameRefused, NotAllowed) as exc:  # NotAllowed: the role of whoever asked
                    st.error(user_text(exc))
                else:
                    st.session_state[RENAMED] = f"“{names[which]}” is now called “{given}”."
                    st.rerun()
    if st.session_state.get(RENAMED):
        st.success(user_text(st.session_state.pop(RENAMED)))
