"""Export: pairs with every raw label, the aggregated and binarised labels and every score (wide), or
one row per label with everything collected about it (long), as CSV, JSONL or Parquet; and a dataset
folder ready to publish (Parquet + Arrow + dataset card, db.publish)."""

import functools

import streamlit as st

from db.campaigns import list_campaigns
from db.datasets import list_datasets
from db.export import (
    PAIR_SCOPES,
    WIDE_ANNOTATOR_COLUMNS,
    export_annotator_count,
    export_frame,
    export_labels,
    export_size,
    final_source_counts,
    pair_aggregation,
)
from db.publish import folder_stem
from pluie_core.aggregation import METHOD_NAMES, MODEL_METHODS, final_rule_text, median_labels
from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes, to_parquet_bytes
from ui.forms.export_aggregation import aggregation_choice
from ui.forms.publish_form import publish_form
from ui.frame import admin_page
from ui.views import scope as scopes
from ui.views import store_reads

engine = admin_page("table")
st.title("Export")
datasets = list_datasets(engine)
if not datasets:
    st.info("Nothing to export yet: import a dataset first.")
    st.stop()

names = {d.name: d.id for d in datasets}
campaign_list = list_campaigns(engine)
campaigns = {c.id: c.name for c in campaign_list}
left, right = st.columns(2)
# the scope of every page (ui.views.scope): a campaign — only its pairs (its queue, gold pairs and the pairs
# labelled in it) and only the labels given in it — or whole datasets
shared_scope = scopes.pick(store_reads.store_key(), {d.id: d.name for d in datasets}, where=left)
campaign_id = shared_scope.campaign_id if shared_scope.campaign_id in campaigns else None
# a campaign's export is its pairs, whichever dataset holds them (a gold pair from elsewhere too)
chosen = list(names) if campaign_id is not None else [d.name for d in datasets if d.id in shared_scope.dataset_ids]
pairs = right.radio(
    "Pairs",
    list(PAIR_SCOPES),
    format_func=lambda k: PAIR_SCOPES[k].capitalize(),
    horizontal=True,
    help="Labelled: at least one label (of the campaign, when one is chosen). Adjudicated: a "
    "reviewer's final level is in force.",
)
include_training = st.checkbox("Include training-trial labels", value=False)
if not chosen:
    st.warning("Choose at least one dataset.")
    st.stop()
scope = {"campaign_id": campaign_id, "pairs": pairs}

LAYOUTS = {"wide": "One row per pair (wide)", "long": "One row per label (long)"}
PREVIEW_ROWS = 50
left, right = st.columns(2)
layout = left.radio("Layout", list(LAYOUTS), format_func=LAYOUTS.get, horizontal=True)
method, thresholds = aggregation_choice(right, campaign_list, campaign_id)
ids = [names[n] for n in chosen]
read = export_frame if layout == "wide" else export_labels
choice = {"include_training": include_training, **scope}
people = export_annotator_count(engine, ids, above=WIDE_ANNOTATOR_COLUMNS, **choice) if layout == "wide" else 0
crowd = people > WIDE_ANNOTATOR_COLUMNS
if crowd:  # a column per annotator: hundreds of millions of cells, minutes and gigabytes to build
    read = functools.partial(export_frame, annotator_columns=False)
    st.info(
        f"These pairs have labels from {people:,} annotators: one "
        f"`annotator:<name>` column each (over {WIDE_ANNOTATOR_COLUMNS}) would make a table too large to build, "
        "so this wide file leaves them out and keeps the counts, majority, aggregated and final labels. "
        "The long layout (one row per label) has every label with its annotator."
    )
# the page shows a count and the first rows; the whole table is built only when a download asks for it
# (a callable runs on the click): at 100,000 pairs building and encoding it took seconds on every visit
size = export_size(engine, ids, layout=layout, **choice)
choice["aggregation"] = method
with st.spinner(f"Fitting {METHOD_NAMES[method]} on every label exported…" if method else "Reading the first rows…"):
    if method is not None:  # fitted once, for the preview, the counts and the downloads
        choice.update(
            thresholds,
            fitted=pair_aggregation(engine, ids, include_training, campaign_id=campaign_id, pairs=pairs, method=method),
        )
    # a small export is read whole: the preview is then the file itself (below)
    preview = read(engine, ids, **choice) if size <= PREVIEW_ROWS else read(engine, ids, limit=PREVIEW_ROWS, **choice)
if method in MODEL_METHODS:
    st.info(
        final_rule_text(
            final_source_counts(engine, ids, **choice),
            method,
            median=median_labels(choice["fitted"].annotators["n_labels"]),
            **thresholds,
        )
    )
if layout == "wide":
    st.caption(
        f"{size:,} pairs · columns: `pair_id` (the id Review, Pairs and gold marking use), `external_id` "
        "(the file's own), gold `label`, "
        + (
            ""
            if crowd
            else "one `annotator:<name>` column per annotator (level 0–4, 4 = Don't know, or the imported value), "
        )
        + "`majority_level` / `majority_label` (Don't know ignored; a tie "
        "across the paraphrase boundary gives none), `binary_label`, one `score:<run>` column per score run"
        + (
            ", `n_training_labels` (labels from a training trial, counted in the majority)."
            if include_training
            else "."
        )
    )
else:
    st.caption(
        f"{size:,} labels · one row per label: the pair, the annotator (`annotator` as on every page, "
        "`display_name` they chose, `link_name` of their personal link), `campaign`, `english_level`, `level` "
        "0–4 (or the imported `value`), `is_training`, `is_gold_check`, `sentence_on_top`, `seconds_spent`, `created_at` / "
        "`updated_at` (UTC)."
    )
if size > len(preview):
    st.caption(
        f"The first {len(preview):,} {'pairs' if layout == 'wide' else 'labels'}; the files hold all "
        f"{size:,}"
        + (
            " (an annotator column shows when one of these pairs has their label)."
            if layout == "wide" and not crowd
            else "."
        )
    )
st.dataframe(preview, hide_index=True, width="stretch", placeholder="—")
stem = campaigns[campaign_id] if campaign_id is not None else "pluie_lab_export" if len(chosen) > 1 else chosen[0]
stem = folder_stem(stem) + ("" if pairs == "all" else f"_{pairs}") + ("_labels" if layout == "long" else "")


def download(encode):
    """The file's bytes, read and encoded when the button is clicked (on Streamlit's own thread); for a
    small export, whose preview holds every row, encoded with the page. A file the page holds outlives a
    rerun that races the click, where a deferred callable goes with the run that made it and a click
    still holding its id fails (Streamlit: "Deferred file ... not found", seen once in CI)."""
    if size <= PREVIEW_ROWS:
        return encode(preview)
    return lambda: encode(read(engine, ids, **choice))


c1, c2, c3 = st.columns(3)
# on_click="ignore": a download reruns nothing (a rerun started with the click could race it and lose it)
c1.download_button("Download CSV", download(to_csv_bytes), f"{stem}.csv", "text/csv", type="primary", on_click="ignore")
c2.download_button("Download JSONL", download(to_jsonl_bytes), f"{stem}.jsonl", "application/jsonl", on_click="ignore")
c3.download_button(
    "Download Parquet",
    download(to_parquet_bytes),
    f"{stem}.parquet",
    "application/vnd.apache.parquet",
    on_click="ignore",
)

publish_form(
    engine,
    ids,
    stem,
    campaigns[campaign_id] if campaign_id is not None else ", ".join(chosen),
    include_training=include_training,
    campaign_id=campaign_id,
    pairs=pairs,
    method=method,
    thresholds=thresholds,
)
