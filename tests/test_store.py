"""The store itself: migrations, SQLite settings, the all-or-nothing import, the overview."""

import pandas as pd
import pytest
import sqlalchemy as sa

from db import init_db, read_session
from db.datasets import ImportRejected, datasets_overview, import_pairs, store_totals
from db.engine import write_session
from db.models import Annotator, Label, Pair, Score, ScoreRun, WorkItem


def table_counts(engine):
    with engine.connect() as conn:
        names = [n for n in sa.inspect(engine).get_table_names() if n != "alembic_version"]
        return {n: conn.exec_driver_sql(f"SELECT COUNT(*) FROM {n}").scalar() for n in names}


def frame(rows, **extra):
    df = pd.DataFrame(rows, columns=["source", "hypothesis", "label"])
    for k, v in extra.items():
        df[k] = v
    return df


def test_migrations_create_every_table_and_rerun_is_harmless(db_url):
    engine = init_db(db_url)
    tables = set(sa.inspect(engine).get_table_names())
    assert {
        "datasets",
        "pairs",
        "annotators",
        "labels",
        "score_runs",
        "scores",
        "work_items",
        "workers",
        "campaigns",
        "assignments",
        "alembic_version",
    } <= tables
    import_pairs(engine, "d", frame([("a", "b", 1)]))
    engine.dispose()
    again = init_db(db_url)  # a second start upgrades in place and keeps the data
    assert store_totals(again)["pairs"] == 1
    with again.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar()


def test_sqlite_settings(engine):
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000


def test_url_from_environment_and_config(tmp_path, monkeypatch):
    from db.engine import database_url, default_url

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLUIE_DB_URL", raising=False)
    monkeypatch.delenv("PLUIE_DATA_DIR", raising=False)
    assert database_url() == default_url() == "sqlite:///data/pluie_lab.db"
    (tmp_path / "pluie_lab.toml").write_text('[database]\nurl = "sqlite:///from_config.db"\n')
    assert database_url() == "sqlite:///from_config.db"
    monkeypatch.setenv("PLUIE_DB_URL", "sqlite:///from_env.db")
    assert database_url() == "sqlite:///from_env.db"
    assert database_url("sqlite:///explicit.db") == "sqlite:///explicit.db"


def test_import_stores_pairs_labels_metadata_and_annotators(engine):
    df = frame(
        [("The cat drinks water.", "The cat drinks milk.", 0), ("A b", "A  b c", 1)],
        external_id=["x1", "x2"],
        genre=["news", None],
    )
    df["annotator:A"] = [3, 4]
    df["annotator:B"] = [2.0, None]
    result = import_pairs(engine, "tiny", df, annotator_scale="levels")
    assert (result.n_pairs, result.n_labels, result.annotators) == (2, 3, ["A", "B"])
    with read_session(engine) as s:
        pairs = s.scalars(sa.select(Pair).order_by(Pair.id)).all()
        assert [p.external_id for p in pairs] == ["x1", "x2"]
        assert [p.gold_label for p in pairs] == [0.0, 1.0]
        assert pairs[0].meta == {"genre": "news"} and pairs[1].meta is None
        levels = sorted((a.name, label.level) for label, a in s.execute(sa.select(Label, Annotator).join(Annotator)))
        assert levels == [("A", 3), ("A", 4), ("B", 2)]
        assert all(a.is_external for a in s.scalars(sa.select(Annotator)))


def test_raw_annotator_scale_keeps_values_without_levels(engine):
    df = frame([("a", "b", 2.5)])
    df["annotator:A"] = [4.0]
    import_pairs(engine, "bio", df)
    with read_session(engine) as s:
        label = s.scalars(sa.select(Label)).one()
        assert (label.level, label.value) == (None, 4.0)


def test_a_failing_import_leaves_the_store_untouched(engine):
    import_pairs(engine, "first", frame([("a", "b", 1)]))
    before = table_counts(engine)
    bad = frame([("c", "d", 1), ("e", "f", 0)])
    bad["annotator:A"] = [1, 7]  # 7 is not a level: fails after pairs were inserted in the transaction
    with pytest.raises(ImportRejected, match="Pair 2: A's label 7 is not a level"):
        import_pairs(engine, "second", bad, annotator_scale="levels")
    with pytest.raises(ImportRejected, match="already exists"):
        import_pairs(engine, "first", frame([("x", "y", 1)]))
    with pytest.raises(ImportRejected, match="Pair 1: the hypothesis is empty"):
        import_pairs(engine, "third", frame([("x", "  ", 1)]))
    with pytest.raises(ImportRejected, match="name"):
        import_pairs(engine, " ", frame([("x", "y", 1)]))
    assert table_counts(engine) == before


def test_duplicates_are_skipped_when_adding_to_a_dataset(engine):
    import_pairs(engine, "d", frame([("a", "b", 1), ("c", "d", 0)]))
    result = import_pairs(engine, "d", frame([("a", "b", 1), ("e", "f", 0), ("e", "f", 0)]), append=True)
    assert (result.n_pairs, result.n_skipped_duplicates) == (1, 2)
    assert store_totals(engine)["pairs"] == 3


def test_import_queues_work_for_active_runs_in_scope(engine):
    with write_session(engine) as s:
        s.add_all(
            [
                ScoreRun(name="lev", kind="baseline", model="levenshtein", status="active"),
                ScoreRun(name="stopped", kind="baseline", model="bleu", status="cancelled"),
            ]
        )
    result = import_pairs(engine, "d", frame([("a", "b", 1), ("c", "d", 0)]))
    assert result.n_queued == 2
    with read_session(engine) as s:
        items = s.execute(sa.select(ScoreRun.name, WorkItem.status).join(ScoreRun)).all()
    assert sorted(items) == [("lev", "pending"), ("lev", "pending")]


def test_overview_counts(engine):
    with write_session(engine) as s:
        s.add_all(
            [
                ScoreRun(name="lev", kind="baseline", model="levenshtein", status="active"),
                ScoreRun(name="gone", kind="baseline", model="bleu", status="active"),
            ]
        )
    import_pairs(engine, "d1", frame([("a", "b", 1), ("c", "d", None)]))
    with write_session(engine) as s:
        first_pair = s.scalars(sa.select(Pair.id).order_by(Pair.id)).first()
        s.add_all([Score(run_id=1, pair_id=first_pair, value=0.5), Score(run_id=2, pair_id=first_pair, value=0.1)])
        s.get(ScoreRun, 2).status = "cancelled"  # a cancelled run counts neither way
    df = frame([("e", "f", None)])
    df["annotator:A"] = [2]
    import_pairs(engine, "d2", df, annotator_scale="levels")
    overview = datasets_overview(engine).set_index("dataset")
    assert overview.loc["d1", "pairs"] == 2 and overview.loc["d1", "gold labels"] == 1
    assert (overview.loc["d1", "scores"], overview.loc["d1", "scores queued"]) == (1, 2)
    assert (overview.loc["d2", "scores"], overview.loc["d2", "scores queued"]) == (0, 1)
    assert overview.loc["d2", "labelled pairs"] == 1 and overview.loc["d2", "labels"] == 1
    assert store_totals(engine) == {"datasets": 2, "pairs": 3, "labels": 1, "scores": 2}


def test_deleting_a_dataset_cascades(engine):
    from db.datasets import delete_dataset

    df = frame([("a", "b", 1)])
    df["annotator:A"] = [2]
    result = import_pairs(engine, "d", df, annotator_scale="levels")
    delete_dataset(engine, result.dataset_id)
    counts = table_counts(engine)
    assert counts["pairs"] == counts["labels"] == counts["annotators"] == 0


def test_a_database_of_an_older_release_is_upgraded_in_place_with_its_data(db_url):
    from alembic.script import ScriptDirectory

    from db.engine import alembic_config, make_engine, migrate

    old = make_engine(db_url)
    migrate(old, "0001")  # the schema as the first release left it
    with old.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO datasets (name, description, source_format, created_at) VALUES ('kept', '', 'csv', '2026-01-01')"
        )
        # a pair three people labelled 1, 3, 3: reviewable after the upgrade, majority 3 until someone decides
        conn.exec_driver_sql("INSERT INTO pairs (dataset_id, source, hypothesis, text_hash) VALUES (1, 'a', 'b', 'h')")
        for name, level in (("p", 1), ("q", 3), ("r", 3)):
            conn.exec_driver_sql(
                f"INSERT INTO annotators (name, is_external, created_at) VALUES ('{name}', 1, '2026-01-01')"
            )
            conn.exec_driver_sql(
                "INSERT INTO labels (pair_id, annotator_id, level, is_training, created_at, updated_at) "
                f"VALUES (1, (SELECT id FROM annotators WHERE name = '{name}'), {level}, 0, "
                "'2026-01-01', '2026-01-01')"
            )
    assert "campaign_pairs" not in sa.inspect(old).get_table_names()
    old.dispose()

    engine = init_db(db_url)  # what the app does at start
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == head != "0001"
        assert conn.exec_driver_sql("SELECT name FROM datasets").scalars().all() == ["kept"]
    assert "campaign_pairs" in sa.inspect(engine).get_table_names()
    # issue 11 (migration 0008): decisions in a table of their own; the old labels stay as they were
    from db.export import export_frame
    from db.review import adjudicate, review_queue

    assert "adjudications" in sa.inspect(engine).get_table_names()
    assert review_queue(engine).index.tolist() == [1]
    row = export_frame(engine).iloc[0]
    assert (row["final_level"], row["final_source"]) == (3, "majority")
    adjudicate(engine, 1, 2, "lead", "kept after the upgrade")
    row = export_frame(engine).iloc[0]
    assert (row["final_level"], row["final_source"], row["majority_level"]) == (2, "adjudicated", 3)
    with engine.connect() as conn:
        assert sorted(conn.exec_driver_sql("SELECT level FROM labels").scalars()) == [1, 3, 3]


def test_a_campaign_of_the_previous_release_keeps_its_queue_and_gets_no_gold_checks(db_url):
    """Migration 0009 (quality checks) on a store left at 0008 (the release before it): the campaign, its annotator and their
    assignment stay; the campaign has no gold checks and the default flag settings."""

    from db import serving
    from db.engine import make_engine, migrate
    from db.models import Assignment, Campaign

    old = make_engine(db_url)
    migrate(old, "0008")
    with old.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO datasets (id, name, description, source_format, created_at) "
            "VALUES (1, 'kept', '', 'csv', '2026-01-01')"
        )
        for i in (1, 2):
            conn.exec_driver_sql(
                f"INSERT INTO pairs (id, dataset_id, source, hypothesis, text_hash) "
                f"VALUES ({i}, 1, 's{i}', 'h{i}', 'x{i}')"
            )
        conn.exec_driver_sql(
            "INSERT INTO campaigns (id, name, quota, overlap, n_training, guidelines, pair_order, "
            "seed, active, distribution, created_at) VALUES (1, 'old', 2, 1, 0, '', 'random', 0, 1, "
            "'share', '2026-01-01')"
        )
        conn.exec_driver_sql("INSERT INTO campaign_datasets VALUES (1, 1)")
        conn.exec_driver_sql(
            "INSERT INTO campaign_pairs (campaign_id, pair_id, rank, n_assigned) VALUES (1, 1, 0, 1), (1, 2, 1, 0)"
        )
        conn.exec_driver_sql(
            "INSERT INTO annotators (id, name, campaign_id, is_external, created_at) "
            "VALUES (1, 'ann', 1, 0, '2026-01-01')"
        )
        conn.exec_driver_sql(
            "INSERT INTO assignments (campaign_id, annotator_id, pair_id, position, source_on_top, "
            "served_at) VALUES (1, 1, 1, 0, 1, '2026-01-01')"
        )
    assert "gold_pairs" not in sa.inspect(old).get_table_names()
    old.dispose()

    engine = init_db(db_url)
    assert "gold_pairs" in sa.inspect(engine).get_table_names()
    with read_session(engine) as s:
        campaign = s.get(Campaign, 1)
        assert (campaign.gold_rate, campaign.gold_min_accuracy, campaign.streak_length) == (0, 0.7, 10)
        assert campaign.fast_fraction == pytest.approx(1 / 3)
        assert s.scalars(sa.select(Assignment.is_gold)).all() == [False]
    item = serving.serve_next(engine, 1)  # the reserved pair resumes, then the queue goes on as before
    assert (item.pair_id, item.out_of) == (1, 2)
    serving.record_label(engine, 1, item.position, 3, 1.0)
    assert serving.serve_next(engine, 1).pair_id == 2


def test_overview_counts_interleaved_datasets_and_leaves_training_labels_out(engine):
    """Issue 20: the overview counts from the pair_id indexes over each dataset's run of ids; a dataset
    added to after another's import (ids interleaved) and training-trial labels (one pair with only a
    training label, one with both) give the same figures as counting every label row by row."""
    with write_session(engine) as s:
        s.add(ScoreRun(name="lev", kind="baseline", model="levenshtein", status="active"))
    import_pairs(engine, "a", frame([("a1", "x", 1), ("a2", "x", None), ("a3", "x", 0)]))
    import_pairs(engine, "b", frame([("b1", "x", 1), ("b2", "x", 0)]))
    import_pairs(engine, "a", frame([("a4", "x", 1)]), append=True)  # a's ids: 1-3 and 6
    import_pairs(engine, "c", frame([("c1", "x", None), ("c2", "x", None), ("c3", "x", 1)]))
    with write_session(engine) as s:
        ids = {src: pid for src, pid in s.execute(sa.select(Pair.source, Pair.id))}
        people = [Annotator(name=n) for n in ("p", "q")]
        s.add_all(people)
        s.flush()
        p, q = (a.id for a in people)
        s.add_all(
            [
                Label(pair_id=ids[pair], annotator_id=who, level=1, is_training=training)
                for pair, who, training in [
                    ("a1", p, False),
                    ("a1", q, False),
                    ("a4", p, False),
                    ("a2", q, True),
                    ("b1", p, True),
                    ("b1", q, False),
                    ("c1", p, False),
                    ("c3", p, True),
                    ("c3", q, True),
                ]
            ]
        )
        s.add_all([Score(run_id=1, pair_id=ids[pair], value=0.1) for pair in ("a3", "a4", "b2", "c2")])
    overview = datasets_overview(engine).set_index("dataset")
    figures = overview[["pairs", "gold labels", "labelled pairs", "labels", "scores", "scores queued"]]
    assert figures.loc["a"].tolist() == [4, 3, 2, 3, 2, 4]
    assert figures.loc["b"].tolist() == [2, 2, 1, 1, 1, 2]
    assert figures.loc["c"].tolist() == [3, 1, 1, 1, 1, 3]
    assert store_totals(engine) == {"datasets": 3, "pairs": 9, "labels": 5, "scores": 4}


def test_campaigns_of_an_older_store_keep_how_they_served(db_url):
    import sqlalchemy as sa

    from db import init_db
    from db.engine import make_engine, migrate

    old = make_engine(db_url)
    migrate(old, "0002")
    with old.begin() as conn:
        for i, order in enumerate(("random", "least_labelled", "informative")):
            conn.exec_driver_sql(
                "INSERT INTO campaigns (id, name, quota, overlap, n_training, guidelines, pair_order, seed, active, "
                f"created_at) VALUES ({i + 1}, 'c{i}', 5, 2, 0, '', '{order}', 0, 1, '2026-01-01')"
            )
    old.dispose()
    engine = init_db(db_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT pair_order, distribution, selection FROM campaigns ORDER BY id")).all()
    assert [tuple(r) for r in rows] == [
        ("random", "overlap", None),
        ("least_labelled", "share", None),
        ("informative", "overlap", None),
    ]
    engine.dispose()
