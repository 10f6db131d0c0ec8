"""pluie_core.stats against reference libraries, published worked examples and brute force."""

import itertools
import warnings

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
    roc_auc_score,
)

from pluie_core import stats as S
from pluie_core.labels import binarise, binarise_levels, majority_binary, ordinal_levels
from pluie_core.stats import StatsError, StatsWarning, reliability
from tests.paths import DATASETS

NaN = np.nan


def two_annotators(seed=0, n=300):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n)
    a = np.clip(truth + rng.integers(-1, 2, n), 0, 3).astype(float)
    b = np.clip(truth + rng.integers(-1, 2, n), 0, 3).astype(float)
    return a, b


def weighted_kappa_by_hand(a, b, categories, power):
    """Cohen (1968) weighted κ from its definition, independent of sklearn."""
    index = {c: i for i, c in enumerate(categories)}
    observed = np.zeros((len(categories), len(categories)))
    for x, y in zip(a, b):
        observed[index[x], index[y]] += 1
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    values = np.asarray(categories, dtype=float)
    weights = np.abs(values[:, None] - values[None, :]) ** power
    return 1 - (weights * observed).sum() / (weights * expected).sum()


# --------------------------------------------------------------------------- label matrices


def test_levels_to_matrix_pivots_long_labels_and_keeps_the_last_duplicate():
    long = pd.DataFrame(
        {
            "pair_id": [1, 1, 2, 3, 3],
            "annotator": ["ann", "bob", "ann", "bob", "bob"],
            "level": [3, 2, 4, 0, 1],
        }
    )
    matrix = S.levels_to_matrix(long)
    assert list(matrix.index) == [1, 2, 3] and list(matrix.columns) == ["ann", "bob"]
    assert matrix.loc[1, "ann"] == 3 and matrix.loc[1, "bob"] == 2
    assert matrix.loc[2, "ann"] == 4 and np.isnan(matrix.loc[2, "bob"])
    assert matrix.loc[3, "bob"] == 1  # the later of the two labels
    with pytest.raises(StatsError, match="no column 'level'"):
        S.levels_to_matrix(long.drop(columns="level"))


def test_levels_to_matrix_equals_pandas_pivot_on_many_unsorted_labels_with_repeats():
    """levels_to_matrix writes the cells itself (pandas' pivot took 2 s at 3,000,000 labels): the
    table must be pivot's, index, columns, their names and order included, the last repeat winning."""
    rng = np.random.default_rng(2)
    n = 20000
    long = pd.DataFrame(
        {
            "pair_id": rng.integers(0, 6000, n) * 7 + 3,
            "annotator": pd.array(rng.choice(["zoé", "ann", "Bob", "b0b", "ann2"], n), dtype="str"),
            "level": rng.integers(0, 5, n).astype(float),
        }
    )
    long.loc[rng.random(n) < 0.05, "level"] = NaN
    expected = (
        long.drop_duplicates(["pair_id", "annotator"], keep="last")
        .pivot(index="pair_id", columns="annotator", values="level")
        .astype(float)
    )
    matrix = S.levels_to_matrix(long)
    assert long.duplicated(["pair_id", "annotator"]).sum() > 1000  # repeats are there to be resolved
    pd.testing.assert_frame_equal(matrix, expected, check_index_type=False, check_column_type=False)
    assert matrix.index.name == "pair_id" and matrix.columns.name == "annotator"
    assert list(matrix.columns) == sorted(set(long["annotator"]))


def test_krippendorff_alpha_ci_point_estimate_is_the_librarys_alpha():
    """krippendorff_alpha_ci sums over the distinct rows of value counts (krippendorff.alpha took 0.7 s
    a level at 1,000,000 items): its α must be the library's on the same data, every level."""
    rng = np.random.default_rng(9)
    truth = rng.integers(0, 4, 3000)
    data = np.clip(truth[None, :] + rng.integers(-1, 2, (6, 3000)), 0, 3).astype(float)
    data[rng.random(data.shape) < 0.5] = NaN
    for level in ("nominal", "ordinal", "interval"):
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert S.krippendorff_alpha_ci(data, level, n_boot=50)["alpha"] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("high", [3, 20, 100000])
def test_distinct_rows_are_numpys_unique_rows_in_numpys_order(high):
    """The bootstrap draws over the distinct rows in their order, so that order is np.unique's: the
    same seed gives the same interval as before. Counts too large to pack in one number fall back."""
    rng = np.random.default_rng(1)
    counts = rng.integers(0, high + 1, (5000, 6))
    counts[::3] = counts[0]
    patterns, frequency = reliability._distinct_rows(counts)
    expected, expected_frequency = np.unique(counts, axis=0, return_counts=True)
    assert np.array_equal(patterns, expected) and np.array_equal(frequency, expected_frequency)


def test_binarise_levels_agrees_with_labels_binarise():
    levels = pd.DataFrame([[0, 1, 2], [3, 4, NaN]], columns=["a", "b", "c"])
    binary = binarise_levels(levels)
    assert list(binary.columns) == ["a", "b", "c"]
    for value, expected in zip(levels.to_numpy().ravel(), binary.to_numpy().ravel()):
        reference = binarise(None if np.isnan(value) else int(value))
        assert (np.isnan(expected) and reference is None) or expected == reference
    with pytest.raises(ValueError, match="levels of the scale"):
        binarise_levels(np.array([[7.0]]))
    np.testing.assert_array_equal(ordinal_levels([0, 4, NaN, 3]), [0, NaN, NaN, 3])


def test_binarise_matrix_cuts_plain_values():
    # BIOSSES-like 0-4 scores: 4 is the highest score, not "Don't know"
    scores = pd.Series([0.0, 1.5, 2.0, 4.0, NaN], index=list("vwxyz"), name="A")
    binary = S.binarise_matrix(scores, cut=2)
    assert binary.index.tolist() == list("vwxyz") and binary.name == "A"
    np.testing.assert_array_equal(binary.to_numpy(), [0, 0, 1, 1, NaN])
    np.testing.assert_array_equal(S.binarise_matrix(np.array([[7.0, -1.0]]), cut=5), [[1, 0]])


def test_majority_binary_vector_agrees_with_labels_majority_binary():
    rng = np.random.default_rng(3)
    levels = rng.integers(0, 5, (200, 4)).astype(float)
    levels[rng.random(levels.shape) < 0.3] = NaN
    majority = S.majority_binary_vector(binarise_levels(levels)).to_numpy()
    for row, value in zip(levels, majority):
        reference = majority_binary([None if np.isnan(x) else int(x) for x in row])
        assert (np.isnan(value) and reference is None) or value == reference


def test_category_counts_counts_each_value_present_or_the_given_categories():
    matrix = pd.DataFrame([[0, 0, 3], [4, 2, NaN]], index=["p1", "p2"])
    counts = S.category_counts(matrix)  # plain values: 4 is a category like any other
    assert counts.columns.tolist() == [0, 2, 3, 4]
    assert counts.loc["p1"].tolist() == [2, 0, 1, 0]
    assert counts.loc["p2"].tolist() == [0, 1, 0, 1]
    given = S.category_counts(ordinal_levels(matrix), (0, 1, 2, 3))  # the five-level scale: Don't know left out
    assert given.loc["p1"].tolist() == [2, 0, 0, 1]
    assert given.loc["p2"].tolist() == [0, 0, 1, 0]


# --------------------------------------------------------------------------- agreement


def test_percent_agreement_drops_missing_values():
    a = [0, 1, 2, 3, 4, NaN, 2]
    b = [0, 1, 3, 3, 4, 2, NaN]
    assert S.percent_agreement(a, b) == pytest.approx(4 / 5)  # plain values: 4 is a label
    assert S.percent_agreement(ordinal_levels(a), ordinal_levels(b)) == pytest.approx(3 / 4)  # Don't know missing


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_sklearn(weights):
    a, b = two_annotators()
    expected = cohen_kappa_score(a.astype(int), b.astype(int), weights=weights)
    assert S.cohen_kappa(a, b, weights=weights) == pytest.approx(expected)


@pytest.mark.parametrize("weights, power", [("linear", 1), ("quadratic", 2)])
def test_weighted_kappa_measures_distance_on_the_scale_even_with_an_unused_level(weights, power):
    # nobody used "Slightly similar" (1): 0 and 2 must still be two steps apart
    a = [0, 0, 2, 2, 3, 3, 0, 2]
    b = [0, 2, 2, 3, 3, 0, 0, 2]
    expected = weighted_kappa_by_hand(a, b, [0, 1, 2, 3], power)
    assert S.cohen_kappa(a, b, weights=weights) == pytest.approx(expected)


def test_cohen_kappa_takes_plain_values_and_the_scale_drops_dont_know():
    a, b = two_annotators(seed=1)
    a_with_dk, b_with_dk = a.copy(), b.copy()
    a_with_dk[::7], b_with_dk[3::11] = 4, 4
    kept = (a_with_dk != 4) & (b_with_dk != 4)
    expected = cohen_kappa_score(a[kept].astype(int), b[kept].astype(int))
    assert S.cohen_kappa(ordinal_levels(a_with_dk), ordinal_levels(b_with_dk)) == pytest.approx(expected)
    plain = cohen_kappa_score(a_with_dk.astype(int), b_with_dk.astype(int))
    assert S.cohen_kappa(a_with_dk, b_with_dk) == pytest.approx(plain)
    with pytest.raises(StatsError, match="whole numbers"):
        S.cohen_kappa([0.5, 1, 2], [1, 1, 2])


def test_cohen_kappa_on_binarised_labels_matches_sklearn():
    a, b = two_annotators(seed=2)
    ba, bb = binarise_levels(a), binarise_levels(b)
    assert S.cohen_kappa(ba, bb) == pytest.approx(cohen_kappa_score(ba.astype(int), bb.astype(int)))


def test_cohen_kappa_user_errors_are_explained():
    with pytest.raises(StatsError, match="undefined"):
        S.cohen_kappa([3, 3, 3], [3, 3, 3])
    with pytest.raises(StatsError, match="no labelled item in common"):
        S.cohen_kappa([3, NaN], [NaN, 2])
    with pytest.raises(StatsError, match="same length"):
        S.cohen_kappa([1, 2], [1])
    with pytest.raises(StatsError, match="weighting"):
        S.cohen_kappa([0, 1], [1, 0], weights="cubic")


def test_pairwise_kappa_matches_sklearn_on_each_pair_of_annotators():
    rng = np.random.default_rng(4)
    a, b = two_annotators(seed=4, n=120)
    c = np.clip(a + rng.integers(-1, 2, 120), 0, 4)
    labels = pd.DataFrame({"ann": a, "bob": b, "cid": c})
    labels.iloc[::5, 0] = NaN
    labels.iloc[::3, 2] = NaN
    labels["dee"] = NaN
    labels.loc[:3, ["bob", "dee"]] = 2.0  # bob and dee share 4 items, all "Mostly similar": κ undefined
    result = S.pairwise_kappa(ordinal_levels(labels), weights="linear")
    for x, y in (("ann", "bob"), ("ann", "cid"), ("bob", "cid")):
        values = labels[[x, y]].replace(4, NaN).dropna().astype(int)
        expected = cohen_kappa_score(values[x], values[y], weights="linear", labels=[0, 1, 2, 3])
        assert result.kappa.loc[x, y] == pytest.approx(expected)
        assert result.kappa.loc[y, x] == pytest.approx(expected)
        assert result.n_shared.loc[x, y] == len(values)  # "Don't know" is not a shared label
    assert result.n_shared.loc["ann", "ann"] == labels["ann"].replace(4, NaN).notna().sum()
    assert np.isnan(result.kappa.loc["ann", "ann"])
    row = result.table.query("annotator_a == 'bob' and annotator_b == 'dee'").iloc[0]
    assert np.isnan(row["kappa"]) and "undefined" in row["note"] and row["n_shared"] == 4
    assert len(result.table) == 6


def test_fleiss_kappa_reproduces_the_worked_example_of_fleiss_1971():
    # the 10 items x 5 categories, 14 raters example (Wikipedia "Fleiss' kappa"): κ = 0.210
    counts = [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
    assert S.fleiss_kappa(counts) == pytest.approx(0.2099, abs=5e-4)
    # an item seen by a single rater carries no agreement and changes nothing
    assert S.fleiss_kappa(counts + [[0, 1, 0, 0, 0]]) == pytest.approx(S.fleiss_kappa(counts))


def test_fleiss_kappa_with_two_raters_is_scotts_pi():
    # with two raters Fleiss' κ reduces to Scott's π (Fleiss 1971), computed here from its definition
    a, b = two_annotators(seed=5, n=200)
    observed = np.mean(a == b)
    pooled = np.bincount(np.concatenate([a, b]).astype(int), minlength=4) / (2 * len(a))
    pi = (observed - (pooled**2).sum()) / (1 - (pooled**2).sum())
    matrix = pd.DataFrame({"a": a, "b": b})
    assert S.fleiss_kappa(S.category_counts(matrix)) == pytest.approx(pi)


def test_fleiss_kappa_user_errors():
    with pytest.raises(StatsError, match="same label"):
        S.fleiss_kappa([[3, 0], [2, 0]])
    with pytest.raises(StatsError, match="two or more"):
        S.fleiss_kappa([[1, 0], [0, 1]])
    with pytest.raises(StatsError, match="whole, non-negative"):
        S.fleiss_kappa([[1.5, 1]])
    # no value at all (every label Don't know): no category to count, said as such
    counts = S.category_counts(pd.DataFrame({"a": [NaN, NaN], "b": [NaN, NaN]}))
    assert counts.shape == (2, 0)
    with pytest.raises(StatsError, match="two or more"):
        S.fleiss_kappa(counts)


# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", 4 observers x 12 units, values 1-5
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NaN, NaN, NaN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NaN, 3],
    [NaN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NaN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NaN],
]


@pytest.mark.parametrize("level, published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_alpha_reproduces_the_published_example(level, published):
    # values 1-5 here are not our scale: the plain function reads 4 as the value 4
    alpha = S.krippendorff_alpha(KRIPPENDORFF_2011, level)
    assert alpha == pytest.approx(published, abs=5e-4)
    assert S.krippendorff_alpha_ci(KRIPPENDORFF_2011, level, n_boot=20)["alpha"] == pytest.approx(published, abs=5e-4)


def test_krippendorff_alpha_on_five_level_labels_leaves_dont_know_out():
    data = np.array(KRIPPENDORFF_2011) - 1  # 0-4: read as levels of our scale, 4 is "Don't know"
    without = np.where(data == 4, NaN, data)
    for level in ("nominal", "ordinal"):
        expected = krippendorff.alpha(without, level_of_measurement=level, value_domain=[0, 1, 2, 3])
        assert S.krippendorff_alpha(ordinal_levels(data), level) == pytest.approx(expected)
        assert S.krippendorff_alpha(data, level) == pytest.approx(krippendorff.alpha(data, level_of_measurement=level))


def test_krippendorff_alpha_user_errors():
    with pytest.raises(StatsError, match="no labels"):
        S.krippendorff_alpha([[NaN, NaN], [NaN, NaN]])
    with pytest.raises(StatsError, match="same value"):
        S.krippendorff_alpha([[1, 1, 1], [1, 1, NaN]])
    with pytest.raises(StatsError, match="two or more"):
        S.krippendorff_alpha([[0, NaN], [NaN, 1]])
    with pytest.raises(StatsError, match="level of measurement"):
        S.krippendorff_alpha(KRIPPENDORFF_2011, "ratio-ish")


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_vectorised_bootstrap_alpha_equals_the_library_on_each_resample(level):
    # the bootstrap weights distinct items; the same items repeated must give krippendorff's α
    rng = np.random.default_rng(6)
    data = rng.integers(0, 4, (4, 60)).astype(float)
    data[rng.random(data.shape) < 0.3] = NaN
    value_counts, domain = reliability._reliability_value_counts(data, level, None)
    value_counts = value_counts[value_counts.sum(axis=1) >= 2]
    patterns, inverse = np.unique(value_counts, axis=0, return_inverse=True)
    for _ in range(5):
        drawn = rng.integers(0, len(value_counts), len(value_counts))
        weights = np.bincount(inverse.ravel()[drawn], minlength=len(patterns)).astype(float)
        fast = reliability._alpha_from_weighted_patterns(patterns.astype(float), weights[None, :], domain, level)[0]
        expected = krippendorff.alpha(value_counts=value_counts[drawn], value_domain=domain, level_of_measurement=level)
        assert fast == pytest.approx(expected)


def test_krippendorff_alpha_ci_brackets_alpha_and_narrows_with_more_items():
    def campaign(n_items, seed):
        rng = np.random.default_rng(seed)
        truth = rng.integers(0, 4, n_items)
        return np.clip(truth[None, :] + rng.integers(-1, 2, (3, n_items)), 0, 3).astype(float)

    small = S.krippendorff_alpha_ci(campaign(60, 7), "ordinal", n_boot=300, seed=1)
    large = S.krippendorff_alpha_ci(campaign(6000, 7), "ordinal", n_boot=300, seed=1)
    for result in (small, large):
        assert result["ci_low"] < result["alpha"] < result["ci_high"]
    assert small["alpha"] == pytest.approx(S.krippendorff_alpha(campaign(60, 7), "ordinal"))
    assert (large["ci_high"] - large["ci_low"]) < (small["ci_high"] - small["ci_low"]) / 5
    assert S.krippendorff_alpha_ci(campaign(60, 7), seed=1) == S.krippendorff_alpha_ci(campaign(60, 7), seed=1)
    assert small["n_items"] == 60 and small["n_boot"] == 300


def test_plain_agreement_on_biosses_keeps_every_score_the_references_do():
    # BIOSSES: 100 pairs, five annotators' 0-4 scores, 13% of them 4 (the highest similarity, not Don't know)
    table = pd.read_csv(DATASETS / "biosses" / "biosses_pairs_with_annotator_scores.tsv", sep="\t")
    scores = table.filter(like="annotator_").astype(float)
    assert scores.shape == (100, 5) and (scores == 4).to_numpy().mean() == pytest.approx(0.132)

    kappa = S.pairwise_kappa(scores).table["kappa"]
    sklearn = [cohen_kappa_score(scores[x], scores[y]) for x, y in itertools.combinations(scores.columns, 2)]
    assert kappa.tolist() == pytest.approx(sklearn)
    assert kappa.mean() == pytest.approx(0.578, abs=5e-4)

    # Fleiss (1971) by hand: every pair has the same five raters
    counts = np.stack([(scores == v).sum(axis=1) for v in range(5)], axis=1)
    agreement = ((counts * (counts - 1)).sum(axis=1) / (5 * 4)).mean()
    chance = ((counts.sum(axis=0) / counts.sum()) ** 2).sum()
    fleiss = S.fleiss_kappa(S.category_counts(scores))
    assert fleiss == pytest.approx((agreement - chance) / (1 - chance))
    assert fleiss == pytest.approx(0.576, abs=5e-4)

    alpha = S.krippendorff_alpha(scores.T)
    assert alpha == pytest.approx(krippendorff.alpha(scores.T.to_numpy(), level_of_measurement="nominal"))
    assert alpha == pytest.approx(0.577, abs=5e-4)

    # the old default read the 4s as Don't know and silently dropped them
    as_levels = ordinal_levels(scores)
    assert S.pairwise_kappa(as_levels).table["kappa"].mean() == pytest.approx(0.625, abs=5e-4)
    assert S.fleiss_kappa(S.category_counts(as_levels)) == pytest.approx(0.664, abs=5e-4)
    assert S.krippendorff_alpha(as_levels.T) == pytest.approx(0.641, abs=5e-4)


# --------------------------------------------------------------------------- human vs model


def test_human_vs_model_matches_sklearn_with_rows_human_and_columns_model():
    human = np.array([1, 1, 1, 0, 0, 0, 1, NaN])
    scores = np.array([5.0, 0.0, -2.0, -1.0, 3.0, -4.0, 2.0, 9.0])
    result = S.human_vs_model(human, scores, threshold=0.0)
    predicted = np.array([1, 1, 0, 0, 1, 0, 1])
    truth = human[:7].astype(int)
    assert result["n"] == 7
    assert result["kappa"] == pytest.approx(cohen_kappa_score(truth, predicted))
    assert result["accuracy"] == pytest.approx(5 / 7)
    np.testing.assert_array_equal(result["confusion"], [[2, 1], [1, 3]])  # 1 human-yes / model-no
    distance = S.human_vs_model(human, -scores, threshold=0.0, higher_is_positive=False)
    np.testing.assert_array_equal(distance["confusion"], result["confusion"])


def test_human_vs_model_table_lists_each_annotator_and_the_majority():
    binary = pd.DataFrame(
        {
            "ann": [1, 1, 0, 0],
            "bob": [1, 0, 0, NaN],
            "cid": [1, 1, 1, 1],
            "dan": [NaN, NaN, 1, 1],
        },
        index=list("wxyz"),
    )
    scores = pd.Series([2.0, 1.0, -1.0, -3.0], index=list("zyxw"))  # aligned by index, not position
    predicted = np.array([0, 0, 1, 1])  # w, x, y, z at threshold 0
    table = S.human_vs_model_table(binary, scores).set_index("annotator")
    assert list(table.index) == ["ann", "bob", "cid", "dan", "majority"]
    assert table.loc["ann", "kappa"] == pytest.approx(-1.0) and table.loc["ann", "accuracy"] == 0.0
    assert table.loc["bob", "n"] == 3
    assert table.loc["bob", "kappa"] == pytest.approx(cohen_kappa_score([1, 0, 0], predicted[:3]))
    # majority: w 1, x 1, y tie (ann, bob 0 / cid, dan 1) -> left out, z 1
    assert table.loc["majority", "n"] == 3
    assert table.loc["majority", "kappa"] == pytest.approx(cohen_kappa_score([1, 1, 1], predicted[[0, 1, 3]]))
    assert table.loc["majority", ["tn", "fp", "fn", "tp"]].tolist() == [0, 0, 2, 1]
    # dan and the metric both say "paraphrase" for everything they share: κ undefined, said why
    assert np.isnan(table.loc["dan", "kappa"]) and "undefined" in table.loc["dan", "note"]
    assert table.loc["dan", "accuracy"] == 1.0 and table.loc["dan", "tp"] == 2 and table.loc["ann", "note"] == ""


def test_human_vs_model_single_class_is_an_explained_error():
    with pytest.raises(StatsError, match="undefined"):
        S.human_vs_model([1, 1, 1], [2.0, 3.0, 4.0])
    with pytest.raises(StatsError, match="binarise"):
        S.human_vs_model([3, 2, 1], [2.0, 3.0, 4.0])


# --------------------------------------------------------------------------- thresholds


def scored_pairs(seed=0, n=400, decimals=1):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    scores = np.round(rng.normal(size=n) + 1.2 * labels, decimals)  # rounding makes ties
    return scores, labels


def brute_force_curve(scores, labels, higher_is_positive):
    rows = []
    for threshold in np.unique(scores):
        predicted = (scores >= threshold) if higher_is_positive else (scores <= threshold)
        rows.append(
            (
                threshold,
                accuracy_score(labels, predicted),
                f1_score(labels, predicted, zero_division=0),
                precision_score(labels, predicted, zero_division=0),
                recall_score(labels, predicted, zero_division=0),
            )
        )
    return pd.DataFrame(rows, columns=["threshold", "accuracy", "f1", "precision", "recall"])


@pytest.mark.parametrize("higher_is_positive", [True, False])
def test_threshold_curve_matches_sklearn_at_every_distinct_threshold(higher_is_positive):
    scores, labels = scored_pairs()
    curve = S.threshold_curve(scores, labels, higher_is_positive)
    expected = brute_force_curve(scores, labels, higher_is_positive)
    assert len(curve) == len(np.unique(scores))
    for column in expected.columns:
        np.testing.assert_allclose(curve[column], expected[column])
    assert (curve[["tp", "fp", "tn", "fn"]].sum(axis=1) == len(scores)).all()
    assert curve["rank"].tolist() == [int(np.sum(scores < t)) + 1 for t in curve["threshold"]]


def test_threshold_curve_drops_unscored_pairs_and_needs_both_classes():
    curve = S.threshold_curve([0.5, NaN, -1.0, 2.0], [1, 0, 0, NaN])
    assert curve["threshold"].tolist() == [-1.0, 0.5]
    nullable = S.threshold_curve(pd.Series([0.5, NaN, -1.0, 2.0]), pd.Series([1, 0, 0, None], dtype="Int64"))
    pd.testing.assert_frame_equal(nullable, curve)
    with pytest.raises(StatsError, match="both paraphrases and non-paraphrases"):
        S.threshold_curve([0.1, 0.2], [1, 1])


@pytest.mark.parametrize("higher_is_positive", [True, False])
@pytest.mark.parametrize("criterion", ["accuracy", "f1"])
def test_best_threshold_is_the_brute_force_maximum(criterion, higher_is_positive):
    scores, labels = scored_pairs(seed=1)
    expected = brute_force_curve(scores, labels, higher_is_positive)
    best = S.best_threshold(scores, labels, higher_is_positive, criterion)
    assert best[criterion] == pytest.approx(expected[criterion].max())
    winners = expected.loc[np.isclose(expected[criterion], expected[criterion].max()), "threshold"]
    # ties: the threshold that predicts the most paraphrases, and the tied interval around it
    assert best["threshold"] == (winners.min() if higher_is_positive else winners.max())
    assert (best["tie_low"], best["tie_high"], best["n_tied"]) == (winners.min(), winners.max(), len(winners))
    at = S.metrics_at(scores, labels, best["threshold"], higher_is_positive)
    assert {k: at[k] for k in ("accuracy", "f1", "precision", "recall")} == pytest.approx(
        {k: best[k] for k in ("accuracy", "f1", "precision", "recall")}
    )


def test_best_threshold_reports_the_tied_plateau():
    # thresholds 2, 4 and 6 all give the best accuracy, 4/6; 3 and 5 do worse
    scores = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    labels = [0, 1, 0, 1, 0, 1]
    best = S.best_threshold(scores, labels)
    curve = S.threshold_curve(scores, labels).set_index("threshold")
    assert curve["accuracy"].tolist() == pytest.approx([3 / 6, 4 / 6, 3 / 6, 4 / 6, 3 / 6, 4 / 6])
    assert (best["threshold"], best["tie_low"], best["tie_high"], best["n_tied"]) == (2.0, 2.0, 6.0, 3)
    distance = S.best_threshold([-x for x in scores], labels, higher_is_positive=False)
    assert (distance["threshold"], distance["tie_low"], distance["tie_high"], distance["n_tied"]) == (
        -2.0,
        -6.0,
        -2.0,
        3,
    )
    single = S.best_threshold([0.1, 0.9], [0, 1])
    assert single["tie_low"] == single["tie_high"] == single["threshold"] == 0.9 and single["n_tied"] == 1


def test_metrics_at_the_natural_threshold_matches_sklearn():
    scores, labels = scored_pairs(seed=2)
    result = S.metrics_at(scores, labels, 0.0)
    predicted = (scores >= 0).astype(int)
    assert result["accuracy"] == pytest.approx(accuracy_score(labels, predicted))
    assert result["f1"] == pytest.approx(f1_score(labels, predicted))
    assert result["precision"] == pytest.approx(precision_score(labels, predicted))
    assert result["recall"] == pytest.approx(recall_score(labels, predicted))
    tn, fp, fn, tp = confusion_matrix(labels, predicted).ravel()
    assert (result["tn"], result["fp"], result["fn"], result["tp"], result["n"]) == (tn, fp, fn, tp, len(labels))
    nothing_predicted = S.metrics_at([1.0, 2.0], [1, 0], threshold=5.0)
    assert nothing_predicted["precision"] == 0.0 and nothing_predicted["accuracy"] == 0.5


def test_roc_auc_matches_sklearn_and_flips_for_distances():
    scores, labels = scored_pairs(seed=3)
    assert S.roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    assert S.roc_auc(-scores, labels, higher_is_positive=False) == pytest.approx(roc_auc_score(labels, scores))
    with pytest.raises(StatsError, match="both"):
        S.roc_auc([0.1, 0.2], [0, 0])


# --------------------------------------------------------------------------- mixed balanced draw


def corpora(seed=0):
    """Three datasets of different sizes and balance, like MRPC / PAWS / LLM."""
    rng = np.random.default_rng(seed)
    parts = []
    for name, n_pos, n_neg, shift in (("mrpc", 60, 30, 1.0), ("paws", 25, 80, 0.0), ("llm", 90, 20, 3.0)):
        labels = np.r_[np.ones(n_pos, int), np.zeros(n_neg, int)]
        pluie = np.round(rng.normal(size=len(labels)) * 3 + 4 * (labels - 0.5) + shift, 1)
        lev = rng.random(len(labels))
        parts.append(pd.DataFrame({"dataset": name, "label": labels, "pluie": pluie, "lev": lev}))
    return pd.concat(parts, ignore_index=True)


def test_mbd_draws_the_same_number_of_each_class_from_each_dataset():
    data = corpora()
    data["constant"] = 1.0  # every pair predicted paraphrase: accuracy = share of paraphrases drawn
    with pytest.warns(StatsWarning, match="'llm' \\(non-paraphrases: 20\\)"):
        table = S.mixed_balanced_draw(data, ["constant"], n_draws=30)
    assert "each draw takes 20" in table.attrs["note"]
    table = table.set_index(["at", "figure"])
    assert table.loc[("best", "accuracy"), "mean"] == pytest.approx(0.5)
    assert table.loc[("best", "accuracy"), "std"] == pytest.approx(0.0)
    assert table.loc[("best", "recall"), "mean"] == 1.0
    assert (table["per_class"] == 20).all()  # llm has only 20 non-paraphrases
    assert table.loc[("threshold-free", "roc_auc"), "mean"] == pytest.approx(0.5)


def test_mbd_on_a_single_balanced_draw_equals_the_direct_statistics():
    data = corpora()
    balanced = pd.concat([g.head(20) for _, g in data.groupby(["dataset", "label"])])  # 20 per class each
    for higher in (True, False):
        scores = balanced["pluie"] if higher else -balanced["pluie"]
        frame = balanced.assign(score=scores)
        table = S.mixed_balanced_draw(
            frame, ["score"], n_draws=3, per_class=20, thresholds={"score": 0.0}, higher_is_positive={"score": higher}
        ).set_index(["at", "figure"])
        best = S.best_threshold(scores, balanced["label"], higher)
        natural = S.metrics_at(scores, balanced["label"], 0.0, higher)
        for figure in ("threshold", "accuracy", "f1", "precision", "recall"):
            assert table.loc[("best", figure), "mean"] == pytest.approx(best[figure])
            assert table.loc[("best", figure), "std"] == pytest.approx(0.0, abs=1e-12)
        for figure in ("accuracy", "f1", "precision", "recall"):
            assert table.loc[("given", figure), "mean"] == pytest.approx(natural[figure])
        assert table.loc[("threshold-free", "roc_auc"), "mean"] == pytest.approx(
            roc_auc_score(balanced["label"], scores if higher else -scores)
        )


def test_mbd_f1_criterion_matches_best_threshold_per_draw_on_one_full_draw():
    data = corpora(seed=4)
    balanced = pd.concat([g.head(20) for _, g in data.groupby(["dataset", "label"])])
    table = S.mixed_balanced_draw(balanced, ["pluie"], n_draws=2, per_class=20, criterion="f1").set_index(
        ["at", "figure"]
    )
    best = S.best_threshold(balanced["pluie"], balanced["label"], criterion="f1")
    assert table.loc[("best", "f1"), "mean"] == pytest.approx(best["f1"])
    assert table.loc[("best", "threshold"), "mean"] == pytest.approx(best["threshold"])


def test_mbd_summary_columns_intervals_and_reproducibility():
    data = corpora()
    table = S.mixed_balanced_draw(
        data,
        ["pluie", "lev"],
        n_draws=50,
        seed=3,
        per_class=10,
        thresholds={"pluie": 0.0},
        higher_is_positive={"lev": False},
    )
    assert list(table.columns) == [
        "score",
        "at",
        "figure",
        "mean",
        "std",
        "ci_low",
        "ci_high",
        "mean_ci_halfwidth",
        "n_draws",
        "per_class",
    ]
    assert set(table.loc[table.score == "lev", "at"]) == {"best", "threshold-free"}  # no given threshold for lev
    assert (table["ci_low"] <= table["mean"] + 1e-12).all() and (table["mean"] <= table["ci_high"] + 1e-12).all()
    row = table.query("score == 'pluie' and at == 'best' and figure == 'accuracy'").iloc[0]
    assert row["mean_ci_halfwidth"] == pytest.approx(1.959964 * row["std"] / np.sqrt(50))
    assert 0 < row["std"] and row["ci_low"] < row["ci_high"]
    again = S.mixed_balanced_draw(
        data,
        ["pluie", "lev"],
        n_draws=50,
        seed=3,
        per_class=10,
        thresholds={"pluie": 0.0},
        higher_is_positive={"lev": False},
    )
    pd.testing.assert_frame_equal(table, again)
    other = S.mixed_balanced_draw(data, ["pluie"], n_draws=50, seed=4, per_class=10)
    assert not np.isclose(other.loc[1, "mean"], row["mean"])


def test_mbd_draws_the_papers_45_per_class_by_default():
    rng = np.random.default_rng(8)
    parts = [
        pd.DataFrame({"dataset": name, "label": np.r_[np.ones(n, int), np.zeros(60, int)], "s": rng.random(n + 60)})
        for name, n in (("a", 50), ("b", 90))
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error", StatsWarning)  # every class has 45 or more: nothing to say
        table = S.mixed_balanced_draw(pd.concat(parts), ["s"], n_draws=5)
    assert (table["per_class"] == 45).all() and (table["n_draws"] == 5).all() and table.attrs["note"] == ""
    with pytest.warns(StatsWarning, match="fewer in 'a' \\(paraphrases: 50\\): each draw takes 50"):
        fewer = S.mixed_balanced_draw(pd.concat(parts), ["s"], n_draws=5, per_class=55)
    assert (fewer["per_class"] == 50).all()


def test_mbd_user_errors():
    data = corpora()
    with pytest.raises(StatsError, match="at least one pair per class"):
        S.mixed_balanced_draw(data, ["pluie"], per_class=0)
    with pytest.raises(StatsError, match="no column 'bleu'"):
        S.mixed_balanced_draw(data, ["bleu"])
    with pytest.raises(StatsError, match="paraphrases"):
        S.mixed_balanced_draw(data[data.label == 1], ["pluie"])


# --------------------------------------------------------------------------- per-class statistics


def test_class_summary_is_mean_and_sample_std_per_class():
    data = corpora()
    data.loc[0, "pluie"] = NaN
    table = S.class_summary(data, ["pluie", "lev"], "label", "dataset").set_index(["dataset", "label", "score"])
    for (dataset, label), group in data.groupby(["dataset", "label"]):
        values = group["pluie"].dropna().to_numpy()
        row = table.loc[(dataset, label, "pluie")]
        assert row["n"] == len(values)
        assert row["mean"] == pytest.approx(values.sum() / len(values))
        assert row["std"] == pytest.approx(np.sqrt(((values - values.mean()) ** 2).sum() / (len(values) - 1)))
    single = S.class_summary(pd.DataFrame({"label": [1, 0, 0], "s": [2.0, 1.0, 3.0]}), ["s"], "label")
    assert single.set_index("label").loc[1, "note"].startswith("One pair only")


def test_edit_distance_correlation_is_pearson_inside_each_class():
    data = corpora()
    data["bleu_like"] = 1 - data["lev"] + np.random.default_rng(0).normal(size=len(data)) * 0.1
    table = S.edit_distance_correlation(data, ["pluie", "bleu_like"], "lev", "label")
    for label, group in data.groupby("label"):
        row = table.query("label == @label and score == 'bleu_like'").iloc[0]
        assert row["r"] == pytest.approx(np.corrcoef(group["bleu_like"], group["lev"])[0, 1])
        assert row["r"] < -0.8 and row["p_value"] < 1e-6 and row["n"] == len(group)
        assert row["p_value"] == pytest.approx(pearsonr(group["bleu_like"], group["lev"]).pvalue)


def test_edit_distance_correlation_explains_undefined_cells():
    data = pd.DataFrame(
        {
            "label": [1, 1, 1, 0, 0, 0, 0],
            "flat": [2.0, 2.0, 2.0, 1.0, 2.0, 3.0, 4.0],
            "lev": [0.1, 0.2, 0.3, 0.5, 0.5, 0.5, 0.5],
            "few": [1.0, NaN, NaN, 1.0, 2.0, 3.0, 5.0],
        }
    )
    table = S.edit_distance_correlation(data, ["flat", "few"], "lev", "label").set_index(["label", "score"])
    assert np.isnan(table.loc[(1, "flat"), "r"]) and "score is the same" in table.loc[(1, "flat"), "note"]
    assert np.isnan(table.loc[(0, "flat"), "r"]) and "edit distance is the same" in table.loc[(0, "flat"), "note"]
    assert np.isnan(table.loc[(1, "few"), "r"]) and "Fewer than 3" in table.loc[(1, "few"), "note"]


# --------------------------------------------------------------------------- disagreements


def test_disagreements_lists_wrong_predictions_most_confident_first():
    data = pd.DataFrame(
        {
            "pair": ["a", "b", "c", "d", "e", "f"],
            "pluie": [-9.0, 0.5, 3.0, -0.2, NaN, 0.0],
            "majority": [1, 0, 1, 1, 0, 0],
        }
    )
    result = S.disagreements(data, "pluie", "majority")
    assert result["pair"].tolist() == ["a", "b", "d", "f"]  # 0.0 is "at or above": predicted paraphrase
    assert result["confidence"].tolist() == pytest.approx([9.0, 0.5, 0.2, 0.0])
    assert result["prediction"].tolist() == [0, 1, 0, 1]
    lev = S.disagreements(data.assign(lev=[0.95, 0.2, 0.25, 0.3, 0.45, 0.6]), "lev", "majority", 0.5, False)
    assert lev["pair"].tolist() == ["a", "b", "e"]  # a distance: at or below 0.5 is a paraphrase
    assert lev["confidence"].tolist() == pytest.approx([0.45, 0.3, 0.05])


def test_human_disagreements_lists_split_items_with_their_spread():
    matrix = pd.DataFrame(
        [[3, 0, NaN], [2, 2, 3], [1, 2, 2], [4, 0, 3], [1, 2, NaN]],
        index=["p1", "p2", "p3", "p4", "p5"],
        columns=["ann", "bob", "cid"],
    )
    table = S.human_disagreements(matrix)
    assert table.index.tolist() == ["p1", "p4", "p5", "p3"]
    assert table.loc["p4"].to_dict() == {
        "n_labels": 2,
        "n_paraphrase": 1,
        "n_non_paraphrase": 1,
        "n_dont_know": 1,
        "min_level": 0,
        "max_level": 3,
        "spread": 3,
        "minority_share": 0.5,
    }
    assert table.loc["p3", "minority_share"] == pytest.approx(1 / 3) and table.loc["p3", "spread"] == 1


def test_mbd_breaks_ties_between_best_thresholds_like_best_threshold():
    # thresholds 2 and 4 both give accuracy 0.75; the one predicting more paraphrases (2) is kept
    data = pd.DataFrame({"dataset": "only", "label": [0, 1, 0, 1], "s": [1.0, 2.0, 3.0, 4.0]})
    assert S.best_threshold(data["s"], data["label"])["threshold"] == 2.0
    table = S.mixed_balanced_draw(data, ["s"], n_draws=2, per_class=2).set_index(["at", "figure"])
    assert table.loc[("best", "threshold"), "mean"] == 2.0
    assert table.loc[("best", "accuracy"), "mean"] == 0.75


@pytest.mark.parametrize("seed", range(6))
def test_per_pair_figures_and_each_annotator_against_the_model_read_the_same_from_rows(seed):
    """Issue 20 (a crowd: thousands of annotators): slots per pair and rows per label give what the
    pairs x annotators matrix gives: the counts of Fleiss' κ, the majority, the human splits, and each
    annotator's and the majority's agreement with the model (duplicates: the last label wins)."""
    rng = np.random.default_rng(seed)
    n = 300
    labels = pd.DataFrame(
        {
            "pair_id": rng.integers(0, 80, n),
            "annotator": rng.choice([f"a{i}" for i in range(15)], n),
            "level": rng.choice([0, 1, 2, 3, 4], n).astype(float),
        }
    )
    matrix, slots = S.levels_to_matrix(labels), S.item_slots(labels)
    assert slots.shape[0] == matrix.shape[0] and slots.shape[1] == matrix.notna().sum(axis=1).max() < matrix.shape[1]
    assert S.category_counts(slots, range(5)).equals(S.category_counts(matrix, range(5)))
    binary = binarise_levels(matrix)
    pd.testing.assert_series_equal(S.majority_binary_vector(binarise_levels(slots)), S.majority_binary_vector(binary))
    pd.testing.assert_frame_equal(S.human_disagreements(slots), S.human_disagreements(matrix))
    for level in ("nominal", "interval"):  # α and its seeded bootstrap count each pair's values, whoever gave them
        assert S.krippendorff_alpha_ci(slots.T, level, n_boot=50, seed=0) == pytest.approx(
            S.krippendorff_alpha_ci(matrix.T, level, n_boot=50, seed=0)
        )

    scores = pd.Series(rng.normal(size=80))
    rows = binary.stack().rename("value").reset_index()  # pair_id, annotator, value: the labels with a value
    table = S.human_vs_model_by_annotator(rows, scores, 0.2).set_index("annotator")
    for name in binary.columns:
        kept = binary[name].notna()
        expected = S.human_vs_model(binary.loc[kept, name], scores.reindex(binary.index)[kept], 0.2)
        assert table.loc[name, "n"] == expected["n"] and table.loc[name, "kappa"] == pytest.approx(expected["kappa"])
    majority = S.majority_binary_vector(binary).dropna()
    expected = S.human_vs_model(majority, scores.reindex(majority.index), 0.2)
    assert table.loc["majority", ["tn", "fp", "fn", "tp"]].tolist() == expected["confusion"].ravel().tolist()
    pd.testing.assert_frame_equal(
        S.human_vs_model_table(binary, scores.reindex(binary.index), 0.2), table.reset_index(), check_dtype=False
    )
