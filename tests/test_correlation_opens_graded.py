"""The reference the Correlation page opens on (issue 53, item 4): a page about graded judgments, it opens on
a graded reference where the scope has one — gold scores, one dataset at a time — and the binary scale is a
choice. Before, it opened on the binary scale (binary first), pooling three binary datasets, while STS-B's 0–5
gold scores were there.

A real SQLite store: three binary datasets imported first (MRPC test, PAWS Wiki test, German PAWS-X dev)
and STS-B dev (gold scores 0–5), read from ../shared/datasets; chrF and a Levenshtein distance on every
pair. The page is run by AppTest; its figures are checked against scipy on the same pairs."""

from __future__ import annotations

import pandas as pd
import pytest
from scipy import stats as scipy_stats
from streamlit.testing.v1 import AppTest

from pluie_core.baselines import chrf, levenshtein
from pluie_core.io import load_pairs
from tests.paths import DATASETS, REPO
from tests.store_fixtures import page_store_copy

BINARY = ("MRPC", "PAWS Wiki", "PAWS-X de")  # imported first, in this order
GRADED = "STS-B"
N_BINARY, N_GRADED = 60, 150
SCALE = "analysis_reference_scale"
SCIPY = {"pearson": scipy_stats.pearsonr, "spearman": scipy_stats.spearmanr, "kendall": scipy_stats.kendalltau}


def build_store(engine) -> dict:
    from db.analysis import add_score_run, pairs_frame
    from db.datasets import import_pairs

    files = {
        "MRPC": "mrpc/msr_paraphrase_test.txt",
        "PAWS Wiki": "paws_wiki_final/test.tsv",
        "PAWS-X de": "pawsx_de/dev.tsv",
    }
    ids = {}
    for name in BINARY:
        ids[name] = import_pairs(
            engine, name, load_pairs(DATASETS / files[name]).head(N_BINARY), label_kind="binary"
        ).dataset_id
    stsb = load_pairs(DATASETS / "stsbenchmark" / "sts-dev.csv").head(N_GRADED)
    ids[GRADED] = import_pairs(engine, GRADED, stsb, label_kind="score", label_range=(0, 5)).dataset_id
    pairs = pairs_frame(engine, texts=True)
    add_score_run(engine, "chrF", pd.Series(chrf(pairs.source, pairs.hypothesis), pairs.index))
    add_score_run(
        engine,
        "levenshtein",
        pd.Series(levenshtein(pairs.source, pairs.hypothesis), pairs.index),
        higher_is_similar=False,
    )
    return {"ids": ids}


@pytest.fixture(scope="module")
def built_store(tmp_path_factory):
    from db import init_db

    path = tmp_path_factory.mktemp("opens_graded") / "built.db"
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


def opened() -> AppTest:
    """The Correlation page as a browser session first opens it: nothing chosen."""
    return run(AppTest.from_file(str(REPO / "pages" / "correlation.py"), default_timeout=60))


def table(at) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "ci_low" in d.value.columns).set_index(["metric", "method"])


def texts(at, kind: str) -> str:
    return "\n".join(str(e.value) for e in at.get(kind))


def frame_of(engine, *names, campaign_id=None) -> pd.DataFrame:
    """The pairs of these datasets (of the campaign, when given) with chrF and the Levenshtein distance."""
    from db.analysis import pairs_frame

    pairs = pairs_frame(engine, texts=True, campaign_id=campaign_id)
    pairs = pairs[pairs["dataset"].isin(names)]
    return pairs.assign(
        chrF=chrf(pairs.source, pairs.hypothesis), levenshtein=levenshtein(pairs.source, pairs.hypothesis)
    )


def assert_scipys(shown: pd.DataFrame, pairs: pd.DataFrame) -> None:
    """Every run and coefficient shown is scipy's on these pairs' scores and gold labels, on all of them."""
    assert len(shown) == 6
    for (metric, method), row in shown.iterrows():
        assert row["n"] == len(pairs)
        assert row["r"] == pytest.approx(SCIPY[method](pairs[metric], pairs["gold_label"]).statistic)


def test_correlation_opens_on_the_graded_gold_scores_not_the_pooled_binary_scale(store, engine):
    at = opened()
    assert at.radio(key="correlation_reference").value == "gold"
    assert at.radio(key=SCALE).value == f"{GRADED}: scores 0–5"  # STS-B's gold scores, first
    stsb = frame_of(engine, GRADED)
    assert len(stsb) == N_GRADED and stsb["gold_label"].nunique() > 2
    shown = table(at)
    assert_scipys(shown, stsb)  # STS-B's pairs alone: never the three binary datasets, nor all four
    assert shown.loc[("chrF", "spearman"), "r"] == pytest.approx(
        scipy_stats.spearmanr(stsb["chrF"], stsb["gold_label"]).statistic
    )
    assert "point-biserial correlations." not in texts(at, "warning")  # graded: no binary reference
    captions = texts(at, "caption")
    assert "Opens on graded gold scores, one dataset at a time" in captions
    assert "binary gold labels (0/1) are a choice" in captions
    # the scales are still named in one sentence, and binary is one of the choices
    assert "binary 0/1: MRPC, PAWS Wiki, PAWS-X de; scores 0–5: STS-B" in texts(at, "info")
    assert at.radio(key=SCALE).options == [f"{GRADED}: scores 0–5", "binary 0/1"]


def test_the_binary_gold_labels_stay_a_choice_and_work(store, engine):
    at = opened()
    at.radio(key=SCALE).set_value("binary 0/1")
    run(at)
    assert at.radio(key=SCALE).value == "binary 0/1"
    binary = frame_of(engine, *BINARY)
    assert len(binary) == 3 * N_BINARY and set(binary["gold_label"]) == {0.0, 1.0}
    assert_scipys(table(at), binary)  # as before: the three binary datasets, pooled on their one scale
    assert "point-biserial correlations" in texts(at, "warning")
    at.run()  # the choice holds on the next run
    assert at.radio(key=SCALE).value == "binary 0/1" and table(at)["n"].eq(3 * N_BINARY).all()
    at.radio(key=SCALE).set_value(f"{GRADED}: scores 0–5")
    run(at)
    assert_scipys(table(at), frame_of(engine, GRADED))


def test_a_scope_without_graded_gold_opens_on_binary_and_says_why_in_one_caption(store, engine):
    at = opened()
    at.multiselect(key="analysis_datasets").set_value(list(BINARY))
    run(at)
    assert SCALE not in [r.key for r in at.radio]  # one scale: no choice
    assert_scipys(table(at), frame_of(engine, *BINARY))  # today's behaviour: the binary scale, pooled
    why = [c.value for c in at.caption if c.value.startswith("Opens on")]
    assert len(why) == 1
    assert why[0].startswith(
        "Opens on binary gold labels (0/1), so its correlations are point-biserial: no dataset "
        "of this scope has graded gold scores"
    )


def test_a_campaigns_scope_opens_on_its_graded_dataset(store, engine):
    """The scope is the campaign in progress: its graded dataset's gold scores (its pairs only) first; a
    campaign of binary datasets alone opens on them, saying why."""
    from db import annotators, serving
    from db import campaigns as camp

    ids = store["ids"]
    binary_round = camp.create_campaign(engine, "Binary round", [ids["MRPC"], ids["PAWS Wiki"]], quota=5, n_training=0)
    graded_round = camp.create_campaign(engine, "Graded round", [ids["PAWS-X de"], ids[GRADED]], quota=5, n_training=0)
    for cid in (binary_round, graded_round):  # the graded round's label is the latest: the campaign in progress
        person = annotators.create_annotator(engine, cid, f"p{cid}")[0]
        annotators.set_annotator_profile(engine, person, f"P{cid}", "good")
        item = serving.serve_next(engine, person)
        serving.record_label(engine, person, item.position, 1, 3.0)
    at = run(AppTest.from_file(str(REPO / "app.py"), default_timeout=60))
    at.switch_page("pages/correlation.py")
    run(at)
    assert at.sidebar.selectbox(key="scope_campaign").value == graded_round
    assert at.radio(key=SCALE).value == f"{GRADED}: scores 0–5"
    stsb = frame_of(engine, GRADED, campaign_id=graded_round)
    assert len(stsb) >= 3
    assert_scipys(table(at), stsb)

    at.sidebar.selectbox(key="scope_campaign").set_value(binary_round)
    run(at)
    assert SCALE not in [r.key for r in at.radio]
    assert_scipys(table(at), frame_of(engine, "MRPC", "PAWS Wiki", campaign_id=binary_round))
    assert "Opens on binary gold labels (0/1)" in texts(at, "caption")


def test_the_read_ahead_computes_what_the_page_opens_on(store, engine, monkeypatch):
    """The Correlation page's first view, read ahead (ui.views.correlation_cache.first_view), is STS-B's gold
    scores: the page then reads no pair, score or label again and computes no coefficient again."""
    from db import analysis
    from pluie_core import analysis_figures
    from ui.views import correlation_cache, store_reads
    from ui.views.read_ahead import start_view

    for cached in (
        correlation_cache.graded_values,
        correlation_cache.correlations,
        correlation_cache.correlation_difference,
        store_reads.choices,
        store_reads._pairs,
        store_reads.scores,
        store_reads._labels,
        store_reads.hover_labels,
    ):
        cached.clear()
    computed, reads = [], []
    correlate = analysis_figures.correlate
    monkeypatch.setattr(
        analysis_figures,
        "correlate",
        lambda scores, reference, *args, **kwargs: computed.append(len(reference.dropna()))
        or correlate(scores, reference, *args, **kwargs),
    )
    for name in ("pairs_frame", "scores_wide", "labels_long"):

        def read(*args, _original=getattr(analysis, name), _name=name, **kwargs):
            reads.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(analysis, name, read)
    for step in sorted(correlation_cache.first_view(start_view()), key=lambda step: step.order):
        step.read()
    assert computed == [N_GRADED, N_GRADED]  # the coefficients, then their bootstrap intervals: STS-B's
    read_ahead = len(reads)
    at = opened()
    assert computed == [N_GRADED, N_GRADED]  # nothing computed again
    assert len(reads) == read_ahead  # nor read again: the scores, the pairs and their texts, the hover labels
    assert_scipys(table(at), frame_of(engine, GRADED))
