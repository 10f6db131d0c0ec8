"""The light and dark themes (issue 40, item 5): the app follows the system's theme, and the colours the app
draws itself (word-diff marks, answer buttons, hidden-character marks, the pair's boxes, the guidelines
popover's marks, the Thresholds figure's recall line, the empty cells of the κ heatmap) stay readable in both;
the light look is the paper's, as before."""

from __future__ import annotations

import pytest

from db import annotators
from db import campaigns as camp
from tests.annotation_fixtures import make_dataset
from tests.browser import ARTIFACTS, open_popover, wait_for_app

pytestmark = pytest.mark.browser
GREY, LIGHT_BLUE, YELLOW, WHITE = "rgb(230, 230, 230)", "rgb(173, 216, 230)", "rgb(255, 241, 118)", "rgb(255, 255, 255)"

# colours as the browser computed them: [text, background] of each thing the app colours itself, and the
# app's background; a transparent background is the nearest painted one behind it
COLOURS = """() => {
  const paint = (el) => { for (; el; el = el.parentElement) { const b = getComputedStyle(el).backgroundColor;
      if (b !== 'rgba(0, 0, 0, 0)' && b !== 'transparent') return b; } return 'rgb(255, 255, 255)'; };
  const pair = (el) => [getComputedStyle(el.querySelector('p') || el).color, paint(el)];
  const one = (css) => document.querySelector(css);
  return {
    app: paint(one('[data-testid="stApp"]')),
    answers: [0, 1, 2, 3, 4].map(i => pair(one(`[class*="st-key-answer-${i}-"] button`))),
    mark: pair(one('mark.pluie-diff')),
    hidden: pair(one('.pluie-hidden-char')),
    sentence: pair(one('.pluie-sentence')),
  };
}"""


def luminance(css: str) -> float:
    """WCAG relative luminance of an rgb()/rgba() colour (alpha ignored: every colour here is opaque)."""
    channels = [float(v) / 255 for v in css[css.index("(") + 1 : -1].split(",")[:3]]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: str, other: str) -> float:
    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


# [text, background layers from the element down to the first opaque one] of the guidelines popover's mark
POPOVER_MARK = """() => { const m = document.querySelector("[data-testid='stPopoverBody'] mark.pluie-diff");
  const layers = []; for (let el = m; el; el = el.parentElement) { const b = getComputedStyle(el).backgroundColor;
    if (b === 'rgba(0, 0, 0, 0)' || b === 'transparent') continue; layers.push(b); if (!b.startsWith('rgba')) break; }
  return [getComputedStyle(m).color, layers]; }"""


def rgb(css: str) -> tuple[list[float], float]:
    values = [float(v) for v in css[css.index("(") + 1 : -1].split(",")]
    return values[:3], values[3] if len(values) > 3 else 1.0


def composed(layers: list[str]) -> str:
    """The colour seen through see-through backgrounds (the first layer on top) down to an opaque one."""
    seen, _ = rgb(layers[-1]) if layers else ([255.0] * 3, 1.0)
    for layer in reversed(layers[:-1]):
        colour, alpha = rgb(layer)
        seen = [alpha * c + (1 - alpha) * s for c, s in zip(colour, seen)]
    return f"rgb({', '.join(f'{v:.0f}' for v in seen)})"


def colours_in(browser, url: str, scheme: str) -> dict:
    page = browser.new_context(color_scheme=scheme, viewport={"width": 1200, "height": 800}).new_page()
    page.goto(url)
    wait_for_app(page)
    page.wait_for_selector("[class*='st-key-answer-4-'] button")
    page.wait_for_selector("mark.pluie-diff")
    page.screenshot(path=str(ARTIFACTS / f"annotation-{scheme}.png"), full_page=True)
    found = page.evaluate(COLOURS)
    open_popover(page, "Guidelines")  # drawn outside the app's element
    page.wait_for_selector("[data-testid='stPopoverBody'] mark.pluie-diff")
    text, layers = page.evaluate(POPOVER_MARK)
    return found | {"guidelines": [text, composed(layers)]}


def test_the_annotation_page_follows_a_dark_system_theme_and_stays_readable(engine, app_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    ds, _ = make_dataset(engine, "dark", [("The cat\u200b drinks water.", "The cat drinks milk.")])
    cid = camp.create_campaign(engine, "Dark", [ds], n_training=0, quota=1)
    aid, token = annotators.create_annotator(engine, cid, "Nox")
    annotators.set_annotator_profile(engine, aid, "Nox", "good")
    url = f"{app_server.url}/?token={token}"

    dark = colours_in(browser, url, "dark")
    assert luminance(dark["app"]) < 0.05, f"the app stays light in a dark system theme: {dark['app']}"
    for name, (text, background) in [
        *(("answer", c) for c in dark["answers"]),
        *((k, dark[k]) for k in ("mark", "hidden", "sentence", "guidelines")),
    ]:
        assert contrast(text, background) >= 4.5, f"{name}: {text} on {background}"
    assert dark["answers"][0][1] != dark["answers"][4][1]  # "Don't know" still stands apart
    # and no light patches on the dark page: the answers and marks take dark colours
    assert all(luminance(background) < 0.1 for _, background in dark["answers"])
    assert luminance(dark["mark"][1]) < 0.15 and luminance(dark["hidden"][1]) < 0.15
    assert luminance(dark["guidelines"][1]) < 0.15, dark["guidelines"]  # the popover's marks too

    light = colours_in(browser, url, "light")  # as before: the paper's colours on white
    assert light["app"] == WHITE
    assert [background for _, background in light["answers"]] == [GREY] * 4 + [LIGHT_BLUE]
    assert light["mark"][1] == YELLOW and light["hidden"][1] == "rgb(255, 243, 214)"
    assert light["sentence"][1] == WHITE
    for text, background in [*light["answers"], light["mark"], light["hidden"], light["sentence"], light["guidelines"]]:
        assert contrast(text, background) >= 4.5, f"{text} on {background}"


# the colours plotly drew, as the browser computed them: each line's stroke of the figure titled `title`,
# and the texts written over its cells (fill, text); an empty cell is unpainted: the plot's background
# shows, the app's in Streamlit's theme
FIGURE = """(title) => {
  const chart = [...document.querySelectorAll('.pluie-chart')]
      .find(c => (c.querySelector('.gtitle') || {}).textContent === title);
  if (!chart) return null;
  return {lines: [...chart.querySelectorAll('.scatterlayer path.js-line')].map(p => getComputedStyle(p).stroke),
          texts: [...chart.querySelectorAll('.heatmaplayer text')].map(t => [getComputedStyle(t).fill, t.textContent])};
}"""


def figure_in(page, url: str, title: str) -> dict:
    page.goto(url)
    wait_for_app(page)
    page.wait_for_function(f"({FIGURE})({title!r}) !== null", timeout=30_000)
    page.locator(".pluie-chart").filter(has_text=title).locator(".main-svg").first.wait_for()
    return page.evaluate(FIGURE, title)


def test_the_figures_lines_and_empty_kappa_cells_stay_readable_in_both_themes(engine, app_server, browser):
    import pandas as pd

    from db.analysis import add_score_run, pairs_frame
    from db.datasets import import_pairs
    from tests.store_fixtures import sentence_pairs

    ARTIFACTS.mkdir(exist_ok=True)
    frame = pd.DataFrame(sentence_pairs(8), columns=["source", "hypothesis"])
    frame["label"] = [1, 0, 1, 0, 1, 0, 1, 0]
    frame["annotator:A"] = [3, 0, 2, 1, 3, 0, None, None]
    frame["annotator:B"] = [3, 1, 2, 0, 2, 0, None, None]
    frame["annotator:C"] = [None] * 6 + [3, 0]  # no pair in common with A or B: no κ
    import_pairs(engine, "d", frame, annotator_scale="levels")
    add_score_run(engine, "lev", {pid: 0.1 * i for i, pid in enumerate(pairs_frame(engine).index)})
    for scheme in ("dark", "light"):
        page = browser.new_context(color_scheme=scheme, viewport={"width": 1400, "height": 1000}).new_page()
        page.goto(app_server.url)
        wait_for_app(page)
        app = page.evaluate(COLOURS.split("return {")[0] + "return paint(one('[data-testid=\"stApp\"]')); }")
        curve = figure_in(page, f"{app_server.url}/thresholds", "lev: classification quality by threshold")
        assert len(curve["lines"]) == 4  # accuracy, f1, precision, recall
        recall = curve["lines"][3]  # seen on the page (graphics: 3:1); the paper's near-black was not, on dark
        assert contrast(recall, app) >= 3, f"{scheme}: the recall line {recall} on {app}"
        assert all(contrast(stroke, app) >= 2 for stroke in curve["lines"]), curve["lines"]
        kappa = figure_in(
            page,
            f"{app_server.url}/agreement",
            "Cohen's κ per pair of annotators (five-level); n = items both labelled",
        )
        empty = [(fill, text) for fill, text in kappa["texts"] if "n=" in text and "." not in text]
        assert len(empty) >= 3 + 4, kappa["texts"]  # the diagonal and A/C, B/C both ways
        for fill, text in empty:  # plotly writes them in the colour that stands out of the theme's background
            assert contrast(fill, app) >= 4.5, f"{scheme}: the empty κ cell {text!r} in {fill} on {app}"
        page.screenshot(path=str(ARTIFACTS / f"agreement-{scheme}.png"), full_page=True)
