"""One count of a campaign's labels on every page, in a real browser (issue 19, item 5): the campaign of
tests/test_campaign_counts.py (gold checks answered, a training trial, one pair served but not answered) read
on Datasets, Campaigns, Live campaign and Agreement: every page shows the same number of labels, the store's
count of labels outside the training trial, and "in the last hour" never exceeds it."""

from __future__ import annotations

import re

import pytest
from sqlalchemy import func, select

from db.engine import read_session
from db.models import Label
from tests.browser import ARTIFACTS, wait_for_app
from tests.test_campaign_counts import labelled_campaign

pytestmark = pytest.mark.browser


def metric(page, label: str) -> int:
    box = page.locator("[data-testid='stMetric']").filter(
        has=page.locator("[data-testid='stMetricLabel']", has_text=re.compile(rf"^{label}$"))
    )
    box.first.wait_for(timeout=30_000)
    return int(box.first.locator("[data-testid='stMetricValue']").inner_text().replace(",", ""))


def test_every_page_shows_the_same_labels_count(engine, app_server, browser):
    labelled_campaign(engine)
    with read_session(engine) as session:
        counted = session.scalar(select(func.count(Label.id)).where(Label.is_training.is_(False)))
        training = session.scalar(select(func.count(Label.id)).where(Label.is_training.is_(True)))
    assert counted > 0 and training > 0  # the count must leave something out to mean anything

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    seen = {}
    for path, title in (("", "Datasets"), ("campaigns", "Campaigns"), ("live_campaign", "Live campaign")):
        page.goto(f"{app_server.url}/{path}")
        wait_for_app(page)
        seen[title] = metric(page, "Labels")
        if title == "Live campaign":
            assert metric(page, "In the last hour") <= seen[title]
    page.goto(f"{app_server.url}/agreement")
    wait_for_app(page)
    caption = page.get_by_text(re.compile(r"· [\d,]+ labels ·")).first
    caption.wait_for(timeout=30_000)
    seen["Agreement"] = int(re.search(r"· ([\d,]+) labels ·", caption.inner_text()).group(1).replace(",", ""))
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "one-count-agreement.png"), full_page=True)
    assert seen == {title: counted for title in seen}, seen
