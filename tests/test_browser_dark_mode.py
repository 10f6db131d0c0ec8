"""Issue 40.5: the app follows the system's light or dark theme, and the colours the app draws itself
(word-diff marks, answer buttons, hidden-character marks, the pair's boxes) stay readable in both;
the light look is the paper's, as before."""
from __future__ import annotations

import pytest

from db import annotation as ann
from tests.annotation_fixtures import make_dataset
from tests.browser import ARTIFACTS, wait_for_app

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
    channels = [float(v) / 255 for v in css[css.index("(") + 1:-1].split(",")[:3]]
    r, g, b = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(one: str, other: str) -> float:
    high, low = sorted((luminance(one), luminance(other)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def colours_in(browser, url: str, scheme: str) -> dict:
    page = browser.new_context(color_scheme=scheme, viewport={"width": 1200, "height": 800}).new_page()
    page.goto(url)
    wait_for_app(page)
    page.wait_for_selector("[class*='st-key-answer-4-'] button")
    page.wait_for_selector("mark.pluie-diff")
    page.screenshot(path=str(ARTIFACTS / f"annotation-{scheme}.png"), full_page=True)
    return page.evaluate(COLOURS)


def test_the_annotation_page_follows_a_dark_system_theme_and_stays_readable(engine, app_server, browser):
    ARTIFACTS.mkdir(exist_ok=True)
    ds, _ = make_dataset(engine, "dark", [("The cat\u200b drinks water.", "The cat drinks milk.")])
    cid = ann.create_campaign(engine, "Dark", [ds], n_training=0, quota=1)
    aid, token = ann.create_annotator(engine, cid, "Nox")
    ann.set_annotator_profile(engine, aid, "Nox", "good")
    url = f"{app_server.url}/?token={token}"

    dark = colours_in(browser, url, "dark")
    assert luminance(dark["app"]) < 0.05, f"the app stays light in a dark system theme: {dark['app']}"
    for name, (text, background) in [*(("answer", c) for c in dark["answers"]),
                                     *((k, dark[k]) for k in ("mark", "hidden", "sentence"))]:
        assert contrast(text, background) >= 4.5, f"{name}: {text} on {background}"
    assert dark["answers"][0][1] != dark["answers"][4][1]  # "Don't know" still stands apart
    # and no light patches on the dark page: the answers and marks take dark colours
    assert all(luminance(background) < 0.1 for _, background in dark["answers"])
    assert luminance(dark["mark"][1]) < 0.15 and luminance(dark["hidden"][1]) < 0.15

    light = colours_in(browser, url, "light")  # as before: the paper's colours on white
    assert light["app"] == WHITE
    assert [background for _, background in light["answers"]] == [GREY] * 4 + [LIGHT_BLUE]
    assert light["mark"][1] == YELLOW and light["hidden"][1] == "rgb(255, 243, 214)"
    assert light["sentence"][1] == WHITE
    for text, background in [*light["answers"], light["mark"], light["hidden"], light["sentence"]]:
        assert contrast(text, background) >= 4.5, f"{text} on {background}"
