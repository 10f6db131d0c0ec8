"""The analysis pages' figures, drawn with Vega-Lite (Altair, which Streamlit ships): plotly.js cost
about a second of the browser's time on every page that drew a chart, whatever its size (bench/pages.py).

The data of every figure is small (binned, sampled or a handful of rows, ≤ 5,000 rows: Vega-Lite's
usual limit, which Streamlit's own Arrow transport does not apply). Names a user chose (score runs,
annotators) are values or titles here, never Vega-Lite field names, in which '.' and '[' mean something."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

try:  # the conversion st.altair_chart does (Streamlit's own, private: streamlit is pinned in requirements.txt)
    from streamlit.elements.vega_charts import _convert_altair_to_vega_lite_spec
except ImportError:  # another Streamlit: draw() then hands the Altair chart to st.altair_chart, uncached
    _convert_altair_to_vega_lite_spec = None

# px of a whole figure, titles and axes included (Streamlit fits the plot into it), as the plotly figures had
HEIGHT = 450
ROW_HEIGHT, MIN_HEATMAP_ROWS, HEATMAP_FRAME = 45, 220, 140  # px: ≥ 55 px per tick of the κ colour bar
KAPPA_TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)
PLOTLY_COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3")  # the colours the figures had


def _colour(field: str, colours: dict, title: str) -> alt.Color:
    """A nominal colour with a fixed colour per value (classes, figures), in this order."""
    return alt.Color(f"{field}:N", title=title, scale=alt.Scale(domain=list(colours), range=list(colours.values())))


def _ink(dark: str):
    """White text where the cell is dark (a Vega expression), black elsewhere. A colour field without a
    scale beside the cells' colour scale breaks Vega-Lite's layering (nothing is drawn)."""
    return alt.condition(dark, alt.value("white"), alt.value("black"))


def _rules(marks: list, axis: str, label_align: str = "right") -> list:
    """Dashed or plain lines across the plot at given positions, each with its colour and a label at the
    top ("best 0.42", "natural threshold"): marks are (position, colour, label, dashed) tuples."""
    if not marks:
        return []
    frame = pd.DataFrame(marks, columns=["position", "colour", "label", "dashed"])
    base = alt.Chart(frame).encode(**{axis: alt.X("position:Q") if axis == "x" else alt.Y("position:Q")},
                                   color=alt.Color("colour:N", scale=None))
    layers = [base.transform_filter("datum.dashed").mark_rule(strokeDash=[6, 4], strokeWidth=1.5),
              base.transform_filter("!datum.dashed").mark_rule(strokeWidth=1.5)]
    if axis == "x":
        layers.append(base.mark_text(align=label_align, baseline="top", dx=-4 if label_align == "right" else 4, dy=2)
                      .encode(y=alt.value(0), text="label:N"))
    return layers


def kappa_heatmap(kappa: pd.DataFrame, n_shared: pd.DataFrame, title: str) -> alt.LayerChart:
    """Cohen's κ per pair of annotators on a red-white-blue scale from −1 to 1, each cell reading its κ
    and the number of items both labelled; the first annotator on top."""
    names = [str(name) for name in kappa.index]
    cells = pd.DataFrame([(str(a), str(b), kappa.iat[i, j], int(n_shared.iat[i, j]))
                          for i, a in enumerate(kappa.index) for j, b in enumerate(kappa.columns)],
                         columns=["row", "column", "kappa", "n"])
    cells["text"] = cells["kappa"].map(lambda k: "" if pd.isna(k) else f"{k:.2f}") + "\nn=" + cells["n"].astype(str)
    rows = max(MIN_HEATMAP_ROWS, ROW_HEIGHT * len(names))  # the cells' height; the colour bar as tall
    base = alt.Chart(cells).encode(
        x=alt.X("column:O", sort=names, title=None, axis=alt.Axis(labelLimit=0)),
        y=alt.Y("row:O", sort=names, title=None, axis=alt.Axis(labelLimit=0)),
        tooltip=[alt.Tooltip("row:N", title="annotator"), alt.Tooltip("column:N", title="with"),
                 alt.Tooltip("kappa:Q", title="κ", format=".2f"), alt.Tooltip("n:Q", title="items both labelled")])
    colour = alt.Color("kappa:Q", title="κ", scale=alt.Scale(scheme="redblue", domain=[-1, 1]),
                       legend=alt.Legend(values=list(KAPPA_TICKS), gradientLength=rows, format="g"))
    return alt.layer(base.mark_rect().encode(color=colour),
                     base.mark_text(lineBreak="\n").encode(text="text:N", color=_ink("abs(datum.kappa) > 0.5"))
                     ).properties(title=title, height=rows + HEATMAP_FRAME)


def confusion_matrix(cells, columns: list, rows: list, title: str) -> alt.LayerChart:
    """A 2 × 2 count matrix in blues, each cell reading its count; rows[0] on top."""
    frame = pd.DataFrame([(rows[i], columns[j], int(cells[i][j])) for i in range(len(rows)) for j in range(len(columns))],
                         columns=["row", "column", "count"])
    middle = (frame["count"].min() + frame["count"].max()) / 2
    base = alt.Chart(frame).encode(x=alt.X("column:O", sort=columns, title=None, axis=alt.Axis(labelAngle=0, labelLimit=0)),
                                   y=alt.Y("row:O", sort=rows, title=None, axis=alt.Axis(labelLimit=0)),
                                   tooltip=["row:N", "column:N", "count:Q"])
    return alt.layer(base.mark_rect().encode(color=alt.Color("count:Q", scale=alt.Scale(scheme="blues"))),
                     base.mark_text(fontSize=14).encode(text="count:Q", color=_ink(f"datum.count > {middle}"))
                     ).properties(title=title, height=HEIGHT)


def threshold_curve(curve: pd.DataFrame, x: str, x_title: str, colours: dict, marks: list, title: str) -> alt.LayerChart:
    """One line per figure (the keys of colours, columns of curve) against x, from 0 to 1.02, with the
    marked thresholds as dashed lines labelled at the top left. The curve is folded into lines in the
    browser: one row per point, not one per point and figure."""
    figures = list(colours)
    lines = alt.Chart(curve[[x, *figures]]).transform_fold(figures, as_=["figure", "value"]).mark_line().encode(
        x=alt.X(f"{x}:Q", title=x_title, scale=alt.Scale(zero=False)),
        y=alt.Y("value:Q", title=None, scale=alt.Scale(domain=[0, 1.02])),
        color=_colour("figure", colours, "figure"),
        tooltip=[alt.Tooltip("figure:N"), alt.Tooltip(f"{x}:Q", title=x_title, format=".4g"),
                 alt.Tooltip("value:Q", format=".3f")])
    return alt.layer(lines, *_rules(marks, "x")).properties(title=title, height=HEIGHT)


def class_histogram(bars: pd.DataFrame, colours: dict, x_title: str, title: str, marks: list) -> alt.LayerChart:
    """Bars binned on the server (class, start, end, count), the classes overlaid, not stacked."""
    shown = {name: colour for name, colour in colours.items() if name in set(bars["class"])}
    columns = alt.Chart(bars).mark_bar(opacity=0.65).encode(
        x=alt.X("start:Q", title=x_title, scale=alt.Scale(zero=False)), x2="end:Q",
        y=alt.Y("count:Q", title="count", stack=None), y2=alt.datum(0),  # bars from 0, not ranges at a height
        color=_colour("class", shown, "class"),
        tooltip=["class:N", alt.Tooltip("start:Q", title="from", format=".4g"),
                 alt.Tooltip("end:Q", title="to", format=".4g"), "count:Q"])
    return alt.layer(columns, *_rules(marks, "x", label_align="left")).properties(title=title, height=HEIGHT)


def class_scatter(points: pd.DataFrame, colours: dict, shapes: dict, titles: dict, title: str,
                  level=None, level_colour: str = "#d62728") -> alt.LayerChart:
    """Points x, y per class (colour and shape by class), with the other columns of points in the
    tooltip; a horizontal line at y = level if given. titles: the axis title of x and y."""
    shown = [name for name in colours if name in set(points["class"])]
    dots = alt.Chart(points).mark_point(filled=True, opacity=0.6).encode(
        x=alt.X("x:Q", title=titles["x"], scale=alt.Scale(zero=False)),
        y=alt.Y("y:Q", title=titles["y"], scale=alt.Scale(zero=False)),
        color=_colour("class", {name: colours[name] for name in shown}, "class"),
        shape=alt.Shape("class:N", title="class", scale=alt.Scale(domain=shown, range=[shapes[n] for n in shown])),
        tooltip=[alt.Tooltip(f"{c}:{'Q' if c in ('x', 'y') else 'N'}", title=titles.get(c, c)) for c in points.columns])
    layers = [dots]
    if level is not None:
        layers.append(alt.Chart(pd.DataFrame({"y": [level]})).mark_rule(color=level_colour, strokeWidth=1.5).encode(y="y:Q"))
    return alt.layer(*layers).properties(title=title, height=HEIGHT)


def grouped_bars(long: pd.DataFrame, title: str) -> alt.Chart:
    """Bars of r per metric (x), one per method side by side (long: metric, method, r)."""
    methods, metrics = list(dict.fromkeys(long["method"])), list(dict.fromkeys(long["metric"]))
    slanted = max(map(len, metrics), default=0) > 20  # run names in full, slanted when long
    return alt.Chart(long).mark_bar().encode(
        x=alt.X("metric:N", sort=metrics, title="metric", axis=alt.Axis(labelAngle=-30 if slanted else 0, labelLimit=0)),
        xOffset=alt.XOffset("method:N", sort=methods), y=alt.Y("r:Q", title="r"),
        color=_colour("method", dict(zip(methods, PLOTLY_COLOURS)), "method"),
        tooltip=["metric:N", "method:N", alt.Tooltip("r:Q", format=".3f")]).properties(title=title, height=HEIGHT)


def scatter(points: pd.DataFrame, titles: dict, title: str, opacity: float = 0.4) -> alt.Chart:
    """Points x, y in one colour (points: columns x and y; titles: their axis titles)."""
    return alt.Chart(points[["x", "y"]]).mark_point(filled=True, opacity=opacity, color=PLOTLY_COLOURS[0]).encode(
        x=alt.X("x:Q", title=titles["x"], scale=alt.Scale(zero=False)),
        y=alt.Y("y:Q", title=titles["y"], scale=alt.Scale(zero=False)),
        tooltip=[alt.Tooltip("x:Q", title=titles["x"]), alt.Tooltip("y:Q", title=titles["y"])]
    ).properties(title=title, height=HEIGHT)


@st.cache_data(max_entries=128, show_spinner=False)
def _spec(figure: str, *args, **kwargs) -> dict:
    """The Vega-Lite spec (data as Arrow, as st.altair_chart sends it) of the figure built by this module's
    function named figure. Building and validating the Altair charts took half of every rerun of the
    Agreement page at 100,000 pairs (0.114 s a rerun, 0.052 s with the specs cached; AppTest), the same
    figures each time."""
    return _convert_altair_to_vega_lite_spec(globals()[figure](*args, **kwargs))


def draw(figure: str, *args, key: str, **kwargs) -> None:
    """Draw this module's figure (a function's name and its arguments) as st.altair_chart would, its spec
    cached on those arguments. Streamlit's chart theme: axes, titles and legends follow the app's light or
    dark theme."""
    if _convert_altair_to_vega_lite_spec is None:
        st.altair_chart(globals()[figure](*args, **kwargs), key=key, theme="streamlit")
    else:
        st.vega_lite_chart(spec=_spec(figure, *args, **kwargs), key=key, theme="streamlit")
