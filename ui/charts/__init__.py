"""The analysis pages' figures, drawn with plotly (the product's stack): each with the modebar's zoom,
pan and "download plot as PNG" (twice the screen's size, for a paper). The pair scatters are WebGL
(Scattergl): up to MAX_SCATTER_POINTS pairs (beyond POINTS_DRAWN, a seeded sample the page states, which
its "Points drawn" control enlarges), each point naming its pair, its two sentences
(shortened), every label and the scores on hover; a box or lasso selection lists the pairs under the chart
(list_pairs), as selecting bars of a class histogram does.

The figures are built here with plotly (Python) and drawn in the page by plotly.js itself (draw: the app's
packaged st.components.v2 component, components/pluie_plotly, whose assets are its module, plotly_chart.js, and
plotly.pluie.min.js, a bundle of the four traces drawn here: scripts/plotly_bundle): that bundle's code takes
the browser about a third of the time the whole plotly.js does, and a new chart is drawn once (st.plotly_chart
drew it three times, its theme applied between). A chart page in a new tab: 3.0–4.7 s before, 1.7–3.3 s
since, at 100,000 pairs on 2 cores (bench/results/2026-11-26-pages.md).

Plotly renders titles, tick labels, legends and hover texts as a little HTML (<b>, <br>, <a>): every
text a user chose or imported (run and annotator names, sentences) goes through _text, which escapes
it, and plotly shows the escaped text as typed."""

from __future__ import annotations

import functools
import hashlib
import html
import json
from typing import Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import pluie_plotly
from pluie_core.diff import diff_html
from ui.base.page import user_text

# px of a whole figure, titles and axes included
HEIGHT = 450
ROW_HEIGHT, MIN_HEATMAP_ROWS, HEATMAP_FRAME = 45, 220, 140  # px: ≥ 55 px per tick of the κ colour bar
KAPPA_TICKS = (-1.0, -0.5, 0.0, 0.5, 1.0)
PLOTLY_COLOURS = ("#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a", "#19d3f3")  # plotly's own first colours
MAX_SCATTER_POINTS = 100_000  # pairs a scatter can draw (WebGL); beyond, a seeded sample the page states
# pairs a scatter draws at first: a seeded sample beyond, stated, which "Points drawn" enlarges up to
# MAX_SCATTER_POINTS. A browser without a GPU draws WebGL points in software: about 1 s a draw at 100,000
# points on 2 cores (bench/results/2026-11-26-pages.md)
POINTS_DRAWN = 10_000
POINTS_CHOICES = (5_000, 10_000, 20_000, 50_000, 100_000)
HOVER_CHARS = 80  # characters of each sentence a point's hover shows
LISTED = 50  # selected pairs listed under a chart, the first ones
# the component that draws a figure (components/pluie_plotly, installed by make install: Streamlit serves its
# assets at /_stcore/bidi-components/PLOTLY_COMPONENT/). plotly.js is one of them, a bundle of the traces this
# module draws, BUNDLED_TRACES, built by scripts/plotly_bundle (make plotly-bundle). PLOTLY_BUNDLE: its file
# versioned by its digest, which the browser keeps without asking again (pluie_plotly.caching); the module loads
# it from beside itself (draw's payload names it). PLOTLY_JS: the same from the app's root, where
# ui.frame.preload_views asks for it (and for the component's module, PLOTLY_MODULE)
PLOTLY_COMPONENT = pluie_plotly.COMPONENT
PLOTLY_BUNDLE = f"{pluie_plotly.BUNDLE}?v={pluie_plotly.digest(pluie_plotly.BUNDLE)}"
PLOTLY_JS = f"_stcore/bidi-components/{PLOTLY_COMPONENT}/{PLOTLY_BUNDLE}"
PLOTLY_MODULE = f"_stcore/bidi-components/{PLOTLY_COMPONENT}/{pluie_plotly.MODULE}"  # the component's own code
BUNDLED_TRACES = ("bar", "heatmap", "scatter", "scattergl")
# the modebar's selection buttons, each shown where its selection mode is asked for (draw's select)
SELECT_BUTTONS = {"box": "select2d", "lasso": "lasso2d"}
# buttons plotly.js 3 adds that do nothing here: "Share chart…" uploads to Plotly Cloud, which needs an
# account and a server URL this app never has (it logged an error and did nothing)
NO_BUTTONS = ("sendChartToCloud",)
CONFIG = {
    "displaylogo": False,
    "scrollZoom": False,
    "toImageButtonOptions": {"format": "png", "scale": 2, "height": None, "width": None},
}
# the modebar's camera downloads one format (plotly.js's toImageButtonOptions.format): the sidebar's
# choice, kept for the session under FORMAT (the widget's own key is dropped on a page without it)
FORMATS = {"PNG": "png", "SVG": "svg"}
FORMAT, FORMAT_WIDGET = "figure-download-format", "figure-download-format-widget"
CLASSES = {1.0: "paraphrase", 0.0: "non-paraphrase"}  # the binarised reference, as the figures name it
CLASS_COLOURS = {"paraphrase": "#1f77b4", "non-paraphrase": "#ff7f0e"}
HOVER_LABELS = 12  # labels a point's hover names, the first annotators' (by name); beyond, how many more
OPEN_IN_REVIEW = "review-open-pair"  # the Review page opens this pair (pages/review.py's OPEN)
BOX = (
    "border:1px solid light-dark(#d0d7de,#3d3b38);border-radius:8px;padding:12px 16px;"
    "line-height:1.6;font-size:1.02rem"
)  # as the Review page draws a pair
CAPTION = "font-size:0.8rem;color:light-dark(#57606a,#9aa3ad);margin-bottom:2px"


def _text(value, limit: Optional[int] = None) -> str:
    """User text as plotly shows it as typed: shortened to ``limit`` characters (…), HTML escaped."""
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    if limit is not None and len(text) > limit:
        text = text[: limit - 1].rstrip() + "…"
    return html.escape(text, quote=False)


def _layout(figure: go.Figure, title: str, height: int = HEIGHT, **layout) -> go.Figure:
    figure.update_layout(title={"text": _text(title)}, height=height, margin={"t": 60}, **layout)
    # room for the axes' titles and tick labels, whatever their length (a long y title was cut at the left)
    figure.update_xaxes(automargin=True)
    figure.update_yaxes(automargin=True)
    return figure


def count_axis(counts) -> dict:
    """A y axis of counts: whole numbers only (plotly's own ticks for a count of 3 are 0, 0.5, 1 … 3)."""
    most = float(np.nanmax(counts)) if len(counts) else 0.0
    return {
        "title": {"text": "count"},
        "rangemode": "tozero",
        **({"dtick": 1} if most <= 5 else {}),
        "tickformat": ",d",
    }


def _marks(figure: go.Figure, marks: list, label_side: str = "left") -> None:
    """Dashed or plain vertical lines at given positions, each in its colour with its label at the top
    ("best 0.42", "natural threshold"): marks are (position, colour, label, dashed) tuples."""
    for position, colour, label, dashed in marks:
        figure.add_vline(
            x=float(position),
            line_color=colour,
            line_width=1.5,
            line_dash="dash" if dashed else "solid",
            annotation_text=_text(label),
            annotation_font_color=colour,
            annotation_position=f"top {label_side}",
        )


def _escaped(values: pd.Series, limit: Optional[int] = None) -> pd.Series:
    """_text of every value of a column at once (vectorised: 0.1 s for 200,000 sentences, where _text
    value by value took 0.7 s)."""
    text = values.astype(object).where(values.notna(), "").astype(str)
    if limit is not None:
        long = text.str.len() > limit
        text = text.where(~long, text.str.slice(0, limit - 1).str.rstrip() + "…")
    return (
        text.str.replace("&", "&amp;", regex=False)
        .str.replace("<", "&lt;", regex=False)
        .str.replace(">", "&gt;", regex=False)
    )


def _hover_column(values: pd.Series) -> pd.Series:
    """A column as a point's hover shows it: sentences shortened, any text escaped, numbers as they are."""
    if values.name in ("source", "hypothesis"):
        return _escaped(values, HOVER_CHARS)
    if values.dtype == object and values.name == "pair_id":
        return values.map(lambda v: v if isinstance(v, (int, np.integer)) else _text(v))
    if values.dtype == object or isinstance(values.dtype, pd.StringDtype):
        return _escaped(values)
    return values


def _hover(points: pd.DataFrame, titles: dict) -> tuple[np.ndarray, str]:
    """customdata and hovertemplate of pair points: pair_id first (what a selection reads), then the
    sentences shortened, then every other column but x and y, each under its title."""
    shown = [c for c in points.columns if c not in ("x", "y")]
    shown = sorted(shown, key=lambda c: (c != "pair_id", c not in ("source", "hypothesis")))
    data = pd.DataFrame({c: _hover_column(points[c]) for c in shown})
    lines = [f"{_text(titles.get(c, c))}: %{{customdata[{i}]}}" for i, c in enumerate(shown)]
    lines += [f"{_text(titles['x'])}: %{{x:.4g}}", f"{_text(titles['y'])}: %{{y:.4g}}"]
    return data.to_numpy(dtype=object), "<br>".join(lines) + "<extra></extra>"


def kappa_heatmap(kappa: pd.DataFrame, n_shared: pd.DataFrame, title: str) -> go.Figure:
    """Cohen's κ per pair of annotators on a red-white-blue scale from −1 to 1, each cell reading its κ
    and the number of items both labelled; the first annotator on top."""
    names = [_text(name) for name in kappa.index]
    values = kappa.to_numpy(dtype=float)
    shared = n_shared.to_numpy().astype(int)
    text = [
        [("" if np.isnan(values[i, j]) else f"{values[i, j]:.2f}") + f"<br>n={shared[i, j]}" for j in range(len(names))]
        for i in range(len(names))
    ]
    rows = max(MIN_HEATMAP_ROWS, ROW_HEIGHT * len(names))  # the cells' height; the colour bar as tall
    figure = go.Figure(
        go.Heatmap(
            z=np.where(np.isnan(values), None, values),
            x=names,
            y=names,
            text=text,
            texttemplate="%{text}",
            customdata=shared,
            colorscale="RdBu",
            zmin=-1,
            zmax=1,
            colorbar={"title": {"text": "κ"}, "tickvals": list(KAPPA_TICKS), "lenmode": "pixels", "len": rows},
            hovertemplate="annotator %{y}<br>with %{x}<br>κ %{z:.2f}<br>items both labelled %{customdata}<extra></extra>",
        )
    )
    return _layout(
        figure,
        title,
        rows + HEATMAP_FRAME,
        yaxis={"autorange": "reversed", "type": "category"},
        xaxis={"type": "category"},
    )


def confusion_matrix(cells, columns: list, rows: list, title: str) -> go.Figure:
    """A 2 × 2 count matrix in blues, each cell reading its count; rows[0] on top."""
    counts = np.asarray(cells, dtype=float).astype(int)
    figure = go.Figure(
        go.Heatmap(
            z=counts,
            x=list(columns),
            y=list(rows),
            text=counts,
            texttemplate="%{text}",
            textfont={"size": 14},
            colorscale="Blues",
            showscale=True,
            hovertemplate="%{y}<br>%{x}<br>count %{z}<extra></extra>",
        )
    )
    return _layout(figure, title, yaxis={"autorange": "reversed", "type": "category"}, xaxis={"type": "category"})


def threshold_curve(curve: pd.DataFrame, x: str, x_title: str, colours: dict, marks: list, title: str) -> go.Figure:
    """One line per figure (the keys of colours, columns of curve) against x, from 0 to 1.02, with the
    marked thresholds as dashed lines labelled at the top left."""
    figure = go.Figure(
        [
            go.Scatter(
                x=curve[x],
                y=curve[name],
                mode="lines",
                name=name,
                line={"color": colour},
                hovertemplate=f"{name}<br>{_text(x_title)} %{{x:.4g}}<br>%{{y:.3f}}<extra></extra>",
            )
            for name, colour in colours.items()
        ]
    )
    _marks(figure, marks, "left")
    return _layout(
        figure,
        title,
        xaxis={"title": {"text": _text(x_title)}},
        yaxis={"range": [0, 1.02]},
        legend={"title": {"text": "figure"}},
    )


def class_histogram(bars: pd.DataFrame, colours: dict, x_title: str, title: str, marks: list) -> go.Figure:
    """Bars binned on the server (class, start, end, count), the classes overlaid, not stacked. Each bar
    carries (class, start, end): selecting it names the pairs behind it (bin_pairs)."""
    traces = []
    for name, colour in colours.items():
        group = bars[bars["class"] == name]
        if group.empty:
            continue
        traces.append(
            go.Bar(
                x=(group["start"] + group["end"]) / 2,
                width=group["end"] - group["start"],
                y=group["count"],
                name=name,
                marker={"color": colour},
                opacity=0.65,
                customdata=group[["class", "start", "end"]].to_numpy(dtype=object),
                hovertemplate="%{customdata[0]}<br>from %{customdata[1]:.4g} to %{customdata[2]:.4g}<br>"
                "count %{y}<extra></extra>",
            )
        )
    figure = go.Figure(traces)
    _marks(figure, marks, "right")
    return _layout(
        figure,
        title,
        barmode="overlay",
        bargap=0,
        xaxis={"title": {"text": _text(x_title)}},
        yaxis=count_axis(bars["count"]),
        legend={"title": {"text": "class"}},
        clickmode="event+select",
    )


def class_scatter(
    points: pd.DataFrame,
    colours: dict,
    shapes: dict,
    titles: dict,
    title: str,
    level=None,
    level_colour: str = "#d62728",
) -> go.Figure:
    """Points x, y per class (colour and shape by class, WebGL), the other columns of points on hover
    (pair_id first: a selection reads it); a horizontal line at y = level if given. titles: the axis
    title of x and y (and of other columns, else their name)."""
    traces = []
    for name, colour in colours.items():
        group = points[points["class"] == name]
        if group.empty:
            continue
        customdata, template = _hover(group, titles)
        traces.append(
            go.Scattergl(
                x=group["x"],
                y=group["y"],
                mode="markers",
                name=name,
                customdata=customdata,
                marker={"color": colour, "symbol": shapes[name], "opacity": 0.6},
                hovertemplate=template,
            )
        )
    figure = go.Figure(traces)
    if level is not None:
        figure.add_hline(y=float(level), line_color=level_colour, line_width=1.5)
    return _layout(
        figure,
        title,
        xaxis={"title": {"text": _text(titles["x"])}},
        yaxis={"title": {"text": _text(titles["y"])}},
        legend={"title": {"text": "class"}},
        dragmode="select",
    )


def grouped_bars(long: pd.DataFrame, title: str) -> go.Figure:
    """Bars of r per metric (x), one per method side by side (long: metric, method, r)."""
    methods, metrics = list(dict.fromkeys(long["method"])), list(dict.fromkeys(long["metric"]))
    slanted = max(map(len, metrics), default=0) > 20  # run names in full, slanted when long
    figure = go.Figure(
        [
            go.Bar(
                x=[_text(m) for m in group["metric"]],
                y=group["r"],
                name=method,
                marker={"color": colour},
                hovertemplate=f"%{{x}}<br>{method}<br>r %{{y:.3f}}<extra></extra>",
            )
            for (method, group), colour in zip(((m, long[long["method"] == m]) for m in methods), PLOTLY_COLOURS)
        ]
    )
    return _layout(
        figure,
        title,
        barmode="group",
        legend={"title": {"text": "method"}},
        xaxis={
            "title": {"text": "metric"},
            "type": "category",
            "tickangle": -30 if slanted else 0,
            "categoryorder": "array",
            "categoryarray": [_text(m) for m in metrics],
        },
        yaxis={"title": {"text": "r"}},
    )


def scatter(points: pd.DataFrame, titles: dict, title: str, opacity: float = 0.4) -> go.Figure:
    """Points x, y in one colour (WebGL; points: columns x and y, and pair_id, sentences... shown on
    hover; titles: the axis titles)."""
    customdata, template = _hover(points, titles)
    figure = go.Figure(
        go.Scattergl(
            x=points["x"],
            y=points["y"],
            mode="markers",
            customdata=customdata,
            marker={"color": PLOTLY_COLOURS[0], "opacity": opacity},
            hovertemplate=template,
        )
    )
    return _layout(
        figure,
        title,
        xaxis={"title": {"text": _text(titles["x"])}},
        yaxis={"title": {"text": _text(titles["y"])}},
        dragmode="select",
    )


@st.cache_data(max_entries=128, show_spinner=False)
def _figure(figure: str, *args, **kwargs) -> tuple[bytes, str]:
    """The JSON of the figure built by this module's function named figure, and its revision (a hash of
    it), cached on its arguments: a rerun (a widget moved elsewhere on the page) builds no figure again,
    and writes no JSON again (at 100,000 points, checking and writing a figure's dict took about 1 s)."""
    spec = globals()[figure](*args, **kwargs).to_json(validate=False).encode()
    return spec, hashlib.blake2b(spec, digest_size=8).hexdigest()


def draw(figure: str, *args, key: str, select: tuple = (), **kwargs):
    """Draw this module's figure (a function's name and its arguments), built once for the same arguments,
    with plotly.js in the page (PLOTLY_COMPONENT's plotly_chart.js): the app's light or dark theme;
    the modebar's zoom and download, PNG or SVG as download_choice set it. ``select``: the selection modes
    ("box", "lasso", "points") that rerun the page with the selection, returned as st.plotly_chart returns
    it ({"selection": {"points": ..., "point_indices": ..., "box": ..., "lasso": ...}}), of this figure only
    (a selection made on another figure under the same key is dropped); none: nothing is selectable, None
    returned."""
    spec, revision = _figure(figure, *args, **kwargs)
    chosen = FORMATS.get(st.session_state.get(FORMAT), "png")
    config = CONFIG | {
        "toImageButtonOptions": CONFIG["toImageButtonOptions"] | {"filename": key, "format": chosen},
        "modeBarButtonsToRemove": [
            *NO_BUTTONS,
            *(button for mode, button in SELECT_BUTTONS.items() if mode not in select),
        ],
    }
    head = {"revision": revision, "select": list(select), "config": config, "bundle": PLOTLY_BUNDLE}
    payload = json.dumps(head)[:-1].encode() + b', "figure": ' + spec + b"}"
    state = _plotly_component()(
        data=payload,
        key=key,
        width="stretch",
        height="content",
        **({"on_selection_change": _selected} if select else {}),
    )
    if not select:
        return None
    made = state.get("selection") if state is not None else None
    if not isinstance(made, dict) or made.get("revision") != revision:
        made = {"points": [], "point_indices": [], "box": [], "lasso": []}
    return {"selection": {k: v for k, v in made.items() if k != "revision"}}


def _selected() -> None:
    """A selection on a chart: the page reruns and reads it (draw's return)."""


@functools.cache
def _plotly_component():
    """The component that draws a figure in the page, registered once: its module is an asset of the installed
    component (pluie_plotly.MODULE, a path in its asset folder), which the browser loads from the server."""
    return st.components.v2.component(PLOTLY_COMPONENT, js=pluie_plotly.MODULE, isolate_styles=False)


def points_drawn(n_points: int, key: str) -> int:
    """How many of ``n_points`` pairs a scatter draws: every one up to POINTS_DRAWN; beyond, the person's
    choice ("Points drawn", from POINTS_CHOICES up to every pair or MAX_SCATTER_POINTS), POINTS_DRAWN at first."""
    if n_points <= POINTS_DRAWN:
        return n_points
    most = min(n_points, MAX_SCATTER_POINTS)
    options = sorted({n for n in POINTS_CHOICES if n < most} | {POINTS_DRAWN, most})
    if st.session_state.get(key, POINTS_DRAWN) not in options:  # chosen on a larger selection
        st.session_state[key] = most
    return st.select_slider(
        "Points drawn",
        options,
        key=key,
        format_func=lambda n: f"{n:,}",
        **({} if key in st.session_state else {"value": POINTS_DRAWN}),
        help=f"A seeded sample of the {n_points:,} pairs (the same pairs on every run), drawn with their hover and "
        "selection; the statistics use every pair. More points take the browser longer to draw, about a "
        f"second per 100,000 on a computer without a graphics card. At most {MAX_SCATTER_POINTS:,}.",
    )


def drawn_sample(points: pd.DataFrame, n: int) -> pd.DataFrame:
    """n of the points, a seeded sample (the same on every run), or all of them."""
    return points.sample(n, random_state=0) if len(points) > n else points


def download_choice() -> None:
    """The sidebar's "Figure downloads: PNG / SVG", which the modebar's camera of every figure follows."""
    if FORMAT_WIDGET not in st.session_state:
        st.session_state[FORMAT_WIDGET] = st.session_state.get(FORMAT, "PNG")
    st.radio(
        "Figure downloads",
        list(FORMATS),
        horizontal=True,
        key=FORMAT_WIDGET,
        on_change=lambda: st.session_state.update({FORMAT: st.session_state[FORMAT_WIDGET]}),
        help="What the camera above each figure downloads: PNG (twice the screen's size) or SVG (vector, for a paper).",
    )


def labels_text(labels: pd.DataFrame) -> pd.Series:
    """pair_id -> every label of the pair as a point's hover names it, "ann1: Same meaning · ann2: 3" (a
    level's name, else the imported value), annotators by name, the first HOVER_LABELS and how many more.
    labels: db.analysis.labels_long's rows (pair_id, annotator, level, value)."""
    from pluie_core.labels import LEVELS

    if labels.empty:
        return pd.Series(dtype=object)
    given = labels.sort_values(["pair_id", "annotator"], kind="stable")
    rank = given.groupby("pair_id").cumcount().to_numpy()
    given = given[rank < HOVER_LABELS]
    level = given["level"].to_numpy()
    names = np.asarray(LEVELS, dtype=object)[np.nan_to_num(level).astype(int)]
    named = pd.Series(np.where(np.isnan(level), None, names), index=given.index)
    own = named.isna()  # a value imported on its own scale
    named[own] = given.loc[own, "value"].map(lambda value: "—" if pd.isna(value) else f"{value:g}")
    parts, ids = (given["annotator"].astype(str) + ": " + named).to_numpy(), given["pair_id"].to_numpy()
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])  # sorted: each pair's labels in a run
    # joined run by run (a groupby's join took 1.3 s at 300,000 labels, this 0.1 s)
    text = pd.Series([" · ".join(parts[a:b]) for a, b in zip(starts, np.r_[starts[1:], len(ids)])], index=ids[starts])
    more = labels.groupby("pair_id").size().reindex(text.index) - HOVER_LABELS
    return text.where(more <= 0, text + " · and " + more.astype(str) + " more")


def selectable_class_histogram(
    points: pd.DataFrame, score: str, bins: int, title: str, marks: list, key: str, read
) -> None:
    """A score's histogram per class (points: pair_id, class and the score), binned here (the browser gets
    at most ``bins`` bars a class, not every score); a bar clicked or boxed lists its pairs under it."""
    edges = np.histogram_bin_edges(points[score], bins)
    bars = pd.concat(
        [
            pd.DataFrame(
                {"class": name, "start": edges[:-1], "end": edges[1:], "count": np.histogram(group[score], edges)[0]}
            )
            for name, group in points.groupby("class")
        ]
    )
    picked = draw("class_histogram", bars, CLASS_COLOURS, score, title, marks, key=key, select=("points", "box"))
    list_pairs(bin_pairs(points, score, selected_bins(picked), edges[-1]), read, key)


# --------------------------------------------------------------------------- what a selection names


def selected_pair_ids(event) -> list[int]:
    """The pair ids of the points a selection event (draw's return) holds, in order, once
    each: the first value of each point's customdata (the pair scatters put pair_id there)."""
    found = []
    for point in ((event or {}).get("selection") or {}).get("points") or []:
        data = point.get("customdata")
        if data:
            try:
                found.append(int(data[0]))
            except (TypeError, ValueError):
                continue
    return list(dict.fromkeys(found))


def selected_bins(event) -> list[tuple]:
    """(class, start, end) of the histogram bars a selection event holds (class_histogram's customdata)."""
    found = []
    for point in ((event or {}).get("selection") or {}).get("points") or []:
        data = point.get("customdata")
        if data and len(data) >= 3:
            found.append((str(data[0]), float(data[1]), float(data[2])))
    return list(dict.fromkeys(found))


def bin_pairs(points: pd.DataFrame, score: str, bins: list[tuple], last_edge: float) -> list[int]:
    """The pair ids behind selected histogram bars (class, start, end), as np.histogram counted them:
    start ≤ score < end, the last bin closed at last_edge. points: pair_id, class and the score."""
    chosen = pd.Series(False, index=points.index)
    for name, start, end in bins:
        upper = points[score] <= end if np.isclose(end, last_edge) else points[score] < end
        chosen |= (points["class"] == name) & (points[score] >= start) & upper
    return points.loc[chosen, "pair_id"].astype(int).tolist()


def list_pairs(pair_ids: list[int], read, key: str) -> None:
    """The selected pairs under a chart, the first LISTED of them: each pair's id and dataset, its
    sentences with the words that differ marked (as Review shows a pair), every label and every score,
    and a button that opens it in Review. read(ids) -> db.analysis.pairs_detail's dict (one read)."""
    if not pair_ids:
        st.caption("Select points (box or lasso) or bars in the chart to list their pairs here.")
        return
    shown = pair_ids[:LISTED]
    st.markdown(
        f"**{len(pair_ids):,} pair{'s' if len(pair_ids) != 1 else ''} selected**"
        + (f" · the first {LISTED} listed" if len(pair_ids) > LISTED else "")
    )
    found = read(tuple(shown))
    labels, scores = found["labels"].groupby("pair_id"), found["scores"].groupby("pair_id")
    for pair_id, pair in found["pairs"].iterrows():
        source, hypothesis = diff_html(pair["source"], pair["hypothesis"])
        with st.container(border=False, key=f"{key}-pair-{pair_id}"):
            st.html(
                f"<div style='{BOX}' data-testid='selected-pair'><div style='{CAPTION}'>Pair {int(pair_id)} · "
                f"{html.escape(str(pair['dataset']))} · source</div><div>{source}</div>"
                f"<div style='{CAPTION};margin-top:10px'>Hypothesis</div><div>{hypothesis}</div></div>"
            )
            given = labels.get_group(pair_id) if pair_id in labels.groups else found["labels"].iloc[:0]
            named = [f"{user_text(r.annotator)}: {r.level_name or f'{r.value:g}'}" for r in given.itertuples()]
            gold = pair["gold_label"]
            run_scores = scores.get_group(pair_id) if pair_id in scores.groups else found["scores"].iloc[:0]
            st.caption(
                f"Pair {int(pair_id)} · gold label {'—' if pd.isna(gold) else f'{gold:g}'} · labels: "
                + (" · ".join(named) or "none")
                + " · scores: "
                + (" · ".join(f"{user_text(r.run)} {r.value:.4g}" for r in run_scores.itertuples()) or "none")
            )
            if st.button("Open in Review", key=f"{key}-review-{pair_id}", icon=":material/gavel:"):
                st.session_state[OPEN_IN_REVIEW] = int(pair_id)
                st.switch_page("pages/review.py")
