"""A model's final label never overreaches (issue 36, item 2): Dawid–Skene, GLAD or MACE give a pair's final
level only where their posterior reaches the confidence and the fit has labels enough per annotator; else
the majority rule decides (or none does), a reviewer still wins, and final_source says which rule decided.
The export writes posteriors unrounded; the Export page and the dataset card state both thresholds and how
many pairs each rule decided."""

import numpy as np
import pandas as pd
import pytest

from db.datasets import import_pairs
from db.export import export_frame, export_labels, final_source_counts
from db.publish import publish_dataset
from db.review import adjudicate
from pluie_core.aggregation import (
    DEFAULT_CONFIDENCE,
    DEFAULT_MIN_LABELS,
    MODEL_METHODS,
    AggregationError,
    aggregate,
    final_rule_text,
    model_final_levels,
)
from pluie_core.labels import majority_level
from pluie_core.review import FINAL_SOURCES, final_labels
from tests.test_publish import export_page

ISSUE_PAIR = 99


def issue_labels() -> pd.DataFrame:
    """24 pairs that ann always gets right and bea mostly, cal and dan at random; pair 99 has only cal's
    Slightly similar and dan's Very different. Dawid–Skene says Same meaning there, posterior 0.43 (the
    issue's pair: two annotators who disagree, a model level that neither gave)."""
    rng = np.random.default_rng(17)
    rows = []
    for p, truth in enumerate([0, 1, 2, 3] * 6):
        rows += [
            (p, "ann", truth),
            (p, "bea", truth if rng.random() < 0.85 else int(rng.integers(4))),
            (p, "cal", int(rng.integers(4))),
            (p, "dan", int(rng.integers(4))),
        ]
    rows += [(ISSUE_PAIR, "cal", 1), (ISSUE_PAIR, "dan", 0)]
    return pd.DataFrame(rows, columns=["pair_id", "annotator", "level"])


# ---------------------------------------------------------------- the rule (pluie_core)


def test_the_issues_pair_falls_back_to_the_majority():
    majority = pd.Series({ISSUE_PAIR: majority_level([1, 0])})  # a tie on one side: the lower level, 0
    rule = model_final_levels(
        majority,
        pd.Series({ISSUE_PAIR: 3}),
        pd.Series({ISSUE_PAIR: 0.33}),
        pd.Series({"cal": 40, "dan": 40}),
        "dawid_skene",
    )
    assert (rule.at[ISSUE_PAIR, "level"], rule.at[ISSUE_PAIR, "source"]) == (0, "majority")


def test_a_sure_level_is_the_models_and_a_reviewer_still_wins():
    majority = pd.Series([0.0, 0.0, np.nan, np.nan, 2.0], index=[1, 2, 3, 4, 5])
    levels = pd.Series([3, 3, 1, 2, 2], index=[1, 2, 3, 4, 5])
    posterior = pd.Series([0.95, 0.79, 0.99, 0.5, DEFAULT_CONFIDENCE], index=[1, 2, 3, 4, 5])
    rule = model_final_levels(majority, levels, posterior, [30, 25, 20], "glad")
    assert rule["level"].tolist() == [3, 0, 1, pd.NA, 2]
    assert rule["source"].tolist() == ["glad", "majority", "glad", "none", "glad"]  # at the confidence: taken
    final = final_labels(rule["level"], pd.Series({1: 1.0, 4: 2.0}), rule["source"])
    assert final["final_source"].tolist() == ["adjudicated", "majority", "glad", "adjudicated", "glad"]
    assert final["final_level"].tolist() == [1, 0, 1, 2, 2]
    assert final.at[3, "final_label"] == "Slightly similar" and final.at[3, "final_binary"] == 0
    # the user's thresholds: a lower confidence takes pair 2, a higher one leaves pair 1 to the majority
    assert model_final_levels(majority, levels, posterior, [30], "glad", confidence=0.7).at[2, "source"] == "glad"
    assert model_final_levels(majority, levels, posterior, [30], "glad", confidence=0.99).at[1, "source"] == "majority"


def test_a_fit_with_too_few_labels_per_annotator_decides_no_pair():
    majority = pd.Series([0.0, np.nan, 3.0], index=[1, 2, 3])
    levels, sure = pd.Series([3, 1, 3], index=[1, 2, 3]), pd.Series([1.0, 1.0, 1.0], index=[1, 2, 3])
    few = [DEFAULT_MIN_LABELS - 1, DEFAULT_MIN_LABELS - 1, 500]  # the median annotator has 19 labels
    rule = model_final_levels(majority, levels, sure, few, "mace")
    assert rule["source"].tolist() == ["majority", "none", "majority"] and rule["level"].tolist() == [0, pd.NA, 3]
    assert model_final_levels(majority, levels, sure, few, "mace", min_labels=19)["source"].eq("mace").all()
    # the majority method (or none) is the majority rule throughout
    assert model_final_levels(majority, levels, sure, [500], "majority")["source"].tolist() == [
        "majority",
        "none",
        "majority",
    ]


def test_the_rule_on_a_dawid_skene_fit():
    labels = issue_labels()
    fit = aggregate(labels, "dawid_skene")
    assert fit.pairs.at[ISSUE_PAIR, "label"] == 3 and fit.pairs.at[ISSUE_PAIR, "posterior"] < DEFAULT_CONFIDENCE
    majority = labels.groupby("pair_id")["level"].agg(lambda v: majority_level(list(v))).astype(float)
    rule = model_final_levels(
        majority, fit.pairs["label"], fit.pairs["posterior"], fit.annotators["n_labels"], "dawid_skene"
    )
    assert (rule.at[ISSUE_PAIR, "level"], rule.at[ISSUE_PAIR, "source"]) == (0, "majority")
    assert (rule["source"] == "dawid_skene").sum() == 24


def test_thresholds_are_checked_and_every_source_is_listed():
    one = pd.Series({1: 0.0})
    for bad in ({"confidence": 1.5}, {"confidence": -0.1}, {"min_labels": -1}, {"min_labels": 2.5}):
        with pytest.raises(AggregationError):
            model_final_levels(one, one, one, [30], "dawid_skene", **bad)
    assert set(FINAL_SOURCES) == {"adjudicated", "gold", "majority", "none", *MODEL_METHODS}  # gold: issue 53


def test_the_sentence_names_the_thresholds_and_the_counts():
    counts = {"dawid_skene": 180, "majority": 52, "none": 8, "adjudicated": 3}
    text = final_rule_text(counts, "dawid_skene", 0.8, 20, median=31)
    assert "Dawid–Skene decided 180 pairs (posterior ≥ 0.80), the majority rule 52, 8 undecided, a reviewer 3." in text
    assert "posterior is at least 0.80" in text and "at least 20 labels in the fit (here 31)" in text
    assert "too few" in final_rule_text(counts, "mace", 0.9, 20, median=12)
    assert final_rule_text(counts, None) == "The majority rule decided 52 pairs, 8 undecided, a reviewer 3."
    keyed = final_rule_text({**counts, "gold": 20}, None)
    assert keyed == (
        "The majority rule decided 52 pairs, 8 undecided, a gold key 20 (the campaign's known answer, "
        "final_source gold; never the model's), a reviewer 3."
    )


# ---------------------------------------------------------------- the store (db)


@pytest.fixture
def store(engine):
    """issue_labels in a store, plus one pair nobody labelled."""
    labels = issue_labels()
    wide = labels.pivot(index="pair_id", columns="annotator", values="level")
    wide.loc[1000] = np.nan
    frame = pd.DataFrame(
        {
            "source": [f"s{p}" for p in wide.index],
            "hypothesis": [f"h{p}" for p in wide.index],
            "label": [None] * len(wide),
            "external_id": [str(p) for p in wide.index],
            **{f"annotator:{a}": wide[a].to_numpy() for a in wide.columns},
        }
    )
    import_pairs(engine, "toy", frame, annotator_scale="levels")
    return engine


def test_the_export_writes_unrounded_posteriors_and_counts_each_rule(store):
    engine = store
    wide = export_frame(engine, aggregation="dawid_skene").set_index("external_id")
    posterior = wide["posterior"].dropna()
    assert (posterior != posterior.round(4)).any()  # not rounded to 4 decimals any more
    row = wide.loc[str(ISSUE_PAIR)]
    assert row["aggregated_level"] == 3 and row["posterior"] < DEFAULT_CONFIDENCE
    assert (row["final_level"], row["final_source"], row["final_label"]) == (0, "majority", "Very different")
    assert wide.at["1000", "final_source"] == "none"
    expected = {"dawid_skene": 24, "majority": 1, "none": 1}
    assert wide["final_source"].value_counts().to_dict() == expected
    assert final_source_counts(engine, aggregation="dawid_skene") == expected

    adjudicate(engine, int(wide.at["0", "pair_id"]), 1, "Lena")
    expected = {"dawid_skene": 23, "majority": 1, "none": 1, "adjudicated": 1}
    assert export_frame(engine, aggregation="dawid_skene")["final_source"].value_counts().to_dict() == expected
    assert final_source_counts(engine, aggregation="dawid_skene") == expected
    # the user's thresholds, through the export: a confidence the issue's pair reaches, a minimum no fit does
    low = export_frame(engine, aggregation="dawid_skene", confidence=0.4).set_index("external_id")
    assert (low.at[str(ISSUE_PAIR), "final_level"], low.at[str(ISSUE_PAIR), "final_source"]) == (3, "dawid_skene")
    strict = export_frame(engine, aggregation="dawid_skene", min_labels=100)
    assert "dawid_skene" not in set(strict["final_source"])  # the majority rule decides, or none does (a tie)
    assert (strict["final_source"] == "none").sum() == strict["majority_level"].isna().sum() > 1
    assert (
        final_source_counts(engine, aggregation="dawid_skene", min_labels=100)
        == strict["final_source"].value_counts().to_dict()
    )
    assert final_source_counts(engine) == export_frame(engine)["final_source"].value_counts().to_dict()
    # the long format carries its pair's final label too
    long = export_labels(engine, aggregation="dawid_skene")
    on_issue = long[long["external_id"] == str(ISSUE_PAIR)]
    assert (
        len(on_issue) == 2 and (on_issue["final_source"] == "majority").all() and (on_issue["final_level"] == 0).all()
    )
    assert long.groupby("pair_id")["final_source"].first().value_counts().to_dict() == {
        "dawid_skene": 23,
        "majority": 1,
        "adjudicated": 1,
    }


def test_the_card_states_the_thresholds_and_the_counts(store, tmp_path):
    engine = store
    adjudicate(engine, 1, 1, "Lena")
    result = publish_dataset(
        engine, tmp_path / "out", licence="mit", chunk_size=7, n_boot=20, aggregation="dawid_skene", confidence=0.85
    )
    card = result.card
    assert "Dawid–Skene's level is final where its posterior is at least 0.85" in card
    assert f"at least {DEFAULT_MIN_LABELS} labels in the fit (here 24.5)" in card
    assert "Dawid–Skene decided 23 pairs (posterior ≥ 0.85), the majority rule 1, 1 undecided, a reviewer 1." in card
    for source, n in (("adjudicated", 1), ("dawid_skene", 23), ("majority", 1), ("none", 1)):
        assert f"| {source} | {n:,} |" in card
    assert all(source in card for source in FINAL_SOURCES)  # every value final_source can take is explained
    rows = pd.read_parquet(tmp_path / "out" / "data")
    assert rows["final_source"].value_counts().to_dict() == {
        "dawid_skene": 23,
        "majority": 1,
        "none": 1,
        "adjudicated": 1,
    }


def test_the_export_page_shows_the_thresholds_and_the_counts(store, db_url, monkeypatch, tmp_path):
    at = export_page(db_url, tmp_path, monkeypatch)
    assert not at.exception, at.exception
    assert not at.number_input  # the majority rule only: no thresholds
    at.selectbox(key="export-aggregation-None").set_value("dawid_skene").run()
    assert not at.exception, at.exception
    assert at.number_input(key="export-confidence").value == pytest.approx(DEFAULT_CONFIDENCE)
    assert at.number_input(key="export-min-labels").value == DEFAULT_MIN_LABELS
    said = " ".join(i.value for i in at.info)
    assert "Dawid–Skene decided 24 pairs (posterior ≥ 0.80), the majority rule 1, 1 undecided, a reviewer 0." in said
    assert "at least 20 labels in the fit (here 24.5)" in said
    assert at.dataframe[0].value.set_index("external_id").at[str(ISSUE_PAIR), "final_source"] == "majority"

    at.number_input(key="export-confidence").set_value(0.4).run()
    assert not at.exception, at.exception
    said = " ".join(i.value for i in at.info)
    assert "Dawid–Skene decided 25 pairs (posterior ≥ 0.40), the majority rule 0, 1 undecided" in said
    assert at.dataframe[0].value.set_index("external_id").at[str(ISSUE_PAIR), "final_source"] == "dawid_skene"

    at.selectbox(key="export-aggregation-None").set_value("majority").run()
    assert not at.exception, at.exception
    assert not at.number_input and not any("decided" in i.value for i in at.info)
