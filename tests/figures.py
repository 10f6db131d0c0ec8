"""The plotly figures a page drew, read back from AppTest: each chart's figure as the browser gets it
(ui.charts.draw's component, its payload's "figure": "data", the traces; "layout"), keyed by its title
as shown (unescaped)."""

from __future__ import annotations

import base64
import html
import json

import numpy as np


def plain(value):
    """The figure with plotly's typed arrays (numpy arrays sent as {"dtype", "bdata", "shape"}: base64)
    read back as lists, as plotly.js reads them."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
        if "shape" in value:
            array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
        return array.tolist()
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def drawn(at) -> list:
    """(element, payload) of every chart ui.charts.draw drew on the page, in order: the payload as the
    browser reads it (revision, select, config, bundle, figure)."""
    from ui.charts import PLOTLY_COMPONENT

    return [
        (element, json.loads(element.proto.bytes))
        for element in at.get("bidi_component")
        if element.proto.component_name == PLOTLY_COMPONENT
    ]


def charts(at) -> dict:
    """{title: figure} of every plotly chart on the page, typed arrays as lists."""
    found = {}
    for _, payload in drawn(at):
        figure = plain(payload["figure"])
        found[html.unescape(figure["layout"]["title"]["text"])] = figure
    return found


def traces(figure: dict, kind: str) -> list[dict]:
    """The figure's traces of a kind (heatmap, scatter, scattergl, bar)."""
    return [trace for trace in figure["data"] if trace.get("type", "scatter") == kind]


def trace(figure: dict, kind: str, name=None) -> dict:
    """The figure's one trace of a kind, or the one with this name."""
    found = [t for t in traces(figure, kind) if name is None or t.get("name") == name]
    assert len(found) == 1, [t.get("name") for t in traces(figure, kind)]
    return found[0]


def marks(figure: dict) -> dict:
    """{label: (position, colour, dash)} of the figure's vertical marks (threshold lines, labelled at the top)."""
    layout = figure["layout"]
    lines = [s for s in layout.get("shapes", []) if s.get("x0") == s.get("x1")]
    labels = [a for a in layout.get("annotations", [])]
    return {
        html.unescape(label["text"]): (line["x0"], line["line"]["color"], line["line"].get("dash"))
        for line, label in zip(lines, labels)
    }


def config(at, key: str) -> dict:
    """The plotly config (modebar, download) of the chart drawn with this key."""
    return next(payload["config"] for element, payload in drawn(at) if element.proto.id and key in element.proto.id)
