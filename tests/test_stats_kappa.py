"""pluie_core.stats computes Cohen's κ from a bincount confusion matrix (sklearn's validation was
the bulk of the agreement page's time); it must equal sklearn's cohen_kappa_score exactly."""

import warnings

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from pluie_core.labels import ordinal_levels
from pluie_core.stats import StatsError, cohen_kappa, human_vs_model, pairwise_kappa


def sklearn_kappa(a, b, weights, labels):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cohen_kappa_score(a, b, labels=labels, weights=weights)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_kappa_equals_sklearn_on_random_label_pairs(weights):
    rng = np.random.default_rng(7)
    compared = 0
    for _ in range(200):
        n, low = int(rng.integers(2, 40)), int(rng.integers(-2, 3))
        high = low + int(rng.integers(1, 5))
        a = rng.integers(low, high + 1, n)
        b = np.where(rng.random(n) < 0.6, a, rng.integers(low, high + 1, n))
        expected = sklearn_kappa(a, b, weights, np.arange(min(a.min(), b.min()), max(a.max(), b.max()) + 1))
        if not np.isfinite(expected):
            with pytest.raises(StatsError):
                cohen_kappa(a, b, weights)
            continue
        assert cohen_kappa(a, b, weights) == pytest.approx(expected, abs=1e-12)
        compared += 1
    assert compared > 150


def test_pairwise_kappa_matrix_equals_sklearn_per_pair():
    rng = np.random.default_rng(3)
    matrix = rng.integers(0, 5, (300, 4)).astype(float)
    matrix[rng.random(matrix.shape) < 0.3] = np.nan
    result = pairwise_kappa(ordinal_levels(matrix), "linear")  # levels of our scale: 4 is Don't know
    for i in range(4):
        for j in range(i + 1, 4):
            both = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j]) & (matrix[:, i] != 4) & (matrix[:, j] != 4)
            a, b = matrix[both, i].astype(int), matrix[both, j].astype(int)
            expected = sklearn_kappa(a, b, "linear", np.arange(min(a.min(), b.min()), max(a.max(), b.max()) + 1))
            assert result.kappa.iloc[i, j] == pytest.approx(expected)
            assert result.n_shared.iloc[i, j] == both.sum()


def test_human_vs_model_kappa_and_confusion_equal_sklearn():
    rng = np.random.default_rng(5)
    human = rng.integers(0, 2, 200).astype(float)
    scores = human + rng.normal(0, 0.8, 200) - 0.5
    result = human_vs_model(human, scores, threshold=0.0)
    predicted = (scores >= 0).astype(int)
    assert result["kappa"] == pytest.approx(sklearn_kappa(human.astype(int), predicted, None, [0, 1]))
    assert result["confusion"].tolist() == [
        [int(((human == h) & (predicted == p)).sum()) for p in (0, 1)] for h in (0, 1)
    ]
    with pytest.raises(StatsError, match="same single class"):
        human_vs_model(np.ones(5), np.ones(5), threshold=0.0)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("block_cells", [None, 64])
def test_pairwise_kappa_from_one_matrix_product_equals_sklearn_pair_by_pair(weights, block_cells, monkeypatch):
    """pairwise_kappa builds every pair's confusion matrix from one indicator matrix product over the
    whole scale (in blocks of items): each κ must still be sklearn's on that pair's shared items over
    that pair's own range, the percent agreement and counts theirs, and the notes the same."""
    from pluie_core.stats import reliability

    if block_cells:
        monkeypatch.setattr(reliability, "_CONFUSION_CELLS", block_cells)  # many blocks of 1,024 items
    rng = np.random.default_rng(11)
    truth = rng.integers(-2, 4, 5000)
    matrix = np.stack([np.clip(truth + rng.integers(-1, 2, 5000), -2 + k % 2, 3) for k in range(5)], axis=1).astype(
        float
    )
    matrix[rng.random(matrix.shape) < 0.4] = np.nan
    matrix[:, 3] = np.where(np.arange(5000) < 2500, np.nan, matrix[:, 3])
    matrix[:, 4] = np.where(np.arange(5000) < 2500, matrix[:, 4], np.nan)  # shares nothing with annotator 3
    matrix[:, 1] = np.where(np.isnan(matrix[:, 1]), np.nan, 1.0)  # one level only
    result = pairwise_kappa(matrix, weights)
    rows = result.table.set_index(["annotator_a", "annotator_b"])
    for i in range(5):
        for j in range(i + 1, 5):
            both = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
            row = rows.loc[(i, j)]
            assert row["n_shared"] == both.sum() == result.n_shared.iloc[i, j]
            if not both.any():
                assert row["note"] == "No labelled item in common." and np.isnan(row["kappa"])
                continue
            a, b = matrix[both, i].astype(int), matrix[both, j].astype(int)
            assert row["percent_agreement"] == pytest.approx(np.mean(a == b), abs=1e-15)
            expected = sklearn_kappa(a, b, weights, np.arange(min(a.min(), b.min()), max(a.max(), b.max()) + 1))
            if np.isfinite(expected):
                assert row["kappa"] == pytest.approx(expected, abs=1e-12) and row["note"] == ""
            else:
                assert np.isnan(row["kappa"]) and "undefined" in row["note"]
    assert np.diag(result.n_shared.to_numpy()).tolist() == (~np.isnan(matrix)).sum(axis=0).tolist()


def test_pairwise_kappa_on_a_wide_raw_scale_pairs_annotators_one_by_one():
    """Beyond 64 levels between the lowest and highest value the indicator matrix would be too wide:
    the tables come pair by pair, and κ is still sklearn's."""
    rng = np.random.default_rng(4)
    truth = rng.integers(0, 100, 400)
    matrix = np.stack([truth + rng.integers(-3, 4, 400) for _ in range(3)], axis=1).astype(float)
    matrix[rng.random(matrix.shape) < 0.2] = np.nan
    result = pairwise_kappa(matrix, "quadratic")
    for i, j in ((0, 1), (0, 2), (1, 2)):
        both = ~np.isnan(matrix[:, i]) & ~np.isnan(matrix[:, j])
        a, b = matrix[both, i].astype(int), matrix[both, j].astype(int)
        expected = sklearn_kappa(a, b, "quadratic", np.arange(min(a.min(), b.min()), max(a.max(), b.max()) + 1))
        assert result.kappa.iloc[i, j] == pytest.approx(expected, abs=1e-12)
