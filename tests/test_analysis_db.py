"""db.analysis (reads) and pluie_core.analysis (what the views compute from them) against a real
SQLite store holding real MRPC and BIOSSES pairs."""

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import insert

from db.analysis import add_score_run, analysis_choices, labels_long, pair_detail, pairs_frame, scores_wide
from db.datasets import import_pairs
from db.engine import write_session
from db.models import Annotator, Label
from pluie_core.analysis import (
    Reference,
    agreement_matrix,
    annotator_summary,
    edit_distances,
    label_matrix,
    label_scales,
    reference_labels,
)
from pluie_core.labels import binarise_levels, majority_binary
from pluie_core.stats import StatsError, cohen_kappa, human_vs_model, human_vs_model_table
from tests.analysis_store import ANNOTATORS, load_built_store


@pytest.fixture
def store(engine, built_analysis_store):
    return load_built_store(engine, built_analysis_store)  # build_store(engine), built once per session


def test_labels_long_has_every_imported_label_with_its_annotator(engine, store):
    labels = labels_long(engine)
    mrpc = store["mrpc"]
    expected = {name: int(mrpc[f"annotator:{name}"].notna().sum()) for name in ANNOTATORS}
    got = labels[labels["dataset"] == "MRPC"].groupby("annotator").size().to_dict()
    assert got == expected
    assert (labels[labels["dataset"] == "BIOSSES"].groupby("annotator").size() == 100).all()
    assert labels.loc[labels["annotator"] == "ann4", "english_level"].eq("poor").all()
    # BIOSSES scores are raw values on their own scale, MRPC ones levels of the five-level scale
    assert labels.loc[labels["dataset"] == "BIOSSES", "level"].isna().all()
    assert label_scales(labels) == ["levels", "raw"]


def test_training_labels_are_left_out(engine, store):
    before = len(labels_long(engine))
    with write_session(engine) as session:
        trainee = Annotator(name="trainee")
        session.add(trainee)
        session.flush()
        session.execute(insert(Label), [{"pair_id": 1, "annotator_id": trainee.id, "level": 3, "is_training": True}])
    assert len(labels_long(engine)) == before


def test_annotators_sharing_a_name_get_distinct_keys(engine):
    for name in ("first", "second"):
        import_pairs(
            engine,
            name,
            pd.DataFrame({"source": ["a b"], "hypothesis": ["a c"], "annotator:A": [2]}),
            annotator_scale="levels",
        )
    keys = analysis_choices(engine).annotators["annotator"].tolist()
    assert sorted(keys) == ["A (first)", "A (second)"]
    assert sorted(labels_long(engine)["annotator"]) == ["A (first)", "A (second)"]


def test_scores_wide_holds_each_runs_values_by_pair(engine, store):
    pairs = store["pairs"]
    expected = 1 - edit_distances(pairs)
    wide = scores_wide(engine, [store["lev_run"], store["pluie_run"]])
    assert list(wide.columns) == ["Levenshtein similarity", "PLUIE stand-in"]
    assert np.allclose(wide["Levenshtein similarity"].reindex(expected.index), expected)
    mrpc_ids = pairs.index[pairs["dataset"] == "MRPC"]
    assert set(scores_wide(engine, [store["lev_run"]], [int(pairs.loc[mrpc_ids[0], "dataset_id"])]).index) == set(
        mrpc_ids
    )


def test_edit_distance_is_normalised_levenshtein():
    pairs = pd.DataFrame(
        {"source": ["abc", "same", "kitten"], "hypothesis": ["abd", "same", "sitting"]}, index=[7, 8, 9]
    )
    assert np.allclose(edit_distances(pairs), [1 / 3, 0.0, 3 / 7])


def test_gold_reference_binarises_scored_datasets_at_the_cut(engine, store):
    pairs = pairs_frame(engine)
    labels = labels_long(engine)
    mrpc, biosses = pairs["dataset"] == "MRPC", pairs["dataset"] == "BIOSSES"
    half = reference_labels(pairs, labels, Reference("gold", gold_cut=0.5))
    assert (half[mrpc] == pairs.loc[mrpc, "gold_label"]).all()
    assert (half[biosses] == (pairs.loc[biosses, "gold_label"] >= 2).astype(float)).all()
    three_quarters = reference_labels(pairs, labels, Reference("gold", gold_cut=0.75))
    assert (three_quarters[biosses] == (pairs.loc[biosses, "gold_label"] >= 3).astype(float)).all()
    assert 0 < three_quarters[biosses].sum() < half[biosses].sum()


def test_majority_reference_matches_the_scalar_majority_rule(engine, store):
    pairs = pairs_frame(engine)
    labels = labels_long(engine)
    majority = reference_labels(pairs, labels, Reference("majority"))
    levels = (
        labels.dropna(subset=["level"])
        .groupby("pair_id")["level"]
        .apply(lambda xs: majority_binary(int(x) for x in xs))
    )
    expected = levels.map(lambda v: np.nan if v is None else float(v)).reindex(pairs.index)
    pd.testing.assert_series_equal(majority, expected.rename("reference"), check_names=False)
    assert majority.notna().sum() > 100


def test_one_annotator_reference_is_their_binarised_levels(engine, store):
    pairs = pairs_frame(engine)
    reference = reference_labels(pairs, labels_long(engine), Reference("annotator", "ann2"))
    raw = store["mrpc"]["annotator:ann2"].to_numpy()
    mrpc_ids = pairs.index[pairs["dataset"] == "MRPC"]
    expected = np.where(np.isnan(raw) | (raw == 4), np.nan, (raw >= 2).astype(float))
    assert np.array_equal(reference.reindex(mrpc_ids).to_numpy(), expected, equal_nan=True)


def test_references_that_do_not_exist_say_why(engine, store):
    pairs, labels = pairs_frame(engine), labels_long(engine)
    biosses = pairs[pairs["dataset"] == "BIOSSES"]
    with pytest.raises(StatsError, match="own scale"):
        reference_labels(biosses, labels[labels["dataset"] == "BIOSSES"], Reference("majority"))
    with pytest.raises(StatsError, match="no gold labels"):
        reference_labels(biosses.assign(gold_label=np.nan), labels, Reference("gold"))
    with pytest.raises(StatsError, match="No one has labelled"):
        reference_labels(biosses, labels.iloc[0:0], Reference("majority"))


def test_annotator_summary_kappas_equal_direct_computations(engine, store):
    labels = labels_long(engine)
    mrpc = labels[labels["dataset"] == "MRPC"]
    scores = scores_wide(engine, [store["pluie_run"]])["PLUIE stand-in"]
    matrix = label_matrix(mrpc, "levels")
    versus = human_vs_model_table(binarise_levels(matrix), scores.reindex(matrix.index), 0.0)
    summary = annotator_summary(mrpc, "levels", versus).set_index("annotator")

    others = matrix.drop(columns="ann1").apply(lambda row: majority_binary(int(x) for x in row.dropna()), axis=1)
    others = others.map(lambda v: np.nan if v is None else float(v))
    own = matrix["ann1"].map(lambda v: np.nan if np.isnan(v) or v == 4 else float(v >= 2))
    assert summary.loc["ann1", "kappa_vs_others"] == pytest.approx(cohen_kappa(own, others))
    versus = human_vs_model(own, scores.reindex(matrix.index), 0.0)
    assert summary.loc["ann1", "kappa_vs_model"] == pytest.approx(versus["kappa"])
    assert summary.loc["ann1", "labels"] == int(store["mrpc"]["annotator:ann1"].notna().sum())
    dont_know = store["mrpc"]["annotator:ann3"]
    assert summary.loc["ann3", "dont_know_rate"] == pytest.approx((dont_know == 4).sum() / dont_know.notna().sum())
    seconds = mrpc.loc[mrpc["annotator"] == "ann2", "seconds_spent"].median()
    assert summary.loc["ann2", "median_seconds"] == seconds


def test_annotator_summary_on_a_raw_scale_says_binarised_figures_are_undefined(engine, store):
    labels = labels_long(engine)
    summary = annotator_summary(labels[labels["dataset"] == "BIOSSES"], "raw")
    assert list(summary["annotator"]) == list("ABCDE")
    assert summary["kappa_vs_others"].isna().all() and summary["note"].str.contains("binarisation").all()
    matrix = label_matrix(labels, "raw")
    assert matrix.shape == (100, 5) and matrix.max().max() == 4


def test_pair_detail_has_every_label_and_score(engine, store):
    pairs = store["pairs"]
    pair_id = int(pairs.index[pairs["dataset"] == "BIOSSES"][0])
    detail = pair_detail(engine, pair_id)
    assert detail["pair"]["source"] == pairs.loc[pair_id, "source"]
    assert list(detail["labels"]["annotator"]) == list("ABCDE")
    assert sorted(detail["scores"]["run"]) == ["Levenshtein similarity", "PLUIE stand-in", "levenshtein"]
    assert pair_detail(engine, 10**9) is None


def test_add_score_run_is_never_claimed_by_a_worker(engine):
    import_pairs(engine, "toy", pd.DataFrame({"source": ["a"], "hypothesis": ["b"]}))
    run_id = add_score_run(engine, "toy run", {1: 0.5})
    run = analysis_choices(engine).runs.set_index("id").loc[run_id]
    assert (run["status"], run["n_scores"]) == ("paused", 1)


def test_labels_long_filters_by_dataset_and_annotator(engine, store):
    choices = analysis_choices(engine)
    biosses = int(choices.datasets.set_index("name").loc["BIOSSES", "id"])
    ann1 = int(choices.annotators.set_index("annotator").loc["ann1", "id"])
    assert set(labels_long(engine, dataset_ids=[biosses])["annotator"]) == set("ABCDE")
    only = labels_long(engine, annotator_ids=[ann1])
    assert set(only["annotator"]) == {"ann1"} and len(only) == store["mrpc"]["annotator:ann1"].notna().sum()
    assert labels_long(engine, dataset_ids=[biosses], annotator_ids=[ann1]).empty


def test_agreement_matrix_applies_the_five_level_rules_to_levels_only():
    matrix = pd.DataFrame({"a": [0, 2, 4, np.nan], "b": [1, 3, 3, 4]}, index=[10, 11, 12, 13])
    levels = agreement_matrix(matrix, "levels")
    assert levels.index.tolist() == [10, 11, 12, 13] and list(levels.columns) == ["a", "b"]
    np.testing.assert_array_equal(levels.to_numpy(), [[0, 1], [2, 3], [np.nan, 3], [np.nan, np.nan]])
    binary = agreement_matrix(matrix, "levels", binarised=True)
    np.testing.assert_array_equal(binary.to_numpy(), [[0, 0], [1, 1], [np.nan, 1], [np.nan, np.nan]])
    pd.testing.assert_frame_equal(agreement_matrix(matrix, "raw"), matrix)  # BIOSSES' 4 is a score
    with pytest.raises(StatsError, match="own scale"):
        agreement_matrix(matrix, "raw", binarised=True)


def test_gold_of_datasets_without_a_stated_scale_is_read_without_a_warning(engine):
    """A store read of datasets that state no scale gives label_min / label_max as None (an object
    column); the gold cut compared the labels with it, which warned ("invalid value encountered in
    greater_equal", seen from the pages' read-ahead thread) and went value by value."""
    import warnings

    import_pairs(
        engine,
        "binary",
        pd.DataFrame(
            {
                "source": ["A cat.", "A dog.", "A bird."],
                "hypothesis": ["The cat.", "A car.", "A plane."],
                "label": [1, 0, None],
            }
        ),
    )
    pairs = pairs_frame(engine)
    assert pairs["label_min"].isna().all() and pairs["label_max"].isna().all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        gold = reference_labels(pairs, labels_long(engine), Reference("gold", gold_cut=0.5))
    assert gold.tolist()[:2] == [1.0, 0.0] and np.isnan(gold.tolist()[2])
