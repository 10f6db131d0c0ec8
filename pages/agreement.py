"""Agreement: how annotators agree with each other (pairwise Cohen's κ, Fleiss' κ, Krippendorff's α
with a bootstrap interval) on the five-level scale and binarised, a per-annotator summary, and how
each annotator and the majority agree with a score run."""
import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st

from db.analysis import RAW_SCALE_NO_BINARY, annotator_summary, label_matrix, label_scales
from pages import analysis_common as common
from pluie_core.stats import (
    StatsError, binarise_matrix, category_counts, fleiss_kappa, human_vs_model_table, krippendorff_alpha_ci,
    pairwise_kappa,
)

WEIGHTS = {"Unweighted": None, "Linear": "linear", "Quadratic": "quadratic"}
SCALE_NAMES = {"levels": "Five-level scale", "raw": "Imported values (own scale)"}

st.title("Agreement")
selection = common.sidebar(run="optional", reference=False)
labels = common.labels(selection.url, selection.dataset_ids)
if labels.empty:
    st.info("No human labels on these datasets yet: label some pairs, or import per-annotator labels.")
    st.stop()
scales = label_scales(labels)
scale = scales[0] if len(scales) == 1 else st.radio(
    "Labels", scales, format_func=SCALE_NAMES.get, horizontal=True, key="agreement_scale",
    help="Labels given on the app's five-level scale and values imported on their own scale are never mixed.")
rows = labels[labels["level"].notna()] if scale == "levels" else labels[labels["level"].isna() & labels["value"].notna()]
matrix = label_matrix(rows, scale)
binary = binarise_matrix(matrix) if scale == "levels" else None
whole = scale == "levels" or bool(np.all(np.isnan(matrix.to_numpy()) | (matrix.to_numpy() == np.round(matrix.to_numpy()))))
weights = WEIGHTS[st.radio("Cohen's κ weighting", list(WEIGHTS), horizontal=True, key="agreement_weights",
                           help="Linear and quadratic κ count near misses on an ordered scale as partial agreement.")]
st.caption(f"{SCALE_NAMES[scale]} · {len(rows):,} labels · {matrix.shape[0]:,} pairs · {matrix.shape[1]} annotators"
           + (" · Don't know counts as missing." if scale == "levels" else ""))


def agreement_block(view: pd.DataFrame, name: str, weights, drop_dont_know: bool, categories) -> None:
    """Pairwise κ heatmap and table, Fleiss' κ and Krippendorff's α (three levels) for one matrix."""
    if view.shape[1] < 2:
        st.info("Agreement needs at least two annotators; only one has labelled these pairs.")
        return
    cols = st.columns(4)
    figures = []  # every figure shown, for the CSV
    try:
        fleiss = fleiss_kappa(category_counts(view, categories))
        cols[0].metric("Fleiss' κ", f"{fleiss:.3f}")
        figures.append({"measure": "Fleiss' kappa", "value": fleiss})
    except StatsError as error:
        cols[0].metric("Fleiss' κ", "—", help=str(error))
    for col, level in zip(cols[1:], ("nominal", "ordinal", "interval")):
        try:
            found = krippendorff_alpha_ci(view.T, level, n_boot=200, seed=0, drop_dont_know=drop_dont_know)
            col.metric(f"Krippendorff's α {level}", f"{found['alpha']:.3f}",
                       help=f"95% bootstrap interval over {found['n_items']:,} items: "
                            f"[{found['ci_low']:.3f}, {found['ci_high']:.3f}]")
            col.caption(f"95% CI [{found['ci_low']:.3f}, {found['ci_high']:.3f}]")
            figures.append({"measure": f"Krippendorff's alpha ({level})", "value": found["alpha"], **found})
        except StatsError as error:
            col.metric(f"Krippendorff's α {level}", "—", help=str(error))
    if figures:
        common.download_csv(pd.DataFrame(figures).drop(columns="alpha", errors="ignore"), f"agreement_{name}.csv",
                            "Download Fleiss' κ and α (CSV)")
    if not whole and name != "binarised":
        st.info("These values are not whole numbers, so Cohen's κ (which needs categories) is left out; "
                "Krippendorff's interval α above measures their agreement.")
        return
    pairwise = pairwise_kappa(view, weights, drop_dont_know=drop_dont_know)
    text = pairwise.kappa.map(lambda k: "" if pd.isna(k) else f"{k:.2f}") + "<br>n=" + pairwise.n_shared.astype(str)
    heatmap = go.Figure(go.Heatmap(
        z=pairwise.kappa.to_numpy(), x=pairwise.kappa.columns, y=pairwise.kappa.index, text=text.to_numpy(),
        texttemplate="%{text}", zmin=-1, zmax=1, colorscale="RdBu", colorbar_title="κ",
        hovertemplate="%{y} × %{x}: %{text}<extra></extra>"))
    heatmap.update_layout(title=f"Cohen's κ per pair of annotators ({name}); n = items both labelled",
                          yaxis_autorange="reversed", height=160 + 45 * view.shape[1])
    st.plotly_chart(heatmap, key=f"kappa_{name}")
    st.dataframe(pairwise.table, hide_index=True, width="stretch")
    common.download_csv(pairwise.table, f"pairwise_kappa_{name}.csv")



# one view at a time: each costs a second on a large campaign, and tabs would compute both
view = st.radio("View", [SCALE_NAMES[scale], "Binarised"], horizontal=True, key="agreement_view")
if view == "Binarised":
    if scale == "raw":
        st.info(RAW_SCALE_NO_BINARY)
    else:
        agreement_block(binary, "binarised", None, True, (0, 1))
else:
    categories = (0, 1, 2, 3) if scale == "levels" else tuple(np.unique(matrix.to_numpy()[~np.isnan(matrix.to_numpy())]))
    agreement_block(matrix, "five-level" if scale == "levels" else "raw", weights, scale == "levels", categories)

run, run_scores, versus = selection.run, None, None
if run is not None:
    run_scores = common.scores(selection.url, (int(run["id"]),), selection.dataset_ids).get(run["name"])
    if run_scores is None:
        st.info(f"No {run['name']} score on these datasets yet.")
    else:
        threshold = common.threshold_input(selection, run_scores, "agreement_threshold")
        if scale == "levels":
            versus = human_vs_model_table(binary, run_scores.reindex(binary.index), threshold, bool(run["higher_is_similar"]))

st.subheader("Annotators")
summary = annotator_summary(rows, scale, versus, binary)
st.dataframe(summary, hide_index=True, width="stretch", column_config={
    "dont_know_rate": st.column_config.NumberColumn("Don't-know rate", format="percent"),
    "kappa_vs_others": st.column_config.NumberColumn("κ vs majority of the others", format="%.3f"),
})
common.download_csv(summary, "annotators.csv")

st.subheader("Humans against the model")
if run_scores is None:
    st.info("Choose a score run in the sidebar to compare annotators with the metric.")
elif scale == "raw":
    st.info(RAW_SCALE_NO_BINARY)
else:
    st.caption(f"{run['name']} calls a pair a paraphrase at score {'≥' if run['higher_is_similar'] else '≤'} {threshold:g}; "
               "binarised κ and accuracy per annotator and for the majority label (Don't know and ties left out).")
    st.dataframe(versus, hide_index=True, width="stretch")
    common.download_csv(versus, "humans_vs_model.csv")
    who = st.selectbox("Confusion matrix of", versus["annotator"].tolist(), index=len(versus) - 1, key="agreement_confusion")
    row = versus[versus["annotator"] == who].iloc[0]
    cells = np.array([[row["tn"], row["fp"]], [row["fn"], row["tp"]]])
    confusion = px.imshow(cells, text_auto=True, color_continuous_scale="Blues",
                          x=["model: non-paraphrase", "model: paraphrase"], y=["human: non-paraphrase", "human: paraphrase"],
                          title=f"{who} against {run['name']} (n = {int(row['n'])})")
    st.plotly_chart(confusion, key="confusion")
