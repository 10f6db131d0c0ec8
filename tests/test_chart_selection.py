"""Zooming, downloading and selecting on the analysis figures (issue 40, items 1 and 2): they are plotly
figures a researcher can zoom, download as a PNG and inspect: the pair scatters are WebGL with every pair,
each point names its pair and sentences on hover (escaped: plotly's hover is HTML); a selection (box, lasso, a
histogram's bars) names pairs, listed under the chart with the word diff, every label and every score, each
opening in Review."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from db import init_db
from db.analysis import add_score_run, pairs_frame
from db.datasets import import_pairs
from tests.paths import REPO
from tests.store_fixtures import sentence_pairs


def test_a_scatter_selection_names_its_pairs_once_each_in_order():
    from ui.charts import selected_pair_ids

    event = {
        "selection": {
            "points": [
                {
                    "curve_number": 1,
                    "point_index": 4,
                    "x": 0.2,
                    "y": 0.3,
                    "customdata": [17, "a cat", "a dog", "D", "paraphrase"],
                },
                {
                    "curve_number": 0,
                    "point_index": 0,
                    "x": 0.1,
                    "y": 0.5,
                    "customdata": [3, "x", "y", "D", "non-paraphrase"],
                },
                {
                    "curve_number": 1,
                    "point_index": 4,
                    "x": 0.2,
                    "y": 0.3,
                    "customdata": [17, "a cat", "a dog", "D", "paraphrase"],
                },
                {"curve_number": 2, "point_index": 0, "x": 0.0, "y": 0.0},  # a line's point: no pair
            ],
            "point_indices": [4, 0, 4, 0],
            "box": [{}],
            "lasso": [],
        }
    }
    assert selected_pair_ids(event) == [17, 3]
    assert selected_pair_ids(None) == [] and selected_pair_ids({"selection": {"points": []}}) == []


def test_a_histogram_bar_names_exactly_the_pairs_it_counts():
    from ui.charts import bin_pairs, selected_bins

    rng = np.random.default_rng(0)
    points = pd.DataFrame(
        {
            "pair_id": np.arange(400) + 1000,
            "score": rng.uniform(-2, 3, 400),
            "class": np.where(rng.uniform(size=400) > 0.5, "paraphrase", "non-paraphrase"),
        }
    )
    points.loc[7, "score"] = points["score"].max() + 1  # the top edge: np.histogram counts it in the last bin
    edges = np.histogram_bin_edges(points["score"], 20)
    mine = points[points["class"] == "paraphrase"]
    counts = np.histogram(mine["score"], edges)[0]
    last = (points.loc[7, "class"], edges[-2], edges[-1])
    event = {
        "selection": {
            "points": [
                {"x": 0.0, "y": int(counts[5]), "customdata": ["paraphrase", edges[5], edges[6]]},
                {"x": 1.0, "customdata": list(last)},
            ]
        }
    }
    bins = selected_bins(event)
    assert bins == [("paraphrase", edges[5], edges[6]), last]
    listed = bin_pairs(points, "score", bins[:1], edges[-1])
    assert len(listed) == counts[5] > 0
    assert set(listed) == set(mine.loc[(mine["score"] >= edges[5]) & (mine["score"] < edges[6]), "pair_id"])
    assert 1007 in bin_pairs(points, "score", bins[1:], edges[-1])


def test_a_point_hovers_its_pair_and_sentences_shortened_and_escaped():
    from ui.charts import HOVER_CHARS, class_scatter

    long = "<b>bold</b> & <a href='x'>link</a> " + "word " * 40
    points = pd.DataFrame(
        {
            "pair_id": [5, 9],
            "x": [0.1, 0.4],
            "y": [0.3, 0.2],
            "class": ["paraphrase", "paraphrase"],
            "source": [long, "a cat"],
            "hypothesis": ["a dog", "<i>x</i>"],
        }
    )
    figure = json.loads(
        class_scatter(
            points,
            {"paraphrase": "#1f77b4"},
            {"paraphrase": "circle"},
            {"x": "edit", "y": "<score>", "pair_id": "pair"},
            "t",
        ).to_json()
    )
    [trace] = figure["data"]
    assert trace["type"] == "scattergl"
    first, second = trace["customdata"]
    assert first[0] == 5 and second[0] == 9
    assert first[1].startswith("&lt;b&gt;bold&lt;/b&gt; &amp; &lt;a href='x'&gt;") and first[1].endswith("…")
    assert len(first[1].replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")) == HOVER_CHARS
    assert second[2] == "&lt;i&gt;x&lt;/i&gt;" and "<" not in "".join(map(str, first + second))
    assert trace["hovertemplate"].startswith("pair: %{customdata[0]}<br>source: %{customdata[1]}<br>hypothesis:")
    assert "&lt;score&gt;: %{y:.4g}" in trace["hovertemplate"]  # a run's name escaped too


def test_pairs_detail_reads_labels_and_scores_of_several_pairs(store_url):
    from db.analysis import pairs_detail

    engine = init_db(store_url)
    frame = pd.DataFrame(sentence_pairs(4), columns=["source", "hypothesis"])
    frame["annotator:A"] = [0, 3, 2, 4]
    frame["annotator:B"] = [1, 3, None, 0]
    import_pairs(engine, "d", frame, annotator_scale="levels")
    pairs = pairs_frame(engine, texts=True)
    ids = list(pairs.index)
    add_score_run(engine, "lev", {ids[1]: 0.25, ids[2]: 0.5})
    found = pairs_detail(engine, [ids[2], ids[1], ids[2], 999_999])
    assert list(found["pairs"].index) == [ids[2], ids[1]]  # in the order asked, once, a missing id left out
    assert found["pairs"].loc[ids[1], "source"] == pairs.loc[ids[1], "source"]
    labels = found["labels"]
    assert labels[labels["pair_id"] == ids[1]][["annotator", "level_name"]].values.tolist() == [
        ["A", "Same meaning"],
        ["B", "Same meaning"],
    ]
    assert labels[labels["pair_id"] == ids[2]]["annotator"].tolist() == ["A"]
    assert found["scores"].set_index("pair_id")["value"].to_dict() == {ids[1]: 0.25, ids[2]: 0.5}
    engine.dispose()


def test_selected_pairs_are_listed_with_their_diff_labels_scores_and_a_way_to_review(store_url, monkeypatch):
    engine = init_db(store_url)
    frame = pd.DataFrame(
        {
            "source": ["the cat <b>drinks</b> milk", "a red house"],
            "hypothesis": ["the dog drinks milk", "a big house"],
            "annotator:A*": [3, 0],
        }
    )
    import_pairs(engine, "d", frame, annotator_scale="levels")
    ids = list(pairs_frame(engine).index)
    add_score_run(engine, "run_[x]", {ids[0]: 0.75})
    engine.dispose()

    def app(url, ids):
        from db import init_db
        from db.analysis import pairs_detail
        from ui.charts import list_pairs

        engine = init_db(url)
        list_pairs(ids, lambda chosen: pairs_detail(engine, chosen), "scatter")

    at = AppTest.from_function(app, args=(store_url, [ids[0]] * 1 + [ids[1]]), default_timeout=30).run()
    assert not at.exception, at.exception
    assert "2 pairs selected" in at.markdown[0].value
    boxes = [h.value for h in at.get("html") if "selected-pair" in h.value]
    assert len(boxes) == 2 and f"Pair {ids[0]}" in boxes[0]
    assert "&lt;b&gt;" in boxes[0] and "<b>" not in boxes[0]  # the sentence shown as text
    assert 'class="pluie-diff' in boxes[0] and "cat" in boxes[0]  # the differing words marked
    caption = at.caption[0].value
    assert "A\\*: Same meaning" in caption and "run\\_\\[x\\] 0.75" in caption  # names as typed (user_text)
    assert [b.label for b in at.button] == ["Open in Review", "Open in Review"]
    at = AppTest.from_function(app, args=(store_url, []), default_timeout=30).run()
    assert "Select points" in at.caption[0].value


def test_the_distributions_scatter_and_histogram_are_selectable_plotly_charts(open_page):
    at = open_page("distributions")
    from tests.figures import drawn as drawn_charts

    drawn = {payload["figure"]["layout"]["title"]["text"]: payload for _, payload in drawn_charts(at)}
    scatter = next(p for title, p in drawn.items() if "against the normalised" in title)
    histogram = next(p for title, p in drawn.items() if title.endswith("per class"))
    assert sorted(scatter["select"]) == ["box", "lasso"]
    assert "points" in histogram["select"]  # a bar's click
    assert (
        scatter["figure"]["layout"]["dragmode"] == "select"
        and histogram["figure"]["layout"]["clickmode"] == "event+select"
    )
    config = scatter["config"]
    assert config["modeBarButtonsToRemove"] == [
        "sendChartToCloud"
    ]  # the box and the lasso in the modebar; no "Share chart…"
    assert config["displaylogo"] is False and config["toImageButtonOptions"]["format"] == "png"
    assert config["toImageButtonOptions"]["scale"] == 2
    assert "Select points" in "\n".join(c.value for c in at.caption)


@pytest.fixture
def open_page(db_url, engine, built_analysis_store, monkeypatch):
    from tests.analysis_store import load_built_store

    load_built_store(engine, built_analysis_store)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")

    def open_(name):
        at = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=60)
        at.run()
        assert not at.exception, at.exception
        return at

    return open_


# ----------------------------------------------------------------- issue 40's leftovers (downloads, Thresholds, hover)


def test_figure_downloads_are_png_or_svg_as_the_sidebar_says(open_page):
    from tests.figures import config

    at = open_page("distributions")
    assert config(at, "scatter")["toImageButtonOptions"]["format"] == "png"
    choice = next(r for r in at.sidebar.radio if r.label == "Figure downloads")
    assert choice.options == ["PNG", "SVG"]
    choice.set_value("SVG").run()
    assert not at.exception, at.exception
    assert {config(at, key)["toImageButtonOptions"]["format"] for key in ("scatter", "histogram")} == {"svg"}
    assert config(at, "scatter")["toImageButtonOptions"]["filename"] == "scatter"
    from ui.charts import FORMAT

    assert at.session_state[FORMAT] == "SVG"  # kept for the session: every analysis page reads it
    at = AppTest.from_file(str(REPO / "pages" / "thresholds.py"), default_timeout=60)
    at.session_state[FORMAT] = "SVG"
    at.run()
    assert not at.exception, at.exception
    assert next(r for r in at.sidebar.radio if r.label == "Figure downloads").value == "SVG"
    from tests.figures import drawn as drawn_charts

    drawn = [payload["config"]["toImageButtonOptions"] for _, payload in drawn_charts(at)]
    assert len(drawn) >= 2 and {d["format"] for d in drawn} == {"svg"}
    assert "threshold_curve" in {d["filename"] for d in drawn}


def test_the_thresholds_page_lists_the_pairs_of_a_selected_class_bar(open_page):
    from tests.figures import charts, traces

    at = open_page("thresholds")
    [histogram] = [f for title, f in charts(at).items() if title.endswith("per class of the reference")]
    bars = {t["name"]: t for t in traces(histogram, "bar")}
    assert set(bars) == {"paraphrase", "non-paraphrase"}
    from tests.figures import drawn as drawn_charts

    [payload] = [payload for e, payload in drawn_charts(at) if "threshold_histogram" in e.proto.id]
    assert {"points", "box"} <= set(payload["select"])  # a click, a box
    assert "Select points" in "\n".join(c.value for c in at.caption)
    counts = bars["paraphrase"]["y"]
    fullest = int(np.argmax(counts))
    chosen = bars["paraphrase"]["customdata"][fullest]
    at.session_state["threshold_histogram"] = {
        "selection": {
            "points": [  # as ui/charts/plotly_chart.js sends it
                {"curve_number": 0, "point_index": fullest, "customdata": chosen}
            ],
            "point_indices": [fullest],
            "box": [],
            "lasso": [],
            "revision": payload["revision"],
        }
    }
    at.run()
    assert not at.exception, at.exception
    listed = [h.value for h in at.get("html") if "selected-pair" in h.value]
    n = counts[fullest]
    assert f"**{n} pair{'s' if n != 1 else ''} selected**" in [m.value for m in at.markdown]
    assert len(listed) == min(n, 50) and listed


def test_a_scatter_point_hovers_every_label_of_its_pair(open_page):
    from tests.figures import charts, traces

    at = open_page("distributions")
    scatter = next(f for title, f in charts(at).items() if "against the normalised" in title)
    template = traces(scatter, "scattergl")[0]["hovertemplate"]
    labelled = {row[0]: row for t in traces(scatter, "scattergl") for row in t["customdata"]}
    column = template.split("<br>").index(next(line for line in template.split("<br>") if line.startswith("labels:")))
    with_four = [row[column] for row in labelled.values() if row[column].count(": ") == 4]
    assert with_four, "no point names four annotators' labels"
    assert all(name in with_four[0] for name in ("ann1: ", "ann2: ", "ann3: ", "ann4: "))
    from pluie_core.labels import LEVELS

    assert any(level in with_four[0] for level in LEVELS)
    corr = open_page("correlation")
    scatter = next(f for title, f in charts(corr).items() if "against the reference" in title)
    assert "labels: %{customdata[" in traces(scatter, "scattergl")[0]["hovertemplate"]


def test_a_histogram_of_few_pairs_counts_in_whole_numbers_and_titles_have_room():
    from ui import charts

    def bars(counts):
        edges = np.arange(len(counts) + 1) / len(counts)
        return pd.DataFrame({"class": "paraphrase", "start": edges[:-1], "end": edges[1:], "count": counts})

    few = charts.class_histogram(bars([1, 3, 2]), {"paraphrase": "#1f77b4"}, "a score with a long name", "t", [])
    axis = few.layout.yaxis
    assert axis.dtick == 1 and axis.tickformat == ",d" and axis.rangemode == "tozero"  # 0, 1, 2, 3: no 0.5
    assert axis.automargin is True and few.layout.xaxis.automargin is True  # the titles never cut
    many = charts.class_histogram(bars([10, 300, 120]), {"paraphrase": "#1f77b4"}, "x", "t", [])
    assert many.layout.yaxis.dtick is None and many.layout.yaxis.tickformat == ",d"
