"""The campaign as the scope of every figure (issue 35, items 1 and 2): the campaign is the unit of work, and
no figure pools what does not belong together. Real data: a slice of German PAWS-X (binary gold 0/1) and of
STS-B dev (gold scores 0–5), read from ../shared/datasets; campaigns labelled through the annotators' own
serving path.

1. A figure is computed over pairs whose reference shares one scale: opened with both datasets,
   Correlation and Thresholds say in one sentence why they will not pool them and show one scale at a
   time; their numbers are those of one dataset, never of both.
2. One scope (a campaign, or whole datasets) follows the person from page to page; pages open on the
   campaign with the latest label, not the newest created; two campaigns on one dataset (a pilot and a
   main round) are never pooled unless whole datasets are asked for."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as scipy_stats
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import annotators, serving
from db import campaigns as camp
from db.analysis import add_score_run, campaign_choices, pairs_frame
from db.datasets import import_pairs
from db.engine import read_session
from db.models import Label
from db.review import review_queue
from pluie_core.analysis import ReferenceScale, reference_scale_groups, scales_sentence
from pluie_core.baselines import chrf
from pluie_core.io import load_pairs
from pluie_core.stats import roc_auc
from tests.paths import DATASETS, REPO
from tests.store_fixtures import page_store_copy

N_PAIRS = 200  # of each dataset
SENTENCE = "These datasets' references are on different scales (binary 0/1: PAWS-X de; scores 0–5: STS-B)"


# ------------------------------------------------------------------ the pure grouping (pluie_core)


def datasets_frame(*rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["id", "name", "label_kind", "label_min", "label_max", "n_gold", "n_gold_other"])


def test_datasets_are_grouped_by_the_scale_of_their_reference():
    frame = datasets_frame(
        (1, "BIOSSES", "score", 0.0, 4.0, 100, 90),
        (2, "PAWS-X", "binary", None, None, 500, 0),
        (3, "STS-B", "score", 0.0, 5.0, 300, 290),
        (4, "SICK", "score", 1.0, 5.0, 40, 40),
        (5, "unlabelled", None, None, None, 0, 0),
        (6, "guessed", None, None, None, 20, 0),
        (7, "STS-B test", "score", 0.0, 5.0, 10, 10),
    )
    gold = reference_scale_groups(frame, "gold")
    assert gold == [
        (ReferenceScale("binary"), (2, 6)),
        (ReferenceScale("range", 0.0, 4.0), (1,)),
        (ReferenceScale("range", 0.0, 5.0), (3, 7)),
        (ReferenceScale("range", 1.0, 5.0), (4,)),
    ]
    # the five-level labels (majority, one annotator, their mean) share one scale: one group of every dataset
    for human in ("majority", "annotator", "levels"):
        assert reference_scale_groups(frame, human) == [(ReferenceScale("levels"), (1, 2, 3, 4, 5, 6, 7))]
    # a metadata column's scale is each file's own
    assert [ids for _, ids in reference_scale_groups(frame.iloc[:2], "meta")] == [(1,), (2,)]
    # no gold label anywhere: one group (the page then says there is no reference)
    assert len(reference_scale_groups(frame[frame["name"] == "unlabelled"], "gold")) == 1
    sentence = scales_sentence(gold[:3], dict(zip(frame["id"], frame["name"])))
    assert sentence.startswith(
        "These datasets' references are on different scales (binary 0/1: PAWS-X, guessed; "
        "scores 0–4: BIOSSES; scores 0–5: STS-B, STS-B test)"
    )


# ------------------------------------------------------------------ the store


def build_store(engine) -> dict:
    """PAWS-X de dev and STS-B dev (the first N_PAIRS of each), chrF on every pair; a campaign "Pilot" and a
    campaign "Main round" on the PAWS-X pairs, labelled through serve_next / record_label (the main round's
    labels last), and a campaign "Next round" created last, with no label yet."""
    paws = load_pairs(DATASETS / "pawsx_de" / "dev.tsv").head(N_PAIRS)
    stsb = load_pairs(DATASETS / "stsbenchmark" / "sts-dev.csv").head(N_PAIRS)
    paws_id = import_pairs(engine, "PAWS-X de", paws).dataset_id
    import_pairs(engine, "STS-B", stsb)
    pairs = pairs_frame(engine, texts=True)
    add_score_run(engine, "chrF", pd.Series(chrf(pairs.source, pairs.hypothesis), pairs.index))

    campaigns = {}
    for name, people, overlap in (("Pilot", ("p1", "p2"), 2), ("Main round", ("m1", "m2", "m3"), 3)):
        cid = camp.create_campaign(
            engine, name, [paws_id], quota=12, overlap=overlap, n_training=1, seed=5, distribution="overlap"
        )  # the same pairs for everyone: some disagree
        for k, person in enumerate(people):
            aid = annotators.create_annotator(engine, cid, person)[0]
            annotators.set_annotator_profile(engine, aid, person.upper(), "good")
            while (item := serving.serve_next(engine, aid)) is not None:
                serving.record_label(engine, aid, item.position, (item.pair_id * (k + 2) + len(name)) % 5, 3.0)
        campaigns[name] = cid
    campaigns["Next round"] = camp.create_campaign(engine, "Next round", [paws_id], quota=5, n_training=0)
    with read_session(engine) as session:
        counts = dict(
            session.execute(
                select(Label.campaign_id, func.count(Label.id))
                .where(Label.is_training.is_(False))
                .group_by(Label.campaign_id)
            ).all()
        )
    return {
        "campaigns": campaigns,
        "labels": {name: counts.get(cid, 0) for name, cid in campaigns.items()},
        "paws": paws_id,
    }


@pytest.fixture(scope="module")
def built_store(tmp_path_factory):
    from db import init_db

    path = tmp_path_factory.mktemp("scope") / "built.db"
    engine = init_db(f"sqlite:///{path}")
    built = build_store(engine)
    engine.dispose()
    return path, built


@pytest.fixture
def store(engine, built_store, db_url, monkeypatch):
    return page_store_copy(engine, built_store, db_url, monkeypatch)


def run(at):
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at) -> str:
    return "\n".join(str(e.value) for kind in ("info", "warning", "error", "caption", "markdown") for e in at.get(kind))


def app_on(page: str) -> AppTest:
    """The app, as a browser session opens it, moved to ``page``."""
    at = run(AppTest.from_file(str(REPO / "app.py"), default_timeout=60))
    at.switch_page(f"pages/{page}.py")
    return run(at)


def whole_datasets(at, *names):
    """The scope of whole datasets (asked for), and these datasets."""
    at.sidebar.selectbox(key="scope_campaign").set_value(0)
    run(at)
    at.multiselect(key="analysis_datasets").set_value(list(names))
    return run(at)


def frame_of(engine, dataset: str) -> pd.DataFrame:
    pairs = pairs_frame(engine, texts=True)
    pairs = pairs[pairs["dataset"] == dataset]
    return pairs.assign(chrF=chrf(pairs.source, pairs.hypothesis))


# ------------------------------------------------------------------ 1. never one number over both scales


def test_correlation_shows_one_scale_at_a_time_never_a_pooled_r(store, engine):
    at = app_on("correlation")
    at = whole_datasets(at, "PAWS-X de", "STS-B")
    at.select_slider(key="correlation_boot").set_value(200)
    run(at)
    assert SENTENCE in texts(at)
    shown = at.dataframe[0].value.set_index(["metric", "method"])
    stsb = frame_of(engine, "STS-B")
    assert (shown["n"] == len(stsb)).all()  # STS-B's pairs alone (graded first, issue 53), never both datasets'
    assert shown.loc[("chrF", "spearman"), "r"] == pytest.approx(
        scipy_stats.spearmanr(stsb["chrF"], stsb["gold_label"]).statistic
    )

    at.radio(key="analysis_reference_scale").set_value("binary 0/1")
    run(at)
    shown = at.dataframe[0].value.set_index(["metric", "method"])
    paws = frame_of(engine, "PAWS-X de")
    assert (shown["n"] == len(paws)).all()
    assert shown.loc[("chrF", "pearson"), "r"] == pytest.approx(
        scipy_stats.pearsonr(paws["chrF"], paws["gold_label"]).statistic
    )
    assert SENTENCE in texts(at)


def test_thresholds_reports_each_scales_roc_auc_never_the_pooled_one(store, engine):
    at = whole_datasets(app_on("thresholds"), "PAWS-X de", "STS-B")
    assert SENTENCE in texts(at)
    paws = frame_of(engine, "PAWS-X de")
    auc = {m.label: m.value for m in at.metric}["ROC AUC"]
    assert auc == f"{roc_auc(paws['chrF'], paws['gold_label']):.3f}"
    assert f"{len(paws):,} pairs with both a score and a reference" in texts(at)
    at.radio(key="analysis_reference_scale").set_value("scores 0–5")
    run(at)
    stsb = frame_of(engine, "STS-B")
    assert {m.label: m.value for m in at.metric}["ROC AUC"] == f"{roc_auc(stsb['chrF'], stsb['gold_label'] >= 2.5):.3f}"
    assert f"{len(stsb):,} pairs with both a score and a reference" in texts(at)
    pooled = pd.concat([paws.assign(y=paws["gold_label"]), stsb.assign(y=(stsb["gold_label"] >= 2.5).astype(float))])
    assert f"{roc_auc(pooled['chrF'], pooled['y']):.3f}" not in [m.value for m in at.metric if m.label == "ROC AUC"]


@pytest.mark.parametrize("page", ["distributions", "disagreements"])
def test_the_other_pages_of_a_reference_show_one_scale_at_a_time_too(store, engine, page):
    at = whole_datasets(app_on(page), "PAWS-X de", "STS-B")
    assert SENTENCE in texts(at)
    if page == "distributions":
        assert f"on {N_PAIRS:,} pairs, classes from gold labels" in texts(at)
    else:
        assert set(at.dataframe[0].value["dataset"]) == {"PAWS-X de"}


# ------------------------------------------------------------------ 2. one scope, the campaign in progress


def test_pages_open_on_the_campaign_with_the_latest_label_not_the_newest(store, engine):
    found = campaign_choices(engine)
    assert found["name"].tolist()[:2] == ["Main round", "Pilot"]  # the latest label first
    main = store["campaigns"]["Main round"]
    at = app_on("agreement")
    assert at.sidebar.selectbox(key="scope_campaign").value == main  # not "Next round", created after it
    # its labels only: the pilot's on the same pairs are not pooled in
    assert f"· {store['labels']['Main round']:,} labels ·" in texts(at)
    at.switch_page("pages/live_campaign.py")
    assert run(at).selectbox(key="scope_live_campaign").value == main


def test_one_scope_follows_the_person_through_every_page(store, engine):
    pilot, main = store["campaigns"]["Pilot"], store["campaigns"]["Main round"]
    n_pilot = store["labels"]["Pilot"]
    assert n_pilot != store["labels"]["Main round"]
    at = app_on("agreement")
    at.sidebar.selectbox(key="scope_campaign").set_value(pilot)
    run(at)
    assert f"· {n_pilot:,} labels ·" in texts(at)
    expected_queue = review_queue(engine, [store["paws"]], "pending", campaign_id=pilot)
    for page in ("thresholds", "distributions", "disagreements", "correlation", "review", "export", "live_campaign"):
        at.switch_page(f"pages/{page}.py")
        run(at)
        if page == "live_campaign":
            assert at.selectbox(key="scope_live_campaign").value == pilot, page
            assert {m.label: m.value for m in at.metric}["Labels"] == f"{n_pilot:,}"
        elif page == "export":
            assert at.selectbox(key="scope_campaign").value == pilot, page
            next(r for r in at.radio if r.label == "Layout").set_value("long")
            assert f"{n_pilot:,} labels · one row per label" in texts(run(at))
        else:
            assert at.sidebar.selectbox(key="scope_campaign").value == pilot, page
        if page == "review":
            assert f"Pair 1 of {len(expected_queue):,}" in at.get("progress")[0].proto.text
        if page == "thresholds":
            assert "pairs with both a score and a reference" in texts(at)
    # chosen on the Live campaign page, it holds on the analysis pages
    at.selectbox(key="scope_live_campaign").set_value(main)
    run(at)
    at.switch_page("pages/agreement.py")
    assert run(at).sidebar.selectbox(key="scope_campaign").value == main
    assert f"· {store['labels']['Main round']:,} labels ·" in texts(at)

    # two campaigns on one dataset are pooled only when whole datasets are asked for
    at = whole_datasets(at, "PAWS-X de")
    assert f"· {store['labels']['Pilot'] + store['labels']['Main round']:,} labels ·" in texts(at)
    at.switch_page("pages/export.py")
    run(at)
    assert at.selectbox(key="scope_campaign").value == 0 and at.multiselect(key="analysis_datasets").value == [
        "PAWS-X de"
    ]


def test_a_campaigns_review_queue_and_reference_are_its_own(store, engine):
    """db.review and the analysis reads with a campaign: its labels and pairs only."""
    from db.analysis import labels_long

    pilot, main = store["campaigns"]["Pilot"], store["campaigns"]["Main round"]
    every = labels_long(engine)
    assert len(labels_long(engine, campaign_id=pilot)) == store["labels"]["Pilot"]
    assert len(every) == store["labels"]["Pilot"] + store["labels"]["Main round"]
    queue = review_queue(engine, campaign_id=main)
    assert len(queue) and set(queue.index) <= set(labels_long(engine, campaign_id=main)["pair_id"])
    assert len(pairs_frame(engine, campaign_id=pilot)) < len(pairs_frame(engine, [store["paws"]]))
    assert np.isin(pairs_frame(engine, campaign_id=pilot)["dataset"], ["PAWS-X de"]).all()


def test_agreement_never_pools_values_imported_on_different_scales(engine, db_url, monkeypatch):
    """BIOSSES' annotators score 0–4, another file's 1–5: Agreement's α over both would treat a 4 as the
    same judgement on both scales; it shows one scale at a time, each dataset's figures its own."""
    import krippendorff

    from db.analysis import labels_long
    from pluie_core.analysis import label_matrix

    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    import_pairs(engine, "BIOSSES", load_pairs(DATASETS / "biosses" / "biosses_pairs_with_annotator_scores.tsv"))
    rng = np.random.default_rng(3)
    import_pairs(
        engine,
        "one to five",
        pd.DataFrame(
            {
                "source": [f"sentence {i} one" for i in range(30)],
                "hypothesis": [f"sentence {i} two" for i in range(30)],
                "label": rng.integers(1, 6, 30).astype(float),
                "annotator:u": rng.integers(1, 6, 30).astype(float),
                "annotator:v": rng.integers(1, 6, 30).astype(float),
            }
        ),
        label_kind="score",
        label_range=(1, 5),
    )
    at = run(AppTest.from_file(str(REPO / "pages" / "agreement.py"), default_timeout=60))
    assert "different scales (scores 0–4: BIOSSES; scores 1–5: one to five)" in texts(at)
    labels = labels_long(engine)
    matrix = label_matrix(labels[labels["dataset"] == "BIOSSES"], "raw")
    interval = krippendorff.alpha(matrix.T.to_numpy(), level_of_measurement="interval")
    assert {m.label: m.value for m in at.metric}["Krippendorff's α interval"] == f"{interval:.3f}"
