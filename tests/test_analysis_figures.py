"""pluie_core.analysis_figures: the analysis pages' figures as pure functions of frames, checked on real
data (MRPC, BIOSSES from the shared datasets) against independent computations (scikit-learn, SciPy,
the krippendorff package, Fleiss' formula written out here)."""

import itertools

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy import stats as sp
from sklearn.metrics import cohen_kappa_score, roc_auc_score

from pluie_core import analysis_figures as figures
from pluie_core.analysis import agreement_values
from pluie_core.io import load_pairs
from tests.paths import DATASETS

needs_data = pytest.mark.skipif(not (DATASETS / "mrpc").is_dir(), reason="the shared datasets are not here")


def overlap(source: str, hypothesis: str) -> float:
    """Jaccard overlap of the two sentences' words: a simple score with ties and both directions."""
    a, b = set(source.lower().split()), set(hypothesis.lower().split())
    return len(a & b) / len(a | b)


@pytest.fixture(scope="module")
def mrpc() -> pd.DataFrame:
    """MRPC's test pairs with a score, their gold label as reference, split in two "datasets"."""
    pairs = load_pairs(DATASETS / "mrpc" / "msr_paraphrase_test.txt")
    return pd.DataFrame(
        {
            "dataset": np.where(np.arange(len(pairs)) % 2 == 0, "even", "odd"),
            "score": [overlap(s, h) for s, h in zip(pairs["source"], pairs["hypothesis"])],
            "reference": pairs["label"].to_numpy(),
        },
        index=pd.RangeIndex(len(pairs), name="pair_id"),
    )


@pytest.fixture(scope="module")
def biosses() -> pd.DataFrame:
    """BIOSSES' five annotators' 0–4 values as rows: pair_id, annotator, value (a few left out, so that
    pairs have different numbers of values)."""
    pairs = load_pairs(DATASETS / "biosses" / "biosses_pairs_with_annotator_scores.tsv")
    columns = [c for c in pairs.columns if c.startswith("annotator:")]
    wide = pairs[columns].rename(columns=lambda c: c.split(":")[1])
    wide.index.name = "pair_id"
    rows = wide.stack().rename("value").reset_index().rename(columns={"level_1": "annotator"})
    return rows[~((rows["pair_id"] % 7 == 0) & (rows["annotator"] == "A"))].reset_index(drop=True)


def accuracy_by_hand(scores: pd.Series, reference: pd.Series, threshold: float) -> float:
    return float(((scores >= threshold).astype(float) == reference).mean())


@needs_data
def test_threshold_figures_on_mrpc_match_sklearn_and_a_brute_force_search(mrpc):
    data = mrpc.copy()
    data.loc[data.index[:5], "score"] = np.nan  # pairs without a score are left out
    curve, best, auc, per_dataset = figures.threshold_figures(data, True, 0.5)
    kept = data.dropna(subset=["score"])
    assert auc == pytest.approx(roc_auc_score(kept["reference"], kept["score"]))
    thresholds = np.unique(kept["score"])
    by_hand = [accuracy_by_hand(kept["score"], kept["reference"], t) for t in thresholds]
    assert best["accuracy"] == pytest.approx(max(by_hand))
    assert accuracy_by_hand(kept["score"], kept["reference"], best["threshold"]) == pytest.approx(max(by_hand))
    assert len(curve) == len(thresholds)
    assert curve["accuracy"].to_numpy() == pytest.approx(by_hand)

    assert per_dataset["dataset"].tolist() == ["even", "odd"]
    for _, row in per_dataset.iterrows():
        group = kept[kept["dataset"] == row["dataset"]]
        assert row["n"] == len(group)
        assert row["roc_auc"] == pytest.approx(roc_auc_score(group["reference"], group["score"]))
        assert row["accuracy at natural"] == pytest.approx(accuracy_by_hand(group["score"], group["reference"], 0.5))
        assert row["accuracy"] == pytest.approx(
            max(accuracy_by_hand(group["score"], group["reference"], t) for t in np.unique(group["score"]))
        )


@needs_data
def test_threshold_figures_of_a_distance_and_of_one_dataset(mrpc):
    """A distance (lower is similar) gives the same ROC AUC as the similarity it negates; one dataset
    gives no per-dataset table; a run without a natural threshold has no accuracy at it."""
    data = mrpc.assign(score=-mrpc["score"], dataset="MRPC")
    curve, best, auc, per_dataset = figures.threshold_figures(data, False, None)
    assert auc == pytest.approx(roc_auc_score(mrpc["reference"], mrpc["score"]))
    assert per_dataset is None
    two = figures.threshold_figures(mrpc.assign(score=-mrpc["score"]), False, None)[3]
    assert "accuracy at natural" not in two.columns


def fleiss_by_hand(values: pd.DataFrame) -> float:
    """Fleiss' κ written out (varying numbers of raters: each item's own, the proportions pooled)."""
    counts = values.groupby(["pair_id", "value"]).size().unstack(fill_value=0)
    raters = counts.sum(axis=1)
    counts, raters = counts[raters >= 2], raters[raters >= 2]
    p_item = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_category = counts.sum() / counts.values.sum()
    expected = (p_category**2).sum()
    return float((p_item.mean() - expected) / (1 - expected))


@needs_data
def test_agreement_figures_of_values_on_their_own_scale_match_independent_computations(biosses):
    found = figures.agreement_figures(biosses, biosses, "raw", False, None)
    shown = found["figures"].set_index("measure")
    assert found["errors"] == {}
    assert shown.loc["Fleiss' kappa", "value"] == pytest.approx(fleiss_by_hand(biosses))
    matrix = biosses.pivot(index="annotator", columns="pair_id", values="value")  # raters x items
    for level in figures.ALPHA_LEVELS:
        row = shown.loc[f"Krippendorff's alpha ({level})"]
        assert row["value"] == pytest.approx(krippendorff.alpha(matrix.to_numpy(), level_of_measurement=level))
        assert row["ci_low"] <= row["value"] <= row["ci_high"]
    assert found["annotators"] == 5
    pairwise = found["pairwise"]
    wide = matrix.T
    for a, b in itertools.combinations(sorted(wide.columns), 2):
        both = wide[[a, b]].dropna()
        assert pairwise.kappa.loc[a, b] == pytest.approx(cohen_kappa_score(both[a], both[b]))
    weighted = figures.agreement_figures(biosses, biosses, "raw", False, "quadratic")["pairwise"]
    both = wide[["B", "C"]].dropna()
    assert weighted.kappa.loc["B", "C"] == pytest.approx(cohen_kappa_score(both["B"], both["C"], weights="quadratic"))


def test_agreement_figures_of_values_that_are_not_whole_leave_cohens_kappa_out(biosses):
    halves = biosses.assign(value=biosses["value"] + 0.5 * (biosses["pair_id"] % 2))
    found = figures.agreement_figures(halves, halves, "raw", False, None)
    assert found["pairwise"] is None
    assert "Krippendorff's alpha (interval)" in found["figures"]["measure"].tolist()


LEVELS = pd.DataFrame(
    {  # five-level labels: 0–3, 4 = Don't know (missing to every statistic)
        "pair_id": [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 6, 6, 6],
        "annotator": ["a", "b", "c"] * 4 + ["a", "b", "a", "b", "c"],
        "level": [3, 3, 2, 0, 1, 0, 2, 2, 2, 1, 4, 0, 3, 3, 0, 1, 3],
        "english_level": "C1",
        "seconds_spent": 10.0,
    }
)


def test_agreement_figures_of_five_level_labels_match_the_krippendorff_package():
    rows = LEVELS.assign(value=LEVELS["level"].astype(float))
    values = agreement_values(rows, "levels")
    found = figures.agreement_figures(rows, values, "levels", False, None)
    shown = found["figures"].set_index("measure")
    levels = rows.assign(level=rows["level"].where(rows["level"] != 4).astype(float))  # Don't know: missing
    matrix = levels.pivot(index="annotator", columns="pair_id", values="level").to_numpy()
    for level in figures.ALPHA_LEVELS:
        assert shown.loc[f"Krippendorff's alpha ({level})", "value"] == pytest.approx(
            krippendorff.alpha(matrix, level_of_measurement=level, value_domain=[0, 1, 2, 3])
        )
    binary = figures.agreement_figures(rows, agreement_values(rows, "levels", binarised=True), "levels", True, None)
    measures = binary["figures"]["measure"].tolist()
    assert measures == ["Fleiss' kappa", "Krippendorff's alpha (binary)"]
    paraphrase = (matrix >= 2).astype(float)
    paraphrase[np.isnan(matrix)] = np.nan
    assert binary["figures"].set_index("measure").loc["Krippendorff's alpha (binary)", "value"] == pytest.approx(
        krippendorff.alpha(paraphrase, level_of_measurement="nominal")
    )


def test_annotator_tables_compare_each_annotator_with_the_run_at_the_threshold():
    rows = LEVELS.assign(value=LEVELS["level"].astype(float))
    binary = agreement_values(rows, "levels", binarised=True)
    run = pd.Series([0.9, 0.1, 0.8, 0.2, 0.7, 0.4], index=pd.Index([1, 2, 3, 4, 5, 6], name="pair_id"))
    summary, versus = figures.annotator_tables(rows, binary, "levels", run, 0.5, True)
    assert sorted(summary["annotator"]) == ["a", "b", "c"]
    assert summary.set_index("annotator").loc["b", "dont_know_rate"] == pytest.approx(1 / 6)
    model = (run >= 0.5).astype(int)
    for annotator in ("a", "b", "c"):
        mine = binary[binary["annotator"] == annotator].set_index("pair_id")["value"]
        row = versus[versus["annotator"] == annotator].iloc[0]
        assert row["n"] == len(mine)
        assert row["accuracy"] == pytest.approx(float((model.reindex(mine.index) == mine).mean()))
    assert figures.annotator_tables(rows, binary, "levels", None, None, False)[1] is None  # no run: no comparison
    assert figures.annotator_tables(rows, binary, "raw", run, 0.5, True)[1] is None  # no binarisation: none


@needs_data
def test_correlation_table_matches_scipy_and_orientation_negates_a_distance(mrpc):
    scores = pd.DataFrame({"overlap": mrpc["score"], "length": mrpc.index % 13 * 1.0})
    found = figures.correlation_table(scores, mrpc["reference"], None, 0).set_index(["metric", "method"])
    for name in scores:
        assert found.loc[(name, "pearson"), "r"] == pytest.approx(sp.pearsonr(scores[name], mrpc["reference"])[0])
        assert found.loc[(name, "spearman"), "r"] == pytest.approx(sp.spearmanr(scores[name], mrpc["reference"])[0])
        assert found.loc[(name, "kendall"), "r"] == pytest.approx(sp.kendalltau(scores[name], mrpc["reference"])[0])
    runs = pd.DataFrame({"name": ["overlap", "length"], "higher_is_similar": [True, False]})
    oriented = figures.oriented(scores, ["overlap", "length"], runs)
    pd.testing.assert_series_equal(oriented["overlap"], scores["overlap"])
    pd.testing.assert_series_equal(oriented["length"], -scores["length"])


def test_preference_agreement_counts_the_items_where_the_run_prefers_what_the_people_chose():
    items = pd.DataFrame(
        {"pair_a_id": [1, 3, 5, 7, 9], "pair_b_id": [2, 4, 6, 8, 10], "preferred": ["A", "B", "A", "A", "B"]}
    )
    scores = pd.DataFrame(
        {
            "score": [0.9, 0.1, 0.2, 0.8, 0.7, 0.3, 0.1, 0.6, 0.5, 0.4],
            "distance": [1, 9, 9, 1, 2, 8, 3, 7, 5, 6],
            "unused": 0.0,
        },
        index=range(1, 11),
    )
    table = figures.preference_agreement(items, scores, {"score": True, "distance": False}, ("score", "distance"))
    assert table["metric"].tolist() == ["score", "distance"]
    # the run's choice by hand: the higher score (the lower distance) wins
    chose = {"score": ["A", "B", "A", "B", "A"], "distance": ["A", "B", "A", "A", "A"]}
    for metric, choice in chose.items():
        row = table.set_index("metric").loc[metric]
        assert row["n"] == 5
        assert row["accuracy"] == pytest.approx(np.mean(np.array(choice) == items["preferred"].to_numpy()))
