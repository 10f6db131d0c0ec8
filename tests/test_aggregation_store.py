"""The aggregation choice in the store: the export's posterior and uncertainty columns (wide and long),
the method's level as the final one unless a reviewer decided, and Review's queue ordered by uncertainty."""

import numpy as np
import pandas as pd
import pytest

from db.datasets import import_pairs
from db.export import export_frame, export_labels, pair_aggregation
from db.review import adjudicate, review_queue
from pluie_core.aggregation import AggregationError
from tests.test_publish import export_page


@pytest.fixture
def store(engine):
    """ann and bea always give the truth, cal and dan answer at random; on the last pair ann says Same
    meaning and the careless two Very different (majority: Very different)."""
    rng = np.random.default_rng(3)
    truth = [0, 3] * 8
    columns = {
        "ann": truth + [3],
        "bea": truth + [None],
        "cal": [int(rng.integers(2)) * 3 for _ in truth] + [0],
        "dan": [int(rng.integers(2)) * 3 for _ in truth] + [0],
    }
    n = len(truth) + 1
    df = pd.DataFrame(
        {
            "source": [f"s{i}" for i in range(n)],
            "hypothesis": [f"h{i}" for i in range(n)],
            "label": [None] * n,
            **{f"annotator:{k}": v for k, v in columns.items()},
        }
    )
    import_pairs(engine, "toy", df, annotator_scale="levels")
    return engine


def test_the_export_carries_the_methods_posterior_and_a_reviewer_still_wins(store):
    engine = store
    plain = export_frame(engine)
    assert "posterior" not in plain.columns  # as today unless a method is chosen
    last = int(plain["pair_id"].max())
    assert plain.set_index("pair_id").at[last, "final_level"] == 0

    wide = export_frame(engine, aggregation="dawid_skene").set_index("pair_id")
    row = wide.loc[last]
    assert row["aggregation"] == "dawid_skene" and row["aggregated_level"] == 3 and row["majority_level"] == 0
    # 17 pairs: the median annotator has fewer labels in the fit than DEFAULT_MIN_LABELS (20), so the
    # majority rule decides; with the minimum lowered, the model's sure level is final
    assert (row["final_level"], row["final_source"]) == (0, "majority")
    row = export_frame(engine, aggregation="dawid_skene", min_labels=10).set_index("pair_id").loc[last]
    assert row["final_level"] == 3 and row["final_source"] == "dawid_skene"
    assert row["posterior"] > 0.9 and row["uncertainty"] == pytest.approx(1 - row["posterior"], abs=1e-3)
    # the same figures as the library on the same labels
    fitted = pair_aggregation(engine, method="dawid_skene").pairs
    assert fitted.at[last, "posterior"] == pytest.approx(row["posterior"], abs=1e-4)

    majority = export_frame(engine, aggregation="majority").set_index("pair_id")
    assert majority.at[last, "posterior"] == pytest.approx(2 / 3, abs=1e-4)
    assert majority.at[last, "final_source"] == "majority"

    long = export_labels(engine, aggregation="dawid_skene")
    on_last = long[long["pair_id"] == last]
    assert len(on_last) == 3 and (on_last["aggregated_level"] == 3).all()
    assert on_last["posterior"].iloc[0] == pytest.approx(row["posterior"])

    adjudicate(engine, last, 1, "Lena")
    decided = export_frame(engine, aggregation="dawid_skene").set_index("pair_id").loc[last]
    assert decided["final_level"] == 1 and decided["final_source"] == "adjudicated"
    assert decided["aggregated_level"] == 3
    with pytest.raises(AggregationError):
        export_frame(engine, aggregation="vote")


def test_review_orders_the_queue_by_uncertainty(store):
    engine = store
    plain = review_queue(engine, show="all")
    assert "uncertainty" not in plain.columns
    queue = review_queue(engine, show="all", aggregation="majority")
    assert set(queue.index) == set(plain.index)
    assert queue["uncertainty"].is_monotonic_decreasing
    # a pair split 2-2 across the boundary is the least certain under majority
    assert queue["uncertainty"].iloc[0] == pytest.approx(0.5)


def test_the_published_folder_carries_the_method_fitted_once_and_the_card_names_it(store, tmp_path):
    from db.publish import publish_dataset

    engine = store
    result = publish_dataset(
        engine, tmp_path / "out", licence="mit", chunk_size=5, n_boot=20, aggregation="dawid_skene"
    )
    rows = pd.read_parquet(tmp_path / "out" / "data").set_index("pair_id")
    whole = export_frame(engine, aggregation="dawid_skene").set_index("pair_id")
    # fitted on every label, not per chunk of 5 pairs: the same posteriors as the export in one piece
    np.testing.assert_allclose(rows["posterior"].to_numpy(), whole.loc[rows.index, "posterior"].to_numpy())
    assert rows["final_source"].isin(["dawid_skene", "adjudicated", "majority", "none"]).all()
    assert "Dawid–Skene over the five levels (n_iter=100, tol=1e-05); annotator reliability" in result.card
    assert "| dawid_skene |" in result.card and "`posterior`" in result.card


def test_the_export_page_offers_the_methods(store, db_url, monkeypatch, tmp_path):
    at = export_page(db_url, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert "posterior" not in at.dataframe[0].value.columns
    at.selectbox(key="export-aggregation-None").set_value("dawid_skene").run()
    assert not at.exception, at.exception
    shown = at.dataframe[0].value
    assert {"aggregation", "aggregated_level", "posterior", "uncertainty"} <= set(shown.columns)
    assert (shown["aggregation"] == "dawid_skene").all()
    next(r for r in at.radio if r.label == "Layout").set_value("long").run()
    assert not at.exception, at.exception
    long = at.dataframe[0].value
    assert (
        "level_name" in long.columns
        and (long["aggregation"] == "dawid_skene").all()
        and long["posterior"].notna().all()
    )
