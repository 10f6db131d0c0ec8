"""Correlation with graded judgments (pluie_core.evaluation.correlation) and ``python -m pluie_core
correlate``: values against scipy called directly on the STS-B test file, intervals against n and
against Fisher's z interval, the paired difference test on cases with a known answer, system level
against per-system means computed here, and the one-sentence errors."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats

from pluie_core.baselines import chrf, levenshtein
from pluie_core.cli import main
from pluie_core.evaluation.correlation import (
    COLUMNS,
    compare_correlations,
    correlate,
    mean_levels,
    system_level,
)
from pluie_core.io import load_pairs
from pluie_core.stats import StatsError
from tests.paths import DATASETS

STSB_TEST = DATASETS / "stsbenchmark" / "sts-test.csv"
SCIPY = {"pearson": scipy_stats.pearsonr, "spearman": scipy_stats.spearmanr, "kendall": scipy_stats.kendalltau}


@pytest.fixture(scope="module")
def stsb():
    pairs = load_pairs(STSB_TEST)
    pairs["levenshtein"] = levenshtein(pairs["source"], pairs["hypothesis"])
    pairs["chrf"] = chrf(pairs["source"], pairs["hypothesis"])
    return pairs


def test_correlations_on_stsb_test_equal_scipy(stsb):
    table = correlate(stsb[["levenshtein", "chrf"]], stsb["label"], n_boot=200)
    assert list(table.columns) == COLUMNS
    assert len(table) == 6
    for row in table.itertuples():
        expected = SCIPY[row.method](stsb[row.metric], stsb["label"]).statistic
        assert row.r == pytest.approx(expected, abs=1e-12)
        assert row.n == len(stsb)
        assert row.ci_low < row.r < row.ci_high
    r = table.set_index(["metric", "method"])["r"]
    assert r["levenshtein", "pearson"] < 0 < r["chrf", "pearson"]  # a distance correlates negatively


def test_without_resamples_the_coefficients_come_alone(stsb):
    """Issue 20: the Correlation page shows the coefficients at once (n_boot 0), the intervals after."""
    alone = correlate(stsb[["levenshtein", "chrf"]], stsb["label"], n_boot=0)
    full = correlate(stsb[["levenshtein", "chrf"]], stsb["label"], n_boot=200)
    assert alone[["metric", "method", "r", "n"]].equals(full[["metric", "method", "r", "n"]])
    assert alone[["ci_low", "ci_high"]].isna().all().all() and full[["ci_low", "ci_high"]].notna().all().all()
    # the page then hands the coefficients to the bootstrap's call, which takes them as they are
    reused = correlate(stsb[["levenshtein", "chrf"]], stsb["label"], n_boot=200, coefficients=alone)
    pd.testing.assert_frame_equal(reused, full)
    planted = alone.assign(r=alone["r"] + 1.0)  # and does take them: nothing computed again
    assert (
        correlate(stsb[["levenshtein", "chrf"]], stsb["label"], n_boot=0, coefficients=planted)["r"] == planted["r"]
    ).all()


def test_intervals_widen_as_n_shrinks(stsb):
    widths = []
    for n in (30, 100, 400, len(stsb)):
        row = correlate(stsb["chrf"].head(n), stsb["label"].head(n), ["pearson"], n_boot=500).iloc[0]
        widths.append(row.ci_high - row.ci_low)
    assert widths == sorted(widths, reverse=True) and widths[0] > 3 * widths[-1]


def test_large_samples_use_a_scaled_resample_and_keep_fishers_width():
    # bivariate normal, ρ = 0.5: Fisher's z interval is the textbook answer for Pearson's r
    rng = np.random.default_rng(1)
    widths = {}
    for n in (5_000, 40_000):
        x = rng.normal(size=n)
        y = 0.5 * x + np.sqrt(0.75) * rng.normal(size=n)
        row = correlate(pd.Series(x), pd.Series(y), ["pearson"], n_boot=1000, max_resample=1000).iloc[0]
        z, se = np.arctanh(row.r), 1 / np.sqrt(n - 3)
        fisher = np.tanh(z + 1.96 * se) - np.tanh(z - 1.96 * se)
        widths[n] = row.ci_high - row.ci_low
        assert widths[n] == pytest.approx(fisher, rel=0.25)
        assert row.ci_low < row.r < row.ci_high
    assert widths[40_000] < widths[5_000]


def test_identical_metrics_do_not_differ(stsb):
    found = compare_correlations(stsb["chrf"], stsb["chrf"].copy(), stsb["label"], "spearman", n_boot=300)
    assert found["difference"] == 0 and found["p_value"] == 1.0
    assert found["ci_low"] == found["ci_high"] == 0


def test_a_metric_and_its_negation_differ_clearly(stsb):
    found = compare_correlations(stsb["chrf"], -stsb["chrf"], stsb["label"], "pearson", n_boot=300)
    assert found["difference"] == pytest.approx(2 * scipy_stats.pearsonr(stsb["chrf"], stsb["label"]).statistic)
    assert found["p_value"] < 0.01 and found["ci_low"] > 0.9


def test_two_noisy_copies_of_one_signal_do_not_differ_but_a_worse_one_does():
    rng = np.random.default_rng(3)
    truth = rng.normal(size=800)
    human = truth + 0.5 * rng.normal(size=800)
    same_a, same_b = truth + 0.8 * rng.normal(size=800), truth + 0.8 * rng.normal(size=800)
    worse = truth + 3 * rng.normal(size=800)
    assert compare_correlations(pd.Series(same_a), pd.Series(same_b), pd.Series(human))["p_value"] > 0.05
    assert compare_correlations(pd.Series(same_a), pd.Series(worse), pd.Series(human))["p_value"] < 0.01


def test_system_level_correlates_the_per_system_means():
    rng = np.random.default_rng(0)
    n = 300
    systems = pd.Series(rng.choice(list("abcdef"), n))
    human = pd.Series(systems.map(dict(zip("abcdef", range(6)))) + rng.normal(size=n))
    metric = pd.Series(human + rng.normal(size=n) * 2)
    table = system_level(pd.DataFrame({"m": metric}), human, systems, n_boot=200).set_index("method")
    means = pd.DataFrame({"m": metric, "h": human}).groupby(systems).mean()
    for method, function in SCIPY.items():
        assert table.loc[method, "r"] == pytest.approx(function(means["m"], means["h"]).statistic)
    assert (table["n"] == 6).all()
    with pytest.raises(StatsError, match="at least 3 systems"):
        system_level(pd.DataFrame({"m": metric}), human, systems.where(systems < "c", "b"))


def test_mean_levels_leave_dont_know_out():
    labels = pd.DataFrame({"pair_id": [1, 1, 1, 2, 2, 3], "level": [0, 3, 4, 2, 2, 4]})
    means = mean_levels(labels)
    assert means[1] == 1.5 and means[2] == 2.0 and np.isnan(means[3])


@pytest.mark.parametrize(
    "reference, message",
    [
        (["high", "low", "high", "low"], "holds text"),
        ([1.0, np.nan, np.nan, 2.0], "Only 2 pairs"),
        ([2.0, 2.0, 2.0, 2.0], "same reference value"),
    ],
)
def test_bad_references_get_one_sentence(reference, message):
    with pytest.raises(StatsError, match=message):
        correlate(pd.Series([0.1, 0.5, 0.3, 0.9]), pd.Series(reference))


# --------------------------------------------------------------------------- the CLI


def test_cli_correlate_writes_the_contracted_table(stsb, tmp_path):
    output = tmp_path / "out.csv"
    assert (
        main(
            [
                "correlate",
                str(STSB_TEST),
                "--metric",
                "levenshtein",
                "--metric",
                "chrf",
                "--bootstrap",
                "200",
                "-o",
                str(output),
            ]
        )
        == 0
    )
    table = pd.read_csv(output)
    assert list(table.columns) == ["metric", "method", "r", "ci_low", "ci_high", "n"]
    for row in table.itertuples():
        assert row.r == pytest.approx(SCIPY[row.method](stsb[row.metric], stsb["label"]).statistic, abs=1e-12)
        assert row.n == len(stsb)


def test_cli_reads_score_columns_and_system_level(tmp_path):
    frame = pd.DataFrame(
        {
            "source": [f"s{i}" for i in range(12)],
            "hypothesis": [f"h{i}" for i in range(12)],
            "label": [0, 1, 2, 3, 4, 5] * 2,
            "pluie": [-3, -1, 0, 1, 2, 5, -2, 0, 1, 0, 3, 4],
            "model": list("xxyyzz") * 2,
        }
    )
    path, output = tmp_path / "scored.csv", tmp_path / "out.csv"
    frame.to_csv(path, index=False)
    assert main(["correlate", str(path), "--metric", "pluie", "--system", "model", "-o", str(output)]) == 0
    table = pd.read_csv(output).set_index("method")
    means = frame.groupby("model")[["pluie", "label"]].mean()
    assert table.loc["pearson", "r"] == pytest.approx(scipy_stats.pearsonr(means["pluie"], means["label"]).statistic)
    assert (table["n"] == 3).all()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--metric", "levenshtein", "--reference", "genre"], "The reference 'genre' holds text"),
        (["--metric", "nonsense"], "Unknown metric 'nonsense'"),
        (["--metric", "chrf", "--reference", "nope"], "no reference column 'nope'"),
    ],
)
def test_cli_bad_input_is_one_line_on_stderr(args, message, tmp_path, capsys):
    assert main(["correlate", str(STSB_TEST), *args, "-o", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and not (tmp_path / "o.csv").exists()


def test_cli_fewer_than_three_pairs(tmp_path, capsys):
    path = tmp_path / "two.csv"
    two = pd.DataFrame({"source": ["a b", "c d"], "hypothesis": ["a c", "c e"], "label": [1.0, 4.0]})
    two.to_csv(path, index=False)
    assert main(["correlate", str(path), "--metric", "chrf", "-o", str(tmp_path / "o.csv")]) == 1
    err = capsys.readouterr().err.strip()
    assert "Only 2 pairs" in err and "at least 3" in err and "\n" not in err


def test_the_bootstrap_kendall_equals_scipys_row_by_row():
    from pluie_core.evaluation.correlation import _rows_kendall, _rows_kendall_public

    rng = np.random.default_rng(5)
    x = rng.integers(0, 6, (300, 40)).astype(float)  # many ties in x, in y and in both
    y = x + rng.integers(0, 4, (300, 40))
    x[0] = 2.0  # a constant row: NaN, as scipy gives
    expected = _rows_kendall_public(x, y)
    assert np.isnan(expected[0]) and np.isnan(_rows_kendall(x, y)[0])
    np.testing.assert_allclose(_rows_kendall(x, y), expected, rtol=0, atol=1e-12)


def test_a_text_score_column_is_named_as_such(tmp_path, capsys):
    path = tmp_path / "scored.csv"
    pd.DataFrame(
        {"source": ["a", "b", "c"], "hypothesis": ["x", "y", "z"], "label": [1, 2, 3], "judge": ["yes", "no", "yes"]}
    ).to_csv(path, index=False)
    assert main(["correlate", str(path), "--metric", "judge", "-o", str(tmp_path / "o.csv")]) == 1
    assert capsys.readouterr().err.strip() == (
        "error: The score column 'judge' holds text (e.g. 'yes'), not numbers: choose a numeric column."
    )
