"""The Vega-Lite (Altair) charts a page drew, read back from AppTest: each chart's spec with the data of
each layer as a DataFrame (Streamlit sends the data as Arrow beside the spec)."""
from __future__ import annotations

import json

import pandas as pd
import pyarrow as pa


def charts(at) -> dict:
    """{title: spec} of every chart on the page; each layer (or the chart itself when it has none)
    carries its data as a DataFrame under "frame"."""
    found = {}
    for element in at.get("vega_lite_chart"):
        spec = json.loads(element.proto.spec)
        data = {d.name: pa.ipc.open_stream(d.data.data).read_all().to_pandas() for d in element.proto.datasets}
        for layer in spec.get("layer", [spec]):
            layer["frame"] = data[layer.get("data", spec.get("data"))["name"]]  # shared data sits on the chart
        title = spec["title"]
        found[title if isinstance(title, str) else title["text"]] = spec
    return found


def layer(spec: dict, mark: str, n: int = 0) -> dict:
    """The n-th layer of a chart drawn with this mark (rect, text, line, rule, bar, point)."""
    return [lay for lay in spec.get("layer", [spec]) if lay["mark"]["type"] == mark][n]
