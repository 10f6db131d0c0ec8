"""Times every admin page in a real browser on a large store: what a person waits for, not what a
function takes (bench/analysis.py times the functions).

    python bench/pages.py [--pairs 100000] [--labels 300000] [--annotators 20] [--db path.db]
    python bench/pages.py --db crowd.db --as-is   # another store, as it is (e.g. bench/serving.py's campaign)

Builds the store bench/analysis.py builds (an existing --db file is reused: the default is the same
file), starts the app on it as `make run` does (scripts/serve.py, with its warm-up; PLUIE_NO_WORKER=1,
PLUIE_DEMO_RUN=0, no admin password, so the pages are open), and opens every page in headless Chromium
(/usr/bin/chromium) twice: a first visit on the freshly started server (once its warm-up has loaded the
pages' modules and read their first figures from the store, as when a person opens the address once
`make run` says so; the time that takes is printed), then again. A page
is done when Streamlit's script has stopped (the `stApp` element's `data-test-script-state` reads
`notRunning`), its title is drawn and the DOM has not changed for 1.5 s (0.5 s for the pages that
redraw themselves: Scoring, Live campaign); the time reported is from opening the address to the last
change of the DOM a person can see, the quiet period not included.

What a person can see: every change but those inside a <canvas> element's fallback content. A browser
that draws canvases never shows that content; Streamlit's tables (glide-data-grid) put an accessibility
copy of the visible cells there and refresh it about 0.3 s after the grid is drawn, which would otherwise
count as the end of every page holding a table (a table with nothing after it: 1.56 s against 1.26 s for
the same page without it, median of 10, while the grid itself is on screen at the earlier time). The
table prints both: the visible figure, which the limit applies to, and the last change of any kind.
Prints a table and exits 1 when a page is over --limit seconds (2 by default).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from tests.browser import CHROMIUM_ARGS, start_app, stop_app  # noqa: E402

# (title, url path, quiet seconds): the app's admin pages in the sidebar's order
PAGES = [
    ("Datasets", "", 1.5), ("Pairs", "pairs", 1.5), ("Import", "import_pairs", 1.5), ("Export", "export", 1.5),
    ("Scoring", "scoring", 0.5), ("Campaigns", "campaigns", 1.5), ("Review", "review", 1.5),
    ("Live campaign", "live_campaign", 0.5), ("Agreement", "agreement", 1.5), ("Thresholds", "thresholds", 1.5),
    ("Distributions", "distributions", 1.5), ("Disagreements", "disagreements", 1.5),
    ("Scorecard", "scorecard", 1.5), ("Correlation", "correlation", 1.5), ("Preferences", "preferences", 1.5),
]

# installed before any page script: the times (ms since navigation started) of the last DOM change and of
# the last one a person can see (not inside a canvas's fallback content: a canvas's children, or theirs)
WATCH_DOM = """
window.__lastChange = window.__lastVisible = performance.now();
new MutationObserver((records) => {
  const now = performance.now();
  window.__lastChange = now;
  for (const r of records) {
    const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    const within = r.type === 'childList' ? node : node && node.parentElement;
    if (!(within && within.closest('canvas'))) { window.__lastVisible = now; break; }
  }
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""
STATE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return {state: app ? app.getAttribute('data-test-script-state') : null,
          titled: document.querySelector('[data-testid="stMain"] h1') !== null,
          last: window.__lastChange, visible: window.__lastVisible, now: performance.now()};
}"""


def build_store(db: str, n_pairs: int, n_labels: int, n_annotators: int) -> None:
    """The store of bench/analysis.py (pairs, labels, two score runs, the benchmark's challenge, preferences)."""
    spec = importlib.util.spec_from_file_location("bench_analysis", REPO_ROOT / "bench" / "analysis.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    engine = bench.build(f"sqlite:///{db}", n_pairs, n_labels, n_annotators)
    if bench.evaluation.benchmark_datasets(engine)["benchmark"].isna().all():
        for dataset_id in bench.analysis.analysis_choices(engine).datasets["id"]:
            bench.evaluation.assign_challenge(engine, int(dataset_id), "Classify!", "bench")
    bench.ensure_preferences(engine)
    engine.dispose()


def time_page(context, url: str, quiet: float, timeout: float) -> tuple[float, float]:
    """Seconds from opening the address to the page's last visible change and to its last DOM change of
    any kind, once it has settled (no change of any kind for ``quiet`` seconds)."""
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = page.evaluate(STATE)
            if (found["state"] == "notRunning" and found["titled"]
                    and found["now"] - found["last"] >= quiet * 1000):
                return found["visible"] / 1000, found["last"] / 1000
            time.sleep(0.1)
        raise TimeoutError(f"{url} did not settle in {timeout:g} s")
    finally:
        page.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=300_000)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--db", default="data/bench_analysis.db", help="the store (built when missing)")
    parser.add_argument("--as-is", action="store_true",
                        help="time --db as it is: build nothing, add nothing (bench/serving.py --db's campaign of "
                             "6,000 annotators, a copy of a real store)")
    parser.add_argument("--limit", type=float, default=2.0, help="seconds allowed per page")
    parser.add_argument("--only", default="", help="comma-separated page titles to time (default: every page)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a page counts as stuck")
    parser.add_argument("--app", default=str(REPO_ROOT / "app.py"),
                        help="the app.py to serve, e.g. of another copy of the code to compare (git archive main)")
    args = parser.parse_args(argv)
    from playwright.sync_api import sync_playwright

    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    if args.as_is:
        if not Path(args.db).is_file():
            parser.error(f"--as-is: no store at {args.db}")
    else:
        build_store(args.db, args.pairs, args.labels, args.annotators)
    pages = [p for p in PAGES if not args.only or p[0].lower() in {w.strip().lower() for w in args.only.split(",")}]
    # no admin password: the pages are open (the app says so in the sidebar)
    env = {key: "" for key in ("PLUIE_ADMIN_PASSWORD", "PLUIE_ADMIN_PASSWORD_HASH")}
    log = Path(args.db).with_suffix(".streamlit.log")
    server = start_app(f"sqlite:///{Path(args.db).resolve()}", log, extra_env=env, app=Path(args.app).resolve(),
                       like_make_run=True)  # a copy without scripts/serve.py: `streamlit run`
    launcher = Path(args.app).resolve().parent / "scripts" / "serve.py"
    source = launcher.read_text() if launcher.exists() else ""
    # the line that ends the server's warm-up: its first figures read, or (older copies) its modules loaded
    ready = next((line for line in ("first figures are read", "modules are loaded") if line in source), None)
    started = time.monotonic()
    deadline = started + 300  # as a person would: open the first page once the server says it is ready
    while ready and ready not in log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.2)
    ready_after = time.monotonic() - started
    times: dict[str, list[float]] = {title: [] for title, _, _ in pages}  # visible: first, again
    any_change: dict[str, list[float]] = {title: [] for title, _, _ in pages}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(WATCH_DOM)
            for visit in ("first", "again"):
                for title, path, quiet in pages:
                    seconds, last = time_page(context, f"{server.url}/{path}", quiet, args.timeout)
                    times[title].append(seconds)
                    any_change[title].append(last)
                    print(f"  {title} ({visit}): {seconds:.1f} s (any change: {last:.1f} s)", file=sys.stderr)
            browser.close()
    finally:
        stop_app(server)
    size = f"the store {args.db} as it is" if args.as_is else f"{args.pairs:,} pairs, {args.labels:,} labels"
    print(f"\n{size}; seconds until the page stops changing where a "
          "person can see it (and until its last DOM change of any kind, a table's hidden copy included)")
    if ready:
        print(f"first visits once the server said \"{ready}\", {ready_after:.1f} s after it first answered")
    print()
    print("| page | first | again | first, any change | again, any change |\n|---|---|---|---|---|")
    for title, (first, again) in times.items():
        first_any, again_any = any_change[title]
        print(f"| {title} | {first:.1f} | {again:.1f} | {first_any:.1f} | {again_any:.1f} |")
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores")
    slow = [title for title, seconds in times.items() if max(seconds) > args.limit]
    if slow:
        print(f"over {args.limit:g} s: {', '.join(slow)}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
