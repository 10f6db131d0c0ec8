"""Scorecard: a score run judged as the PARAPHRASUS paper judges a paraphrase detector (its Table 2):
the error per dataset with its counts, per challenge (Classify!, Minimize!, Maximize!), Err̄, and per
language; the benchmark imported in one step (several files or a folder); any dataset put in a
challenge by hand. The numbers come from pluie_core.evaluation.paraphrasus, the reads from db.evaluation."""

import pandas as pd
import streamlit as st

from db.datasets import ImportRejected
from db.evaluation import PARAPHRASUS, assign_challenge, benchmark_datasets, import_benchmark
from pluie_core.analysis import natural_threshold
from pluie_core.evaluation.paraphrasus import (
    CHALLENGES,
    PARTS,
    DecisionRule,
    ScorecardError,
    calibrate,
    in_paper_order,
    read_benchmark,
    scorecard,
    sort_files,
)
from pluie_core.io import PairFileError
from ui.base.page import may, user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.scorecard_cache import scorecard_pairs
from ui.views.tables import download_csv, file_stem

engine = admin_page("table")
st.title("PARAPHRASUS scorecard")
st.caption(
    "Errors as the PARAPHRASUS paper defines them: Classify! = share of wrong predictions, Minimize! = share "
    "of pairs predicted paraphrase, Maximize! = share predicted non-paraphrase; each challenge is the "
    "unweighted mean of its datasets, Err̄ the mean of the three challenges. Lower is better."
)
url = store_reads.store_key()


@st.cache_data(ttl=store_reads.CACHE_SECONDS, max_entries=store_reads.CACHE_ENTRIES, show_spinner=False)
def datasets(url: str) -> pd.DataFrame:
    return benchmark_datasets(engine)


if st.sidebar.button("Reload data", help="Read the store again (new scores show up within a minute anyway)."):
    st.cache_data.clear()
    scorecard_pairs.clear()
table = datasets(url)


def organiser_forms(table: pd.DataFrame) -> pd.DataFrame:
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
                        table = datasets(url)
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
                    table = datasets(url)
                    st.success(f"{user_text(name)}: {challenge if challenge in CHALLENGES else 'in no challenge'}.")
    return table


organising = may("organise")  # the forms only for those the store lets write (issue 56)
if organising:
    table = organiser_forms(table)

benchmarks = sorted(table["benchmark"].dropna().unique())
if not benchmarks:
    st.info(
        "No benchmark yet: import the PARAPHRASUS files above, or put datasets in challenges."
        if organising
        else "No benchmark yet: an organiser imports the PARAPHRASUS files on this page."
    )
    st.stop()
runs = store_reads.choices(url).runs
with st.sidebar:
    chosen = st.selectbox("Benchmark", benchmarks, key="scorecard_benchmark")
    run_name = st.selectbox("Score run", runs["name"].tolist(), key="scorecard_run") if not runs.empty else None
members = table[table["benchmark"] == chosen]


members = in_paper_order(members)
# Table 2's columns under the datasets' short names ("paraphrasus/mrpc" -> "mrpc") when they stay distinct
short_names = {n: n.rsplit("/", 1)[-1] for n in members["name"]}
if len(set(short_names.values())) < len(short_names):
    short_names = {n: n for n in short_names}
st.dataframe(
    members[["name", "challenge", "n_pairs"]].rename(columns={"name": "dataset", "n_pairs": "pairs"}),
    hide_index=True,
    placeholder="—",
)
if run_name is None:
    st.info(
        "No scores yet: start a score run (PLUIE or a baseline) and come back when the benchmark's pairs are scored."
    )
    st.stop()
run = runs[runs["name"] == run_name].iloc[0]
frame = scorecard_pairs(url, tuple(int(i) for i in members["id"]), tuple(int(i) for i in runs["id"]))
higher = bool(run["higher_is_similar"])
natural = natural_threshold(run["kind"])
classify = members.loc[members["challenge"] == "Classify!", "name"].tolist()


def rule_for(name: str, higher_is_similar: bool, how: str, calibrate_on, threshold=None) -> DecisionRule:
    if how == "natural":
        return DecisionRule(0.0, higher_is_similar, "natural")
    if how == "given":
        return DecisionRule(float(threshold), higher_is_similar, "given")
    return calibrate(frame, name, calibrate_on, higher_is_similar=higher_is_similar)


RULES = {
    "natural": "PLUIE's natural threshold (0)",
    "calibrated": "Calibrated on chosen datasets",
    "given": "A threshold I give",
}
with st.sidebar:
    options = (["natural"] if natural is not None else []) + ["calibrated", "given"]
    how = st.radio(
        "Decision rule",
        options,
        format_func=RULES.get,
        key=f"scorecard_rule_{int(run['id'])}",
        help="A pair is predicted paraphrase when its score is ≥ the threshold (≤ for a distance, where "
        "lower means more similar). Calibrated: the threshold with the lowest Err̄ on the chosen datasets.",
    )
    calibrate_on = (
        st.multiselect(
            "Calibrate on", members["name"].tolist(), default=classify, key=f"scorecard_calibrate_{int(run['id'])}"
        )
        if how == "calibrated"
        else []
    )
    given = (
        st.number_input("Threshold", value=0.0, format="%.4f", key=f"scorecard_threshold_{int(run['id'])}")
        if how == "given"
        else None
    )
    st.caption(f"{user_text(run_name)}: {'higher' if higher else 'lower'} scores mean more similar.")
if run_name not in frame.columns:
    st.info(f"{user_text(run_name)} has scored no pair of {user_text(chosen)} yet.")
    st.stop()
try:
    rule = rule_for(run_name, higher, how, calibrate_on, given)
    card = scorecard(frame, run_name, rule, language_col="language")
except ScorecardError as error:
    st.error(user_text(error))
    st.stop()

st.subheader(f"{user_text(run_name)} on {user_text(chosen)}")
st.caption(f"Decision rule: {user_text(rule.describe())}.")
for note in card.notes:  # may name datasets
    st.info(user_text(note))
averages = card.challenges.set_index("challenge")["error"]
cols = st.columns(4)
for col, label in zip(cols, CHALLENGES):
    col.metric(label, "—" if label not in averages else f"{averages[label]:.1%}")
cols[3].metric("Err̄", f"{card.err:.1%}")
st.dataframe(card.table2(run_name).rename(columns=short_names, level=1).round(1), width="stretch", placeholder="—")
shown = card.datasets.assign(error=(card.datasets["error"] * 100).round(1)).rename(
    columns={"error": "error %", "predicted_paraphrases": "predicted paraphrase", "unscored": "not scored yet"}
)
st.dataframe(shown, hide_index=True, width="stretch", placeholder="—")
download_csv(card.table(), f"scorecard_{file_stem(chosen)}_{file_stem(run_name)}.csv")
if not card.languages.empty:
    st.subheader("Per language")
    st.caption("The paper's Tables 6-7: each dataset's error per language, for the pairs with a language field.")
    languages = card.languages.assign(error=card.languages["error"] * 100)
    st.dataframe(
        languages.pivot(index="dataset", columns="language", values="error").round(1), width="stretch", placeholder="—"
    )
    download_csv(card.languages, f"scorecard_languages_{file_stem(run_name)}.csv")

st.subheader("Every score run (Table 2)")
st.caption(
    "One row per run with scores on every dataset: PLUIE runs at their natural threshold, the others "
    f"calibrated on {', '.join(calibrate_on or classify) or 'the Classify! datasets'}."
)
rows, skipped = [], []
for _, other in runs.iterrows():
    try:
        if other["name"] not in frame.columns or frame[other["name"]].isna().any():
            raise ScorecardError("not every pair is scored yet")
        how_other = "natural" if natural_threshold(other["kind"]) is not None else "calibrated"
        other_rule = rule_for(other["name"], bool(other["higher_is_similar"]), how_other, calibrate_on or classify)
        rows.append(scorecard(frame, other["name"], other_rule, language_col="language").table2(other["name"]))
    except ScorecardError as error:
        skipped.append(f"{other['name']} ({error})")
if rows:
    st.dataframe(pd.concat(rows).rename(columns=short_names, level=1).round(1), width="stretch", placeholder="—")
if skipped:
    st.caption("Not in the table: " + user_text("; ".join(skipped)))
