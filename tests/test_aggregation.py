"""pluie_core.aggregation: each method's estimates are crowd-kit's on the same labels, Don't know is
missing, gold answers anchor Dawid–Skene and are held out for GLAD / MACE, and a reviewer's decision wins."""
import numpy as np
import pandas as pd
import pytest
from crowdkit.aggregation import GLAD, MACE, DawidSkene

from pluie_core.aggregation import AggregationError, aggregate, crowd_frame
from pluie_core.labels import majority_binary, majority_level
from pluie_core.review import final_labels

FAST = {"glad": {"n_iter": 20}, "mace": {"n_restarts": 2, "n_iter": 20}, "dawid_skene": {}}


def crafted() -> pd.DataFrame:
    """ann and bea always give the truth, cal and dan answer at random; on pair 99 ann says Same meaning
    and the two careless ones Very different, so the majority is Very different."""
    rng = np.random.default_rng(3)
    rows = []
    for p, truth in enumerate([0, 3] * 8):
        rows += [(p, "ann", truth), (p, "bea", truth), (p, "cal", int(rng.integers(2)) * 3),
                 (p, "dan", int(rng.integers(2)) * 3)]
    rows += [(99, "ann", 3), (99, "cal", 0), (99, "dan", 0)]
    return pd.DataFrame(rows, columns=["pair_id", "annotator", "level"])


def five_levels() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = []
    for p in range(12):
        truth = int(rng.integers(4))
        rows += [(p, "ann", truth), (p, "bea", truth if p % 4 else min(truth + 1, 3)),
                 (p, "cal", int(rng.integers(4))), (p, "dan", 4 if p % 3 == 0 else int(rng.integers(4)))]
    return pd.DataFrame(rows, columns=["pair_id", "annotator", "level"])


def test_a_reliable_annotator_outvotes_two_careless_ones():
    labels = crafted()
    majority = aggregate(labels, "majority", "binary")
    assert majority.pairs.at[99, "label"] == 0 and majority.pairs.at[99, "posterior"] == pytest.approx(2 / 3)
    for method in ("dawid_skene", "glad", "mace"):
        result = aggregate(labels, method, "binary", settings=FAST[method])
        assert result.pairs.at[99, "label"] == 1, method
        rel = result.annotators["reliability"]
        assert min(rel["ann"], rel["bea"]) > max(rel["cal"], rel["dan"]), method


def test_dawid_skene_is_crowd_kits_over_the_levels_with_dont_know_missing():
    labels = five_levels()
    result = aggregate(labels, "dawid_skene", "levels")
    data = labels[labels["level"] != 4].rename(columns={"pair_id": "task", "annotator": "worker", "level": "label"})
    model = DawidSkene(n_iter=100, tol=1e-5).fit(data)
    expected = model.probas_.reindex(columns=[0, 1, 2, 3], fill_value=0.0)
    np.testing.assert_allclose(result.probabilities.loc[expected.index].to_numpy(), expected.to_numpy())
    assert (result.pairs["label"].loc[model.labels_.index] == model.labels_).all()
    assert (result.pairs["uncertainty"] == 1 - expected.max(axis=1).reindex(result.pairs.index)).all()
    confusion = model.errors_.loc["ann"]
    assert result.annotators.at["ann", "reliability"] == pytest.approx(
        sum(model.priors_[k] * (confusion.at[k, k] if k in confusion.index else 0) for k in model.priors_.index))
    assert result.pairs.at[0, "n_labels"] == 3  # dan's Don't know is not a label


@pytest.mark.parametrize("method", ["glad", "mace"])
def test_glad_and_mace_are_crowd_kits_over_the_binary_labels(method):
    labels = crafted()
    result = aggregate(labels, method, "binary", settings=FAST[method])
    data = crowd_frame(labels, "binary")
    model = (GLAD(n_iter=20, tol=1e-5) if method == "glad"
             else MACE(n_restarts=2, n_iter=20, method="vb", random_state=0)).fit(data)
    expected = model.probas_.reindex(columns=[0, 1], fill_value=0.0)
    np.testing.assert_allclose(result.probabilities.loc[expected.index].to_numpy(), expected.to_numpy())
    assert (result.pairs["label"].loc[model.labels_.index] == model.labels_).all()
    if method == "mace":
        names = pd.factorize(data["worker"])[1]
        assert result.annotators.at["cal", "reliability"] == pytest.approx(1 - model.spamming_[list(names).index("cal"), 0])
    else:
        a = 1 / (1 + np.exp(-model.alphas_["ann"] * np.exp(model.betas_[data.loc[data.worker == "ann", "task"]])))
        assert result.annotators.at["ann", "reliability"] == pytest.approx(a.mean())


def test_majority_is_todays_rule_and_the_default():
    labels = five_levels()
    result = aggregate(labels)
    assert result.method == "majority" and result.scale == "levels"
    for pair, group in labels.groupby("pair_id"):
        expected = majority_level(group["level"].tolist())
        got = result.pairs.at[pair, "label"]
        assert (pd.isna(got) and expected is None) or got == expected
    binary = aggregate(labels, "majority", "binary")
    for pair, group in labels.groupby("pair_id"):
        expected = majority_binary(group["level"].tolist())
        got = binary.pairs.at[pair, "label"]
        assert (pd.isna(got) and expected is None) or got == expected


def test_gold_anchors_dawid_skene_and_is_held_out_for_the_others():
    labels = crafted()
    gold = pd.Series({99: 0})  # a known answer against ann, the reliable one
    anchored = aggregate(labels, "dawid_skene", "binary", gold=gold)
    assert anchored.anchored and anchored.pairs.at[99, "label"] == 0 and np.isnan(anchored.gold_accuracy)
    held = aggregate(labels, "mace", "binary", gold=gold, settings=FAST["mace"])
    assert not held.anchored and held.pairs.at[99, "label"] == 1 and held.gold_accuracy == 0.0
    assert "gold answers anchor" in anchored.describe() and "MACE over the binarised labels" in held.describe()


def test_a_reviewers_decision_wins_over_any_method():
    result = aggregate(crafted(), "dawid_skene", "levels")
    final = final_labels(result.pairs["label"], pd.Series({99: 1}))
    assert result.pairs.at[99, "label"] == 3
    assert final.at[99, "final_level"] == 1 and final.at[99, "final_source"] == "adjudicated"


def test_unknown_method_or_scale_is_one_sentence():
    with pytest.raises(AggregationError, match="not an aggregation method"):
        aggregate(crafted(), "vote")
    with pytest.raises(AggregationError, match="not a scale"):
        aggregate(crafted(), "majority", "three")
