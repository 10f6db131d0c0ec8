"""What the app does so that a page opened in the browser does not wait (issue 20). The admin pages ask the
browser for Streamlit's table and chart modules before the page needs them; the first admin page starts
reading the analysis pages' default frames on a thread of its own (tests check what is done, bench/pages.py
how fast)."""

import re
from pathlib import Path

import pandas as pd
import pytest
import streamlit
from streamlit.testing.v1 import AppTest

import pluie_plotly
from db import analysis
from tests.analysis_store import load_built_store
from tests.paths import REPO

STATIC_JS = Path(streamlit.__file__).parent / "static" / "static" / "js"


@pytest.fixture
def app_env(db_url, monkeypatch):
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_DEMO_RUN", "0")


def preload_scripts(at) -> list[str]:
    return [element.value for element in at.sidebar.get("html") if "import(base + name)" in element.value]


def preloaded(at, when: str = "now") -> list[str]:
    """The module files a page asked the browser for, now or once the browser is idle ("later"), and
    plotly.js (ui.charts.PLOTLY_JS's file name) when it asked for that too (with the chart component's module,
    PLOTLY_MODULE: both from the component's assets)."""
    from ui.charts import PLOTLY_JS, PLOTLY_MODULE

    [script] = preload_scripts(at)
    pattern = r" load\((\[.*?\]), (true|false)\);" if when == "now" else r"const later = (\[.*?\]);"
    found = re.search(pattern, script)
    names, plotly = (
        found.group(1),
        found.group(2) if when == "now" else re.search(r"const plotly = (true|false);", script).group(1),
    )
    assert "{display:none}" in script and "pluie-preload" in script  # its element takes no room
    assert f"'../../{PLOTLY_JS}'" in script  # the app's root: Streamlit's index script is in static/js/
    assert f"import(new URL('../../{PLOTLY_MODULE}', index.src).href)" in script  # as the component imports it
    listed = [name.strip('"') for name in names.strip("[]").split(", ") if name]
    return sorted(listed + ([PLOTLY_JS.rsplit("/", 1)[1].split("?")[0]] if plotly == "true" else []))


@pytest.mark.parametrize(
    "page, stems",
    [
        ("thresholds", {"BidiComponent", "plotly"}),  # its curve (plotly) first; its tables' code as they come
        ("home", {"DataFrame"}),  # Datasets: a table, no chart
    ],
)
def test_a_page_asks_the_browser_for_the_views_it_draws(engine, app_env, page, stems):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(f"pages/{page}.py").run()
    assert not at.exception
    wanted, later = preloaded(at), preloaded(at, "later")
    assert {name.split(".")[0] for name in wanted} == stems
    # the others' once the browser is idle: the first chart reached through the menu finds plotly's code
    assert {name.split(".")[0] for name in later} == {"DataFrame", "BidiComponent", "plotly"} - stems
    assert all((STATIC_JS / name).is_file() or (pluie_plotly.ASSETS / name).is_file() for name in wanted + later)
    assert "requestIdleCallback" in preload_scripts(at)[0]


def test_a_page_without_tables_or_charts_asks_for_none_until_the_browser_is_idle(engine, app_env):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/import_pairs.py").run()
    assert not at.exception and preloaded(at) == []
    assert {name.split(".")[0] for name in preloaded(at, "later")} == {"DataFrame", "BidiComponent", "plotly"}


def test_a_labelling_link_asks_for_nothing(engine, app_env):
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.query_params["token"] = "not-a-token"
    at.run()
    assert not preload_scripts(at) and not [e for e in at.get("html") if "import(base + name)" in e.value]


def test_read_ahead_reads_the_analysis_pages_first_frames_once(engine, app_env, built_analysis_store, monkeypatch):
    load_built_store(engine, built_analysis_store)
    from pluie_core import analysis_figures as figures
    from ui.views import agreement_cache, thresholds_cache
    from ui.views import store_reads as common
    from ui.views.read_ahead import read_ahead

    for read in (
        common.labels,
        common.label_views,
        common._pairs,
        common.scores,
        common.edit_distances,
        common.hover_labels,
    ):
        read.clear()
    common.choices.clear()
    agreement_cache.agreement_figures.clear()
    calls = {"labels_long": 0, "pairs_frame": 0, "scores_wide": 0}
    common.reference_labels.clear()
    thresholds_cache.threshold_figures.clear()
    curves = []
    threshold_curve = figures.threshold_curve
    monkeypatch.setattr(figures, "threshold_curve", lambda *args: curves.append(len(args[0])) or threshold_curve(*args))
    kappas, references = [], []
    pairwise_kappa, reference_labels = figures.pairwise_kappa, common.core.reference_labels
    monkeypatch.setattr(
        common.core, "reference_labels", lambda *args: references.append(args[2]) or reference_labels(*args)
    )
    monkeypatch.setattr(figures, "pairwise_kappa", lambda *args: kappas.append(args[1:]) or pairwise_kappa(*args))
    agreement_cache.people_tables.clear()
    summaries, versus = [], []
    annotator_summary, by_annotator = common.core.annotator_summary, figures.human_vs_model_by_annotator
    monkeypatch.setattr(
        common.core, "annotator_summary", lambda *args: summaries.append(args[1]) or annotator_summary(*args)
    )
    monkeypatch.setattr(
        figures,
        "human_vs_model_by_annotator",
        lambda *args, **kwargs: versus.append(args[2:]) or by_annotator(*args, **kwargs),
    )

    def counted(name):
        original = getattr(analysis, name)

        def read(*args, **kwargs):
            calls[name] += 1
            return original(*args, **kwargs)

        return read

    for name in calls:
        monkeypatch.setattr(analysis, name, counted(name))

    read_ahead().join(120)
    # labels, the pairs without and with their texts (edit distances), the first run's scores and
    # every run's (Correlation's default). Issue 35: MRPC's gold is 0/1, BIOSSES' a 0–4 score, so the
    # pages of a binary reference (and the read-ahead) show MRPC's scale first: the pairs and the first
    # run's scores are those of MRPC; Agreement's human labels share one scale, its run's scores are
    # those of both datasets (a third read of scores); the scatters' hover names the labels of MRPC's
    # pairs (Distributions' default): a second read of labels. Issue 53: Correlation opens on BIOSSES'
    # graded gold scores: every run's scores, the pairs with and without their texts and the hover labels
    # of BIOSSES (a third read of labels, a third and fourth of pairs)
    assert calls == {"labels_long": 3, "pairs_frame": 4, "scores_wide": 3}
    assert kappas == [(None,)]  # the Agreement page's first figures: five levels, unweighted κ
    assert [r.kind for r in references] == ["gold"]  # the sidebars' default reference
    assert len(curves) == 1  # Thresholds' first figures: the first run against gold labels
    # Agreement's annotator tables: the five levels, the first run at its default threshold
    assert summaries == ["levels"] and len(versus) == 1

    # what a page then reads with the sidebar's defaults is what was read ahead: no second read,
    # and the same rows as a read of the store now
    url = common.store_key()
    choices = common.choices(url)
    dataset_ids = tuple(int(i) for i in choices.datasets["id"])
    mrpc = tuple(int(i) for i in choices.datasets.loc[choices.datasets["name"] == "MRPC", "id"])
    biosses = tuple(int(i) for i in choices.datasets.loc[choices.datasets["name"] == "BIOSSES", "id"])
    first_run = (int(choices.runs["id"].iloc[0]),)
    labels = common.labels(url, dataset_ids)
    scores = common.scores(url, first_run, dataset_ids)
    common.scores(url, first_run, mrpc)
    every_run = common.scores(url, tuple(int(i) for i in choices.runs["id"]), biosses)
    common.edit_distances(url, mrpc)
    hover = common.hover_labels(url, mrpc, None)
    common.hover_labels(url, biosses, None)
    common.pairs(url, biosses, texts=True)
    assert calls == {"labels_long": 3, "pairs_frame": 4, "scores_wide": 3}
    assert len(hover) and hover.str.contains(": ").all()
    assert len(choices.runs) > 1 and list(every_run.columns) == choices.runs["name"].tolist()
    pd.testing.assert_frame_equal(labels, analysis.labels_long(engine, dataset_ids, annotators=choices.annotators))
    pd.testing.assert_frame_equal(scores, analysis.scores_wide(engine, first_run, dataset_ids))

    # the Agreement page, opened with its defaults, reads no label again
    at = AppTest.from_file(str(REPO / "pages" / "agreement.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert at.title[0].value == "Agreement"
    assert calls["labels_long"] == 4  # the assert_frame_equal read above, and nothing more
    assert kappas == [(None,)]  # nor its figures
    assert summaries == ["levels"] and len(versus) == 1  # nor its annotator tables
    assert versus[0] == (float(at.sidebar.number_input[0].value), True)  # at the threshold the page shows
    assert "Fleiss' κ" in [m.label for m in at.metric] and at.metric[0].value != "—"
    at.radio(key="agreement_weights").set_value("Quadratic").run()
    assert not at.exception and kappas == [(None,), ("quadratic",)]  # another view is computed when asked

    # Thresholds, opened with its defaults (gold labels), finds its reference read: twice a run before
    at = AppTest.from_file(str(REPO / "pages" / "thresholds.py"), default_timeout=60)
    at.run()
    assert not at.exception and at.title[0].value == "Thresholds" and [r.kind for r in references] == ["gold"]
    assert calls["pairs_frame"] == 4  # its pairs too (asked for as pairs(..., texts=False): the same entry)
    assert len(curves) == 1 and at.metric[0].label == "ROC AUC"  # and its curve, drawn without computing it again
    at.radio(key="analysis_reference").set_value("majority").run()
    assert not at.exception and [r.kind for r in references] == ["gold", "majority"]  # computed once, when asked
    assert len(curves) == 2
    at.run()
    assert [r.kind for r in references] == ["gold", "majority"]


def test_read_ahead_finds_the_review_queue_and_the_review_page_uses_it(
    engine, app_env, built_analysis_store, monkeypatch
):
    """The Review page's queue (3 s at 1,000,000 pairs) is read ahead for every dataset, pending pairs in
    review order, as the page opens; the page then draws it without reading it again, and a decision
    (a new store state) gives a queue read afresh."""
    from db import review
    from ui.views import review_cache, store_reads
    from ui.views.read_ahead import read_ahead

    load_built_store(engine, built_analysis_store)
    review_cache.review_queue.clear()
    store_reads.choices.clear()
    computed = []
    original = review.review_queue

    def counted(*args, **kwargs):
        computed.append(args[1:])
        return original(*args, **kwargs)

    monkeypatch.setattr(review, "review_queue", counted)
    read_ahead().join(120)
    assert len(computed) == 1
    expected = original(engine)
    assert len(expected) > 0

    at = AppTest.from_file(str(REPO / "pages" / "review.py"), default_timeout=60)
    at.run()
    assert not at.exception and len(computed) == 1
    first = int(expected.index[0])
    assert f"Pair {first} ·" in " ".join(c.value for c in at.caption)  # the queue's first pair, on screen
    assert f"Pair 1 of {len(expected):,}" in at.get("progress")[0].proto.text

    review.adjudicate(engine, first, 2, "Ada")
    at.run()
    assert not at.exception and len(computed) == 2  # the store changed: the queue is read again
    assert f"Pair 1 of {len(expected) - 1:,}" in at.get("progress")[0].proto.text


def test_read_ahead_stops_when_the_app_is_pointed_at_another_store(
    engine, app_env, built_analysis_store, monkeypatch, tmp_path
):
    """A read-ahead that outlives its store (the app pointed at another one: in the tests, the next
    test's) reads no more of it: it would open the other store on its own thread meanwhile."""
    load_built_store(engine, built_analysis_store)
    from ui.views import store_reads as common
    from ui.views.read_ahead import read_ahead

    for read in (common.labels, common.label_views, common._pairs, common.scores, common.edit_distances):
        read.clear()
    common.choices.clear()
    read = []
    labels_long = analysis.labels_long

    def labels_then_elsewhere(*args, **kwargs):
        read.append("labels")
        monkeypatch.setenv("PLUIE_DB_URL", f"sqlite:///{tmp_path / 'another.db'}")
        return labels_long(*args, **kwargs)

    monkeypatch.setattr(analysis, "labels_long", labels_then_elsewhere)
    monkeypatch.setattr(analysis, "pairs_frame", lambda *args, **kwargs: read.append("pairs"))
    monkeypatch.setattr(analysis, "scores_wide", lambda *args, **kwargs: read.append("scores"))
    read_ahead().join(60)
    assert read == ["labels"]


def test_read_ahead_on_an_empty_store_reads_nothing_and_fails_nowhere(engine, app_env, monkeypatch, caplog):
    from ui.views import store_reads
    from ui.views.read_ahead import read_ahead

    store_reads.choices.clear()
    read = []
    monkeypatch.setattr(analysis, "labels_long", lambda *args, **kwargs: read.append(args))
    with caplog.at_level("DEBUG", logger="ui.views.read_ahead"):
        thread = read_ahead()
        thread.join(60)
    assert not thread.is_alive()
    assert read == []  # no dataset: nothing to read
    assert not [r for r in caplog.records if "reading ahead failed" in r.getMessage()]


def test_read_ahead_reads_the_datasets_counts_and_correlations_first_view_and_the_pages_use_them(
    engine, app_env, built_analysis_store, monkeypatch
):
    """The Datasets page (the first page opened) and the Correlation page's first view (gold scores against
    every run: the coefficients, their bootstrap intervals and the first two runs' paired test, 1.3 s at
    100,000 pairs) are read ahead too: the pages then compute none of it again, and show what a
    computation of the store now gives."""
    from pluie_core import analysis_figures
    from pluie_core.evaluation.correlation import correlate
    from ui.views import correlation_cache, home_cache, store_reads
    from ui.views.read_ahead import read_ahead

    load_built_store(engine, built_analysis_store)
    for cached in (
        home_cache.store_overview,
        correlation_cache.graded_values,
        correlation_cache.correlations,
        correlation_cache.correlation_difference,
        store_reads.choices,
        store_reads._pairs,
        store_reads.scores,
    ):
        cached.clear()
    from db import datasets

    counted = {"store_totals": 0, "correlate": 0, "compare_correlations": 0}
    for module, name in (
        (datasets, "store_totals"),
        (analysis_figures, "correlate"),
        (correlation_cache, "compare_correlations"),
    ):
        original = getattr(module, name)

        def count(*args, _name=name, _original=original, **kwargs):
            counted[_name] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, name, count)

    read_ahead().join(120)
    runs = store_reads.choices(store_reads.store_key()).runs
    assert len(runs) >= 2  # so the paired test is part of the first view
    assert counted == {"store_totals": 1, "correlate": 2, "compare_correlations": 1}  # n_boot 0, then 1000

    home = AppTest.from_file(str(REPO / "pages" / "home.py"), default_timeout=60)
    home.run()
    assert not home.exception and counted["store_totals"] == 1
    assert {m.label: m.value for m in home.metric}["Pairs"] == f"{len(analysis.pairs_frame(engine, None)):,}"

    at = AppTest.from_file(str(REPO / "pages" / "correlation.py"), default_timeout=60)
    at.run()
    assert not at.exception
    assert counted == {"store_totals": 1, "correlate": 2, "compare_correlations": 1}  # nothing computed again
    shown = next(d.value for d in at.dataframe if "ci_low" in d.value.columns)
    pairs = analysis.pairs_frame(engine, None)
    pairs = pairs[
        pairs["dataset"] == "BIOSSES"
    ]  # issue 53: BIOSSES' graded 0–4 gold first, never pooled with MRPC's 0/1
    assert "references are on different scales" in " ".join(str(i.value) for i in at.info)
    scores = analysis.scores_wide(engine, tuple(int(i) for i in runs["id"]), None)
    fresh = correlate(scores.reindex(pairs.index)[runs["name"].tolist()], pairs["gold_label"], n_boot=0)
    assert shown["r"].to_numpy() == pytest.approx(fresh["r"].to_numpy())
    assert shown["ci_low"].notna().all()  # the intervals too

    # another view (500 resamples) is computed when asked
    at.sidebar.select_slider(key="correlation_boot").set_value(500).run()
    assert not at.exception and counted["correlate"] == 3


def test_a_figure_is_built_once_for_the_same_inputs_and_drawn_the_same(
    engine, app_env, built_analysis_store, monkeypatch
):
    """A page's figures are cached on their inputs: a rerun builds no figure and draws the same one;
    other inputs (another annotator's confusion matrix) build that one figure."""
    from tests.figures import charts as drawn_charts
    from ui import charts

    load_built_store(engine, built_analysis_store)
    charts._figure.clear()
    built = []
    for name in ("kappa_heatmap", "confusion_matrix"):
        original = getattr(charts, name)
        monkeypatch.setattr(
            charts, name, lambda *args, _name=name, _original=original: built.append(_name) or _original(*args)
        )
    at = AppTest.from_file(str(REPO / "pages" / "agreement.py"), default_timeout=60)
    at.run()
    assert not at.exception
    first = drawn_charts(at)
    assert sorted(built) == ["confusion_matrix", "kappa_heatmap"] and len(first) == 2
    at.run()
    assert not at.exception and len(built) == 2
    again = drawn_charts(at)
    assert again.keys() == first.keys()
    for title, figure in first.items():
        assert figure == again[title]
    heatmap = next(figure for title, figure in again.items() if title.startswith("Cohen's κ"))
    assert [t["type"] for t in heatmap["data"]] == ["heatmap"] and heatmap["data"][0]["texttemplate"] == "%{text}"
    who = at.selectbox(key="agreement_confusion")
    at.selectbox(key="agreement_confusion").set_value(who.options[0]).run()
    assert not at.exception and sorted(built) == ["confusion_matrix", "confusion_matrix", "kappa_heatmap"]
    assert any(title.startswith(f"{who.options[0]} against") for title in drawn_charts(at))
