"""Makes docs/thresholds.png, the README's picture of the Thresholds page: the MRPC test set (1,725
pairs, binary gold) scored with the normalised Levenshtein distance baseline, in a fresh store,
photographed in headless Chromium.

    python bench/screenshot_thresholds.py [--out docs/thresholds.png]

Uses the app (app.py) when it routes to pages/thresholds.py, otherwise runs that page on its own.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from db import init_db  # noqa: E402
from db.analysis import add_score_run, edit_distances, pairs_frame  # noqa: E402
from db.datasets import import_pairs  # noqa: E402
from pluie_core.io import load_pairs  # noqa: E402
from tests.browser import CHROMIUM, CHROMIUM_ARGS, AppServer, free_port, start_app, stop_app, wait_for_app  # noqa: E402
from tests.paths import DATASETS, REPO  # noqa: E402


def build_store(db_url: str) -> None:
    engine = init_db(db_url)
    import_pairs(engine, "MRPC test", load_pairs(DATASETS / "mrpc" / "msr_paraphrase_test.txt", "auto"))
    pairs = pairs_frame(engine, texts=True)
    # the baseline as the worker stores it: normalised distance, lower = more similar
    add_score_run(engine, "levenshtein", edit_distances(pairs), kind="baseline", higher_is_similar=False,
                  model="levenshtein")
    engine.dispose()


ENTRY = """import streamlit as st
st.set_page_config(page_title="PLUIE Lab", page_icon="☔", layout="wide")
st.navigation([st.Page({page!r}, title="Thresholds")]).run()
"""


def start_page_alone(db_url: str, folder: Path, timeout: float = 60) -> AppServer:
    """start_app for the page alone, framed like app.py frames it (before app.py routes to it)."""
    port = free_port()
    entry, log = folder / "entry.py", folder / "app.log"
    entry.write_text(ENTRY.format(page=str(REPO / "pages" / "thresholds.py")))
    env = {**os.environ, "PLUIE_DB_URL": db_url, "PLUIE_NO_WORKER": "1", "PYTHONPATH": str(REPO)}
    process = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", str(entry), "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port), "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                return AppServer(url, db_url, process, log)
        except OSError:
            time.sleep(0.3)
    process.kill()
    raise RuntimeError(f"streamlit did not start:\n{log.read_text()}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "thresholds.png"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite:///{folder}/store.db"
        build_store(db_url)
        routed = "pages/thresholds.py" in (REPO / "app.py").read_text()
        server = start_app(db_url, Path(folder) / "app.log") if routed else start_page_alone(db_url, Path(folder))
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1150}, device_scale_factor=1)
                page.goto(server.url + ("/thresholds" if routed else ""))  # a lone page is the default one
                wait_for_app(page, timeout=90_000)
                page.wait_for_selector("[data-testid='stPlotlyChart'] .main-svg", timeout=90_000)
                page.wait_for_timeout(1500)  # let plotly finish its first layout pass
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=args.out)
                browser.close()
        finally:
            stop_app(server)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
