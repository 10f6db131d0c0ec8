"""The Export page's "Publish as a dataset" (pages/export.py): the folder's name, title and licence, the folder
written on the server (db.publish.publish_dataset, in chunks, with a bar), then its .zip offered for download and
its dataset card shown. Where the published folder is on the server is shown to an owner only."""

import functools

import streamlit as st

from db.publish import ZIP_DOWNLOAD_LIMIT, PublishError, dataset_zip, default_folder, folder_bytes, publish_dataset
from lab.places import publish_roots, published_dir
from lab.roles import NotAllowed
from pluie_core.wording import counted
from ui.base.page import may, user_text

ZIP_NOW_BYTES = 32 * 1024 * 1024  # a published folder up to this is zipped with the page, a larger one on the click


def publish_form(
    engine,
    ids: list,
    stem: str,
    suggested_title: str,
    *,
    include_training: bool,
    campaign_id,
    pairs: str,
    method,
    thresholds: dict,
) -> None:
    """The form and what it wrote, for the export chosen above it: datasets ``ids`` (a campaign's pairs with
    ``campaign_id``), the files' ``stem``, the title it suggests, and the export's choices."""
    st.subheader("Publish as a dataset")
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
        title = st.text_input("Title", value=suggested_title)
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
