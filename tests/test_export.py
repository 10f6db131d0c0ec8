"""The export frame: raw labels per annotator, aggregated and binarised labels, every score."""

import pandas as pd
import pytest
from sqlalchemy import func, select

from db import annotators, serving
from db import campaigns as camp
from db.datasets import import_pairs
from db.engine import write_session
from db.export import export_frame
from db.models import Score, ScoreRun
from tests.store_fixtures import open_page, rerun, sentence_pairs, texts, widget


@pytest.fixture
def store(engine):
    df = pd.DataFrame(
        {
            "source": ["s1", "s2", "s3", "s4", "s5"],
            "hypothesis": ["h1", "h2", "h3", "h4", "h5"],
            "label": [1, 0, None, 1, 0],
            "external_id": ["a", "b", "c", "d", "e"],
            # pair 1: clear majority 3; pair 2: tie 0/1 same side -> lower median 0, binary 0;
            # pair 3: tie 1/2 across the boundary -> no majority, binary tie -> none;
            # pair 4: only Don't know -> nothing; pair 5: unlabelled
            "annotator:ann": [3, 0, 1, 4, None],
            "annotator:bob": [3, 1, 2, None, None],
            "annotator:cy": [2, None, None, 4, None],
        }
    )
    result = import_pairs(engine, "toy", df, annotator_scale="levels")
    with write_session(engine) as s:
        run = ScoreRun(name="pluie-fs", kind="pluie", model="m", template="fs-direct")
        s.add(run)
        s.flush()
        s.add_all(
            [Score(run_id=run.id, pair_id=pid, value=v) for pid, v in zip(range(1, 6), [2.5, -1.0, 0.25, 7.0, -3.5])]
        )
    return engine, result


def test_export_columns_and_aggregation(store):
    engine, _ = store
    out = export_frame(engine)
    assert list(out.columns[:6]) == ["dataset", "pair_id", "external_id", "source", "hypothesis", "label"]
    assert out["pair_id"].tolist() == [1, 2, 3, 4, 5]
    assert {
        "annotator:ann",
        "annotator:bob",
        "annotator:cy",
        "majority_level",
        "majority_label",
        "binary_label",
        "n_labels",
        "score:pluie-fs",
    } <= set(out.columns)
    by_id = out.set_index("external_id")
    assert by_id.loc["a", "majority_level"] == 3 and by_id.loc["a", "majority_label"] == "Same meaning"
    assert by_id.loc["a", "binary_label"] == 1
    assert by_id.loc["b", "majority_level"] == 0 and by_id.loc["b", "binary_label"] == 0
    assert pd.isna(by_id.loc["c", "majority_level"]) and pd.isna(by_id.loc["c", "binary_label"])
    assert pd.isna(by_id.loc["d", "majority_level"]) and by_id.loc["d", "annotator:ann"] == 4
    assert by_id.loc["e", "n_labels"] == 0 and pd.isna(by_id.loc["e", "annotator:ann"])
    assert by_id["score:pluie-fs"].tolist() == [2.5, -1.0, 0.25, 7.0, -3.5]


def test_export_filters_datasets_and_names_clashing_annotators(store):
    engine, first = store
    df = pd.DataFrame({"source": ["x"], "hypothesis": ["y"], "label": [None], "annotator:ann": [2]})
    second = import_pairs(engine, "other", df, annotator_scale="levels")
    only_second = export_frame(engine, [second.dataset_id])
    assert only_second["source"].tolist() == ["x"]
    # annotators are named as on the analysis pages, whatever the datasets exported
    assert [c for c in only_second.columns if c.startswith("annotator:")] == ["annotator:ann (other)"]
    both = export_frame(engine)
    clashing = sorted(c for c in both.columns if c.startswith("annotator:ann"))
    assert clashing == ["annotator:ann (other)", "annotator:ann (toy)"]
    assert both[clashing].notna().sum().sort_values().tolist() == [1, 4]
    assert len(export_frame(engine, [first.dataset_id])) == 5


def test_export_preview_and_size_without_the_whole_table(store):
    """The Export page counts the rows in the store and previews the first ones (limit): the same
    rows, in the same order, as the head of the whole table."""
    from db.export import export_labels, export_size

    engine, _ = store
    whole, first = export_frame(engine), export_frame(engine, limit=2)
    assert first["pair_id"].tolist() == [1, 2]
    pd.testing.assert_frame_equal(
        first[["pair_id", "annotator:ann", "majority_level", "score:pluie-fs"]],
        whole.head(2)[["pair_id", "annotator:ann", "majority_level", "score:pluie-fs"]],
    )
    labels = export_labels(engine)
    assert export_labels(engine, limit=3)["pair_id"].tolist() == labels.head(3)["pair_id"].tolist()
    assert export_size(engine) == len(whole) == 5
    assert export_size(engine, layout="long") == len(labels) == 9
    assert export_size(engine, pairs="labelled") == len(export_frame(engine, pairs="labelled")) == 4


def test_a_dataset_past_the_stores_bound_parameters_exports_whole(engine):
    """A million-pair export failed with SQLite's "too many SQL variables" (the labels, scores and decisions were
    asked for by a list of every pair's id, one bound parameter each; PostgreSQL's bound is 65,535). Here the
    store's bound is lowered to 100 and 300 pairs export whole, each with its label and score."""
    import sqlite3

    from sqlalchemy import event

    n = 300
    df = pd.DataFrame(
        {
            "source": [f"s{i}" for i in range(n)],
            "hypothesis": [f"h{i}" for i in range(n)],
            "label": [i % 2 for i in range(n)],
            "annotator:ann": [i % 4 for i in range(n)],
        }
    )
    result = import_pairs(engine, "big", df, annotator_scale="levels")
    with write_session(engine) as s:
        run = ScoreRun(name="lev", kind="baseline", model="levenshtein")
        s.add(run)
        s.flush()
        s.add_all([Score(run_id=run.id, pair_id=pid, value=pid / 1000) for pid in range(1, n + 1)])

    def low_bound(dbapi_connection, _record):
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 100)

    event.listen(engine, "connect", low_bound)
    engine.dispose()  # every connection from here on has the bound
    with engine.connect() as connection:  # the bound holds: a list of 300 ids is refused
        with pytest.raises(Exception, match="too many SQL variables"):
            connection.exec_driver_sql(
                f"SELECT count(*) FROM pairs WHERE id IN ({', '.join('?' * n)})", tuple(range(n))
            )
    out = export_frame(engine, [result.dataset_id])
    assert len(out) == n and out["annotator:ann"].tolist() == [i % 4 for i in range(n)]
    assert out["score:lev"].round(3).tolist() == [pid / 1000 for pid in out["pair_id"]]
    assert len(export_frame(engine, [result.dataset_id], limit=50)) == 50  # a preview's few ids still a list


# -- the long export and the wide one's types (issue 14, point 7)


def labelled_campaign(engine):
    """A campaign (2 training pairs, quota 3) answered by two annotators, and an imported annotator."""
    from db.engine import write_session
    from db.models import Label

    frame = pd.DataFrame(sentence_pairs(8), columns=["source", "hypothesis"])
    frame["annotator:imported"] = [0, 1, 2, 3, 4, None, None, None]
    result = import_pairs(engine, "d", frame, annotator_scale="levels")
    cid = camp.create_campaign(engine, "Pilot", [result.dataset_id], quota=3, n_training=2, overlap=2)
    people = []
    for link_name, display, english in (("first link", "Alice", "native"), ("second link", "Bob", "good")):
        aid, _ = annotators.create_annotator(engine, cid, link_name)
        annotators.set_annotator_profile(engine, aid, display, english)
        people.append(aid)
        while (item := serving.serve_next(engine, aid)) is not None:
            serving.record_label(engine, aid, item.position, (item.position % 4), 2.5)
    with write_session(engine) as session:
        n_labels = session.scalar(select(func.count(Label.id)))
    return result.dataset_id, people, n_labels


def test_the_long_export_has_every_label_and_the_wide_one_integers_and_the_pages_names(app_store):
    from db.analysis import labels_long
    from db.engine import read_session
    from db.export import export_frame, export_labels
    from db.models import Assignment, Label
    from pluie_core.export_format import to_csv_bytes, to_jsonl_bytes

    engine = app_store
    dataset_id, (alice, bob), n_labels = labelled_campaign(engine)
    assert n_labels == 5 + 2 * (2 + 3)

    wide = export_frame(engine)
    shown_names = set(labels_long(engine)["annotator"])  # the analysis pages' names
    columns = {c.removeprefix("annotator:") for c in wide.columns if c.startswith("annotator:")}
    assert columns == shown_names == {"Alice", "Bob", "imported"}
    assert str(wide["annotator:Alice"].dtype) == "Int64" and str(wide["majority_level"].dtype) == "Int64"
    csv = to_csv_bytes(wide).decode("utf-8-sig")
    assert ".0," not in csv and ".0\n" not in csv  # 2, never 2.0
    assert "n_training_labels" not in wide.columns
    with_training = export_frame(engine, include_training=True)
    assert with_training["n_training_labels"].sum() == 4  # two training pairs, two annotators

    long = export_labels(engine)
    assert len(long) == n_labels - 4 and not long["is_training"].any()
    long = export_labels(engine, include_training=True)
    assert len(long) == n_labels and long["is_training"].sum() == 4
    with read_session(engine) as session:
        stored = {(label.annotator_id, label.pair_id): label for label in session.scalars(select(Label))}
        on_top = {(a.annotator_id, a.pair_id): a.source_on_top for a in session.scalars(select(Assignment))}
    alice_rows = long[long["annotator"] == "Alice"]
    assert len(alice_rows) == 5
    assert set(alice_rows["display_name"]) == {"Alice"} and set(alice_rows["link_name"]) == {"first link"}
    assert set(alice_rows["campaign"]) == {"Pilot"} and set(alice_rows["english_level"]) == {"native"}
    for row in alice_rows.itertuples():
        label = stored[(alice, row.pair_id)]
        assert row.level == label.level
        assert row.is_training == label.is_training and row.seconds_spent == 2.5
        assert row.sentence_on_top == ("source" if on_top[(alice, row.pair_id)] else "hypothesis")
        assert row.created_at == label.created_at
    imported = long[long["annotator"] == "imported"]
    assert imported["campaign"].isna().all() and imported["sentence_on_top"].isna().all()
    assert imported["level"].tolist() == [0, 1, 2, 3, 4] and str(long["level"].dtype) == "Int64"
    jsonl = to_jsonl_bytes(long).decode()
    assert '"level": 2,' in jsonl and '"is_training": true' in jsonl and '"created_at": "20' in jsonl

    at = open_page("export")
    widget(at.radio, "Layout").set_value("long")
    rerun(at)
    # issue 35: the page opens on the campaign in progress, its labels only (the imported five aside)
    assert f"{n_labels - 4 - 5:,} labels" in texts(at)
    widget(at.selectbox, "Campaign").set_value(0)  # whole datasets: every label
    rerun(at)
    assert list(at.dataframe[0].value.columns) == list(long.columns)
    assert f"{n_labels - 4:,} labels" in texts(at)
