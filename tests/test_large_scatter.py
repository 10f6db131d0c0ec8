"""The scatters at scale (issue 40, item 4). A figure's JSON is written once and handed to the page as it is
(no second go.Figure, no second to_json on a rerun: about 1 s a run at 100,000 points before), the figure the
function built; beyond charts.POINTS_DRAWN pairs a scatter draws a seeded sample the page states, which
"Points drawn" enlarges, while the page's statistics use every pair."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import plotly.basedatatypes
import pytest
from streamlit.testing.v1 import AppTest

from tests.figures import charts, plain, traces
from tests.paths import REPO


def _points(n: int) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    return pd.DataFrame(
        {
            "pair_id": np.arange(n) + 10,
            "x": rng.random(n),
            "y": rng.normal(size=n),
            "source": [f"a <b>cat</b> & {i} " + "w" * (i % 120) for i in range(n)],
            "hypothesis": [f"a dog {i}" for i in range(n)],
            "labels": ["ann1: Same meaning"] * n,
        }
    )


def _draw(points):
    from ui import charts as page_charts

    page_charts.draw("scatter", points, {"x": "reference", "y": "run", "pair_id": "pair"}, "prebuilt", key="prebuilt")


def test_a_chart_draws_the_figure_its_function_built_as_it_is():
    from tests.figures import drawn
    from ui import charts as page_charts

    at = AppTest.from_function(_draw, args=(_points(300),), default_timeout=60).run()
    assert not at.exception, at.exception
    [(element, payload)] = drawn(at)
    built = page_charts.scatter(_points(300), {"x": "reference", "y": "run", "pair_id": "pair"}, "prebuilt")
    assert plain(payload["figure"]) == plain(json.loads(built.to_json()))
    assert len(plain(payload["figure"])["data"][0]["customdata"]) == 300
    assert payload["bundle"] == page_charts.PLOTLY_BUNDLE and payload["select"] == []  # beside the component's module
    assert payload["config"]["modeBarButtonsToRemove"] == [
        "sendChartToCloud",
        "select2d",
        "lasso2d",
    ]  # nothing to select


def test_a_rerun_builds_and_checks_no_figure_again(monkeypatch):
    built = []
    original = plotly.basedatatypes.BaseFigure.__init__

    def counted(self, *args, **kwargs):
        built.append(type(self).__name__)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(plotly.basedatatypes.BaseFigure, "__init__", counted)

    def page(points):
        from ui import charts as page_charts

        page_charts.draw("scatter", points, {"x": "reference", "y": "run"}, "once", key="once", select=("box",))

    at = AppTest.from_function(page, args=(_points(2_000),), default_timeout=60).run()
    assert not at.exception, at.exception
    assert built  # the first run builds it
    first = at.get("bidi_component")[0].proto
    built.clear()
    at.run()
    assert not at.exception, at.exception
    assert built == []  # no figure checked as a go.Figure or written again
    again = at.get("bidi_component")[0].proto
    assert again.bytes == first.bytes and again.id == first.id  # the same widget: a selection is kept


@pytest.fixture
def distributions(db_url, engine, built_analysis_store, monkeypatch):
    from tests.analysis_store import load_built_store

    load_built_store(engine, built_analysis_store)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    from ui import charts as page_charts

    monkeypatch.setattr(page_charts, "POINTS_DRAWN", 40)
    monkeypatch.setattr(page_charts, "POINTS_CHOICES", (20, 40, 80))
    at = AppTest.from_file(str(REPO / "pages" / "distributions.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    return at


def _scatter_ids(at, title: str) -> list:
    figure = next(f for t, f in charts(at).items() if title in t)
    return sorted(row[0] for t in traces(figure, "scattergl") for row in t["customdata"])


def test_beyond_points_drawn_a_scatter_draws_a_stated_seeded_sample_and_more_on_demand(distributions):
    at = distributions
    histogram = next(f for t, f in charts(at).items() if t.endswith("per class"))
    n = int(sum(sum(t["y"]) for t in traces(histogram, "bar")))  # every pair, in the histogram
    assert n > 80
    drawn = _scatter_ids(at, "against the normalised")
    assert len(drawn) == 40 == len(set(drawn))
    assert f'40 of {n:,} pairs drawn, a seeded sample ("Points drawn" draws more)' in "\n".join(
        c.value for c in at.caption
    )
    control = next(s for s in at.select_slider if s.label == "Points drawn")
    assert control.options == ["20", "40", "80", f"{min(n, 100_000):,}"] and control.value == 40
    at.run()
    assert _scatter_ids(at, "against the normalised") == drawn  # seeded: the same pairs on every run
    control.set_value(80).run()
    assert not at.exception, at.exception
    assert len(_scatter_ids(at, "against the normalised")) == 80
    next(s for s in at.select_slider if s.label == "Points drawn").set_value(n).run()
    assert len(_scatter_ids(at, "against the normalised")) == n
    assert not any("pairs drawn" in c.value for c in at.caption)


def test_the_correlation_scatter_draws_the_same_sample_as_it_says(db_url, engine, built_analysis_store, monkeypatch):
    from tests.analysis_store import load_built_store

    load_built_store(engine, built_analysis_store)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    from ui import charts as page_charts

    monkeypatch.setattr(page_charts, "POINTS_DRAWN", 30)
    at = AppTest.from_file(str(REPO / "pages" / "correlation.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    title = next(t for t in charts(at) if "against the reference" in t)
    assert "(30 of " in title
    assert len(_scatter_ids(at, "against the reference")) == 30
