"""Agreement: how annotators agree with each other (pairwise Cohen's κ, Fleiss' κ, Krippendorff's α
with a bootstrap interval) on the five-level scale and binarised, a per-annotator summary, and how
each annotator and the majority agree with a score run."""

import numpy as np
import streamlit as st

from db.analysis import LABELS_COUNTED
from pluie_core.agreement import AGREEMENT_RULE
from pluie_core.analysis import RAW_SCALE_NO_BINARY, label_scales, labels_on_scale
from ui import charts
from ui.base.page import user_text
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.agreement_cache import ALPHA_LEVELS, agreement_figures, people_tables
from ui.views.model_threshold import threshold_input
from ui.views.selection import one_scale, sidebar
from ui.views.tables import download_csv

admin_page("chart")

WEIGHTS = {"Unweighted": None, "Linear": "linear", "Quadratic": "quadratic"}
SCALE_NAMES = {"levels": "Five-level scale", "raw": "Imported values (own scale)"}

st.title("Agreement")
selection = sidebar(run="optional", reference=False)
labels = store_reads.labels(selection.url, selection.dataset_ids, selection.campaign_id)
if labels.empty:
    st.info(
        "No human labels on these datasets yet: label some pairs, or import per-annotator labels."
        if selection.campaign_id is None
        else "No label in this campaign yet."
    )
    st.stop()
scales = label_scales(labels)
scale = (
    scales[0]
    if len(scales) == 1
    else st.radio(
        "Labels",
        scales,
        format_func=SCALE_NAMES.get,
        horizontal=True,
        key="agreement_scale",
        help="Labels given on the app's five-level scale and values imported on their own scale are never mixed.",
    )
)
if scale == "raw":  # values on each dataset's own scale (BIOSSES 0–4, another 1–5): one scale at a time
    selection = one_scale(selection, "raw", set(labels_on_scale(labels, "raw")["dataset_id"]))
rows = store_reads.label_views(selection.url, selection.dataset_ids, scale, selection.campaign_id)[0]
n_pairs, n_annotators = rows["pair_id"].nunique(), rows["annotator"].nunique()
weights = WEIGHTS[
    st.radio(
        "Cohen's κ weighting",
        list(WEIGHTS),
        horizontal=True,
        key="agreement_weights",
        help="Linear and quadratic κ count near misses on an ordered scale as partial agreement.",
    )
]


def agreement_block(name: str, scale: str, binarised: bool, weights) -> None:
    """Fleiss' κ, Krippendorff's α (three levels), the pairwise κ heatmap and table of one view."""
    if n_annotators < 2:
        st.info("Agreement needs at least two annotators; only one has labelled these pairs.")
        return
    found = agreement_figures(selection.url, selection.dataset_ids, scale, binarised, weights, selection.campaign_id)
    shown = found["figures"].set_index("measure")
    alphas = (
        {"binary": "Krippendorff's α binarised"} if binarised else {lv: f"Krippendorff's α {lv}" for lv in ALPHA_LEVELS}
    )
    labels_shown = {
        "Fleiss' kappa": "Fleiss' κ",
        **{f"Krippendorff's alpha ({lv})": name for lv, name in alphas.items()},
    }
    for col, (measure, label) in zip(st.columns(4), labels_shown.items()):
        if measure not in shown.index:
            col.metric(label, "—", help=found["errors"].get(measure))
            continue
        row = shown.loc[measure]
        interval = "" if measure.startswith("Fleiss") else f"95% CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}]"
        col.metric(
            label,
            f"{row['value']:.3f}",
            help=f"{interval}, bootstrap over {int(row['n_items']):,} items. "
            + (AGREEMENT_RULE if scale == "levels" else "")
            if interval
            else None,
        )
        if interval:
            col.caption(interval)
    if len(shown):
        download_csv(found["figures"], f"agreement_{name}.csv", "Download Fleiss' κ and α (CSV)")
    pairwise = found["pairwise"]
    if pairwise is None:
        st.info(
            "These values are not whole numbers, so Cohen's κ (which needs categories) is left out; "
            "Krippendorff's interval α above measures their agreement."
        )
        return
    if pairwise.table.empty:
        st.info(
            "No two annotators have a label here to compare (Don't know counts as missing), so there is no Cohen's κ."
        )
        return
    if found["annotators"] > len(pairwise.kappa):
        st.caption(
            f"Cohen's κ for the {len(pairwise.kappa)} annotators with the most labels, of {found['annotators']:,} "
            "(most pairs of a large crowd have no pair labelled in common)."
        )
    charts.draw(
        "kappa_heatmap",
        pairwise.kappa,
        pairwise.n_shared,
        f"Cohen's κ per pair of annotators ({name}); n = items both labelled",
        key=f"kappa_{name}",
    )
    st.dataframe(pairwise.table, hide_index=True, width="stretch", placeholder="—")
    download_csv(pairwise.table, f"pairwise_kappa_{name}.csv")


# one view at a time: each costs a second on a large campaign, and tabs would compute both
view = st.radio("View", [SCALE_NAMES[scale], "Binarised"], horizontal=True, key="agreement_view")
shown_scale = "Binarised: 0–1 non-paraphrase, 2–3 paraphrase" if view == "Binarised" else SCALE_NAMES[scale]
st.caption(
    f"{shown_scale} · {len(rows):,} labels · {n_pairs:,} pairs · {n_annotators:,} annotators"
    + (f" · Don't know counts as missing. Labels: {LABELS_COUNTED}." if scale == "levels" else "")
)
# filled in last: the bootstraps take seconds on a large store, the tables below do not wait for them
figures_block = st.container()

run, run_scores, versus = selection.run, None, None
if run is not None:
    run_scores = store_reads.scores(selection.url, (int(run["id"]),), selection.dataset_ids).get(run["name"])
    if run_scores is None:
        st.info(f"No {user_text(run['name'])} score on these datasets yet.")
    else:
        threshold = threshold_input(selection, "agreement_threshold")


st.subheader("Annotators")
summary, versus = people_tables(
    selection.url,
    selection.dataset_ids,
    scale,
    None if run_scores is None else int(run["id"]),
    None if run_scores is None else float(threshold),
    bool(run is not None and run["higher_is_similar"]),
    selection.campaign_id,
)
st.dataframe(
    summary,
    hide_index=True,
    width="stretch",
    column_config={
        "dont_know_rate": st.column_config.NumberColumn("Don't-know rate", format="percent"),
        "kappa_vs_others": st.column_config.NumberColumn("κ vs majority of the others", format="%.3f"),
    },
    placeholder="—",
)
download_csv(summary, "annotators.csv")

st.subheader("Humans against the model")
if run_scores is None:
    st.info("Choose a score run in the sidebar to compare annotators with the metric.")
elif scale == "raw":
    st.info(RAW_SCALE_NO_BINARY)
else:
    st.caption(
        f"{user_text(run['name'])} calls a pair a paraphrase at score {'≥' if run['higher_is_similar'] else '≤'} {threshold:g}; "
        "binarised κ and accuracy per annotator and for the majority label (Don't know and ties left out)."
    )
    st.dataframe(versus, hide_index=True, width="stretch", placeholder="—")
    download_csv(versus, "humans_vs_model.csv")
    who = st.selectbox(
        "Confusion matrix of", versus["annotator"].tolist(), index=len(versus) - 1, key="agreement_confusion"
    )
    row = versus[versus["annotator"] == who].iloc[0]
    cells = np.array([[row["tn"], row["fp"]], [row["fn"], row["tp"]]])
    charts.draw(
        "confusion_matrix",
        cells,
        ["model: non-paraphrase", "model: paraphrase"],
        ["human: non-paraphrase", "human: paraphrase"],
        f"{who} against {run['name']} (n = {int(row['n'])})",
        key="confusion",
    )

with figures_block:
    if view == "Binarised":
        if scale == "raw":
            st.info(RAW_SCALE_NO_BINARY)
        else:
            agreement_block("binarised", scale, True, None)
    else:
        agreement_block("five-level" if scale == "levels" else "raw", scale, False, weights)
