"""Correlation: Pearson, Spearman and Kendall τ between score runs and a graded human reference (gold
scores, the mean level of the labels, imported annotators' mean, or a numeric metadata column), with
bootstrap intervals; a paired bootstrap test of whether two runs' correlations differ; and the
system-level correlation when the pairs carry a system / model column (the Revisiting paper). It opens on a
graded reference where the scope has one (gold scores, one dataset at a time), binary gold labels a choice."""

import pandas as pd
import streamlit as st

from pluie_core.evaluation.correlation import COLUMNS, METHODS
from pluie_core.stats import StatsError
from ui import charts
from ui.base.page import user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.correlation_cache import (
    CORRELATION_BOOT,
    GRADED_REFERENCES,
    SOURCE,
    correlations,
    graded,
    graded_values,
    groups,
    meta_keys,
)
from ui.views.correlation_sections import compare_runs, fail, one_reference, scatter
from ui.views.selection import scored_frame, sidebar
from ui.views.tables import download_csv

admin_page("chart")

REFERENCES = GRADED_REFERENCES
ONE_VALUE = {
    "gold": "a gold score",
    "levels": "a label on the five-level scale (other than Don't know)",
    "raw": "an imported annotator value",
    "meta": "a value in that column",
}

st.title("Correlation with graded judgments")
selection = sidebar(run="none", reference=False)
runs = selection.choices.runs
if runs.empty:
    st.info("No scores yet: start a score run (PLUIE or a baseline) and come back when some pairs are scored.")
    st.stop()
keys = meta_keys(selection.url, selection.dataset_ids)
with st.sidebar:
    kind = st.radio(
        "Graded reference",
        list(REFERENCES),
        format_func=REFERENCES.get,
        key="correlation_reference",
        help="Gold scores (STS-B 0–5, SICK 1–5, BIOSSES' annotators' mean); the mean level of the "
        "labels on the five-level scale (Don't know excluded); imported annotators' values on "
        "their own scale; or a numeric column the file carried. With a campaign as the "
        "scope, its pairs and the labels given in it only.",
    )
    campaign_id, column = selection.campaign_id, None  # the scope's: a campaign's labels, or every label
    if kind == "meta":
        if not keys:
            fail(ValueError("These pairs carry no metadata column: choose another reference."))
        column = st.selectbox("Column", keys, key="correlation_reference_column")
    n_boot = st.select_slider(
        "Bootstrap resamples", [200, 500, 1000, 2000], value=CORRELATION_BOOT, key="correlation_boot"
    )

if kind != "gold":  # which datasets have this reference at all (gold: those with gold labels)
    try:
        found = graded_values(selection.url, selection.dataset_ids, kind, campaign_id, column).dropna()
    except StatsError as error:
        fail(error)
    present = set(
        store_reads.pairs(selection.url, selection.dataset_ids, False, campaign_id)["dataset_id"]
        .reindex(found.index)
        .dropna()
        .astype(int)
    )
else:
    present = None
# one scale at a time: PAWS-X's 0/1 and STS-B's 0–5 on one axis is no correlation of either; graded first
selection = one_reference(selection, kind, present)

chosen_runs = st.multiselect("Score runs", runs["name"].tolist(), default=runs["name"].tolist(), key="correlation_runs")
if not chosen_runs:
    st.info("Choose at least one score run.")
    st.stop()
level = st.radio(
    "Level",
    ["Segment (pairs)", "System"],
    horizontal=True,
    key="correlation_level",
    help="System level: the mean score and mean reference per system, then their correlation.",
)
system_column = None
if level == "System":
    system_column = st.selectbox(
        "Systems named by",
        keys + [SOURCE],
        key="correlation_system",
        help="A column of the imported file (system, model, …), or the source sentence "
        "(the Revisiting paper's eq. 1: candidates of one source grouped).",
    )

data = scored_frame(selection, chosen_runs)
unscored = [name for name in chosen_runs if data[name].notna().sum() == 0]
if unscored:
    st.caption(f"No score on these datasets yet, left out: {user_text(', '.join(unscored))}.")
    chosen_runs = [name for name in chosen_runs if name not in unscored]
    if not chosen_runs:
        st.info("None of these runs has scored these datasets yet.")
        st.stop()
try:
    reference = graded(selection.url, selection.dataset_ids, kind, campaign_id, column)
except StatsError as error:
    fail(error)
data["reference"] = reference.reindex(data.index)
if data["reference"].notna().sum() == 0:
    fail(ValueError(f"No pair of these datasets has {ONE_VALUE[kind]}: choose another reference or dataset."))
if data["reference"].nunique() == 2:
    st.warning("The reference has only two values (binary labels): these are point-biserial correlations.")

direction = runs.set_index("name")["higher_is_similar"]
st.caption(
    f"Reference: {REFERENCES[kind].lower()}{f' ({user_text(column)})' if column else ''}. {n_boot:,} bootstrap resamples, "
    "95% percentile intervals. A distance (lower = more similar) correlates negatively."
)
correlation_table = st.empty()


def show_table(table: pd.DataFrame) -> None:
    shown = table.assign(
        direction=table["metric"].map(
            lambda m: "higher = similar" if direction.get(m, True) else "lower = similar (distance)"
        )
    )
    correlation_table.dataframe(
        shown,
        hide_index=True,
        width="stretch",
        placeholder="—",
        column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("r", "ci_low", "ci_high")},
    )


try:
    systems = None if system_column is None else groups(selection.url, selection.dataset_ids, system_column)
    first = None
    if systems is None:  # the coefficients at once, their intervals once the bootstrap is done
        first = correlations(data[chosen_runs], data["reference"], None, 0)
        show_table(first)
    with st.spinner(f"Computing the bootstrap intervals of the correlations ({n_boot:,} resamples)…"):
        table = correlations(data[chosen_runs], data["reference"], systems, n_boot, first)
except StatsError as error:
    fail(error)
show_table(table)
download_csv(table[COLUMNS], "correlation.csv")

pivot = table.pivot(index="metric", columns="method", values="r").reindex(columns=list(METHODS)).reset_index()
long = pivot.melt(id_vars="metric", var_name="method", value_name="r")
charts.draw("grouped_bars", long, "Correlation per run", key="correlation_bars")

if system_column is None:
    scatter(selection, data, chosen_runs, campaign_id)
compare_runs(selection, data, chosen_runs, runs, system_column, n_boot)
