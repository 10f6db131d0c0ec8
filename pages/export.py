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
from db.publish import (
    ZIP_DOWNLOAD_LIMIT,
    PublishError,
    dataset_zip,
    default_folder,
    folder_bytes,
    folder_stem,
    publish_dataset,
)
from lab.places import publish_roots, published_dir
from lab.roles import NotAllowed
from pluie_core.aggregation import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MIN_LABELS,
    METHOD_NAMES,
    METHODS,
    MODEL_METHODS,
    final_rule_text,
    median_labels,
)
from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes, to_parquet_bytes
from pluie_core.wording import counted
from ui.base.page import may, user_text
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
AGGREGATIONS = {None: "None: the majority rule only", **{m: METHOD_NAMES[m] for m in METHODS}}
# a campaign's own choice (Campaigns → Final labels by) is the default when the export is that campaign's
default_method = next((c.aggregation for c in campaign_list if c.id == campaign_id), None)
method = right.selectbox(
    "Aggregation",
    list(AGGREGATIONS),
    format_func=AGGREGATIONS.get,
    index=list(AGGREGATIONS).index(default_method),
    key=f"export-aggregation-{campaign_id}",
    help="Adds `aggregation`, `aggregated_level` / `aggregated_label`, `posterior` (the "
    "probability of that level) and `uncertainty` (1 - the largest probability), fitted "
    "over the five levels on the labels exported; the final level then follows the "
    "method where no reviewer decided, when it is sure enough (below). With a campaign, "
    "its gold answers anchor Dawid–Skene and are held out for the others.",
)
thresholds = {}
if method in MODEL_METHODS:  # when the model's level is final: both thresholds are the user's
    left, right = st.columns(2)
    thresholds["confidence"] = left.number_input(
        "Confidence a model's level needs (posterior at least)",
        min_value=0.0,
        max_value=1.0,
        value=DEFAULT_CONFIDENCE,
        step=0.05,
        format="%.2f",
        key="export-confidence",
        help="Where the method's posterior for its level is lower, the majority rule decides the final level "
        "(or none does): a reviewer's decision wins over both.",
    )
    thresholds["min_labels"] = int(
        right.number_input(
            "Labels per annotator in the fit (median, at least)",
            min_value=0,
            value=DEFAULT_MIN_LABELS,
            step=1,
            key="export-min-labels",
            help="With fewer labels for the median annotator, the method cannot learn the annotators: the majority "
            "rule decides every pair no reviewer settled.",
        )
    )
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

st.subheader("Publish as a dataset")
ZIP_NOW_BYTES = 32 * 1024 * 1024  # a published folder up to this is zipped with the page, a larger one on the click
st.caption(
    "A folder that `datasets.load_dataset(folder)` and `datasets.load_from_disk(folder)` read: the wide rows "
    "as Parquet and Arrow, and a dataset card (README.md) written from the store — protocol, scale and "
    "binarisation, pairs, annotators, labels per pair, the campaign (its selection and gold checks), "
    "Krippendorff's α with 95% intervals, how the final "
    "labels were reached, the score runs. Written on the server in chunks, so large datasets fit in memory; "
    "then offered here as a .zip download too."
)
# the suggested folder is stamped once per session and export: a default that changed with every
# rerun (its timestamp) would make a new widget and drop what the form showed
# a name, not a path: it goes under the published folder (lab.places.typed_folder); where that is on the
# server, and the keys that allow other folders, are shown to an owner only
suggested = st.session_state.setdefault(f"publish_folder_{stem}", default_folder(stem.removesuffix("_labels")).name)
owner = may("own")
with st.form("publish"):
    folder = st.text_input("Folder name (a new one, under the app's published folder)", value=suggested)
    if owner:
        st.caption(
            f"On the server: {user_text(published_dir().resolve())}/<name>. An absolute path may name a "
            f"folder inside {', '.join(user_text(root.resolve()) for root in publish_roots())}; "
            "`PLUIE_PUBLISH_DIRS` or `[publish] folders` in pluie_lab.toml allow more."
        )
    title = st.text_input("Title", value=campaigns[campaign_id] if campaign_id is not None else ", ".join(chosen))
    # empty until the organiser types one: a grey identifier in the box read as a licence already chosen
    licence = st.text_input(
        "Licence (required)",
        placeholder="Required: type an identifier such as cc-by-4.0 or mit",
        help="A licence identifier as the Hugging Face Hub writes it: cc-by-4.0, cc-by-sa-4.0, cc0-1.0, mit, other…",
    )
    publish = st.form_submit_button("Write the dataset folder", type="primary")
if publish:
    bar = st.progress(0.0, text="Writing…")
    try:
        result = publish_dataset(
            engine,
            folder,
            ids,
            licence=licence,
            title=title,
            include_training=include_training,
            campaign_id=campaign_id,
            pairs=pairs,
            aggregation=method,
            within=publish_roots(),
            typed=True,
            show_paths=owner,
            **thresholds,
            progress=lambda done, total: bar.progress(done / total, text=f"{done:,} / {counted(total, 'pair')}"),
        )
    except (PublishError, NotAllowed) as exc:  # NotAllowed: the role of whoever asked (db.access)
        bar.empty()
        st.error(user_text(exc))
    else:
        st.success(
            f"{counted(result.n_pairs, 'pair')} written to "
            f"{user_text(result.folder if owner else '“' + folder.strip() + '”')}."
        )
        # the folder as one .zip from the browser (db.publish.dataset_zip): built now when small (the page holds
        # the bytes, as for the small exports above), on the click when larger, not offered past the limit
        folder_size = folder_bytes(result.folder)
        if folder_size <= ZIP_DOWNLOAD_LIMIT:
            st.download_button(
                "Download the dataset (.zip)",
                dataset_zip(result.folder)
                if folder_size <= ZIP_NOW_BYTES
                else functools.partial(dataset_zip, result.folder),
                f"{result.folder.name}.zip",
                "application/zip",
                type="primary",
                icon=":material/download:",
                on_click="ignore",
            )
        else:
            st.info(
                f"The folder holds {folder_size / 1e9:,.1f} GB: too large to send through the browser in one piece "
                f"(over {ZIP_DOWNLOAD_LIMIT / 1e9:,.1f} GB). Copy it from the server."
            )
        with st.expander("Dataset card (README.md)"):
            st.code(result.card, language="markdown")
