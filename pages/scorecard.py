"""Scorecard: a score run judged as the PARAPHRASUS paper judges a paraphrase detector (its Table 2):
the error per dataset with its counts, per challenge (Classify!, Minimize!, Maximize!), Err̄, and per
language; the benchmark imported in one step (several files or a folder); any dataset put in a
challenge by hand. The numbers come from pluie_core.evaluation.paraphrasus, the reads from db.evaluation."""

import pandas as pd
import streamlit as st

from pluie_core.analysis import natural_threshold
from pluie_core.evaluation.paraphrasus import (
    CHALLENGES,
    DecisionRule,
    ScorecardError,
    calibrate,
    in_paper_order,
    scorecard,
)
from ui.base.page import may, user_text
from ui.forms.benchmark_forms import organiser_forms
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.scorecard_cache import benchmark_table, scorecard_pairs
from ui.views.tables import download_csv, file_stem

engine = admin_page("table")
st.title("PARAPHRASUS scorecard")
st.caption(
    "Errors as the PARAPHRASUS paper defines them: Classify! = share of wrong predictions, Minimize! = share "
    "of pairs predicted paraphrase, Maximize! = share predicted non-paraphrase; each challenge is the "
    "unweighted mean of its datasets, Err̄ the mean of the three challenges. Lower is better."
)
url = store_reads.store_key()

if st.sidebar.button("Reload data", help="Read the store again (new scores show up within a minute anyway)."):
    st.cache_data.clear()
    scorecard_pairs.clear()
table = benchmark_table(url)

organising = may("organise")  # the forms only for those the store lets write (issue 56)
if organising:
    table = organiser_forms(engine, url, table)

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
