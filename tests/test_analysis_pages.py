"""AppTest: the four analysis pages on a real SQLite store (real MRPC and BIOSSES pairs, labels and
scores), checking that what they show equals what pluie_core.stats computes on the same data."""

import krippendorff
import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score
from streamlit.testing.v1 import AppTest

from db.analysis import add_score_run, labels_long, pairs_frame, scores_wide
from db.datasets import import_pairs
from db.export import pair_aggregation
from pluie_core.analysis import Reference, edit_distances, label_matrix, reference_labels
from pluie_core.labels import majority_binary
from pluie_core.stats import (
    best_threshold,
    binarise_matrix,
    category_counts,
    cohen_kappa,
    disagreements,
    edit_distance_correlation,
    fleiss_kappa,
    format_p,
    human_disagreements,
    krippendorff_alpha,
    metrics_at,
    roc_auc,
    threshold_curve,
)
from tests.analysis_store import load_built_store
from tests.figures import charts, marks, trace, traces
from tests.paths import REPO
from tests.store_fixtures import open_page as open_app_page
from tests.store_fixtures import sentence_pairs, texts

ANALYSIS_PAGES = ["agreement", "thresholds", "distributions", "disagreements"]


@pytest.fixture
def open_page(db_url, engine, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")

    def open_(name, **widgets):
        at = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=60)
        at.run()
        assert not at.exception, at.exception
        return at

    return open_


def rerun(at):
    at.run()
    assert not at.exception, at.exception
    return at


def metric(at, label):
    return next(m.value for m in at.metric if m.label == label)


def messages(at):
    return "\n".join(str(e.value) for kind in ("info", "warning", "error") for e in getattr(at, kind))


def only_dataset(at, name):
    at.multiselect(key="analysis_datasets").set_value([name])
    return rerun(at)


@pytest.fixture
def store(engine, built_analysis_store):
    return load_built_store(engine, built_analysis_store)  # build_store(engine), built once per session


@pytest.mark.parametrize("name", ANALYSIS_PAGES)
def test_every_page_on_an_empty_store_invites_an_import(open_page, name):
    at = open_page(name)
    assert "No dataset yet" in messages(at)


def test_agreement_shows_the_kappas_and_alphas_stats_computes(open_page, engine, store):
    at = only_dataset(open_page("agreement"), "MRPC")
    labels = labels_long(engine)
    # docs/user-guide/labels-and-export.md's rules of the five-level scale, applied here by hand: Don't know (4) is missing,
    # 0-1 -> 0 and 2-3 -> 1; the statistics themselves take plain values
    matrix = label_matrix(labels[labels["dataset"] == "MRPC"], "levels").replace(4, np.nan)
    fleiss_levels = fleiss_kappa(category_counts(matrix, (0, 1, 2, 3)))
    fleiss_binary = fleiss_kappa(category_counts(binarise_matrix(matrix, cut=2), (0, 1)))
    assert metric(at, "Fleiss' κ") == f"{fleiss_levels:.3f}"
    ordinal = krippendorff_alpha(matrix.T, "ordinal")
    assert metric(at, "Krippendorff's α ordinal") == f"{ordinal:.3f}"
    at.radio(key="agreement_view").set_value("Binarised")
    rerun(at)
    assert metric(at, "Fleiss' κ") == f"{fleiss_binary:.3f}"
    at.radio(key="agreement_view").set_value("Five-level scale")

    at.radio(key="agreement_weights").set_value("Quadratic")
    rerun(at)
    pairwise = at.dataframe[0].value.set_index(["annotator_a", "annotator_b"])
    assert pairwise.loc[("ann1", "ann2"), "kappa"] == pytest.approx(
        cohen_kappa(matrix["ann1"], matrix["ann2"], weights="quadratic")
    )
    # the heatmap: every cell reads its κ and the items both labelled, on a red-blue scale from -1 to 1
    heatmap = charts(at)["Cohen's κ per pair of annotators (five-level); n = items both labelled"]
    cells = trace(heatmap, "heatmap")
    kappa = cohen_kappa(matrix["ann1"], matrix["ann2"], weights="quadratic")
    shared = int((matrix["ann1"].notna() & matrix["ann2"].notna()).sum())
    assert cells["x"] == cells["y"] == ["ann1", "ann2", "ann3", "ann4"]
    assert cells["z"][1][0] == pytest.approx(kappa)  # row ann2, column ann1
    assert cells["text"][0][1] == f"{kappa:.2f}<br>n={shared}" and cells["texttemplate"] == "%{text}"
    assert len(cells["z"]) == 4 and all(len(row) == 4 for row in cells["z"]) and cells["z"][2][2] is None
    # red (-1) through white to blue (1), the first annotator on top
    assert (cells["zmin"], cells["zmax"]) == (-1, 1)
    assert cells["colorscale"][0][1] == "rgb(103,0,31)" and cells["colorscale"][-1][1] == "rgb(5,48,97)"
    assert heatmap["layout"]["yaxis"]["autorange"] == "reversed"
    summary = next(d.value for d in at.dataframe if "kappa_vs_others" in d.value.columns)
    assert list(summary["annotator"]) == ["ann1", "ann2", "ann3", "ann4"]


def test_agreement_compares_humans_with_the_chosen_run(open_page, engine, store):
    at = only_dataset(open_page("agreement"), "MRPC")
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    rerun(at)
    versus = next(d.value for d in at.dataframe if "accuracy" in d.value.columns and "tp" in d.value.columns)
    labels = labels_long(engine)
    binary = binarise_matrix(label_matrix(labels[labels["dataset"] == "MRPC"], "levels").replace(4, np.nan), cut=2)
    scores = scores_wide(engine, [store["pluie_run"]])["PLUIE stand-in"].reindex(binary.index)
    kept = binary["ann1"].notna()
    agreement = ((scores[kept] >= 0).astype(float) == binary.loc[kept, "ann1"]).mean()
    assert versus.set_index("annotator").loc["ann1", "accuracy"] == pytest.approx(agreement)
    assert versus["annotator"].iloc[-1] == "majority"
    majority = versus.set_index("annotator").loc["majority"]
    confusion = charts(at)[f"majority against PLUIE stand-in (n = {int(majority['n'])})"]
    matrix = trace(confusion, "heatmap")
    cells = {
        (row, column): matrix["z"][i][j] for i, row in enumerate(matrix["y"]) for j, column in enumerate(matrix["x"])
    }
    assert cells == {
        ("human: non-paraphrase", "model: non-paraphrase"): majority["tn"],
        ("human: non-paraphrase", "model: paraphrase"): majority["fp"],
        ("human: paraphrase", "model: non-paraphrase"): majority["fn"],
        ("human: paraphrase", "model: paraphrase"): majority["tp"],
    }
    assert matrix["text"] == matrix["z"] and matrix["colorscale"][-1][1] == "rgb(8,48,107)"  # plotly's Blues
    assert confusion["layout"]["yaxis"]["autorange"] == "reversed"  # human: non-paraphrase on top


def test_agreement_on_raw_biosses_scores_uses_their_own_scale(open_page, engine, store):
    at = only_dataset(open_page("agreement"), "BIOSSES")
    labels = labels_long(engine)
    matrix = label_matrix(labels[labels["dataset"] == "BIOSSES"], "raw")
    interval = krippendorff_alpha(matrix.T, "interval")
    assert metric(at, "Krippendorff's α interval") == f"{interval:.3f}"
    at.radio(key="agreement_view").set_value("Binarised")
    assert "no paraphrase / non-paraphrase binarisation" in messages(rerun(at))
    assert not any(m.value == "nan" for m in at.metric)


def test_agreement_figures_are_the_reference_libraries_on_each_scale(open_page, engine, store):
    # five-level labels: Don't know (4) missing, as the page always showed; raw BIOSSES scores: every
    # 0-4 score counts (issue 15: Fleiss' κ 0.576, nominal α 0.577, mean pairwise κ 0.578)
    labels = labels_long(engine)
    at = only_dataset(open_page("agreement"), "MRPC")
    levels = label_matrix(labels[labels["dataset"] == "MRPC"], "levels").to_numpy()
    nominal = krippendorff.alpha(np.where(levels == 4, np.nan, levels).T, level_of_measurement="nominal")
    assert metric(at, "Krippendorff's α nominal") == f"{nominal:.3f}"
    at = only_dataset(open_page("agreement"), "BIOSSES")
    scores = label_matrix(labels[labels["dataset"] == "BIOSSES"], "raw")
    assert (
        metric(at, "Krippendorff's α nominal")
        == "0.577"
        == (f"{krippendorff.alpha(scores.T.to_numpy(), level_of_measurement='nominal'):.3f}")
    )
    assert metric(at, "Fleiss' κ") == "0.576"
    pairwise = at.dataframe[0].value
    expected = [
        cohen_kappa_score(scores[a], scores[b]) for a, b in zip(pairwise["annotator_a"], pairwise["annotator_b"])
    ]
    assert pairwise["kappa"].tolist() == pytest.approx(expected) and pairwise["kappa"].mean() == pytest.approx(
        0.578, abs=5e-4
    )


def test_thresholds_shows_the_best_and_natural_thresholds_of_stats(open_page, engine, store):
    at = only_dataset(open_page("thresholds"), "MRPC")
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    rerun(at)
    pairs = pairs_frame(engine)
    mrpc = pairs[pairs["dataset"] == "MRPC"]
    scores = scores_wide(engine, [store["pluie_run"]])["PLUIE stand-in"].reindex(mrpc.index)
    best = best_threshold(scores, mrpc["gold_label"])
    assert metric(at, "Best threshold (a posteriori)") == f"{best['threshold']:.4g}"
    assert metric(at, "Accuracy at natural") == f"{metrics_at(scores, mrpc['gold_label'], 0.0)['accuracy']:.3f}"
    assert metric(at, "ROC AUC") == f"{roc_auc(scores, mrpc['gold_label']):.3f}"
    compare = at.dataframe[0].value
    assert list(compare.index) == ["best (a posteriori)", "natural"]
    mbd = at.dataframe[-1].value
    assert ("PLUIE stand-in", "accuracy") in mbd.index and "natural" in mbd.columns

    # the curve (200 pairs: every point drawn), the paper's colours, the best and natural thresholds marked
    curve = threshold_curve(scores, mrpc["gold_label"])
    figure = charts(at)["PLUIE stand-in: classification quality by threshold"]
    lines = traces(figure, "scatter")
    assert [line["name"] for line in lines] == ["accuracy", "f1", "precision", "recall"]
    for line in lines:
        assert line["mode"] == "lines" and line["x"] == pytest.approx(curve["threshold"].tolist())
        assert [float("nan") if v is None else v for v in line["y"]] == pytest.approx(
            curve[line["name"]].tolist(), nan_ok=True
        )
    assert [line["line"]["color"] for line in lines] == [
        "#f28e2b",
        "#1f77b4",
        "#9467bd",
        "#8c8c8c",
    ]  # grey: dark themes
    assert figure["layout"]["xaxis"]["title"]["text"] == "PLUIE stand-in"
    assert figure["layout"]["yaxis"]["range"] == [0, 1.02]
    shown = marks(figure)
    assert shown[f"best {best['threshold']:.3g}"][0] == pytest.approx(best["threshold"])
    assert shown["natural 0"] == (0, "#d62728", "dash")
    at.radio(key="threshold_x").set_value("Rank")
    figure = charts(rerun(at))["PLUIE stand-in: classification quality by threshold"]
    assert figure["layout"]["xaxis"]["title"]["text"] == "rank of the pair"
    assert traces(figure, "scatter")[0]["x"] == pytest.approx(curve["rank"].tolist())
    assert marks(figure)["natural 0"][0] == curve.loc[curve["threshold"] >= 0, "rank"].min()


def test_thresholds_against_the_human_majority(open_page, engine, store):
    at = only_dataset(open_page("thresholds"), "MRPC")
    at.radio(key="analysis_reference").set_value("majority")
    rerun(at)
    pairs = pairs_frame(engine)
    reference = reference_labels(pairs, labels_long(engine), Reference("majority"))
    scores = scores_wide(engine, [store["lev_run"]])["Levenshtein similarity"]
    best = best_threshold(scores.reindex(reference.index), reference)
    assert metric(at, "Best threshold (a posteriori)") == f"{best['threshold']:.4g}"
    assert metric(at, "Accuracy at natural") == "—"  # a baseline has no natural threshold


def test_thresholds_of_a_distance_read_lower_as_more_similar(open_page, engine, store):
    at = only_dataset(open_page("thresholds"), "MRPC")
    at.selectbox(key="analysis_run").set_value("levenshtein")
    rerun(at)
    pairs = pairs_frame(engine)
    mrpc = pairs[pairs["dataset"] == "MRPC"]
    distance = scores_wide(engine, [store["distance_run"]])["levenshtein"].reindex(mrpc.index)
    best = best_threshold(distance, mrpc["gold_label"], higher_is_positive=False)
    assert metric(at, "Best threshold (a posteriori)") == f"{best['threshold']:.4g}"
    assert metric(at, "ROC AUC") == f"{roc_auc(distance, mrpc['gold_label'], higher_is_positive=False):.3f}"
    assert "lower scores mean more similar" in at.caption[0].value


def test_thresholds_with_a_single_class_says_so(open_page, engine):
    ids = import_pairs(
        engine,
        "all paraphrases",
        pd.DataFrame(
            {
                "source": ["a cat", "a dog", "the sun"],
                "hypothesis": ["a cat!", "one dog", "the sun."],
                "label": [1, 1, 1],
            }
        ),
    )
    add_score_run(engine, "lev", {i + 1: v for i, v in enumerate([0.8, 0.6, 0.9])})
    at = open_page("thresholds")
    assert "needs both paraphrases and non-paraphrases" in messages(at)
    assert ids.n_pairs == 3


def test_thresholds_report_the_tied_best_thresholds_and_the_draw_size(open_page, engine):
    # thresholds 2, 4 and 6 all reach the best accuracy (4/6) on these six pairs
    import_pairs(
        engine,
        "ties",
        pd.DataFrame(
            {
                "source": [f"sentence {i}" for i in range(6)],
                "hypothesis": [f"other {i}" for i in range(6)],
                "label": [0, 1, 0, 1, 0, 1],
            }
        ),
    )
    add_score_run(engine, "steps", {i + 1: float(i + 1) for i in range(6)})
    at = open_page("thresholds")
    best = best_threshold([1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [0, 1, 0, 1, 0, 1])
    assert metric(at, "Best threshold (a posteriori)") == "2" and (best["tie_low"], best["tie_high"]) == (2.0, 6.0)
    assert any("3 thresholds from 2 to 6 reach the same best accuracy" in c.value for c in at.caption)
    compare = at.dataframe[0].value
    assert compare.loc["best (a posteriori)", ["tie_low", "tie_high"]].tolist() == [2.0, 6.0]
    # the mixed balanced draw asks for the paper's 45 per class and says that this dataset has 3
    assert "45 pairs per class and dataset were asked for" in messages(at)
    assert any("draws of 3 pairs per class" in c.value for c in at.caption)


def test_analysis_pages_without_scores_say_so(open_page, engine):
    import_pairs(engine, "toy", pd.DataFrame({"source": ["a"], "hypothesis": ["b"], "label": [1]}))
    for name in ("thresholds", "distributions"):
        assert "No scores yet" in messages(open_page(name))
    assert "No human labels" in messages(open_page("agreement"))


def test_distributions_show_the_per_class_edit_distance_correlation(open_page, engine, store):
    at = only_dataset(open_page("distributions"), "MRPC")
    pairs = pairs_frame(engine, texts=True)
    mrpc = pairs[pairs["dataset"] == "MRPC"].copy()
    mrpc["score"] = scores_wide(engine, [store["lev_run"]])["Levenshtein similarity"]
    mrpc["distance"] = edit_distances(mrpc)
    expected = edit_distance_correlation(mrpc, ["score"], "distance", label_col="gold_label").set_index("gold_label")
    shown = at.dataframe[0].value.set_index("class")
    assert shown.loc["paraphrase", "r"] == pytest.approx(expected.loc[1.0, "r"])
    assert shown.loc["non-paraphrase", "n"] == expected.loc[0.0, "n"]
    # p-values read as 3 significant digits (or "< 1e-16"), never 30 decimals; missing cells read "—"
    assert shown.loc["paraphrase", "p_value"] == format_p(expected.loc[1.0, "p_value"])
    assert all(len(p) <= 9 for p in shown["p_value"]) and at.dataframe[0].proto.placeholder == "—"
    assert (format_p(3e-31), format_p(0.012345), format_p(float("nan"))) == ("< 1e-16", "0.0123", "—")
    summary = at.dataframe[1].value
    assert summary.loc[
        (summary["class"] == "paraphrase") & (summary["score"] == "Levenshtein similarity"), "mean"
    ].iloc[0] == pytest.approx(mrpc.loc[mrpc["gold_label"] == 1, "score"].mean())

    # the histogram binned on the server (50 bins over both classes), the classes overlaid in their colours
    figures = charts(at)
    histogram = figures["Levenshtein similarity per class"]
    edges = np.histogram_bin_edges(mrpc["score"], 50)
    for label, name, colour in ((1, "paraphrase", "#1f77b4"), (0, "non-paraphrase", "#ff7f0e")):
        drawn = trace(histogram, "bar", name)
        assert drawn["y"] == np.histogram(mrpc.loc[mrpc["gold_label"] == label, "score"], edges)[0].tolist()
        assert [row[1] for row in drawn["customdata"]] == pytest.approx(edges[:-1].tolist())  # each bar's start
        assert drawn["marker"]["color"] == colour
    assert histogram["layout"]["barmode"] == "overlay"  # the classes overlaid, not stacked
    scatter = figures["Levenshtein similarity against the normalised Levenshtein distance"]
    assert {t["type"] for t in scatter["data"]} == {"scattergl"}  # WebGL: every pair drawn
    points = pd.concat(
        [
            pd.DataFrame(
                {
                    "pair_id": [row[0] for row in t["customdata"]],
                    "x": t["x"],
                    "y": t["y"],
                    "symbol": t["marker"]["symbol"],
                }
            )
            for t in scatter["data"]
        ]
    ).set_index("pair_id")
    assert len(points) == len(mrpc) and points["x"].to_dict() == pytest.approx(mrpc["distance"].to_dict())
    assert points["y"].to_dict() == pytest.approx(mrpc["score"].to_dict())
    assert [t["marker"]["symbol"] for t in scatter["data"]] == ["circle", "square"]
    hover = scatter["data"][0]["hovertemplate"]
    assert [line.split(":")[0] for line in hover.split("<br>")] == [
        "pair",
        "source",
        "hypothesis",
        "dataset",
        "class",
        "labels",
        "normalised edit distance",
        "Levenshtein similarity",
    ]
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    figures = charts(rerun(at))
    assert list(marks(figures["PLUIE stand-in per class"])) == ["natural threshold"]
    assert marks(figures["PLUIE stand-in per class"])["natural threshold"][0] == 0
    level = figures["PLUIE stand-in against the normalised Levenshtein distance"]["layout"]["shapes"]
    assert [(s["y0"], s["y1"], s["line"]["color"]) for s in level] == [(0, 0, "#d62728")]
    at.selectbox(key="analysis_run").set_value("Levenshtein similarity")
    rerun(at)

    at.multiselect(key=f"distribution_table_runs_{store['lev_run']}").set_value(
        ["Levenshtein similarity", "PLUIE stand-in"]
    )
    rerun(at)
    both = at.dataframe[0].value.set_index(["score", "class"])
    mrpc["pluie"] = scores_wide(engine, [store["pluie_run"]])["PLUIE stand-in"]
    pluie = edit_distance_correlation(mrpc, ["pluie"], "distance", label_col="gold_label").set_index("gold_label")
    assert both.loc[("PLUIE stand-in", "non-paraphrase"), "r"] == pytest.approx(pluie.loc[0.0, "r"])


def test_disagreements_list_the_most_confident_first_with_the_diff(open_page, engine, store):
    at = open_page("disagreements")
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    rerun(at)
    # issue 35: MRPC's gold is 0/1, BIOSSES' a 0–4 score: one scale at a time, MRPC's (binary) first
    assert "references are on different scales (binary 0/1: MRPC; scores 0–4: BIOSSES)" in messages(at)
    pairs = pairs_frame(engine)
    pairs = pairs[pairs["dataset"] == "MRPC"]
    frame = pairs.join(scores_wide(engine, [store["pluie_run"]]))
    frame["reference"] = reference_labels(pairs, labels_long(engine), Reference("gold"))
    expected = disagreements(frame, "PLUIE stand-in", "reference", 0.0)
    table = at.dataframe[0].value
    assert table.index[0] == expected.index[0]
    assert len(table) == len(expected)
    first = store["pairs"].loc[expected.index[0]]
    html = "".join(str(e.proto) for e in at.get("html"))
    assert "<mark" in html and first["source"].split()[0] in html
    assert sorted(at.dataframe[-1].value["run"]) == ["Levenshtein similarity", "PLUIE stand-in", "levenshtein"]


def test_disagreements_among_humans_start_with_the_most_even_split(open_page, engine, store):
    at = open_page("disagreements")
    at.radio(key="disagreement_mode").set_value("humans")
    rerun(at)
    expected = human_disagreements(label_matrix(labels_long(engine), "levels"))
    table = at.dataframe[0].value
    assert table.index[0] == expected.index[0]
    assert table["minority_share"].iloc[0] == pytest.approx(expected["minority_share"].max())
    labels = at.dataframe[1].value
    assert len(labels) == expected.iloc[0]["n_labels"] + expected.iloc[0]["n_dont_know"]
    # each pair's posterior and uncertainty under an aggregation method, as db.export.pair_aggregation has them
    assert "posterior" not in table.columns
    at.sidebar.selectbox(key="disagreement_aggregation").set_value("majority")
    rerun(at)
    table = at.dataframe[0].value
    fitted = pair_aggregation(engine, method="majority", scale="binary").pairs
    assert table["uncertainty"].tolist() == pytest.approx(fitted.loc[table.index, "uncertainty"].tolist())
    # the most even split: its uncertainty is the minority's share; an even tie has no label, so no posterior
    first = table.loc[expected.index[0]]
    assert first["uncertainty"] == pytest.approx(expected["minority_share"].max())
    assert pd.isna(first["posterior"]) if expected["minority_share"].max() == 0.5 else first["posterior"] > 0.5


def test_disagreements_each_mode_offers_only_its_own_pairs(open_page, engine, store):
    at = open_page("disagreements")
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    rerun(at)
    model_pairs = at.dataframe[0].value.index.tolist()
    at.selectbox(key="disagreement_pair_model").set_value(2)
    rerun(at)
    assert any(f"Pair {model_pairs[2]} ·" in str(c.value) for c in at.caption)
    at.radio(key="disagreement_mode").set_value("humans")
    rerun(at)
    human_pairs = at.dataframe[0].value.index.tolist()
    chosen = at.selectbox(key="disagreement_pair_humans")
    assert chosen.value == 0  # the humans' list starts at its own first pair
    assert [int(o.split("pair ")[1].split(" ")[0]) for o in chosen.options] == human_pairs[:500]
    assert any(f"Pair {human_pairs[0]} ·" in str(c.value) for c in at.caption)


def test_distributions_of_a_single_class_say_so(open_page, engine):
    import_pairs(
        engine,
        "all paraphrases",
        pd.DataFrame(
            {
                "source": ["a cat sat", "a dog ran", "the sun rose"],
                "hypothesis": ["a cat sat!", "one dog ran", "the sun rose."],
                "label": [1, 1, 1],
            }
        ),
    )
    add_score_run(engine, "lev", {1: 0.1, 2: 0.3, 3: 0.05}, higher_is_similar=False)
    at = open_page("distributions")
    assert "Every pair here is a paraphrase" in messages(at)
    assert list(at.dataframe[0].value["class"]) == ["paraphrase"]


def test_disagreements_filtered_by_annotator_only_list_their_pairs(open_page, engine, store):
    at = open_page("disagreements")
    at.multiselect(key="disagreement_annotators").set_value(["ann4"])
    rerun(at)
    labels = labels_long(engine)
    theirs = set(labels.loc[labels["annotator"] == "ann4", "pair_id"])
    listed = set(at.dataframe[0].value.index)
    assert listed and listed <= theirs


def test_agreement_with_a_single_annotator_says_agreement_needs_two(open_page, engine):
    import_pairs(
        engine,
        "solo",
        pd.DataFrame(
            {"source": ["a b", "c d", "e f"], "hypothesis": ["a c", "c e", "e g"], "annotator:only": [0, 3, 2]}
        ),
        annotator_scale="levels",
    )
    at = open_page("agreement")
    assert "needs at least two annotators" in messages(at)
    summary = at.dataframe[0].value
    assert list(summary["annotator"]) == ["only"] and summary["labels"].iloc[0] == 3


def test_agreement_when_every_label_is_dont_know_says_why_each_figure_is_missing(open_page, engine):
    """Don't know counts as missing: a dataset labelled only with it has no value to count. The page
    crashed here ("need at least one array to stack", Fleiss' κ's category counts of no category)."""
    import_pairs(
        engine,
        "unsure",
        pd.DataFrame(
            {
                "source": ["a b", "c d", "e f"],
                "hypothesis": ["a c", "c e", "e g"],
                "annotator:x": [4, 4, 4],
                "annotator:y": [4, 4, 4],
            }
        ),
        annotator_scale="levels",
    )
    at = open_page("agreement")
    for view in ("Five-level scale", "Binarised"):
        at.radio(key="agreement_view").set_value(view)
        rerun(at)
        figures = {m.label: (m.value, m.help) for m in at.metric}
        assert figures["Fleiss' κ"] == ("—", "Fleiss' κ needs at least one item labelled by two or more annotators.")
        assert all(value == "—" and "two or more annotators" in why for value, why in figures.values())
        assert "no Cohen's κ" in messages(at) and not at.get("bidi_component")
    summary = next(d.value for d in at.dataframe if "kappa_vs_others" in d.value.columns)
    assert summary["dont_know_rate"].tolist() == [1.0, 1.0]
    # no majority label anywhere: the model has nothing to disagree with, and the page says that, not "agree"
    add_score_run(engine, "PLUIE doubt", pd.Series([0.5, -1.0, 2.0], index=pairs_frame(engine).index), kind="pluie")
    at = open_page("disagreements")
    at.radio(key="analysis_reference").set_value("majority")
    assert "No pair of these datasets has both a PLUIE doubt score and a label from the human majority yet" in messages(
        rerun(at)
    )


def test_cached_figures_follow_new_labels_at_once(open_page, store, engine):
    """The pages' reads are cached (a second on a large store) under a key of the store's state:
    labels that arrive show on the next run of the page, not a minute later."""
    from db.analysis import add_labels

    at = open_page("agreement")
    before = next(c.value for c in at.caption if " labels · " in c.value)
    fleiss = metric(at, "Fleiss' κ")
    ids = pairs_frame(engine).index[:150]
    add_labels(engine, pd.DataFrame({"pair_id": ids, "annotator": "late", "level": [0, 3, 1] * 50}))
    after = next(c.value for c in rerun(at).caption if " labels · " in c.value)
    assert before.split(" · ")[1:4] != after.split(" · ")[1:4]
    assert (
        int(after.split(" · ")[1].split()[0].replace(",", ""))
        == int(before.split(" · ")[1].split()[0].replace(",", "")) + 150
    )
    assert after.split(" · ")[3].startswith(f"{int(before.split(' · ')[3].split()[0]) + 1} annotators")
    assert metric(at, "Fleiss' κ") != fleiss


def test_the_large_reads_are_one_shared_frame_per_store_state(open_page, store, engine):
    """Issue 20: labels, their matrices, pairs and scores are kept as they are, not pickled on every
    hit (a second per run of Agreement at 300,000 labels): two runs get the very same frame, a new
    label gives a new one, and the pages leave them as they found them."""
    from db.analysis import add_labels
    from ui.views import store_reads as common

    key = common.store_key()
    dataset_ids = tuple(int(i) for i in common.choices(key).datasets["id"])
    labels = common.labels(key, dataset_ids)
    views = common.label_views(key, dataset_ids, "levels")
    kept = labels.copy(), [view.copy() for view in views]
    for name in ANALYSIS_PAGES:  # every analysis page, drawn on these very frames
        open_page(name)
    assert common.labels(key, dataset_ids) is labels and common.label_views(key, dataset_ids, "levels") is views
    pd.testing.assert_frame_equal(labels, kept[0])
    for view, copy in zip(views, kept[1]):
        pd.testing.assert_frame_equal(view, copy)
    add_labels(engine, pd.DataFrame({"pair_id": pairs_frame(engine).index[:3], "annotator": "late", "level": 1}))
    assert len(common.labels(common.store_key(), dataset_ids)) == len(labels) + 3


def test_agreement_and_disagreements_of_a_crowd_read_the_labels_not_a_matrix_of_everyone(open_page, engine):
    """A campaign of many annotators who each label a few pairs (6,030 on 100,000 pairs in bench/serving.py's
    store): the Agreement page never settled when every statistic went through a pairs x annotators matrix
    (600,000,000 cells there, pairwise κ over 18,000,000 pairs of people). Here 120 annotators, 3 labels a
    pair: the figures equal the matrix-based ones computed by hand, and pairwise κ covers the 50 annotators
    with the most labels, as the page says."""
    from db.analysis import add_labels

    rng = np.random.default_rng(7)
    n_pairs, people = 400, [f"crowd{i:03d}" for i in range(120)]
    import_pairs(
        engine,
        "crowd",
        pd.DataFrame(
            {"source": [f"s {i} a" for i in range(n_pairs)], "hypothesis": [f"s {i} b" for i in range(n_pairs)]}
        ),
    )
    ids = pairs_frame(engine).index.to_numpy()
    # three different people per pair; the first 20 people label far more than the rest
    weights = np.r_[np.full(20, 8.0), np.ones(100)]
    rows = [(pair, who) for pair in ids for who in rng.choice(people, 3, replace=False, p=weights / weights.sum())]
    labels = pd.DataFrame(rows, columns=["pair_id", "annotator"])
    labels["level"] = rng.choice([0, 1, 2, 3, 4], len(labels), p=[0.2, 0.2, 0.25, 0.25, 0.1])
    add_labels(engine, labels)
    scores = pd.Series(rng.normal(size=len(ids)), index=ids)
    add_score_run(engine, "crowd score", scores, kind="pluie")  # natural threshold 0

    seen = sorted(labels["annotator"].unique())
    assert 100 < len(seen) <= 120
    at = open_page("agreement")
    assert f"{len(labels):,} labels · {n_pairs:,} pairs · {len(seen)} annotators" in "\n".join(
        c.value for c in at.caption
    )
    matrix = label_matrix(labels_long(engine), "levels").replace(4, np.nan)  # 400 x 120: small enough by hand
    assert metric(at, "Fleiss' κ") == f"{fleiss_kappa(category_counts(matrix, (0, 1, 2, 3))):.3f}"
    counts = matrix.notna().sum()  # the labels κ counts (Don't know is missing)
    assert f"Cohen's κ for the 50 annotators with the most labels, of {len(seen)}" in "\n".join(
        c.value for c in at.caption
    )
    pairwise = at.dataframe[0].value
    shown = set(pairwise["annotator_a"]) | set(pairwise["annotator_b"])
    assert len(pairwise) == 50 * 49 // 2
    assert len(shown) == 50 and min(counts[list(shown)]) >= max(counts[list(set(seen) - shown)])
    row = pairwise.sort_values("n_shared", ascending=False, kind="stable").iloc[0]  # the pair who share most
    assert row["n_shared"] >= 2 and row["kappa"] == pytest.approx(
        cohen_kappa(matrix[row["annotator_a"]], matrix[row["annotator_b"]])
    )
    summary = next(d.value for d in at.dataframe if "kappa_vs_others" in d.value.columns)
    assert sorted(summary["annotator"]) == seen and summary["labels"].sum() == len(labels)

    at.selectbox(key="analysis_run").set_value("crowd score")
    versus = next(d.value for d in rerun(at).dataframe if "tp" in d.value.columns).set_index("annotator")
    binary = binarise_matrix(matrix, cut=2)
    assert len(versus) == len(seen) + 1 and versus.index[-1] == "majority"
    for who in (seen[0], seen[-1]):
        kept = binary[who].notna()
        accuracy = ((scores.reindex(binary.index)[kept] >= 0).astype(float) == binary.loc[kept, who]).mean()
        assert versus.loc[who, "accuracy"] == pytest.approx(accuracy) and versus.loc[who, "n"] == kept.sum()
    majority = matrix.apply(lambda row: majority_binary(int(x) for x in row.dropna()), axis=1).dropna().astype(float)
    assert versus.loc["majority", "n"] == len(majority)
    assert versus.loc["majority", "accuracy"] == pytest.approx(
        ((scores.reindex(majority.index) >= 0) == majority).mean()
    )

    at = open_page("disagreements")
    at.radio(key="disagreement_mode").set_value("humans")
    table = rerun(at).dataframe[0].value
    expected = human_disagreements(label_matrix(labels_long(engine), "levels"))
    assert len(table) == len(expected) > 0
    assert table["n_paraphrase"].tolist() == expected["n_paraphrase"].tolist()


# -- through the app's menu on a store of the test's own (issue 14, points 5 and 10)


def test_every_page_uses_the_best_threshold_of_a_baseline_or_the_one_set(app_store):
    from db.analysis import labels_long, pairs_frame, scores_wide
    from pluie_core.analysis import Reference, reference_labels
    from pluie_core.stats import best_threshold, disagreements
    from tests.analysis_store import build_store

    engine = app_store
    built = build_store(engine, n_mrpc=120)
    pairs = pairs_frame(engine)
    pairs = pairs[pairs["dataset"] == "MRPC"]
    frame = pairs.join(scores_wide(engine, [built["lev_run"]]))
    frame["reference"] = reference_labels(pairs, labels_long(engine), Reference("gold"))
    name = "Levenshtein similarity"
    best = best_threshold(frame[name], frame["reference"])["threshold"]
    expected = disagreements(frame, name, "reference", best)
    median = disagreements(frame, name, "reference", frame[name].median())
    assert len(expected) != len(median)  # the old default (the median score) lists other pairs

    def choose(at):
        at.multiselect(key="analysis_datasets").set_value(["MRPC"])
        rerun(at)
        at.selectbox(key="analysis_run").set_value(name)
        return rerun(at)

    at = choose(open_app_page("disagreements"))
    assert len(at.dataframe[0].value) == len(expected)
    assert "a-posteriori best threshold against gold labels (as on the Thresholds page)" in texts(at)

    at.switch_page("pages/agreement.py")
    at = choose(rerun(at))
    shown = texts(at)
    assert f"paraphrase at score ≥ {best:g};" in shown and "a-posteriori best threshold" in shown

    # a threshold the user sets holds on every page, and the page says so
    at.number_input(key=f"agreement_threshold_{built['lev_run']}").set_value(0.5)
    rerun(at)
    assert "paraphrase at score ≥ 0.5;" in texts(at) and "set by you" in texts(at)
    at.switch_page("pages/disagreements.py")
    at = choose(rerun(at))
    assert len(at.dataframe[0].value) == len(disagreements(frame, name, "reference", 0.5))
    assert "set by you" in texts(at)
    at.button(key=f"disagreement_threshold_{built['lev_run']}_reset").click()
    rerun(at)
    assert len(at.dataframe[0].value) == len(expected)

    # PLUIE keeps its natural 0
    at.selectbox(key="analysis_run").set_value("PLUIE stand-in")
    assert "PLUIE's natural threshold 0" in texts(rerun(at))


def test_the_kappa_heatmap_colour_bar_has_room_for_its_labels(app_store):
    from tests.figures import charts, trace

    engine = app_store
    frame = pd.DataFrame(sentence_pairs(6), columns=["source", "hypothesis"])
    frame["annotator:A"] = [0, 1, 2, 3, 3, 0]
    frame["annotator:B"] = [0, 1, 3, 3, 2, 1]
    import_pairs(engine, "two people", frame, annotator_scale="levels")
    at = open_app_page("agreement")
    heatmap = charts(at)["Cohen's κ per pair of annotators (five-level); n = items both labelled"]
    bar = trace(heatmap, "heatmap")["colorbar"]
    assert bar["tickvals"] == [-1, -0.5, 0, 0.5, 1]  # five labelled ticks, whatever the number of annotators
    # px between two labels of about 12 px: no overlap, though two annotators make a short plot
    assert bar["lenmode"] == "pixels" and bar["len"] / (len(bar["tickvals"]) - 1) >= 40
    assert heatmap["layout"]["height"] >= bar["len"] + 100  # the whole bar below the title, its labels in the figure
