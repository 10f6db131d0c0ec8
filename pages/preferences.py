"""Preferences: import data where people chose the better of two candidates for a source (A, B or a
tie), and see how often each score run makes the same choice (*-PLUIE section 3.2, table 2):
pairwise accuracy with tie calibration, Cramér's V and Cohen's κ. The pairs (source, A) and
(source, B) are ordinary pairs of the dataset, scored by the ordinary runs."""

import streamlit as st

from db.datasets import ImportRejected
from db.limits import NAME_LENGTH
from db.preferences import import_preference_file
from pluie_core.evaluation.preference import AGREEMENT_COLUMNS, CHOICES
from pluie_core.io import PairFileError
from ui.base.page import may, user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.preferences_cache import preference_agreement, preference_datasets, preferences
from ui.views.tables import download_csv

engine = admin_page("table")


st.title("Preference agreement")
url = store_reads.store_key()
importing = may("organise")  # the import form only for those the store lets import (issue 56)


def import_form() -> None:
    with st.expander("Import preference data", expanded=preference_datasets(url).empty):
        st.markdown(
            "A file with one row per choice: **source**, **candidate_a**, **candidate_b** and **preferred** "
            "(A, B or tie; both / neither count as tie), as CSV, TSV, JSON, JSONL or Excel, optional "
            "**system_a** / **system_b** naming the candidates' systems; or a ParaReval JSONL file. Each "
            "(source, candidate) becomes a pair of a new dataset that every active score run scores."
        )
        upload = st.file_uploader("Preference file", key="preference_upload")
        name = st.text_input(
            "Dataset name", key="preference_name", placeholder="the file's name", max_chars=NAME_LENGTH
        )
        if st.button("Import", type="primary", disabled=upload is None, key="preference_import"):
            try:
                done = import_preference_file(engine, upload, name.strip() or upload.name.rsplit(".", 1)[0])
            except (PairFileError, ImportRejected, PermissionError) as error:  # PermissionError: NotAllowed
                st.error(user_text(error))
            else:
                st.cache_data.clear()
                st.success(
                    f"Imported {done.n_preferences:,} preferences as {done.n_pairs:,} pairs in "
                    f"'{user_text(done.dataset_name)}'; {done.n_queued:,} scores queued."
                )


if importing:
    import_form()

available = preference_datasets(url)
if available.empty:
    st.info(
        "No preference data yet: import a file above."
        if importing
        else "No preference data yet: an organiser imports it on this page."
    )
    st.stop()
runs = store_reads.choices(url, preference_runs=True).runs  # LLM-choice runs too
names = st.multiselect(
    "Preference datasets", available["name"].tolist(), default=available["name"].tolist(), key="preference_datasets"
)
if not names:
    st.info("Choose at least one preference dataset.")
    st.stop()
dataset_ids = tuple(int(i) for i in available.loc[available["name"].isin(names), "id"])
items = preferences(url, dataset_ids)
human = items["preferred"].value_counts(normalize=True).reindex(list(CHOICES), fill_value=0)
st.caption(f"{len(items):,} human choices: " + ", ".join(f"{c} {share:.0%}" for c, share in human.items()))
if runs.empty:
    st.info("No scores yet: start a score run (PLUIE or a baseline) and come back when the pairs are scored.")
    st.stop()
chosen = st.multiselect("Score runs", runs["name"].tolist(), default=runs["name"].tolist(), key="preference_runs")
if not chosen:
    st.info("Choose at least one score run.")
    st.stop()

direction = runs.set_index("name")["higher_is_similar"].astype(bool).to_dict()
table = preference_agreement(
    url, dataset_ids, tuple(int(i) for i in runs.set_index("name").loc[chosen, "id"]), tuple(chosen), direction
)
st.dataframe(
    table,
    hide_index=True,
    width="stretch",
    column_config={
        "accuracy": st.column_config.NumberColumn("pair accuracy (ε = 0)", format="%.3f"),
        "epsilon": st.column_config.NumberColumn("ε (tie calibration)", format="%.4g"),
        "accuracy_calibrated": st.column_config.NumberColumn("pair accuracy (calibrated ε)", format="%.3f"),
        "cramers_v": st.column_config.NumberColumn("Cramér's V", format="%.3f"),
        "kappa": st.column_config.NumberColumn("Cohen's κ", format="%.3f"),
        "metric_ties": st.column_config.NumberColumn("ties called by the run"),
    },
    placeholder="—",
)
st.caption(
    "A run prefers the candidate it scores as more similar (higher; lower for a distance) and calls a tie "
    "when the two scores differ by at most ε. Tie calibration (Deutsch et al. 2023) picks the ε that "
    "maximises pairwise accuracy with ties counted; Cramér's V and κ compare the run's choices at that ε "
    "(A, B, tie) with the people's. Items whose two pairs are not both scored yet are left out (n)."
)
download_csv(table[AGREEMENT_COLUMNS], "preference_agreement.csv")
