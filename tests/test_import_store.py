"""Every shared dataset through the whole import (reader + store), bad files leave the store as it
was, and an export imports back to the same pairs and labels."""

import io
from collections import Counter

import pandas as pd
import pytest
import sqlalchemy as sa

from db import read_session
from db.datasets import ImportRejected, import_file, import_pairs, store_totals
from db.export import export_frame
from db.models import Annotator, Label, Pair
from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes
from pluie_core.io import PairFileError, load_pairs
from tests.paths import DATASETS
from tests.test_load_pairs import FILES, _label_key, expected_counts


@pytest.fixture(scope="module")
def shared_engine(tmp_path_factory):
    from db import init_db

    engine = init_db(f"sqlite:///{tmp_path_factory.mktemp('store') / 'all.db'}")
    yield engine
    engine.dispose()


@pytest.mark.parametrize("relative", sorted(FILES))
def test_every_shared_file_lands_in_the_store_with_the_counts_of_the_file(shared_engine, relative):
    _, independent, _ = FILES[relative]
    n_rows, label_counts, _ = expected_counts(independent(DATASETS / relative))
    result = import_file(shared_engine, DATASETS / relative, name=relative)
    assert result.n_pairs == n_rows
    with read_session(shared_engine) as s:
        gold = s.scalars(sa.select(Pair.gold_label).where(Pair.dataset_id == result.dataset_id)).all()
    assert len(gold) == n_rows
    assert Counter(_label_key(v) for v in gold) == label_counts


def test_mrpc_test_in_the_store(engine):
    result = import_file(engine, DATASETS / "mrpc/msr_paraphrase_test.txt")
    with read_session(engine) as s:
        positives = s.scalar(
            sa.select(sa.func.count()).where(Pair.dataset_id == result.dataset_id, Pair.gold_label == 1)
        )
    assert (result.dataset_name, result.n_pairs, positives) == ("msr_paraphrase_test", 1725, 1147)


def test_biosses_comes_with_five_external_annotators(engine):
    result = import_file(engine, DATASETS / "biosses/biosses_pairs_with_annotator_scores.tsv")
    assert result.annotators == ["A", "B", "C", "D", "E"] and result.n_labels == 500
    with read_session(engine) as s:
        rows = s.execute(
            sa.select(Annotator.name, Annotator.is_external, sa.func.count(Label.id)).join(Label).group_by(Annotator.id)
        ).all()
        values = s.scalars(sa.select(Label.value)).all()
    assert all(ext for _, ext, _ in rows) and {n for _, _, n in rows} == {100}
    assert set(values) <= {0.0, 1.0, 2.0, 3.0, 4.0}


BAD_FILES = [
    ("missing_column.csv", b"first,second\na,b\n"),
    ("empty_sentence.csv", b"source,hypothesis\nA cat.,A dog.\nA bird.,\n"),
    ("undecodable.csv", b"source,hypothesis\nCaf\xe9,Coffee\n"),
    ("too_many_fields.csv", b"source,hypothesis,label\na,b,1\nc,d,0,extra\n"),
    ("empty.csv", b""),
    ("header_only.csv", b"source,hypothesis\n"),
    ("broken.json", b'[{"source": "a", "hypothesis": "b"},'),
    ("not_object.jsonl", b'{"source": "a", "hypothesis": "b"}\n[1, 2]\n'),
    ("bad_label.csv", b"source,hypothesis,label\na,b,yes-ish\n"),
    ("fake.xlsx", b"this is not a workbook"),
    ("broken.xml", b"<corpus><paraphrase><value name='text_1'>a</value>"),
    ("unclosed_quote.csv", b'source,hypothesis\n"a cat,a dog\n'),
    ("mrpc_bad_quality.txt", "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n7\t1\t2\ta\tb\n".encode()),
    ("sts_bad_score.csv", b"main-captions\tMSRvid\t2012test\t0001\t9.5\tA man.\tA woman.\n"),
    ("unknown.bin", b"\x00\x01\x02\x03"),
    ("twitter_bad_votes.txt", b"a sentence\tanother one\t(7,6)\thttp://x\n"),
]


@pytest.mark.parametrize("name, content", BAD_FILES, ids=[n for n, _ in BAD_FILES])
def test_a_bad_file_gives_a_clear_error_and_an_unchanged_store(engine, name, content):
    import_file(engine, DATASETS / "mrpc/msr_paraphrase_test.txt", name="already there")
    before = store_totals(engine)
    buffer = io.BytesIO(content)
    buffer.name = name
    with pytest.raises((PairFileError, ImportRejected)) as caught:
        import_file(engine, buffer)
    message = str(caught.value)
    assert 10 < len(message) < 400 and "Traceback" not in message
    assert store_totals(engine) == before


def test_a_50_megabyte_file_is_refused_before_reading(engine, tmp_path):
    big = tmp_path / "big.csv"
    with big.open("wb") as fh:
        fh.write(b"source,hypothesis\n")
        fh.write(b"a cat drinks water,a cat drinks milk\n" * (51 * 1024 * 1024 // 36))
    with pytest.raises(PairFileError, match="MB"):
        import_file(engine, big)
    assert store_totals(engine)["pairs"] == 0


@pytest.mark.parametrize("writer, suffix", [(to_csv_bytes, ".csv"), (to_jsonl_bytes, ".jsonl")])
def test_export_then_import_returns_the_same_pairs_and_labels(engine, writer, suffix, tmp_path):
    df = pd.DataFrame(
        {
            "source": [
                "=SUM(A1:A3)",
                'He said "hi",\tthen left',
                "+33 6 12",
                "<script>alert(1)</script>",
                "naïve café ☕",
            ],
            "hypothesis": ["-1", "@home", "line one\nline two", "plain", "'quoted"],
            "label": [1.0, 0.0, None, 1.0, 0.0],
            "external_id": ["a", "b", "c", "d", "e"],
            "annotator:alice": [3, 4, None, 0, 2],
            "annotator:bob": [2, 1, 1, None, 3],
        }
    )
    original = import_pairs(engine, "original", df, annotator_scale="levels")
    exported = export_frame(engine)
    buffer = io.BytesIO(writer(exported))
    buffer.name = "export" + suffix
    back = load_pairs(buffer)
    # into a store of its own: in one store, two datasets' "alice" are told apart by their dataset's
    # name, as on every page ("alice (original)", "alice (round trip)")
    from db import init_db

    other = init_db(f"sqlite:///{tmp_path / 'other.db'}")
    copy = import_pairs(other, "round trip", back, annotator_scale="levels")
    first = export_frame(engine, [original.dataset_id]).drop(columns="dataset")
    second = export_frame(other, [copy.dataset_id]).drop(columns="dataset")
    other.dispose()
    pd.testing.assert_frame_equal(first, second)
    assert first["source"].tolist() == df["source"].tolist()
