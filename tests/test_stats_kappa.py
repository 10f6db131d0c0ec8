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
    assert result["confusion"].tolist() == [[int(((human == h) & (predicted == p)).sum()) for p in (0, 1)] for h in (0, 1)]
    with pytest.raises(StatsError, match="same single class"):
        human_vs_model(np.ones(5), np.ones(5), threshold=0.0)
