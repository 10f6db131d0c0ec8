"""The Scorecard page's organiser forms (pages/scorecard.py): the PARAPHRASUS benchmark imported in one step
(several files or a folder) and a dataset put in a challenge by hand, each reading the datasets' table again
after its change. The rules are db.evaluation's (import_benchmark, assign_challenge) and
pluie_core.evaluation.paraphrasus' (which file is which part)."""

import pandas as pd
import streamlit as st

from db.datasets import ImportRejected
from db.evaluation import PARAPHRASUS, assign_challenge, import_benchmark
from pluie_core.evaluation.paraphrasus import CHALLENGES, PARTS, ScorecardError, read_benchmark, sort_files
from pluie_core.io import PairFileError
from ui.base.page import user_text
from ui.views.scorecard_cache import benchmark_table


def organiser_forms(engine, url: str, table: pd.DataFrame) -> pd.DataFrame:
    """The benchmark's import and the challenge form (an organiser's); the datasets' table, read again
    after a change."""
    with st.expander("Import the benchmark", expanded=table["benchmark"].isna().all()):
        st.caption(
            "The PARAPHRASUS files (ms-mrpc.json, paws-x-test.json, the NLI files in both directions, …) are "
            "recognised by their names; every row is kept, as the paper counts them. "
            + " · ".join(f"**{p.name}** ({p.challenge}): {p.selection}" for p in PARTS.values())
        )
        folder = st.radio("Upload", ["Several files", "A folder"], horizontal=True, key="benchmark_upload_mode")
        uploads = st.file_uploader(
            "Benchmark files",
            accept_multiple_files=True if folder == "Several files" else "directory",
            key=f"benchmark_files_{folder}",
        )
        if uploads:
            try:
                files = sort_files(uploads)
            except ScorecardError as error:
                st.error(user_text(error))
            else:
                st.dataframe(files.table(), hide_index=True, width="stretch", placeholder="—")
                if files.missing:
                    st.warning(
                        f"No file for {user_text(', '.join(files.missing))}: the scorecard will cover the other datasets."
                    )
                benchmark = st.text_input("Benchmark name", PARAPHRASUS, key="benchmark_name")
                if st.button("Import the benchmark", type="primary"):
                    try:
                        with st.spinner("Reading and storing the benchmark…"):
                            frames, _ = read_benchmark(uploads)
                            results = import_benchmark(engine, frames, benchmark=benchmark)
                    except (
                        ScorecardError,
                        PairFileError,
                        ImportRejected,
                        PermissionError,
                    ) as error:  # NotAllowed: a role
                        st.error(user_text(error))
                    else:
                        st.cache_data.clear()
                        table = benchmark_table(url)
                        st.success(
                            f"Imported {len(results)} datasets, {sum(r.n_pairs for r in results):,} pairs "
                            f"(every row kept); {sum(r.n_queued for r in results):,} scores queued."
                        )

    with st.expander("Put a dataset in a challenge"):
        with st.form("assign_challenge"):
            c1, c2, c3 = st.columns(3)
            name = c1.selectbox("Dataset", table["name"].tolist(), key="assign_dataset")
            challenge = c2.selectbox("Challenge", [*CHALLENGES, "None (take it out)"], key="assign_challenge")
            known = sorted(table["benchmark"].dropna().unique())
            benchmark = c3.text_input("Benchmark", known[0] if known else PARAPHRASUS, key="assign_benchmark")
            if st.form_submit_button("Save") and name is not None:
                try:
                    assign_challenge(
                        engine,
                        int(table.loc[table["name"] == name, "id"].iloc[0]),
                        None if challenge not in CHALLENGES else challenge,
                        benchmark,
                    )
                except (ScorecardError, ValueError, PermissionError) as error:  # PermissionError: db.access.NotAllowed
                    st.error(user_text(error))
                else:
                    st.cache_data.clear()
                    table = benchmark_table(url)
                    st.success(f"{user_text(name)}: {challenge if challenge in CHALLENGES else 'in no challenge'}.")
    return table
