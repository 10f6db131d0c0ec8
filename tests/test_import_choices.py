"""Import that keeps a benchmark whole and gives every store the same answer (issue 12).

Store cases run on a SQLite file and on PostgreSQL (the store_url fixture)."""

import io
import json
import re
from collections import Counter

import pandas as pd
import pytest
import sqlalchemy as sa

from db import init_db, read_session
from db.datasets import duplicates_note, import_file, import_pairs
from db.models import Dataset, Pair
from pluie_core.io import load_pairs
from pluie_core.wording import counted
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
    assert result.n_kept_duplicates == len(records) - len(
        {(r["sentence1"].strip(), r["sentence2"].strip()) for r in records}
    )
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
    from db.datasets import datasets_overview

    assert datasets_overview(store).set_index("dataset").loc["d", "description"] == text  # the home page's table


def test_the_score_command_keeps_every_row_with_keep_duplicates(tiny_model_builder, tmp_path, capsys):
    from pluie_core.cli import main
    from pluie_core.scorer import PluieScorer

    pairs = pd.DataFrame(
        {
            "source": ["The cat drinks water.", "A river.", "The cat drinks water."],
            "hypothesis": ["The cat drinks milk.", "A long river.", "The cat drinks milk."],
            "label": [0, 1, 0],
        }
    )
    path = tmp_path / "pairs.csv"
    pairs.to_csv(path, index=False)
    model = str(tiny_model_builder())
    kept, skipped = tmp_path / "kept.csv", tmp_path / "skipped.csv"
    assert main(["score", str(path), "--model", model, "--no-progress", "--keep-duplicates", "-o", str(kept)]) == 0
    assert "warning: 1 exact duplicate pair was kept" in capsys.readouterr().err
    assert main(["score", str(path), "--model", model, "--no-progress", "-o", str(skipped)]) == 0
    assert "warning: 1 exact duplicate pair was skipped" in capsys.readouterr().err
    kept, skipped = pd.read_csv(kept), pd.read_csv(skipped)
    pd.testing.assert_frame_equal(kept[["source", "hypothesis", "label"]], pairs, check_dtype=False)
    assert len(skipped) == 2
    expected = PluieScorer(model).score(pairs.source, pairs.hypothesis)
    assert kept["pluie"].to_numpy() == pytest.approx(expected, abs=1e-4)


# -- 1. NUL: removed with a warning naming the lines, the same pairs on every store -------------

NUL_CSV = (
    "source,hypothesis,label,note\n"
    "The cat drinks water.,The cat drinks milk.,0,plain\n"
    "A man is\x00 sleeping.,A man sleeps.,1,a NUL in the source\n"
    "Have you ever seen a tsunami ?,Have you ever seen a tiramisu ?,0,bell\x07 in the note\n"
    "A river.,A long\x1f river.,1,unit separator in the hypothesis\n"
)


def stored_pairs(engine, name):
    with read_session(engine) as session:
        return session.execute(
            sa.select(Pair.source, Pair.hypothesis, Pair.gold_label, Pair.meta)
            .join(Dataset)
            .where(Dataset.name == name)
            .order_by(Pair.id)
        ).all()


def table_counts(engine):
    with engine.connect() as connection:
        names = [n for n in sa.inspect(engine).get_table_names() if n != "alembic_version"]
        return {n: connection.exec_driver_sql(f"SELECT COUNT(*) FROM {n}").scalar() for n in names}


def test_a_file_with_nul_bytes_imports_the_same_clean_pairs_on_every_store(store, tmp_path):
    """The same file on SQLite and PostgreSQL: NUL removed, the line named, the same pairs."""
    path = tmp_path / "nul.csv"
    path.write_bytes(NUL_CSV.encode("utf-8"))
    pairs = load_pairs(path)
    assert pairs.attrs["warnings"] == ["NUL characters (0x00) were removed from line 3."]
    result = import_file(store, path, name="nul")
    assert result.n_pairs == 4
    assert [tuple(r) for r in stored_pairs(store, "nul")] == [
        ("The cat drinks water.", "The cat drinks milk.", 0.0, {"note": "plain"}),
        ("A man is sleeping.", "A man sleeps.", 1.0, {"note": "a NUL in the source"}),
        # other control characters are kept: every store holds them alike
        ("Have you ever seen a tsunami ?", "Have you ever seen a tiramisu ?", 0.0, {"note": "bell\x07 in the note"}),
        ("A river.", "A long\x1f river.", 1.0, {"note": "unit separator in the hypothesis"}),
    ]


def test_the_score_command_says_which_line_lost_its_nul(tiny_model_builder, tmp_path, capsys):
    from pluie_core.cli import main

    path = tmp_path / "nul.csv"
    path.write_bytes(NUL_CSV.encode("utf-8"))
    output = tmp_path / "scored.csv"
    assert main(["score", str(path), "--model", str(tiny_model_builder()), "--no-progress", "-o", str(output)]) == 0
    assert "warning: NUL characters (0x00) were removed from line 3." in capsys.readouterr().err
    assert pd.read_csv(output)["source"][1] == "A man is sleeping."


def test_nul_in_json_ids_and_in_a_header_is_removed_and_named(tmp_path):
    path = tmp_path / "nul.json"
    path.write_text(
        json.dumps(
            [
                {"id": "p\x001", "source": "a b", "hypothesis": "a c", "extra\x00": "x"},
                {"id": "p2", "source": "c d", "hypothesis": "c\x00 e", "extra\x00": "y"},
            ]
        )
    )
    pairs = load_pairs(path)
    assert pairs["external_id"].tolist() == ["p1", "p2"]
    assert pairs["hypothesis"].tolist() == ["a c", "c e"]
    assert pairs["extra"].tolist() == ["x", "y"]
    assert pairs.attrs["warnings"] == ["NUL characters (0x00) were removed from the header, record 1 and record 2."]


def test_a_utf16_file_is_refused_with_one_sentence(tmp_path):
    from pluie_core.io import PairFileError

    path = tmp_path / "utf16.csv"
    path.write_bytes("source,hypothesis\nThe cat drinks.,The cat drinks milk.\n".encode("utf-16-le"))
    with pytest.raises(PairFileError, match="UTF-16 text .* save it as UTF-8"):
        load_pairs(path)


@pytest.mark.parametrize(
    "column, expected",
    [
        ("source", "Pair 2: the source contains a NUL character (0x00)"),
        ("hypothesis", "Pair 2: the hypothesis contains a NUL character (0x00)"),
        ("external_id", "Pair 2: the pair id contains a NUL character (0x00)"),
        ("topic", "Pair 2: the column 'topic' contains a NUL character (0x00)"),
    ],
)
def test_a_frame_with_nul_is_refused_the_same_way_on_every_store(store, column, expected):
    from db.datasets import ImportRejected

    import_pairs(store, "existing", pd.DataFrame({"source": ["x"], "hypothesis": ["y"]}))
    before = table_counts(store)
    frame = pd.DataFrame(
        {
            "source": ["a", "b"],
            "hypothesis": ["c", "d"],
            "external_id": ["1", "2"],
            "topic": ["t", "u"],
            "label": [0, 1],
        }
    )
    frame.loc[1, column] = frame.loc[1, column] + "\x00!"
    with pytest.raises(ImportRejected, match=re.escape(expected)):
        import_pairs(store, "nul", frame)
    with pytest.raises(ImportRejected, match=re.escape(expected)):
        import_pairs(store, "existing", frame, append=True)
    assert table_counts(store) == before


def test_other_control_characters_of_a_published_benchmark_are_kept():
    """MRPC train writes one apostrophe as 0x12 (line 1766): the benchmark's sentence stays as published."""
    pairs = load_pairs(DATASETS / "mrpc" / "msr_paraphrase_train.txt")
    assert pairs["source"].str.contains("Treasury\x12s long-range plan", regex=False).sum() == 1
    assert not any("NUL" in w for w in pairs.attrs["warnings"])


# -- 3. binary labels written as words -----------------------------------------------------------

WORD_LABELS_CSV = (
    "sentence1,sentence2,is_paraphrase\n"
    "The cat drinks water.,The cat drinks milk.,no\n"
    "A man is sleeping.,A man sleeps.,YES\n"
    "Have you ever seen a tsunami ?,Have you ever seen a tiramisu ?,False\n"
    "A river.,A long river.,true\n"
    "He left.,He went away.,Paraphrase\n"
    "She won.,She lost.,non-paraphrase\n"
    "It rains.,It is raining.,\n"
)
WORD_LABELS = [0.0, 1.0, 0.0, 1.0, 1.0, 0.0, None]


def test_labels_written_as_words_are_read_as_1_and_0_and_said_so(tmp_path):
    path = tmp_path / "words.csv"
    path.write_text(WORD_LABELS_CSV)
    pairs = load_pairs(path)
    assert [None if pd.isna(v) else v for v in pairs["label"]] == WORD_LABELS
    assert pairs.attrs["label_kind"] == "binary"
    assert pairs.attrs["notes"] == [
        "The label is written as words, read as numbers: 'Paraphrase' as 1, 'true' as 1, 'YES' as 1, "
        "'False' as 0, 'no' as 0 and 'non-paraphrase' as 0."
    ]
    numeric = tmp_path / "numbers.csv"
    numeric.write_text("source,hypothesis,label\na,b,1\nc,d,0\n")
    assert load_pairs(numeric).attrs["notes"] == []


def test_a_word_that_is_not_a_binary_label_is_still_refused(tmp_path):
    from pluie_core.io import PairFileError

    path = tmp_path / "maybe.csv"
    path.write_text("source,hypothesis,label\na,b,yes\nc,d,maybe\n")
    with pytest.raises(PairFileError, match=re.escape("Line 3: the label 'maybe' is not a number.")):
        load_pairs(path)


def test_word_labels_land_as_1_and_0_on_every_store(store, tmp_path):
    path = tmp_path / "words.csv"
    path.write_text(WORD_LABELS_CSV)
    result = import_file(store, path, name="words")
    assert result.n_pairs == 7
    with read_session(store) as session:
        stored = session.execute(sa.select(Pair.gold_label).order_by(Pair.id)).scalars().all()
        kind = session.scalar(sa.select(Dataset.label_kind))
    assert stored == WORD_LABELS
    assert kind == "binary"


def test_keeping_duplicates_of_a_file_read_without_them_says_so(store, tmp_path):
    path = tmp_path / "repeats.csv"
    path.write_text("source,hypothesis\na,b\na,b\nc,d\n")
    result = import_pairs(store, "r", load_pairs(path), keep_duplicates=True)  # the reader dropped the repeat
    assert result.n_pairs == 2
    assert description(store, "r") == (
        "Imported 2 pairs with duplicates kept: every row is a pair, 0 exact repeats "
        "included. 1 repeat had been dropped when the file was read."
    )


def test_counts_of_one_are_singular():
    assert [counted(n, "pair") for n in (0, 1, 2, 1000)] == ["0 pairs", "1 pair", "2 pairs", "1,000 pairs"]
    one = pd.DataFrame({"source": ["a", "c", "a"], "hypothesis": ["b", "d", "b"]})
    csv = io.BytesIO(one.to_csv(index=False).encode())
    csv.name = "one.csv"
    assert "1 exact duplicate pair was skipped (the first of each is kept)." in load_pairs(csv).attrs["warnings"]
    csv.seek(0)
    kept = load_pairs(csv, keep_duplicates=True).attrs["warnings"]
    assert "1 exact duplicate pair was kept (every row of the file is a pair)." in kept
    assert duplicates_note(True, 1, 1) == (
        "Imported 1 pair with duplicates kept: every row is a pair, 1 exact repeat included."
    )
    assert duplicates_note(False, 1, 0).startswith("Imported 1 pair with duplicates skipped")
    assert duplicates_note(False, 3, 2).startswith("Imported 3 pairs with")
