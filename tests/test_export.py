"""The export frame: raw labels per annotator, aggregated and binarised labels, every score."""
import pandas as pd
import pytest

from db.datasets import import_pairs
from db.engine import write_session
from db.export import export_frame
from db.models import Score, ScoreRun


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
        s.add_all([Score(run_id=run.id, pair_id=pid, value=v)
                   for pid, v in zip(range(1, 6), [2.5, -1.0, 0.25, 7.0, -3.5])])
    return engine, result


def test_export_columns_and_aggregation(store):
    engine, _ = store
    out = export_frame(engine)
    assert list(out.columns[:6]) == ["dataset", "pair_id", "external_id", "source", "hypothesis", "label"]
    assert out["pair_id"].tolist() == [1, 2, 3, 4, 5]
    assert {"annotator:ann", "annotator:bob", "annotator:cy", "majority_level", "majority_label",
            "binary_label", "n_labels", "score:pluie-fs"} <= set(out.columns)
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
    pd.testing.assert_frame_equal(first[["pair_id", "annotator:ann", "majority_level", "score:pluie-fs"]],
                                  whole.head(2)[["pair_id", "annotator:ann", "majority_level", "score:pluie-fs"]])
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
    df = pd.DataFrame({"source": [f"s{i}" for i in range(n)], "hypothesis": [f"h{i}" for i in range(n)],
                       "label": [i % 2 for i in range(n)], "annotator:ann": [i % 4 for i in range(n)]})
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
            connection.exec_driver_sql(f"SELECT count(*) FROM pairs WHERE id IN ({', '.join('?' * n)})",
                                       tuple(range(n)))
    out = export_frame(engine, [result.dataset_id])
    assert len(out) == n and out["annotator:ann"].tolist() == [i % 4 for i in range(n)]
    assert out["score:lev"].round(3).tolist() == [pid / 1000 for pid in out["pair_id"]]
    assert len(export_frame(engine, [result.dataset_id], limit=50)) == 50  # a preview's few ids still a list
