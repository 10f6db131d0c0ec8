"""The published dataset in a real browser (issue 35, item 7): the folder written from the Export page,
downloaded as a .zip and read back as the folder is. (The .zip and the card without a browser:
tests/test_publish_zip_and_card.py.)"""

from __future__ import annotations

import re
import zipfile

import pytest

from db.publish import DATA_FILE
from tests.browser import ARTIFACTS, start_app, stop_app, wait_for_app, wait_for_shown_text
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
