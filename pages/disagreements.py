"""Disagreements: the pairs where a score run and the reference disagree (most confident first), or
where annotators split between paraphrase and non-paraphrase (most evenly split first), with the
word diff of the selected pair and every label and score it has."""

import pandas as pd
import streamlit as st

from db.analysis import pair_detail
from db.export import pair_aggregation
from pluie_core.aggregation import METHOD_NAMES, METHODS
from pluie_core.analysis import RAW_SCALE_NO_BINARY, label_scales, labels_on_scale
from pluie_core.diff import diff_html
from pluie_core.stats import disagreements, human_disagreements, item_slots
from pluie_core.visible import visible_text
from ui.base.page import get_engine, user_text
from ui.forms.explain_view import why_this_score
from ui.frame import admin_page
from ui.views import store_reads
from ui.views.model_threshold import threshold_input
from ui.views.selection import scored_frame, sidebar
from ui.views.tables import download_csv

engine = admin_page("table")

MODES = {"model": "Model against the reference", "humans": "Humans among themselves"}
MAX_LISTED = 500  # pairs offered for inspection; the CSV has them all
BOX = (
    "border:1px solid light-dark(#d0d7de,#3d3b38);border-radius:8px;padding:12px 16px;"
    "background:light-dark(#fafbfc,#1f1e1c);"  # light-dark(): the theme Streamlit chose
    "line-height:1.7;font-size:1.05rem"
)
CAPTION = "font-size:0.8rem;color:light-dark(#57606a,#9aa3ad);margin-bottom:2px"

st.title("Disagreements")
mode = st.radio("Disagreements between", list(MODES), format_func=MODES.get, horizontal=True, key="disagreement_mode")
selection = sidebar(run="required" if mode == "model" else "optional", reference=mode == "model")
labels = store_reads.labels(selection.url, selection.dataset_ids, selection.campaign_id)
pairs = scored_frame(selection, texts=True)
labelled_by = st.sidebar.multiselect(
    "Only pairs labelled by", sorted(labels["annotator"].unique()), key="disagreement_annotators"
)
if labelled_by:
    pairs = pairs[pairs.index.isin(labels.loc[labels["annotator"].isin(labelled_by), "pair_id"])]
run = selection.run
score = run["name"] if run is not None else None
shown_score = user_text(score)  # a run's name, given by a user

if mode == "model":
    if pairs[score].notna().sum() == 0:
        st.info(f"No {shown_score} score on these pairs yet.")
        st.stop()
    threshold = threshold_input(selection, "disagreement_threshold")
    reference = user_text(selection.reference.describe())  # may name an annotator
    table = disagreements(pairs, score, "reference", threshold, bool(run["higher_is_similar"]))
    table = table.rename(columns={"reference": "reference label", "prediction": "model label"})
    shown = ["dataset", score, "reference label", "model label", "confidence", "source", "hypothesis"]
    st.caption(
        f"{shown_score} at threshold {threshold:g} against {reference}: pairs where they differ, "
        "most confident first (confidence = distance of the score from the threshold)."
    )
    both = int((pairs[score].notna() & pairs["reference"].notna()).sum())
    empty = (
        f"No disagreement: {shown_score} and {reference} agree on every pair with both."
        if both
        else f"No pair of these datasets has both a {shown_score} score and a label from {reference} yet "
        "(Don't know counts as missing)."
    )
else:
    if "levels" not in label_scales(labels):
        st.info("No five-level labels on these datasets yet. " + (RAW_SCALE_NO_BINARY if len(labels) else ""))
        st.stop()
    # per pair, who gave which label does not matter: slots, not a pairs x annotators matrix (a crowd's is huge)
    slots = item_slots(labels_on_scale(labels, "levels"))
    split = human_disagreements(slots.reindex(pairs.index).dropna(how="all"))
    table = split.join(pairs.drop(columns=["reference"], errors="ignore"))
    method = st.sidebar.selectbox(
        "Posterior by",
        [None, *METHODS],
        key="disagreement_aggregation",
        format_func=lambda m: "None" if m is None else METHOD_NAMES[m],
        help="Adds each pair's posterior (the probability of its aggregated label, "
        "binarised labels) and uncertainty (1 - the largest probability).",
    )
    if method is not None:
        fitted = pair_aggregation(
            engine, selection.dataset_ids, campaign_id=selection.campaign_id, method=method, scale="binary"
        ).pairs
        table = table.join(fitted[["posterior", "uncertainty"]])
    shown = [
        "dataset",
        "n_labels",
        "n_paraphrase",
        "n_non_paraphrase",
        "n_dont_know",
        "spread",
        "minority_share",
        *(["posterior", "uncertainty"] if method else []),
        *([score] if score else []),
        "source",
        "hypothesis",
    ]
    st.caption(
        "Pairs on which annotators split between paraphrase and non-paraphrase (Don't know ignored), "
        "most evenly split first, then the widest spread of levels."
    )
    empty = "No disagreement: on every pair labelled by two or more people, they agree on paraphrase or not."

if table.empty:
    st.info(empty)
    st.stop()
table = table[shown]
marked = {side: table[side].head(MAX_LISTED).map(visible_text, na_action="ignore") for side in ("source", "hypothesis")}
st.dataframe(
    table.head(MAX_LISTED).assign(**marked),
    width="stretch",
    column_config={  # the CSV keeps them as stored
        "source": st.column_config.TextColumn(width="medium"),
        "hypothesis": st.column_config.TextColumn(width="medium"),
    },
    placeholder="—",
)
download_csv(table, f"disagreements_{mode}.csv", index=True)
if len(table) > MAX_LISTED:
    st.caption(f"The first {MAX_LISTED} of {len(table):,} pairs are listed; the CSV has them all.")

st.subheader("Inspect a pair")
listed = table.head(MAX_LISTED)
figure = "confidence" if mode == "model" else "minority_share"


def describe(rank: int) -> str:
    row = listed.iloc[rank]
    return f"{rank + 1}. pair {listed.index[rank]} · {row['dataset']} · {figure} {row[figure]:.3g}"


# one selector per mode: the humans' list never shows the place (or the pair) chosen in the model's list
rank = st.selectbox("Pair", range(len(listed)), format_func=describe, key=f"disagreement_pair_{mode}")
pair_id = int(listed.index[rank])
detail = pair_detail(get_engine(), pair_id, selection.choices.annotators)
source, hypothesis = diff_html(detail["pair"]["source"], detail["pair"]["hypothesis"])
st.html(
    f"<div style='{BOX}'><div style='{CAPTION}'>Source</div><div>{source}</div>"
    f"<div style='{CAPTION};margin-top:10px'>Hypothesis</div><div>{hypothesis}</div></div>"
)
gold = detail["pair"]["gold_label"]
st.caption(
    f"Pair {pair_id} · {user_text(detail['pair']['dataset'])} · id {user_text(detail['pair']['external_id'] or '—')} · "
    f"gold label {'—' if gold is None else f'{gold:g}'}"
)
for column, title, table, empty in zip(
    st.columns(2),
    ("Labels", "Scores"),
    (detail["labels"], detail["scores"]),
    ("No one has labelled this pair.", "No score yet for this pair."),
):
    with column:
        st.markdown(f"**{title}**")
        if table.empty:
            st.caption(empty)
        else:
            st.dataframe(table, hide_index=True, width="stretch", placeholder="—")
why_this_score(get_engine(), pair_id, detail["pair"]["source"], detail["pair"]["hypothesis"], key="disagreements")
download_csv(
    pd.concat([detail["labels"].assign(row="label"), detail["scores"].assign(row="score")]),
    f"pair_{pair_id}.csv",
    "Download this pair's labels and scores (CSV)",
)
