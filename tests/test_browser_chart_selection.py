"""Selecting pairs on a chart, in a real browser (issue 40): on the Distributions page a box drawn on the
WebGL scatter (its dragmode is "select") lists exactly the pairs inside it under the chart, each with its id
and the differing words marked; clicking a bar of the class histogram lists the pairs that bar counts."""

from __future__ import annotations

import pandas as pd
import pytest

from db.analysis import add_score_run, pairs_frame
from db.datasets import import_pairs
from tests.browser import ARTIFACTS, wait_for_app, wait_for_settled_app
from tests.store_fixtures import sentence_pairs

pytestmark = pytest.mark.browser

N = 12
HIGH, LOW = 0.9, 0.1  # the score of the even pairs and of the odd ones


def chart(page, title: str):
    return page.locator(".pluie-chart").filter(has_text=title)


def drag(page, box, start: tuple, end: tuple, steps: int = 12) -> None:
    """A mouse drag inside ``box`` (a bounding box) between two fractions of it, in several moves:
    plotly starts a selection only after the pointer has moved a few pixels with the button down."""
    x0, y0 = box["x"] + start[0] * box["width"], box["y"] + start[1] * box["height"]
    x1, y1 = box["x"] + end[0] * box["width"], box["y"] + end[1] * box["height"]
    page.mouse.move(x0, y0)
    page.mouse.down()
    for i in range(1, steps + 1):
        page.mouse.move(x0 + (x1 - x0) * i / steps, y0 + (y1 - y0) * i / steps)
    page.mouse.up()


def listed(page, key: str) -> list[str]:
    """The captions of the pair boxes listed under the chart ``key`` ("Pair 3 · d · source")."""
    boxes = page.locator(f"[class*='st-key-{key}-pair-'] [data-testid='selected-pair']")
    return [b.inner_text().split("\n")[0] for b in boxes.all()]


def test_a_box_on_the_scatter_and_a_click_on_a_bar_list_their_pairs(engine, app_server, browser):
    frame = pd.DataFrame(sentence_pairs(N), columns=["source", "hypothesis"])
    frame["label"] = [i % 2 for i in range(N)]
    import_pairs(engine, "d", frame)
    ids = list(pairs_frame(engine).index)
    add_score_run(engine, "lev", {pid: HIGH if i % 2 == 0 else LOW for i, pid in enumerate(ids)})
    high = sorted(pid for i, pid in enumerate(ids) if i % 2 == 0)

    page = browser.new_page(viewport={"width": 1400, "height": 1100})
    page.goto(f"{app_server.url}/distributions")
    wait_for_settled_app(page)  # a fresh server's first page runs twice
    scatter = chart(page, "against the normalised Levenshtein distance")
    scatter.locator(".nsewdrag").first.wait_for(timeout=30_000)
    scatter.scroll_into_view_if_needed()
    assert page.get_by_text("Select points (box or lasso) or bars in the chart").count() == 2  # nothing listed yet
    buttons = scatter.locator(".modebar-btn")
    titles = [buttons.nth(i).get_attribute("data-title") for i in range(buttons.count())]
    assert "Box Select" in titles and "Share chart..." not in titles, titles  # no button that does nothing

    # the upper third of the plot, its whole width: the pairs scored HIGH (the y axis runs LOW..HIGH)
    drag(page, scatter.locator(".nsewdrag").first.bounding_box(), (0.01, 0.01), (0.99, 0.3))
    page.get_by_text(f"{len(high)} pairs selected").wait_for(timeout=15_000)
    wait_for_app(page)
    page.locator("[class*='st-key-scatter-pair-']").nth(len(high) - 1).wait_for(timeout=15_000)
    shown = listed(page, "scatter")
    assert sorted(int(c.split()[1]) for c in shown) == high, shown
    assert all(c.startswith("Pair ") and " · d · source" in c for c in shown)
    first = page.locator("[class*='st-key-scatter-pair-'] [data-testid='selected-pair']").first
    assert first.locator("[class*='pluie-diff']").count() > 0  # the differing words marked
    assert page.locator("[class*='st-key-scatter-pair-']").get_by_role("button", name="Open in Review").count() == len(
        high
    )

    # one bar of the histogram: a click selects it (clickmode event+select) and lists the pairs it counts
    histogram = chart(page, "lev per class")
    histogram.scroll_into_view_if_needed()
    bar = histogram.locator(".trace.bars .point path").first  # the paraphrase pairs' one bar, at LOW
    bar.wait_for(timeout=15_000)
    where = bar.bounding_box()  # plotly's drag layer lies over the bars: a click where the bar is
    page.mouse.click(where["x"] + where["width"] / 2, where["y"] + where["height"] / 2)
    page.locator("[class*='st-key-histogram-pair-']").first.wait_for(timeout=15_000)
    wait_for_app(page)
    page.get_by_text(f"{N - len(high)} pairs selected").first.wait_for(timeout=15_000)
    page.locator("[class*='st-key-histogram-pair-']").nth(N - len(high) - 1).wait_for(timeout=15_000)
    bars = listed(page, "histogram")
    assert sorted(int(c.split()[1]) for c in bars) == sorted(set(ids) - set(high)), bars
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "distributions-selection.png"), full_page=True)
