"""Correlation: Pearson, Spearman and Kendall τ between score runs and a graded human reference (gold
scores, the mean level of the labels, imported annotators' mean, or a numeric metadata column), with
bootstrap intervals; a paired bootstrap test of whether two runs' correlations differ; and the
system-level correlation when the pairs carry a system / model column (the Revisiting paper). It opens on a
graded reference where the scope has one (gold scores, one dataset at a time), binary gold labels a choice."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from db import evaluation_reads as reads
from db.analysis import pairs_detail
from pluie_core import analysis_figures
from pluie_core.analysis import scales_sentence
from pluie_core.evaluation.correlation import (
    COLUMNS,
    METHODS,
    system_means,
)
from pluie_core.stats import StatsError, format_p
from ui import charts
from ui.base.page import get_engine, user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.correlation_cache import (
    CORRELATION_BOOT,
    GRADED_REFERENCES,
    correlation_difference,
    correlations,
    graded,
    graded_values,
    reference_choices,
)
from ui.views.selection import SCALE_WIDGET, Selection, dataset_names, scale_groups, scored_frame, sidebar
from ui.views.tables import download_csv

admin_page("chart")

REFERENCES = GRADED_REFERENCES
ONE_VALUE = {
    "gold": "a gold score",
    "levels": "a label on the five-level scale (other than Don't know)",
    "raw": "an imported annotator value",
    "meta": "a value in that column",
}
SOURCE = "(source sentence)"


@st.cache_data(ttl=store_reads.CACHE_SECONDS, max_entries=store_reads.CACHE_ENTRIES, show_spinner=False)
def meta_keys(url: str, dataset_ids: tuple) -> list:
    return reads.meta_keys(get_engine(), dataset_ids)


@st.cache_data(ttl=store_reads.CACHE_SECONDS, max_entries=store_reads.CACHE_ENTRIES, show_spinner=False)
def groups(url: str, dataset_ids: tuple, column: str) -> pd.Series:
    if column == SOURCE:
        return store_reads.pairs(url, dataset_ids, texts=True)["source"]
    return reads.meta_column(get_engine(), column, dataset_ids)


def fail(error: Exception):
    st.error(user_text(error))
    st.stop()


def one_reference(selection: Selection, kind: str, present=None) -> Selection:
    """The selection narrowed to one choice of reference_choices: a graded reference first where the scope
    has one (gold scores one dataset at a time), the binary 0/1 labels a choice (*Reference scale*); never
    two scales in one figure (the sentence of ui.views.selection.one_scale when the datasets have several).
    Where the scope has no graded reference, one caption says why the page opens on the binary labels."""
    choices = reference_choices(selection, kind, present)
    groups = scale_groups(selection, kind, present)
    if len(groups) > 1:
        st.info(user_text(scales_sentence(groups, dataset_names(selection.choices))))
    binary = [choice for choice in choices if choice.scale.kind == "binary"]
    what = {"gold": ("gold labels", "gold scores"), "raw": ("imported annotator values", "imported annotator values")}
    if binary and kind in what and not any(choice.graded for choice in choices):
        st.caption(
            f"Opens on binary {what[kind][0]} (0/1), so its correlations are point-biserial: no dataset of "
            f"this scope has graded {what[kind][1]} (a score such as STS-B's 0–5 or SICK's 1–5). The mean "
            "level of the labels or a numeric metadata column, above, is graded where the scope has one."
        )
    elif binary and kind in what:
        st.caption(
            f"Opens on graded {what[kind][1]}, one dataset at a time; the binary {what[kind][0]} (0/1) are a "
            "choice under *Reference scale* (point-biserial correlations)."
        )
    if len(choices) < 2:
        return selection
    options = [choice.label for choice in choices]
    if st.session_state.get(SCALE_WIDGET) not in options:  # another reference's choices: start at the first
        st.session_state.pop(SCALE_WIDGET, None)
    shown = st.radio(
        "Reference scale",
        options,
        horizontal=True,
        key=SCALE_WIDGET,
        format_func=user_text,
        help="Correlations are computed over pairs whose reference shares one scale: graded gold "
        "scores one dataset at a time (or the datasets of one score range, pooled), binary 0/1 "
        "labels as a choice.",
    )
    return replace(selection, dataset_ids=choices[options.index(shown)].dataset_ids)


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
    shown_run = st.selectbox("Scatter of", chosen_runs, key="correlation_scatter_run")
    points = data[[shown_run, "reference"]].dropna().set_axis(["y", "x"], axis=1)
    drawn = charts.drawn_sample(points, charts.points_drawn(len(points), "correlation_points"))
    texts = store_reads.pairs(selection.url, selection.dataset_ids, True, campaign_id)[["source", "hypothesis"]]
    labelled = store_reads.hover_labels(selection.url, selection.dataset_ids, campaign_id)
    drawn = drawn.join(texts).assign(labels=drawn.index.map(labelled).fillna("none"))
    drawn = drawn.rename_axis("pair_id").reset_index()  # on hover: the pair, its sentences, every label
    picked = charts.draw(
        "scatter",
        drawn,
        {"x": "reference", "y": shown_run, "pair_id": "pair"},
        f"{shown_run} against the reference ({len(drawn):,} of {len(points):,} pairs)",
        key="correlation_scatter",
        select=("box", "lasso"),
    )
    charts.list_pairs(
        charts.selected_pair_ids(picked),
        lambda ids: pairs_detail(get_engine(), ids, campaign_id, annotators=selection.choices.annotators),
        "correlation_scatter",
    )

st.subheader("Do two runs correlate differently?")
if len(chosen_runs) < 2:
    st.info("Choose two score runs above to compare them.")
    st.stop()
left, right, how = st.columns(3)
first = left.selectbox("Run", chosen_runs, index=0, key="correlation_first")
second = right.selectbox("against", chosen_runs, index=1, key="correlation_second")
method = how.selectbox("Coefficient", list(METHODS), key="correlation_method")
# a distance is negated so that both correlations measure agreement with the humans
oriented = analysis_figures.oriented(data, (first, second), runs)
try:
    if system_column is None:
        found = correlation_difference(oriented[first], oriented[second], data["reference"], method, n_boot)
    else:
        means = system_means(
            pd.DataFrame(oriented), data["reference"], groups(selection.url, selection.dataset_ids, system_column)
        )
        found = correlation_difference(means[first], means[second], means["reference"], method, n_boot, len(means))
except StatsError as error:
    fail(error)
a, b, c = st.columns(3)
a.metric(f"r {user_text(first)}", f"{found['r_a']:.3f}")
b.metric(f"r {user_text(second)}", f"{found['r_b']:.3f}")
c.metric("p (paired bootstrap)", format_p(found["p_value"]))
st.caption(
    f"Difference {found['difference']:+.3f}, 95% interval [{found['ci_low']:+.3f}, {found['ci_high']:+.3f}], "
    f"on {found['n']:,} {'systems' if system_column else 'pairs'} with both scores and a reference. Distances "
    "are negated first. p is two-sided: twice the share of resamples on the far side of no difference."
)
