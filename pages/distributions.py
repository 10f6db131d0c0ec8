"""Distributions: a score's histogram per class, the score against the normalised edit distance with
the Pearson correlation inside each class (the paper's figure 2 and table 4), and the mean ± standard
deviation of every score per class (table 1)."""

import pandas as pd
import streamlit as st

from db.analysis import pairs_detail
from pluie_core.analysis import natural_threshold
from pluie_core.stats import class_summary, edit_distance_correlation, format_p
from ui import charts
from ui.base.page import get_engine, user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.selection import scored_frame, sidebar
from ui.views.tables import download_csv, file_stem, plus_minus

admin_page("chart")

CLASSES, COLOURS = charts.CLASSES, charts.CLASS_COLOURS
EDIT = "normalised edit distance"


@st.cache_data(ttl=store_reads.CACHE_SECONDS, max_entries=store_reads.CACHE_ENTRIES, show_spinner=False)
def per_class_tables(tables: pd.DataFrame, table_runs: list, dataset_col):
    """The two tables below (0.25 s a run at 100,000 pairs), cached on their inputs: the Pearson r of each
    score with the edit distance inside each class, and each score's mean and standard deviation per class."""
    correlation = edit_distance_correlation(tables, table_runs, EDIT, label_col="class", dataset_col=dataset_col)
    summary = class_summary(tables, [*table_runs, EDIT], label_col="class", dataset_col=dataset_col)
    return correlation, summary


st.title("Distributions")
selection = sidebar(run="required", reference=True)
score = selection.run["name"]
data = scored_frame(selection, texts=True)  # the sentences: on hover and in the selected pairs
data[EDIT] = store_reads.edit_distances(selection.url, selection.dataset_ids).reindex(data.index)
data = data.dropna(subset=[score, "reference"])
if data.empty:
    st.info(f"No pair of these datasets has both a {user_text(score)} score and a reference label yet.")
    st.stop()
data["class"] = data["reference"].map(CLASSES)
st.caption(f"**{user_text(score)}** on {len(data):,} pairs, classes from {user_text(selection.reference.describe())}.")
if data["class"].nunique() < 2:
    st.warning(
        f"Every pair here is a {data['class'].iloc[0]} according to {user_text(selection.reference.describe())}: "
        "the per-class figures below show a single class."
    )

points = data.reset_index()[["pair_id", "dataset", score, EDIT, "class", "source", "hypothesis"]]
columns = ["pair_id", "dataset", score, EDIT, "class"]  # the download's


def read_pairs(pair_ids: tuple):
    """The selected pairs with every label (those of the scope's campaign) and score: one read."""
    return pairs_detail(get_engine(), pair_ids, selection.campaign_id, annotators=selection.choices.annotators)


bins = st.slider("Histogram bins", 10, 200, 50, key="distribution_bins")
natural = natural_threshold(selection.run["kind"])
marks = [] if natural is None else [(natural, "#d62728", "natural threshold", False)]
charts.selectable_class_histogram(points, score, bins, f"{score} per class", marks, "histogram", read_pairs)
download_csv(points[columns], f"scores_per_class_{file_stem(score)}.csv", "Download the figures' data (CSV)")

st.subheader("Score against edit distance")
drawn = charts.drawn_sample(points, charts.points_drawn(len(points), "distribution_points"))
labelled = store_reads.hover_labels(selection.url, selection.dataset_ids, selection.campaign_id)
drawn = drawn.assign(labels=drawn["pair_id"].map(labelled).fillna("none"))  # every label, on hover
picked = charts.draw(
    "class_scatter",
    drawn.rename(columns={EDIT: "x", score: "y"}),
    COLOURS,
    {"paraphrase": "circle", "non-paraphrase": "square"},
    {"x": EDIT, "y": score, "pair_id": "pair"},
    f"{score} against the normalised Levenshtein distance",
    level=natural,
    key="scatter",
    select=("box", "lasso"),
)
if len(drawn) < len(points):
    more = ' ("Points drawn" draws more)' if len(drawn) < charts.MAX_SCATTER_POINTS else ""
    st.caption(
        f"{len(drawn):,} of {len(points):,} pairs drawn, a seeded sample{more}; "
        "the histogram, the correlations and the tables use them all."
    )
charts.list_pairs(charts.selected_pair_ids(picked), read_pairs, "scatter")

st.subheader("Per class: correlation with edit distance, mean and standard deviation")
runs = selection.choices.runs["name"].tolist()
table_runs = st.multiselect(
    "Scores in the tables", runs, default=[score], key=f"distribution_table_runs_{int(selection.run['id'])}"
)
per_dataset = data["dataset"].nunique() > 1 and st.checkbox("Per dataset", value=True, key="distribution_per_dataset")
dataset_col = "dataset" if per_dataset else None
tables = scored_frame(selection, table_runs)
tables[EDIT] = store_reads.edit_distances(selection.url, selection.dataset_ids).reindex(tables.index)
tables["class"] = tables["reference"].map(CLASSES)

correlation, summary = per_class_tables(
    tables[[*dict.fromkeys([*table_runs, EDIT, "class", "dataset"])]], table_runs, dataset_col
)
st.markdown("**Pearson r between each score and the edit distance inside each class** (paper, table 4)")
st.dataframe(
    correlation.assign(p_value=correlation["p_value"].map(format_p)),
    hide_index=True,
    width="stretch",
    column_config={"r": st.column_config.NumberColumn(format="%.3f")},
    placeholder="—",
)
download_csv(correlation, "edit_distance_correlation.csv")

st.markdown("**Mean ± standard deviation per class** (paper, table 1)")
summary["mean ± std"] = plus_minus(summary["mean"], summary["std"])
st.dataframe(summary, hide_index=True, width="stretch", placeholder="—")
download_csv(summary, "class_summary.csv")
