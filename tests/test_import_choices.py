"""Import that keeps a benchmark whole and gives every store the same answer (issue 12).

Store cases run on a SQLite file and on PostgreSQL (the store_url fixture)."""
import json
from collections import Counter

import pandas as pd
import pytest
import sqlalchemy as sa

from db import init_db, read_session
from db.datasets import import_file, import_pairs
from db.models import Dataset, Pair
from pluie_core.io import load_pairs
from tests.paths import DATASETS

PARAPHRASUS = DATASETS / "paraphrasus"
# PARAPHRASUS's Table 1: simp (OneStop parallel) holds 600 pairs, PAWS-X test 2,000.
BENCHMARK_SIZES = {"onestop_parallel_all_pairs.json": 600, "paws-x-test.json": 2000}


def raw_records(path):
    """The file's records, read independently of the importer."""
    return list(json.loads(path.read_text(encoding="utf-8")).values())


def label_counts(records):
    return Counter(float(r["label"]) for r in records)


@pytest.fixture
def store(store_url):
    engine = init_db(store_url)
    yield engine
    engine.dispose()


def dataset_pairs(engine, name):
    with read_session(engine) as session:
        return session.execute(
            sa.select(Pair.source, Pair.hypothesis, Pair.gold_label).join(Dataset).where(Dataset.name == name)
        ).all()


def description(engine, name):
    with read_session(engine) as session:
        return session.scalar(sa.select(Dataset.description).where(Dataset.name == name))


# -- 2. duplicates: the user's choice ----------------------------------------------------------

@pytest.mark.parametrize("file_name", sorted(BENCHMARK_SIZES))
def test_load_pairs_keeps_every_row_when_asked_and_skips_by_default(file_name):
    records = raw_records(PARAPHRASUS / file_name)
    assert len(records) == BENCHMARK_SIZES[file_name]
    kept = load_pairs(PARAPHRASUS / file_name, keep_duplicates=True)
    assert len(kept) == BENCHMARK_SIZES[file_name]
    assert kept.attrs["keep_duplicates"] is True
    assert Counter(kept["label"]) == label_counts(records)
    assert kept["external_id"].tolist() == list(json.loads((PARAPHRASUS / file_name).read_text()).keys())

    distinct = {(r["sentence1"].strip(), r["sentence2"].strip()) for r in records}
    skipped = load_pairs(PARAPHRASUS / file_name)
    assert len(distinct) < len(records)  # the benchmark does hold repeats
    assert len(skipped) == len(distinct)
    assert len(kept.attrs["duplicates"]) == len(skipped.attrs["duplicates"]) == len(records) - len(distinct)
    assert any("kept" in w for w in kept.attrs["warnings"])


@pytest.mark.parametrize("file_name", sorted(BENCHMARK_SIZES))
def test_a_keep_every_row_import_holds_the_benchmark_whole(store, file_name):
    path = PARAPHRASUS / file_name
    records = raw_records(path)
    result = import_file(store, path, name="kept", keep_duplicates=True)
    stored = dataset_pairs(store, "kept")
    assert result.n_pairs == len(stored) == BENCHMARK_SIZES[file_name]
    assert result.n_kept_duplicates == len(records) - len({(r["sentence1"].strip(), r["sentence2"].strip()) for r in records})
    assert Counter(g for _, _, g in stored) == label_counts(records)
    assert "duplicates kept" in description(store, "kept")

    default = import_file(store, path, name="skipped")
    assert default.n_pairs == len(dataset_pairs(store, "skipped")) == len({(s, h) for s, h, _ in stored})
    assert default.n_pairs < BENCHMARK_SIZES[file_name]
    assert "duplicates skipped" in description(store, "skipped")


def test_keeping_duplicates_also_keeps_rows_already_in_the_dataset(store):
    rows = pd.DataFrame({"source": ["a", "c", "a"], "hypothesis": ["b", "d", "b"], "label": [1, 0, 0]})
    first = import_pairs(store, "d", rows, keep_duplicates=True, description="My benchmark.")
    assert (first.n_pairs, first.n_kept_duplicates, first.n_skipped_duplicates) == (3, 1, 0)
    again = import_pairs(store, "d", rows, append=True, keep_duplicates=True)
    assert (again.n_pairs, again.n_kept_duplicates) == (3, 3)
    assert sorted(dataset_pairs(store, "d")) == sorted(2 * [("a", "b", 1.0), ("c", "d", 0.0), ("a", "b", 0.0)])
    skipped = import_pairs(store, "d", rows, append=True)  # the default skips every repeat
    assert (skipped.n_pairs, skipped.n_skipped_duplicates) == (0, 3)
    assert len(dataset_pairs(store, "d")) == 6
    text = description(store, "d")
    assert text.startswith("My benchmark.")
    assert "Imported 3 pairs with duplicates kept" in text and "3 exact repeats included" in text
    assert "Imported 0 pairs with duplicates skipped" in text


def test_the_score_command_keeps_every_row_with_keep_duplicates(tiny_model_builder, tmp_path):
    from pluie_core.cli import main
    from pluie_core.scorer import PluieScorer

    pairs = pd.DataFrame({"source": ["The cat drinks water.", "A river.", "The cat drinks water."],
                          "hypothesis": ["The cat drinks milk.", "A long river.", "The cat drinks milk."],
                          "label": [0, 1, 0]})
    path = tmp_path / "pairs.csv"
    pairs.to_csv(path, index=False)
    model = str(tiny_model_builder())
    kept, skipped = tmp_path / "kept.csv", tmp_path / "skipped.csv"
    assert main(["score", str(path), "--model", model, "--no-progress", "--keep-duplicates", "-o", str(kept)]) == 0
    assert main(["score", str(path), "--model", model, "--no-progress", "-o", str(skipped)]) == 0
    kept, skipped = pd.read_csv(kept), pd.read_csv(skipped)
    pd.testing.assert_frame_equal(kept[["source", "hypothesis", "label"]], pairs, check_dtype=False)
    assert len(skipped) == 2
    expected = PluieScorer(model).score(pairs.source, pairs.hypothesis)
    assert kept["pluie"].to_numpy() == pytest.approx(expected, abs=1e-4)
