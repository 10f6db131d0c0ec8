"""The dataset folder ready to publish (issue 11, item 4): read back with datasets.load_from_disk,
datasets.load_dataset and pandas (Parquet) with the same rows and labels as the store; the card's
figures against independent computations; the chunks that bound memory; refusals that leave
nothing behind."""

from __future__ import annotations

import math

import krippendorff
import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

from db.analysis import add_score_run
from db.datasets import import_pairs
from db.export import export_frame
from db.publish import DATA_FILE, PublishError, publish_dataset
from db.review import adjudicate
from pluie_core.export_format import to_parquet_bytes
from pluie_core.labels import binarise_levels, ordinal_levels

ANNOTATORS = ["ann", "bob", "cy"]


def build(engine, n_a=23, n_b=11, seed=3):
    """Two datasets of random five-level labels (some missing, some Don't know), a score run, a
    raw-scale dataset (BIOSSES-like values), and two decisions."""
    rng = np.random.default_rng(seed)
    for name, n in (("alpha", n_a), ("beta", n_b)):
        levels = rng.choice([0, 1, 2, 3, 4, np.nan], size=(n, 3), p=[0.2, 0.2, 0.2, 0.25, 0.05, 0.1])
        frame = pd.DataFrame(
            {
                "source": [f"{name} source {i}" for i in range(n)],
                "hypothesis": [f"{name} hypothesis {i}" for i in range(n)],
                "label": rng.integers(0, 2, n).astype(float),
                "external_id": [f"{name}-{i}" for i in range(n)],
            }
        )
        for j, annotator in enumerate(ANNOTATORS):
            frame[f"annotator:{annotator}"] = levels[:, j]
        import_pairs(engine, name, frame, annotator_scale="levels")
    raw = pd.DataFrame(
        {
            "source": ["g1", "g2"],
            "hypothesis": ["h1", "h2"],
            "label": [2.5, 0.5],
            "annotator:A": [4.0, 0.5],
            "annotator:B": [3.0, 1.0],
        }
    )
    import_pairs(engine, "raw", raw)
    with engine.connect() as conn:
        ids = [r[0] for r in conn.exec_driver_sql("SELECT id FROM pairs ORDER BY id")]
    add_score_run(engine, "lev", {pid: pid / 7 for pid in ids[::2]})
    adjudicate(engine, ids[0], 2, "Lena", "a note, with a comma")
    adjudicate(engine, ids[n_a], 0, "Marc")
    return ids


def store_labels(engine) -> pd.DataFrame:
    """Every five-level label, read straight from the tables."""
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT p.source, a.name || ' (' || d.name || ')', l.level FROM labels l JOIN pairs p ON p.id = l.pair_id "
            "JOIN annotators a ON a.id = l.annotator_id JOIN datasets d ON d.id = a.dataset_id "
            "WHERE l.level IS NOT NULL"
        ).all()
    return pd.DataFrame(rows, columns=["source", "annotator", "level"])


def test_the_folder_reads_back_with_datasets_and_pandas_as_the_store_holds_it(store_url, tmp_path):
    import datasets

    from db import init_db

    engine = init_db(store_url)  # a SQLite file, then PostgreSQL
    build(engine)
    folder = tmp_path / "published" / "toy"
    result = publish_dataset(engine, folder, licence="CC-BY-4.0", title="Toy pairs", chunk_size=5, n_boot=200)
    expected = export_frame(engine)
    assert result.n_pairs == len(expected) == 36 and result.columns == list(expected.columns)

    parquet = pd.read_parquet(folder / DATA_FILE)
    from_disk = datasets.load_from_disk(str(folder))["train"].to_pandas()
    loaded = datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))["train"].to_pandas()
    for frame in (parquet, from_disk, loaded):
        assert list(frame.columns) == list(expected.columns) and len(frame) == len(expected)
        assert frame["source"].tolist() == expected["source"].tolist()  # same rows, same order
        pd.testing.assert_frame_equal(frame, parquet, check_dtype=False)
    for column in expected.columns:
        want, got = expected[column], parquet[column]
        assert (want.isna() == got.isna()).all(), column
        if column == "adjudicated_at":
            assert (pd.to_datetime(want.dropna()).values == got.dropna().values).all()
        else:
            assert want.dropna().astype(str).tolist() == got.dropna().astype(str).tolist(), column
    assert str(parquet["annotator:ann (alpha)"].dtype) == "Int64" and str(parquet["annotator:A"].dtype) == "float64"

    # every label in the store is in its annotator's column, and nothing else is
    labels = store_labels(engine)
    level_columns = [
        c for c in parquet.columns if c.startswith("annotator:") and c not in ("annotator:A", "annotator:B")
    ]
    assert len(level_columns) == 6  # ann, bob, cy of each dataset (imported annotators belong to their dataset)
    melted = parquet.melt(id_vars="source", value_vars=level_columns, var_name="annotator", value_name="level").dropna()
    melted["annotator"] = melted["annotator"].str.removeprefix("annotator:")
    got = sorted(zip(melted["source"], melted["annotator"], melted["level"].astype(int)))
    assert got == sorted(zip(labels["source"], labels["annotator"], labels["level"]))
    assert parquet["final_source"].value_counts()["adjudicated"] == 2
    engine.dispose()


def test_the_card_reports_the_store_and_its_agreement(engine, tmp_path):
    build(engine)
    folder = tmp_path / "card"
    result = publish_dataset(engine, folder, [1, 2], licence="cc-by-sa-4.0", chunk_size=4, n_boot=300)
    card = (folder / "README.md").read_text()
    assert card == result.card
    header = yaml.safe_load(card.split("---")[1])
    assert header["license"] == "cc-by-sa-4.0" and header["pretty_name"] == "alpha, beta"
    assert header["configs"][0]["data_files"][0]["path"] == DATA_FILE
    frame = export_frame(engine, [1, 2])
    assert f"**{len(frame):,} pairs**" in card and "**6 annotators**" in card
    assert f"**{int(frame['n_labels'].sum()):,} labels**" in card
    for k, n in frame["n_labels"].value_counts().items():
        assert f"{k} label{'s' if k != 1 else ''}: {n:,} pairs" in card
    for source in ("adjudicated", "majority", "none"):
        assert f"| {source} | {int((frame['final_source'] == source).sum()):,} |" in card
    assert "| score:lev | baseline |" in card

    # α from the labels themselves, through the krippendorff library (annotators x pairs)
    matrix = frame[[c for c in frame.columns if c.startswith("annotator:")]].to_numpy(dtype=float, na_value=np.nan)
    ordinal = ordinal_levels(matrix)
    kept = (~np.isnan(ordinal)).sum(axis=1) >= 2
    ordinal_alpha = krippendorff.alpha(ordinal[kept].T, level_of_measurement="ordinal", value_domain=[0, 1, 2, 3])
    binary = binarise_levels(matrix)
    binary_alpha = krippendorff.alpha(binary[kept].T, level_of_measurement="nominal", value_domain=[0, 1])
    assert f"ordinal, four levels: {ordinal_alpha:.3f} (95% CI " in card
    assert f"nominal, binarised labels: {binary_alpha:.3f} (95% CI " in card
    assert f"Over the {int(kept.sum()):,} pairs with two or more labels" in card


def test_alpha_from_count_patterns_is_the_librarys_alpha_of_the_labels():
    from pluie_core.dataset_card import count_patterns
    from pluie_core.stats import krippendorff_alpha_ci, krippendorff_alpha_ci_from_patterns

    rng = np.random.default_rng(0)
    data = rng.choice([0.0, 1.0, 2.0, 3.0, np.nan], size=(5, 300), p=[0.3, 0.2, 0.2, 0.2, 0.1])  # annotators x pairs
    counts = np.stack([(data == v).sum(axis=0) for v in range(4)], axis=1)
    table = count_patterns(counts[:100])
    count_patterns(counts[100:], into=table)  # gathered in two chunks
    patterns, frequencies = np.array(list(table)), np.array(list(table.values()))
    assert frequencies.sum() == (counts.sum(axis=1) >= 2).sum() and len(patterns) < 300
    for level in ("nominal", "ordinal", "interval"):
        got = krippendorff_alpha_ci_from_patterns(patterns, frequencies, [0, 1, 2, 3], level, n_boot=400, seed=5)
        assert math.isclose(
            got["alpha"], krippendorff.alpha(data, level_of_measurement=level, value_domain=[0, 1, 2, 3])
        )
        full = krippendorff_alpha_ci(data, level, n_boot=400, seed=5, value_domain=[0, 1, 2, 3])
        assert got["n_items"] == full["n_items"]
        assert got["ci_low"] < got["alpha"] < got["ci_high"]
        assert abs(got["ci_low"] - full["ci_low"]) < 0.03 and abs(got["ci_high"] - full["ci_high"]) < 0.03


def test_rows_go_out_in_chunks_of_at_most_chunk_size(engine, tmp_path):
    build(engine, n_a=23, n_b=11)
    seen = []
    result = publish_dataset(
        engine,
        tmp_path / "chunks",
        licence="mit",
        chunk_size=5,
        n_boot=50,
        progress=lambda done, total: seen.append((done, total)),
    )
    sizes = [
        pq.ParquetFile(tmp_path / "chunks" / DATA_FILE).metadata.row_group(i).num_rows
        for i in range(pq.ParquetFile(tmp_path / "chunks" / DATA_FILE).metadata.num_row_groups)
    ]
    # each dataset in chunks of 5 (23 -> 5 5 5 5 3, 11 -> 5 5 1, 2 -> 2): never the whole table at once
    assert sizes == [5, 5, 5, 5, 3, 5, 5, 1, 2] and result.n_chunks == len(sizes)
    assert [done for done, _ in seen] == list(np.cumsum(sizes)) and {total for _, total in seen} == {36}
    whole = publish_dataset(engine, tmp_path / "whole", licence="mit", chunk_size=10_000, n_boot=50)
    assert whole.n_chunks == 3  # one per dataset
    pd.testing.assert_frame_equal(
        pd.read_parquet(tmp_path / "chunks" / DATA_FILE), pd.read_parquet(tmp_path / "whole" / DATA_FILE)
    )


def test_refusals_and_failures_leave_no_folder(engine, tmp_path):
    build(engine)
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "file.txt").write_text("mine")
    for kwargs, message in [
        (dict(folder=tmp_path / "a", licence=""), "Choose the licence"),
        (dict(folder=tmp_path / "a", licence="CC BY 4.0"), "not a licence identifier"),
        (dict(folder=taken, licence="mit"), "not an empty folder"),
        (dict(folder=tmp_path / "a", licence="mit", dataset_ids=[999]), "at least one existing dataset"),
    ]:
        with pytest.raises(PublishError, match=message):
            publish_dataset(engine, **kwargs)

    def fail(done, total):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        publish_dataset(engine, tmp_path / "b", licence="mit", chunk_size=5, progress=fail)
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("store.db")) == [
        "taken"
    ]  # nothing half-written
    assert [p.name for p in taken.iterdir()] == ["file.txt"]


def test_parquet_download_keeps_the_types(engine):
    build(engine)
    frame = export_frame(engine)
    back = pd.read_parquet(__import__("io").BytesIO(to_parquet_bytes(frame)))
    assert back["final_level"].dropna().tolist() == frame["final_level"].dropna().tolist()
    assert str(back["annotator:bob (alpha)"].dtype) == "Int64"


def test_the_export_page_writes_the_folder_and_refuses_a_missing_licence(engine, db_url, tmp_path, monkeypatch):
    import datasets

    build(engine)
    at = export_page(db_url, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert {"Download CSV", "Download JSONL", "Download Parquet"} <= {b.label for b in at.get("download_button")}
    name = at.text_input[0].value  # a name, under the published folder
    assert name.startswith("pluie_lab_export-")
    folder = str(tmp_path / "data" / "published" / name)
    at.button[0].click()  # the form's submit, no licence
    at.run()
    assert "Choose the licence" in at.error[0].value and not (tmp_path / "data" / "published").exists()
    at.text_input[2].set_value("cc-by-4.0")
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert "36 pairs written to" in at.success[0].value
    back = datasets.load_from_disk(folder)["train"]
    assert back.num_rows == 36 and back["final_source"].count("adjudicated") == 2


def export_page(db_url, tmp_path, monkeypatch):
    """The Export page run through the app's frame (AppTest) on the test's store, its data folder in tmp_path."""
    from streamlit.testing.v1 import AppTest

    from tests.paths import REPO

    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path / "data"))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/export.py")
    return at.run()
