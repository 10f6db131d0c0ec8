"""Views that stay readable, where only a browser shows them (issue 56, item 10): why-this-score's tints tell
red from blue in light mode (and keep the text readable in both themes); Live campaign's table of annotators
fits a 1,400 px window, and its tiles show their values whole at 800 px (issue 35, item 8)."""

from __future__ import annotations

import pytest

from db import annotators, serving
from db import campaigns as camp
from db import quality as qual
from pluie_core.explain import Explanation, TokenContribution, explanation_html
from pluie_core.quality import LIVE_COLUMN_GROUPS, live_columns
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.browser import ARTIFACTS, wait_for_app
from tests.test_browser_annotation import store  # noqa: F401 (store: the 30 MRPC pairs)
from ui.forms.explain_view import BOX

pytestmark = pytest.mark.browser


def lab(rgb) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an sRGB colour."""

    def linear(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in rgb)
    x, y, z = (
        (0.4124 * r + 0.3576 * g + 0.1805 * b) / 0.95047,
        0.2126 * r + 0.7152 * g + 0.0722 * b,
        (0.0193 * r + 0.1192 * g + 0.9505 * b) / 1.08883,
    )
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def delta_e(p, q) -> float:
    return sum((a - b) ** 2 for a, b in zip(lab(p), lab(q))) ** 0.5


def contrast(p, q) -> float:
    def luminance(rgb):
        r, g, b = ((c / 255) / 12.92 if c / 255 <= 0.04045 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb)
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    high, low = sorted((luminance(p), luminance(q)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def over(colour: list[float], ground: list[float]) -> tuple[float, ...]:
    """A translucent rgba colour as seen over an opaque one."""
    alpha = colour[3] if len(colour) > 3 else 1.0
    return tuple(alpha * c + (1 - alpha) * g for c, g in zip(colour[:3], ground[:3]))


def explanation() -> Explanation:
    """Four words: the weakest and the strongest push each way (0.02 and 1.0 of the largest)."""
    words = [("faint", 0.02), ("strong", 1.0), ("weak", -0.02), ("against", -1.0)]
    tokens, start = [], 0
    for word, push in words:
        tokens.append(TokenContribution(word, start, start + len(word), True, push))
        start += len(word) + 1
    sentence = " ".join(word for word, _ in words)
    return Explanation(sentence, sentence, 0.5, tuple(tokens), tuple(tokens))


COLOURS = """() => {
  const rgba = s => s.match(/[\\d.]+/g).map(Number);
  const box = document.querySelector('#box');
  const spans = [...box.querySelectorAll('span.pluie-why')];
  return {box: rgba(getComputedStyle(box).backgroundColor), text: rgba(getComputedStyle(box).color),
          spans: spans.map(s => [s.textContent, rgba(getComputedStyle(s).backgroundColor)])};
}"""


@pytest.mark.parametrize("scheme, text", [("light", "#31333f"), ("dark", "#fafafa")])  # Streamlit's text colours
def test_why_this_score_tints_tell_red_from_blue_and_keep_the_text_readable(browser, scheme, text):
    source, _ = explanation_html(explanation())
    page = browser.new_context(color_scheme=scheme).new_page()
    page.set_content(
        f'<html style="color-scheme:light dark"><body style="color:{text}">'
        f'<div id="box" style="{BOX}">{source}</div></body></html>'
    )
    seen = page.evaluate(COLOURS)
    ground, ink = seen["box"], seen["text"]
    shades = {word: over(colour, ground) for word, colour in seen["spans"]}
    assert (ground[0] > 200) == (scheme == "light"), ground  # the theme's own box
    # the faintest tints: red and blue told apart at a glance, and each told from the box (CIE76 ΔE; ~10 before)
    assert delta_e(shades["faint"], shades["weak"]) >= 25, (scheme, shades)
    assert min(delta_e(shades["faint"], ground), delta_e(shades["weak"], ground)) >= 20, (scheme, shades)
    # the strongest still read: the text at WCAG's 4.5:1 over them (2.5:1 on light mode's red before)
    for word in ("strong", "against"):
        assert contrast(shades[word], ink) >= 4.5, (scheme, word, shades[word])
    page.close()


def test_every_column_of_the_live_table_is_in_one_group(store):  # noqa: F811
    cid = camp.create_campaign(store, "Pilot", [camp.dataset_choices(store)[0][0]], quota=3, n_training=0)
    annotators.create_annotator(store, cid, "alice")
    columns = list(qual.campaign_live(store, cid).annotators.drop(columns=["labelled"]).columns)
    shown = [live_columns(columns, group) for group in LIVE_COLUMN_GROUPS]
    assert all(view[:2] == ["annotator", "progress"] for view in shown)
    assert sorted({c for view in shown for c in view}) == sorted(columns)  # none lost
    assert live_columns(columns, None) == shown[0] and shown[0][2:4] == ["flags", "not judged yet"]
    assert live_columns([*columns, "new measure"], "Pace")[-1] == "new measure"


WIDTHS = """() => [...document.querySelectorAll("[data-testid='stDataFrame']")].map(grid => {
  const scroller = grid.querySelector('.dvn-scroller'), box = grid.getBoundingClientRect();
  return [scroller.scrollWidth, scroller.clientWidth, box.right]; })"""


def test_the_live_campaign_table_fits_a_1400_px_window_and_its_flags_are_whole(store, app_server, browser):  # noqa: F811
    """All 26 columns at once were 2,911 px wide in the page's 938 px: the flags table scrolled sideways, its
    measures off-screen. Each group of columns now fits, and the flags wrap in their cells instead of being cut."""
    cid = camp.create_campaign(store, "Pilot", [camp.dataset_choices(store)[0][0]], quota=6, n_training=0)
    qual.set_quality_settings(store, cid, gold_rate=0.0, gold_min_accuracy=0.7, fast_fraction=0.3, streak_length=2)
    for name in ("alice", "bob"):
        aid, _ = annotators.create_annotator(store, cid, name)
        annotators.set_annotator_profile(store, aid, f"{name.title()} A.", "native")
        for _ in range(4):
            item = serving.serve_next(store, aid)
            serving.record_label(store, aid, item.position, 2, 1.0)
    page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    page.goto(f"{app_server.url}/live_campaign")
    wait_for_app(page)
    page.locator("[data-testid='stDataFrame'] .dvn-scroller").first.wait_for(timeout=20_000)
    for group in LIVE_COLUMN_GROUPS:
        if group != "Flags":
            page.locator("[data-testid='stButtonGroup'] button", has_text=group).click()
            wait_for_app(page)
        page.wait_for_timeout(300)  # the grid lays its columns out after the run
        ((scroll, visible, right),) = page.evaluate(WIDTHS)
        page.screenshot(path=str(ARTIFACTS / f"live-campaign-{group.lower().replace(' ', '-')}.png"), full_page=True)
        assert scroll <= visible + 1 and right <= 1400, (group, scroll, visible, right)
        if group == "Flags":  # rows tall enough for Streamlit to wrap the flags' text in their cells
            height = page.evaluate(
                "() => document.querySelector(\"[data-testid='stDataFrame']\").getBoundingClientRect().height"
            )
            assert height >= 30 + 2 * 66, height  # the header and two rows of two lines or more


def test_live_campaign_tiles_show_their_values_whole_at_800_px(engine, app_server, browser):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(40))
    cid = camp.create_campaign(engine, "Tiles", [ds], quota=6, overlap=2, n_training=0)
    for name in ("ann", "bob"):
        aid, _ = annotators.create_annotator(engine, cid, name)
        for level in (0, 3, 1):
            item = serving.serve_next(engine, aid)
            serving.record_label(engine, aid, item.position, level, 2.0)
    page = browser.new_page(viewport={"width": 800, "height": 1000})
    page.goto(f"{app_server.url}/live_campaign")
    wait_for_app(page)
    page.locator("[data-testid='stMetric']").nth(5).wait_for(timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "live-campaign-800.png"), full_page=True)
    tiles = page.evaluate("""() => [...document.querySelectorAll('[data-testid=stMetric]')].map(m => {
        const value = m.querySelector('[data-testid=stMetricValue] > div')
            || m.querySelector('[data-testid=stMetricValue]');
        const label = m.querySelector('[data-testid=stMetricLabel] p') || m.querySelector('[data-testid=stMetricLabel]');
        return {label: label.innerText, value: value.innerText,
                cut: value.scrollWidth > value.clientWidth || label.scrollWidth > label.clientWidth}; })""")
    assert len(tiles) == 6 and tiles[3]["value"].endswith(" / 40"), tiles
    assert not [t for t in tiles if t["cut"]], tiles
