"""The campaign as the scope of every page, in a real browser (issue 35, items 1 and 2), moving through the
app's menu as a person does: the pages open on the campaign with the latest label; a campaign chosen on one
page is the scope of the next ones (Thresholds, Distributions, Disagreements, Correlation, Review, Live
campaign, Export); whole datasets chosen with a binary (PAWS-X de) and a 0–5 (STS-B) dataset, Correlation and
Thresholds say why they show one scale at a time, and Thresholds' ROC AUC is one dataset's, never the pooled
one. The store of tests/test_campaign_scope.py (real data, labels given through the serving path)."""

from __future__ import annotations

import re

import pytest

from pluie_core.stats import roc_auc
from tests.browser import ARTIFACTS, choose_option, wait_for_app
from tests.test_campaign_scope import N_PAIRS, build_store, frame_of

pytestmark = pytest.mark.browser
SENTENCE = "These datasets' references are on different scales"


def go(page, title: str) -> None:
    """Through the app's menu, as a person moves on."""
    page.get_by_role("link", name=title, exact=True).click()
    wait_for_app(page)
    heading = {"Correlation": "Correlation with graded judgments"}.get(title, title)
    page.get_by_role("heading", name=heading, exact=True).wait_for(timeout=30_000)
    wait_for_app(page)


def campaign_shown(page) -> str:
    """The option the Campaign box shows (the value of its combobox)."""
    box = page.get_by_role("combobox", name="Campaign", exact=True)
    box.first.wait_for(timeout=30_000)
    return box.first.input_value()


def metric(page, label: str) -> str:
    box = page.locator("[data-testid='stMetric']").filter(
        has=page.locator("[data-testid='stMetricLabel']", has_text=re.compile(rf"^{label}$"))
    )
    box.first.wait_for(timeout=30_000)
    return box.first.locator("[data-testid='stMetricValue']").inner_text()


def test_the_scope_follows_the_person_and_no_figure_pools_two_scales(engine, app_server, browser):
    built = build_store(engine)
    n_pilot = built["labels"]["Pilot"]
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{app_server.url}/agreement")
    wait_for_app(page)
    page.get_by_role("heading", name="Agreement", exact=True).wait_for(timeout=30_000)
    assert campaign_shown(page) == "Main round"  # the latest label, not the newest campaign ("Next round")
    page.get_by_text(f"· {built['labels']['Main round']:,} labels ·").first.wait_for(timeout=30_000)

    choose_option(page, page.get_by_role("combobox", name="Campaign"), "Pilot")
    page.get_by_text(f"· {n_pilot:,} labels ·").first.wait_for(timeout=30_000)
    for title in ("Thresholds", "Distributions", "Disagreements", "Correlation", "Review", "Live campaign", "Export"):
        go(page, title)
        shown = campaign_shown(page)
        assert shown == "Pilot", (title, shown)
        if title == "Live campaign":
            assert metric(page, "Labels") == f"{n_pilot:,}"
    page.screenshot(path=str(ARTIFACTS / "scope-export.png"), full_page=True)
    # a reload is a new session of the same browser: the scope is still the one chosen
    page.reload()
    wait_for_app(page)
    page.get_by_role("heading", name="Export").wait_for(timeout=30_000)
    assert campaign_shown(page) == "Pilot"

    # whole datasets, asked for on Export: both datasets, a binary and a 0–5 reference
    choose_option(page, page.get_by_role("combobox", name="Campaign"), "Whole datasets (every label)")
    go(page, "Correlation")
    page.get_by_text(SENTENCE).first.wait_for(timeout=30_000)
    assert "binary 0/1: PAWS-X de; scores 0–5: STS-B" in page.get_by_text(SENTENCE).first.inner_text()
    go(page, "Thresholds")
    page.get_by_text(SENTENCE).first.wait_for(timeout=30_000)
    paws, stsb = frame_of(engine, "PAWS-X de"), frame_of(engine, "STS-B")
    page.get_by_text(f"{N_PAIRS:,} pairs with both a score and a reference").first.wait_for(timeout=30_000)
    assert metric(page, "ROC AUC") == f"{roc_auc(paws['chrF'], paws['gold_label']):.3f}"
    page.locator("[data-testid='stRadio']").get_by_text("scores 0–5", exact=True).click()
    wait_for_app(page)
    expected = f"{roc_auc(stsb['chrF'], stsb['gold_label'] >= 2.5):.3f}"
    page.wait_for_function(
        "v => [...document.querySelectorAll('[data-testid=stMetric]')].some(m => m.innerText.includes('ROC AUC')"
        " && m.innerText.includes(v))",
        arg=expected,
        timeout=30_000,
    )
    page.get_by_text(f"{N_PAIRS:,} pairs with both a score and a reference").first.wait_for(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "scope-thresholds-one-scale.png"), full_page=True)
