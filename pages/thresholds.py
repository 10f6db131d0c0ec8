"""Thresholds: accuracy, F1, precision and recall of a score run against a reference as the decision
threshold moves (the papers' figures 3-14), the natural against the a-posteriori best threshold, ROC
AUC, the scores per class (a bar selected lists its pairs), per dataset, and the mixed balanced draw (MBD)
of the paper's table 3."""

import numpy as np
import pandas as pd
import streamlit as st

from db.analysis import pairs_detail
from pluie_core.analysis import natural_threshold
from pluie_core.stats import PAPER_PER_CLASS, StatsError, metrics_at
from ui import charts
from ui.base.page import get_engine, user_text
from ui.frame import admin_page
from ui.views.selection import scored_frame, sidebar
from ui.views.tables import download_csv, file_stem, plus_minus
from ui.views.thresholds_cache import balanced_draw, threshold_figures

admin_page("chart")

FIGURES = ["accuracy", "f1", "precision", "recall"]
MAX_POINTS = (
    400  # points of each curve drawn: more than a chart's width in pixels needs (2,000 took the browser a second)
)
# the paper's table 3, but recall grey instead of its near-black (#222222), unseen on a dark theme
COLOURS = {"accuracy": "#f28e2b", "f1": "#1f77b4", "recall": "#8c8c8c", "precision": "#9467bd"}

st.title("Thresholds")
selection = sidebar(run="required", reference=True)
run = selection.run
score, higher = run["name"], bool(run["higher_is_similar"])
natural = natural_threshold(run["kind"])
data = scored_frame(selection).dropna(subset=[score, "reference"])
st.caption(
    f"**{user_text(score)}** against {user_text(selection.reference.describe())} · {len(data):,} pairs with both a score and a "
    f"reference · {'higher' if higher else 'lower'} scores mean more similar."
)
if data.empty:
    st.info(f"No pair of these datasets has both a {user_text(score)} score and a reference label yet.")
    st.stop()


reference = selection.reference
try:
    curve, best, auc, per_dataset = threshold_figures(
        selection.url,
        selection.dataset_ids,
        int(run["id"]),
        reference.kind,
        reference.annotator,
        float(reference.gold_cut),
        higher,
        natural,
        selection.campaign_id,
    )
except StatsError as error:
    st.info(user_text(error))
    st.stop()
at_natural = metrics_at(data[score], data["reference"], natural, higher) if natural is not None else None

cols = st.columns(4)
cols[0].metric("ROC AUC", f"{auc:.3f}")
cols[1].metric("Best threshold (a posteriori)", f"{best['threshold']:.4g}")
cols[2].metric("Accuracy at best", f"{best['accuracy']:.3f}")
cols[3].metric(
    "Accuracy at natural",
    "—" if at_natural is None else f"{at_natural['accuracy']:.3f}",
    help="PLUIE's natural threshold is 0; baselines have none.",
)
if best["n_tied"] > 1:
    st.caption(
        f"{best['n_tied']} thresholds from {best['tie_low']:.4g} to {best['tie_high']:.4g} reach the same best "
        f"accuracy: the choice among them is arbitrary ({best['threshold']:.4g} calls the most pairs paraphrases)."
    )

by_rank = (
    st.radio(
        "x axis",
        ["Score", "Rank"],
        horizontal=True,
        key="threshold_x",
        help="Rank: pairs ordered by score, as in the papers' figures 9–14.",
    )
    == "Rank"
)
x = "rank" if by_rank else "threshold"
# one point per distinct score is 100,000 points a line at 100,000 pairs: the browser draws an even
# sample of the curve (the download has every point)
drawn = (
    curve.iloc[np.unique(np.linspace(0, len(curve) - 1, MAX_POINTS).astype(int))] if len(curve) > MAX_POINTS else curve
)
marks = []  # (x, colour, label, dashed)
for name, threshold, colour in [("best", best["threshold"], "#2ca02c"), ("natural", natural, "#d62728")]:
    if threshold is None:
        continue
    position = curve.loc[curve["threshold"] >= threshold, "rank"].min() if by_rank else threshold
    if pd.notna(position):
        marks.append((position, colour, f"{name} {threshold:.3g}", True))
charts.draw(
    "threshold_curve",
    drawn,
    x,
    score if x == "threshold" else "rank of the pair",
    {name: COLOURS[name] for name in FIGURES},
    marks,
    f"{score}: classification quality by threshold",
    key="threshold_curve",
)
download_csv(curve, f"threshold_curve_{file_stem(score)}.csv", "Download curve data (CSV)")

st.subheader("Scores per class")
points = data.assign(**{"class": data["reference"].map(charts.CLASSES)}).rename_axis("pair_id").reset_index()
charts.selectable_class_histogram(
    points[["pair_id", "class", score]],
    score,
    st.slider("Histogram bins", 10, 200, 50, key="threshold_bins"),
    f"{score} per class of the reference",
    marks if not by_rank else [],
    "threshold_histogram",
    lambda ids: pairs_detail(get_engine(), ids, selection.campaign_id, annotators=selection.choices.annotators),
)

st.subheader("Natural against best threshold")
rows = {"best (a posteriori)": best} | ({"natural": at_natural} if at_natural else {})
compare = pd.DataFrame(rows).T[
    ["threshold", "tie_low", "tie_high", "accuracy", "f1", "precision", "recall", "tp", "fp", "tn", "fn", "n"]
]
st.dataframe(compare, width="stretch", placeholder="—")
download_csv(compare, "natural_vs_best.csv", index=True)

if per_dataset is not None:
    st.subheader("Per dataset")
    st.dataframe(per_dataset, hide_index=True, width="stretch", placeholder="—")
    download_csv(per_dataset, "thresholds_per_dataset.csv")

st.subheader("Mixed balanced draw")
st.caption(
    "The paper's MBD: the same number of paraphrases and non-paraphrases drawn from every chosen dataset, "
    "many times (seeded); mean over draws ± 1.96 standard errors, and the 2.5–97.5 percentile interval."
)
runs = selection.choices.runs
mbd_runs = st.multiselect("Score runs", runs["name"].tolist(), default=[score], key=f"mbd_runs_{int(run['id'])}")
c1, c2, c3 = st.columns(3)
n_draws = c1.number_input("Draws", 1, 1000, 100, key="mbd_draws")
per_class = c2.number_input(
    "Pairs per class and dataset",
    1,
    100_000,
    PAPER_PER_CLASS,
    key="mbd_per_class",
    help="The paper drew 45; lowered to the smallest class when a dataset has fewer.",
)
seed = c3.number_input("Seed", 0, 2**31 - 1, 0, key="mbd_seed")
if not mbd_runs:
    st.info("Choose at least one score run for the mixed balanced draw.")
    st.stop()
draw = scored_frame(selection, mbd_runs).dropna(subset=[*mbd_runs, "reference"])
kinds = runs.set_index("name").loc[mbd_runs]
given = {n: natural_threshold(k) for n, k in kinds["kind"].items() if natural_threshold(k) is not None}
try:
    table = balanced_draw(
        draw[[*mbd_runs, "reference", "dataset"]],
        list(mbd_runs),
        int(n_draws),
        int(seed),
        int(per_class),
        given,
        {n: bool(h) for n, h in kinds["higher_is_similar"].items()},
    )
except StatsError as error:
    st.info(user_text(error))
    st.stop()
if table.attrs["note"]:
    st.info(user_text(table.attrs["note"]))
drawn = int(table["per_class"].iloc[0])
table["at"] = table["at"].replace({"best": "best (a posteriori)", "given": "natural"})
shown = table.assign(
    value=plus_minus(table["mean"], table["mean_ci_halfwidth"])
    + " ["
    + table["ci_low"].map("{:.3f}".format)
    + ", "
    + table["ci_high"].map("{:.3f}".format)
    + "]"
)
shown = shown.pivot(index=["score", "figure"], columns="at", values="value").fillna("")
st.caption(f"{int(n_draws)} draws of {drawn} pairs per class from each of {draw['dataset'].nunique()} dataset(s).")
st.dataframe(shown, width="stretch", placeholder="—")
download_csv(table, "mixed_balanced_draw.csv")
