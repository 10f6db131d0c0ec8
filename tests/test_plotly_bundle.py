"""The charts' plotly.js bundle (issue 40, item 4): plotly.pluie.min.js, a bundle of the traces the pages draw
(scripts/plotly_bundle), an asset of the chart component (components/pluie_plotly, a packaged st.components.v2
component: issue 57), served by Streamlit from the installed component's asset folder: the same plotly.js
release as the plotly package the figures are written with, registering exactly ui.charts.BUNDLED_TRACES,
which every figure of the analysis pages keeps to; a selection is read back only for the figure it was made on."""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import re
import tomllib
import urllib.error
import urllib.request
from pathlib import Path

import plotly.offline
import pytest
from streamlit.components.v2.manifest_scanner import scan_component_manifests
from streamlit.testing.v1 import AppTest

import pluie_plotly
from tests.paths import REPO
from ui import charts

COMPONENT = REPO / "components" / "pluie_plotly"
ASSETS = COMPONENT / "pluie_plotly" / "frontend"
BUNDLE = ASSETS / pluie_plotly.BUNDLE
BUILD = REPO / "scripts" / "plotly_bundle"


def test_the_bundle_is_the_plotly_js_of_the_plotly_package_and_an_asset_of_the_chart_component():
    header = BUNDLE.read_text()[:300]
    version = re.match(r"/\* plotly\.js v([0-9.]+) ", header).group(1)
    assert version == plotly.offline.get_plotlyjs_version()  # the figures' JSON is plotly.py's, for this plotly.js
    assert json.loads((BUILD / "package.json").read_text())["devDependencies"]["plotly.js"] == version
    assert "MIT license" in header
    # the build writes it there (scripts/plotly_bundle's npm run build)
    build = json.loads((BUILD / "package.json").read_text())["scripts"]["build"]
    assert (BUILD / build.split()[-1]).resolve() == BUNDLE.resolve()
    # the component's asset folder (pyproject.toml's asset_dir) holds its module and the bundle, and nothing else
    project = tomllib.loads((COMPONENT / "pyproject.toml").read_text())
    [declared] = project["tool"]["streamlit"]["component"]["components"]
    assert f"{project['project']['name']}.{declared['name']}" == charts.PLOTLY_COMPONENT
    assert COMPONENT / "pluie_plotly" / declared["asset_dir"] == ASSETS
    assert sorted(p.name for p in ASSETS.iterdir()) == sorted([pluie_plotly.BUNDLE, pluie_plotly.MODULE])
    # Streamlit serves a component's assets at _stcore/bidi-components/<component>/ from the app's root; the
    # bundle's address carries its digest (a rebuilt bundle is a new address)
    digest = hashlib.blake2b(BUNDLE.read_bytes(), digest_size=16).hexdigest()
    assert charts.PLOTLY_BUNDLE == f"{BUNDLE.name}?v={digest}"
    assert charts.PLOTLY_JS == f"_stcore/bidi-components/{charts.PLOTLY_COMPONENT}/{BUNDLE.name}?v={digest}"
    assert charts.PLOTLY_MODULE == f"_stcore/bidi-components/{charts.PLOTLY_COMPONENT}/{pluie_plotly.MODULE}"
    # no static folder served any more: the bundle was its only file
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert "enableStaticServing" not in config["server"] and not any((REPO / "static").glob("*"))
    # the module loads plotly.js from beside itself, as draw's payload names it
    assert "new URL(bundle, import.meta.url)" in (ASSETS / pluie_plotly.MODULE).read_text()


def test_the_component_is_installed_from_the_checkout_where_streamlit_finds_it():
    """make install installs components/pluie_plotly editable (requirements-local.txt): the package imported is
    the checkout's, and Streamlit's scan of the installed distributions (what a server and AppTest run at start)
    finds the component with the checkout's asset folder, so what the browser loads is what is committed."""
    assert Path(pluie_plotly.__file__).resolve().parent == (COMPONENT / "pluie_plotly").resolve()
    assert Path(pluie_plotly.ASSETS).resolve() == ASSETS.resolve()
    assert (
        importlib.metadata.version("pluie-plotly")
        == tomllib.loads((COMPONENT / "pyproject.toml").read_text())["project"]["version"]
    )
    found = {
        f"{manifest.name}.{config.name}": config.resolve_asset_root(root)
        for manifest, root in scan_component_manifests()
        for config in manifest.components
    }
    assert found.get(charts.PLOTLY_COMPONENT) == ASSETS.resolve()


def test_the_running_server_serves_the_component_and_its_bundle_for_the_browser_to_keep(app_server):
    """The server (server.py, as make run serves it) sends the module and the bundle from the component's
    assets, each with an ETag, and answers 304 without the file when it is unchanged (pluie_plotly.caching;
    Streamlit alone sends neither ETag nor Last-Modified for a component's files): the bundle at its versioned
    address, as the pages ask for it, kept a year without asking; the module, and the bundle at any other
    address, kept and asked again each time."""
    bare = charts.PLOTLY_JS.split("?")[0]
    for address, path, kept in (
        (charts.PLOTLY_JS, BUNDLE, "public, max-age=31536000, immutable"),
        (charts.PLOTLY_MODULE, ASSETS / pluie_plotly.MODULE, "no-cache"),
        (bare, BUNDLE, "no-cache"),
        (f"{bare}?v=another", BUNDLE, "no-cache"),
    ):
        with urllib.request.urlopen(f"{app_server.url}/{address}", timeout=30) as response:
            assert response.status == 200 and response.read() == path.read_bytes()
            assert response.headers["Content-Type"].startswith(("application/javascript", "text/javascript"))
            assert response.headers["Cache-Control"] == kept and response.headers["Last-Modified"]
            etag = response.headers["ETag"]
        asked = urllib.request.Request(f"{app_server.url}/{address}", headers={"If-None-Match": etag})
        with pytest.raises(urllib.error.HTTPError) as unchanged:  # urllib reads a 304 as an error
            urllib.request.urlopen(asked, timeout=30)
        assert unchanged.value.code == 304 and unchanged.value.read() == b""
        assert unchanged.value.headers["ETag"] == etag and unchanged.value.headers["Cache-Control"] == kept
    changed = urllib.request.Request(f"{app_server.url}/{charts.PLOTLY_JS}", headers={"If-None-Match": 'W/"old"'})
    with urllib.request.urlopen(changed, timeout=30) as response:
        assert response.status == 200 and response.read() == BUNDLE.read_bytes()
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{app_server.url}/_stcore/bidi-components/{charts.PLOTLY_COMPONENT}/x.js", timeout=30)
    assert missing.value.code == 404
    # the build's entry registers the traces charts.BUNDLED_TRACES names (scatter: plotly.js's core)
    registered = set(re.findall(r"require\('plotly\.js/lib/(\w+)'\)", (BUILD / "entry.js").read_text())) - {"core"}
    assert set(registered) | {"scatter"} == set(charts.BUNDLED_TRACES)


@pytest.mark.browser
def test_the_bundle_registers_the_traces_the_pages_draw_and_draws_them(browser):
    page = browser.new_page()
    page.set_content("<div id='chart' style='width:600px;height:400px'></div>")
    page.add_script_tag(path=str(BUNDLE))
    traces = page.evaluate("Object.keys(Plotly.PlotSchema.get().traces).sort()")
    assert traces == sorted(charts.BUNDLED_TRACES)
    drawn = page.evaluate("""() => Plotly.newPlot('chart', [
        {type: 'scattergl', mode: 'markers', x: [1, 2, 3], y: [3, 1, 2]}, {type: 'bar', x: [1, 2], y: [2, 3]},
        {type: 'heatmap', z: [[1, 2], [3, 4]]}, {type: 'scatter', x: [1, 2], y: [1, 2]}])
      .then((gd) => gd._fullData.map((t) => t.type))""")
    assert drawn == ["scattergl", "bar", "heatmap", "scatter"]


@pytest.mark.parametrize("name", ["agreement", "thresholds", "distributions", "correlation"])
def test_every_figure_of_the_analysis_pages_keeps_to_the_bundled_traces(
    db_url, engine, built_analysis_store, monkeypatch, name
):
    from tests.analysis_store import load_built_store
    from tests.figures import drawn

    load_built_store(engine, built_analysis_store)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    at = AppTest.from_file(str(REPO / "pages" / f"{name}.py"), default_timeout=60).run()
    assert not at.exception, at.exception
    found = drawn(at)
    assert found
    for element, payload in found:
        assert {trace.get("type", "scatter") for trace in payload["figure"]["data"]} <= set(charts.BUNDLED_TRACES)
        assert payload["bundle"] == charts.PLOTLY_BUNDLE  # beside the module, which the browser loads from the server
        assert (element.proto.js_source_path, element.proto.js_content) == (pluie_plotly.MODULE, "")


def _selectable(points):
    import streamlit as st

    from ui import charts as page_charts

    event = page_charts.draw(
        "scatter", points, {"x": "x", "y": "y", "pair_id": "pair"}, "T", key="chart", select=("box", "lasso")
    )
    st.markdown(f"picked {page_charts.selected_pair_ids(event)}")


def test_a_selection_is_read_for_the_figure_it_was_made_on_only():
    import pandas as pd

    from tests.figures import drawn

    points = pd.DataFrame({"pair_id": [4, 5, 6], "x": [0.1, 0.2, 0.3], "y": [1.0, 0.5, 0.2]})
    at = AppTest.from_function(_selectable, args=(points,), default_timeout=30).run()
    assert not at.exception, at.exception
    [(_, payload)] = drawn(at)
    assert payload["select"] == ["box", "lasso"] and payload["config"]["modeBarButtonsToRemove"] == ["sendChartToCloud"]
    assert at.markdown[0].value == "picked []"
    made = {
        "points": [{"curve_number": 0, "point_index": 1, "x": 0.2, "y": 0.5, "customdata": [5]}],
        "point_indices": [1],
        "box": [{"x": [0.15, 0.25], "y": [0.4, 0.6]}],
        "lasso": [],
    }
    at.session_state["chart"] = {"selection": {**made, "revision": payload["revision"]}}
    at.run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == "picked [5]"
    # the same key, another figure (the page's data changed): the old selection names none of its pairs
    at.session_state["chart"] = {"selection": {**made, "revision": "another figure"}}
    at.run()
    assert not at.exception, at.exception
    assert at.markdown[0].value == "picked []"


@pytest.mark.browser
def test_a_chart_whose_plotly_js_does_not_load_says_so_where_it_was(engine, app_server, browser):
    import pandas as pd

    from db.analysis import add_score_run, pairs_frame
    from db.datasets import import_pairs
    from tests.browser import wait_for_app
    from tests.store_fixtures import sentence_pairs

    frame = pd.DataFrame(sentence_pairs(6), columns=["source", "hypothesis"])
    frame["label"] = [1, 0, 1, 0, 1, 0]
    import_pairs(engine, "d", frame)
    add_score_run(engine, "lev", {pid: 0.1 * i for i, pid in enumerate(pairs_frame(engine).index)})
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    # plotly.js at whatever address the page asks for it (its version in the query)
    page.route(re.compile(re.escape(f"/{charts.PLOTLY_JS.split('?')[0]}")), lambda route: route.abort())
    page.goto(f"{app_server.url}/thresholds")
    wait_for_app(page)
    said = page.locator(".pluie-chart").filter(has_text="This chart could not be drawn").first
    said.wait_for(timeout=30_000)
    assert "Reload the page" in said.inner_text()
    assert page.locator(".pluie-chart .main-svg").count() == 0
