"""AppTest: the Correlation page on a real SQLite store (STS-B test pairs with their gold scores and
five-level labels, BIOSSES with its annotators' raw scores, a two-pair dataset), checking its figures
against scipy on the same values and its one-sentence refusals."""

import copy

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from streamlit.testing.v1 import AppTest

from db.analysis import add_labels, add_score_run, pairs_frame
from db.datasets import import_pairs
from pluie_core.baselines import chrf, levenshtein
from pluie_core.io import load_pairs
from tests.figures import charts, trace, traces
from tests.paths import DATASETS, REPO
from tests.store_fixtures import load_sqlite_copy


@pytest.fixture(scope="module")
def built_store(tmp_path_factory):
    """The store, built once for the module into a SQLite file; each test gets a copy (`store`)."""
    from db import init_db

    path = tmp_path_factory.mktemp("correlation") / "built.db"
    engine = init_db(f"sqlite:///{path}")
    built = build_store(engine)
    engine.dispose()  # the last connection closed: the WAL is checkpointed into the file
    return path, built


@pytest.fixture
def store(engine, built_store):
    path, built = built_store
    load_sqlite_copy(engine, path)
    return copy.deepcopy(built)


def build_store(engine):
    stsb = load_pairs(DATASETS / "stsbenchmark" / "sts-test.csv").head(300)
    import_pairs(engine, "STS-B", stsb)
    import_pairs(engine, "BIOSSES", load_pairs(DATASETS / "biosses" / "biosses_pairs_with_annotator_scores.tsv"))
    import_pairs(
        engine,
        "tiny",
        pd.DataFrame({"source": ["a b c", "d e f"], "hypothesis": ["a b d", "d x y"], "label": [4.0, 1.0]}),
        label_kind="score",
        label_range=(0, 5),
    )
    pairs = pairs_frame(engine, texts=True)
    add_score_run(
        engine,
        "levenshtein",
        pd.Series(levenshtein(pairs.source, pairs.hypothesis), pairs.index),
        higher_is_similar=False,
    )
    add_score_run(engine, "chrF", pd.Series(chrf(pairs.source, pairs.hypothesis), pairs.index))
    rng = np.random.default_rng(0)
    labelled = pairs.index[pairs["dataset"] == "STS-B"][:120]
    labels = pd.DataFrame(
        {
            "pair_id": np.repeat(labelled, 3),
            "annotator": ["p1", "p2", "p3"] * len(labelled),
            "level": rng.integers(0, 5, 3 * len(labelled)),
        }
    )
    add_labels(engine, labels)
    return {"pairs": pairs, "labels": labels, "stsb": stsb}


@pytest.fixture
def page(db_url, monkeypatch, store):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    at = AppTest.from_file(str(REPO / "pages" / "correlation.py"), default_timeout=60)
    return at


def run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def on(at, dataset, **choices):
    run(at)
    at.multiselect(key="analysis_datasets").set_value([dataset])
    at.select_slider(key="correlation_boot").set_value(200)
    for key, value in choices.items():
        (at.radio if key in ("correlation_reference", "correlation_level") else at.selectbox)(key=key).set_value(value)
        run(at)
    return run(at)


def table(at):
    return at.dataframe[0].value.set_index(["metric", "method"])


def errors(at):
    return " ".join(str(e.value) for e in at.error)


def test_gold_scores_give_scipys_coefficients(page, store):
    at = on(page, "STS-B")
    pairs = store["pairs"][store["pairs"]["dataset"] == "STS-B"]
    scores = {"chrF": chrf(pairs.source, pairs.hypothesis), "levenshtein": levenshtein(pairs.source, pairs.hypothesis)}
    shown = table(at)
    assert len(shown) == 6
    for (metric, method), row in shown.iterrows():
        function = {
            "pearson": scipy_stats.pearsonr,
            "spearman": scipy_stats.spearmanr,
            "kendall": scipy_stats.kendalltau,
        }[method]
        assert row["r"] == pytest.approx(function(scores[metric], pairs["gold_label"]).statistic)
        assert row["n"] == 300 and row["ci_low"] < row["r"] < row["ci_high"]
    assert shown.loc[("levenshtein", "pearson"), "direction"].startswith("lower")
    # the bars are the table's r, side by side per run; the scatter the chosen run against the gold scores
    figures = charts(at)
    bars = figures["Correlation per run"]
    drawn = {(metric, bar["name"]): r for bar in traces(bars, "bar") for metric, r in zip(bar["x"], bar["y"])}
    assert drawn == pytest.approx(shown["r"].to_dict())
    assert bars["layout"]["barmode"] == "group"  # one bar per method, side by side, per run (x)
    figure = figures["chrF against the reference (300 of 300 pairs)"]
    scatter = trace(figure, "scattergl")
    assert scatter["x"] == pytest.approx(pairs["gold_label"].tolist())
    assert scatter["y"] == pytest.approx(list(scores["chrF"]))
    assert [row[0] for row in scatter["customdata"]] == list(pairs.index)  # each point names its pair
    assert (figure["layout"]["xaxis"]["title"]["text"], figure["layout"]["yaxis"]["title"]["text"]) == (
        "reference",
        "chrF",
    )


def test_mean_level_excludes_dont_know(page, store):
    at = on(page, "STS-B", correlation_reference="levels")
    labels = store["labels"]
    known = labels[labels["level"] != 4]
    mean = known.groupby("pair_id")["level"].mean()
    pairs = store["pairs"].loc[mean.index]
    expected = scipy_stats.pearsonr(chrf(pairs.source, pairs.hypothesis), mean).statistic
    row = table(at).loc[("chrF", "pearson")]
    assert row["r"] == pytest.approx(expected) and row["n"] == len(mean)


def test_imported_annotators_mean_on_biosses(page, store):
    at = on(page, "BIOSSES", correlation_reference="raw")
    pairs = store["pairs"][store["pairs"]["dataset"] == "BIOSSES"]
    # BIOSSES' gold label is its five annotators' mean: the same reference read two ways
    expected = scipy_stats.spearmanr(chrf(pairs.source, pairs.hypothesis), pairs["gold_label"]).statistic
    assert table(at).loc[("chrF", "spearman"), "r"] == pytest.approx(expected)


def test_a_text_column_as_reference_is_refused_in_one_sentence(page):
    at = on(page, "STS-B", correlation_reference="meta", correlation_reference_column="genre")
    assert "holds text" in errors(at) and not at.dataframe


def test_fewer_than_three_pairs_is_refused_in_one_sentence(page):
    at = on(page, "tiny")
    assert "Only 2 pairs have both chrF score and a reference; a correlation needs at least 3." in errors(at)


def test_system_level_and_the_difference_test(page, store):
    at = on(page, "STS-B", correlation_level="System", correlation_system="year")
    stsb = store["stsb"]
    pairs = store["pairs"][store["pairs"]["dataset"] == "STS-B"]
    means = (
        pd.DataFrame(
            {
                "chrF": chrf(pairs.source, pairs.hypothesis),
                "gold": pairs["gold_label"].to_numpy(),
                "year": stsb["year"].astype(str).to_numpy(),
            }
        )
        .groupby("year")
        .mean()
    )
    row = table(at).loc[("chrF", "pearson")]
    assert row["n"] == stsb["year"].nunique() == 3
    assert row["r"] == pytest.approx(scipy_stats.pearsonr(means["chrF"], means["gold"]).statistic)

    at = on(page, "STS-B", correlation_first="chrF", correlation_second="chrF")
    p_value = next(m.value for m in at.metric if m.label.startswith("p "))
    assert float(p_value) == 1.0
    at.selectbox(key="correlation_second").set_value("levenshtein")
    run(at)
    assert float(next(m.value for m in at.metric if m.label.startswith("p "))) <= 1.0
    assert "Distances are negated first" in " ".join(str(c.value) for c in at.caption)


def test_mean_level_of_one_campaign(page, store, engine):
    """The scope (issue 35): the page opens on the campaign with the latest label, and its mean level is
    that campaign's labels alone; the other labels of the same pairs join only when whole datasets are asked for."""
    from sqlalchemy import select, update

    from db.engine import write_session
    from db.models import Annotator, Campaign, CampaignDataset, Dataset, Label

    with write_session(engine) as session:
        campaign = Campaign(name="round 2")
        session.add(campaign)
        session.flush()
        stsb = session.scalar(select(Dataset.id).where(Dataset.name == "STS-B"))
        session.add(CampaignDataset(campaign_id=campaign.id, dataset_id=stsb))
        p2 = session.scalar(select(Annotator.id).where(Annotator.name == "p2"))
        session.execute(update(Label).where(Label.annotator_id == p2).values(campaign_id=campaign.id))
        campaign_id = campaign.id
    at = run(page)
    assert at.sidebar.selectbox(key="scope_campaign").value == campaign_id  # the campaign in progress
    at.select_slider(key="correlation_boot").set_value(200)
    at.radio(key="correlation_reference").set_value("levels")
    run(at)
    labels = store["labels"]
    mean = labels[(labels["annotator"] == "p2") & (labels["level"] != 4)].set_index("pair_id")["level"]
    pairs = store["pairs"].loc[mean.index]
    row = table(at).loc[("chrF", "kendall")]
    assert row["n"] == len(mean)
    assert row["r"] == pytest.approx(scipy_stats.kendalltau(chrf(pairs.source, pairs.hypothesis), mean).statistic)

    at.sidebar.selectbox(key="scope_campaign").set_value(0)  # whole datasets: every label, asked for
    at = on(at, "STS-B")
    every = labels[labels["level"] != 4].groupby("pair_id")["level"].mean()
    assert table(at).loc[("chrF", "kendall"), "n"] == len(every) > len(mean)
    pairs = store["pairs"].loc[every.index]
    assert table(at).loc[("chrF", "kendall"), "r"] == pytest.approx(
        scipy_stats.kendalltau(chrf(pairs.source, pairs.hypothesis), every).statistic
    )


def test_a_dataset_without_the_reference_says_so(page):
    at = on(page, "STS-B", correlation_reference="raw")
    assert errors(at) == (
        "No pair of these datasets has an imported annotator value: choose another reference or dataset."
    )
