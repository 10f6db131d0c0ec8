"""Makes docs/thresholds.png, the README's picture of the Thresholds page: the MRPC test set (1,725
pairs, binary gold) scored with the normalised Levenshtein distance baseline, in a fresh store,
photographed in headless Chromium.

    python bench/screenshot_thresholds.py [--out docs/thresholds.png]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from db import init_db
from db.analysis import add_score_run, pairs_frame
from db.datasets import import_pairs
from pluie_core.analysis import edit_distances
from pluie_core.io import load_pairs
from tests.browser import CHROMIUM, CHROMIUM_ARGS, start_app, stop_app, wait_for_app
from tests.paths import DATASETS, REPO


def build_store(db_url: str) -> None:
    engine = init_db(db_url)
    import_pairs(engine, "MRPC test", load_pairs(DATASETS / "mrpc" / "msr_paraphrase_test.txt", "auto"))
    pairs = pairs_frame(engine, texts=True)
    # the baseline as the worker stores it: normalised distance, lower = more similar
    add_score_run(
        engine, "levenshtein", edit_distances(pairs), kind="baseline", higher_is_similar=False, model="levenshtein"
    )
    engine.dispose()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(REPO / "docs" / "thresholds.png"))
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as folder:
        db_url = f"sqlite:///{folder}/store.db"
        build_store(db_url)
        server = start_app(db_url, Path(folder) / "app.log")
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 1150}, device_scale_factor=1)
                page.goto(server.url + "/thresholds")
                wait_for_app(page, timeout=90_000)
                page.wait_for_selector("[data-testid='stVegaLiteChart'] :is(canvas, svg)", timeout=90_000)
                page.wait_for_timeout(1500)  # let Vega finish its first layout pass
                Path(args.out).parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=args.out)
                browser.close()
        finally:
            stop_app(server)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
