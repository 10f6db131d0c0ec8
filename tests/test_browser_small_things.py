"""Issue 35, items 7 and 8, where only a browser shows them: the published dataset downloaded as a
.zip from the Export page and read back; no grey frame around the whole labelling page after a click
on its background and a key; Live campaign's tiles show their values whole at 800 px."""
from __future__ import annotations

import re
import zipfile

import pytest

from db import annotators, campaigns as camp, serving
from db.publish import DATA_FILE
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.browser import ARTIFACTS, start_app, stop_app, wait_for_app, wait_for_shown_text
from tests.test_browser_annotation import wait_progress
from tests.test_publish import build

pytestmark = pytest.mark.browser


def test_the_published_dataset_downloads_as_a_zip_that_reads_back(engine, db_url, tmp_path, browser):
    import datasets
    import pandas as pd

    build(engine)  # 36 pairs in three datasets
    server = start_app(db_url, tmp_path / "streamlit.log", extra_env={"PLUIE_DATA_DIR": str(tmp_path / "data")})
    try:
        page = browser.new_page(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
        page.goto(f"{server.url}/export")
        wait_for_app(page)
        licence = page.get_by_role("textbox", name=re.compile(r"^Licence"))
        assert licence.input_value() == ""
        licence.fill("cc-by-4.0")
        page.get_by_role("button", name="Write the dataset folder").click()
        wait_for_shown_text(page, "36 pairs written to", timeout=60_000)
        with page.expect_download(timeout=60_000) as info:
            page.get_by_role("button", name="Download the dataset (.zip)").click()
        download = info.value
        saved = tmp_path / download.suggested_filename
        download.save_as(saved)
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "publish-zip.png"), full_page=True)
    finally:
        stop_app(server)
    published = next((tmp_path / "data" / "published").iterdir())
    assert saved.name == f"{published.name}.zip"
    zipfile.ZipFile(saved).extractall(tmp_path / "unzipped")
    back = tmp_path / "unzipped" / published.name
    assert (back / "README.md").read_text() == (published / "README.md").read_text()
    rows = datasets.load_from_disk(str(back))["train"].to_pandas()
    pd.testing.assert_frame_equal(rows, pd.read_parquet(published / DATA_FILE), check_dtype=False)
    assert len(rows) == 36 and rows["final_source"].tolist().count("adjudicated") == 2


def test_no_grey_frame_around_the_labelling_page_after_a_click_on_its_background(engine, app_server, browser):
    ds, _ = make_dataset(engine, "demo", numbered_pairs(10))
    cid = camp.create_campaign(engine, "Frames", [ds], quota=4, n_training=0)
    aid, token = annotators.create_annotator(engine, cid, "Ann")
    annotators.set_annotator_profile(engine, aid, "Ann", "native")
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.goto(f"{app_server.url}/?token={token}")
    wait_for_app(page)
    wait_progress(page, "0 / 4", 0)
    page.mouse.click(600, 850)  # the page's background, below everything
    page.keyboard.press("2")  # an answer by its key: the focused background now shows its focus
    wait_progress(page, "1 / 4", 1)
    wait_for_app(page)
    main = page.locator("[data-testid='stMain']")
    assert main.evaluate("e => e === document.activeElement && e.matches(':focus-visible')")
    # Streamlit draws its focus ring as an inset shadow on the main area's ::before: a frame round the page
    ring = main.evaluate("e => { const s = getComputedStyle(e, '::before'); return [s.content, s.boxShadow]; }")
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "labelling-after-background-click.png"))
    assert ring[0] == "none" or ring[1] == "none", ring


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
