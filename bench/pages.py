"""Times every admin page in a real browser on a large store: what a person waits for, not what a
function takes (bench/analysis.py times the functions).

    python bench/pages.py [--pairs 100000] [--labels 300000] [--annotators 20] [--db path.db] [--walk both]
    python bench/pages.py --db crowd.db --as-is   # another store, as it is (e.g. bench/serving.py's campaign)

Two walks (--walk person, tabs, or both, the default: each on a freshly started server):
- person, the way a person moves: the app opened in a new tab, then every page reached through the
  sidebar's menu in that same tab (a click on its link, timed from the click event to a still page),
  then each page's address opened in a new tab (a shared link). Goals: a page through the menu within
  --limit seconds (2), in a new tab within --tab-limit (3), the app's first opening included.
- tabs, the older walk: every page in a new tab, twice (first and again), within --limit.

Builds the store bench/analysis.py builds (an existing --db file is reused: the default is the same
file), starts the app on it as `make run` does (scripts/serve.py, with its warm-up; PLUIE_NO_WORKER=1,
PLUIE_DEMO_RUN=0, no admin password, so the pages are open), and opens every page in headless Chromium
(/usr/bin/chromium) twice: a first visit on the freshly started server (once its warm-up has loaded the
pages' modules and read their first figures from the store, as when a person opens the address once
`make run` says so; the time that takes is printed), then again. A page
is done when Streamlit's script has stopped (the `stApp` element's `data-test-script-state` reads
`notRunning`), its title is drawn, its chart is drawn where it draws one (a plotly or a Vega-Lite chart:
whichever library draws it), and the DOM has not changed for 1.5 s (0.5 s for the pages that redraw
themselves: Scoring, Live campaign); the time reported is from opening the address (or from the click on
the menu) to the last change of the DOM a person can see, the quiet period not included. A page reached
through the menu is done once, besides, the address reads its path, a run of the script has started
after the click and the title is no longer the previous page's.

What a person can see: every change but those inside a <canvas> element's fallback content. A browser
that draws canvases never shows that content; Streamlit's tables (glide-data-grid) put an accessibility
copy of the visible cells there and refresh it about 0.3 s after the grid is drawn, which would otherwise
count as the end of every page holding a table (a table with nothing after it: 1.56 s against 1.26 s for
the same page without it, median of 10, while the grid itself is on screen at the earlier time). Nor
those in the document's head, of an element outside the document, or of an element of the body that
takes no room on the screen (no size, wholly off it, or added and removed before the browser drew it):
plotly's code, when it loads, adds its styles to the head, measures text with such elements, and every
admin page loads it once the browser is idle (ui.frame.preload_views), a change no one sees. Nor
the two marks Streamlit sets that change nothing on the screen: the `stApp` element's script state (a
test hook), and an element's stale mark (`data-stale` and the class that comes with it) when it is
cleared within 0.5 s, since Streamlit fades a stale element only 0.5 s after marking it (its CSS:
`opacity 1s ease-in 0.5s`); a mark that lasts longer counts from its fade's start. So the run of a page
that refreshes itself (Scoring's and Live campaign's `st.fragment(run_every=...)`), which marks its
elements and redraws the same ones, is not read as the page still loading (it was on a slow machine: Scoring
3.6–3.7 s for a page still at 1.8 s; bench/results/2026-11-26-pages.md). The
table prints both: the visible figure, which the limit applies to, and the last change of any kind.
Prints a table and exits 1 when a page misses its goal (tabs: over --limit seconds in either visit).
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

from tests.browser import CHROMIUM_ARGS, start_app, stop_app

# (title, url path, quiet seconds): the app's admin pages in the sidebar's order
PAGES = [
    ("Datasets", "", 1.5),
    ("Pairs", "pairs", 1.5),
    ("Import", "import_pairs", 1.5),
    ("Export", "export", 1.5),
    ("Scoring", "scoring", 0.5),
    ("Campaigns", "campaigns", 1.5),
    ("Review", "review", 1.5),
    ("Live campaign", "live_campaign", 0.5),
    ("Agreement", "agreement", 1.5),
    ("Thresholds", "thresholds", 1.5),
    ("Distributions", "distributions", 1.5),
    ("Disagreements", "disagreements", 1.5),
    ("Scorecard", "scorecard", 1.5),
    ("Correlation", "correlation", 1.5),
    ("Preferences", "preferences", 1.5),
]

# installed before any page script: the times (ms since navigation started) of the last DOM change and of
# the last one a person can see (not inside a canvas's fallback content: a canvas's children, or theirs)
# Besides, the time of the last click (captured before the app sees it) and of the last start of a script
# run (the stApp element's script state turning to "running"), for the walk through the menu.
WATCH_DOM = """
window.__lastChange = window.__lastVisible = performance.now();
window.__clickedAt = window.__runStartedAt = -1;
// a node of the body that no one sees: no size, or wholly off the screen, or added and removed within one
// task (never drawn); a node removed otherwise may have been seen: it counts
const unseen = (n, added) => {
  if (n.nodeType !== 1) return n.nodeType !== 3 || !n.textContent.trim();
  if (!n.isConnected) return added.has(n);
  const box = n.getBoundingClientRect();
  return (box.width === 0 && box.height === 0) || box.right <= 0 || box.bottom <= 0;
};
document.addEventListener('click', () => { window.__clickedAt = performance.now(); }, true);
// Streamlit marks an element stale while a run may replace it (data-stale, and its class with it) and fades
// it only 0.5 s later (its CSS: `transition: opacity 1s ease-in 0.5s`): a mark cleared sooner shows nothing
const FADE_DELAY = 500, staleSince = new WeakMap();
new MutationObserver((records) => {
  const now = performance.now();
  window.__lastChange = now;
  let visible = false;
  const added = new Set(records.flatMap((r) => [...r.addedNodes]));
  const unfaded = new Set();  // elements whose stale mark came or went unseen in these records
  for (const r of records) {
    if (r.type !== 'attributes' || r.attributeName !== 'data-stale') continue;
    if (r.target.getAttribute('data-stale') === 'true') {
      if (!staleSince.has(r.target)) {
        staleSince.set(r.target, now);
        setTimeout(() => {  // still marked: its fade starts now, a change a person sees
          if (staleSince.get(r.target) === now && r.target.isConnected) {
            window.__lastChange = window.__lastVisible = performance.now();
          }
        }, FADE_DELAY);
      }
      unfaded.add(r.target);
    } else {
      const since = staleSince.get(r.target);
      staleSince.delete(r.target);
      if (since !== undefined && now - since < FADE_DELAY) unfaded.add(r.target);
    }
  }
  for (const r of records) {
    if (r.type === 'attributes' && r.attributeName === 'data-test-script-state') {
      if (r.target.getAttribute('data-test-script-state') === 'running') window.__runStartedAt = now;
      continue;  // a test hook: the page does not look different
    }
    if (r.type === 'attributes' && unfaded.has(r.target)
        && (r.attributeName === 'data-stale' || r.attributeName === 'class')) continue;
    const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
    const within = r.type === 'childList' ? node : node && node.parentElement;
    if (!node || !node.isConnected) continue;  // an element built outside the document
    if (within && (within.closest('canvas') || within.closest('head'))) continue;
    const changed = r.type === 'childList' ? [...r.addedNodes, ...r.removedNodes] : [node];
    if (within === document.body && changed.every((n) => unseen(n, added))) continue;
    visible = true;
  }
  if (visible) window.__lastVisible = now;
}).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
"""
# a chart drawn in the page, by whichever library draws it: plotly's SVG (drawn by the chart component's
# plotly_chart.js, components/pluie_plotly, or by st.plotly_chart in older copies), or Vega's marks (canvas or SVG)
CHART_DRAWN = ", ".join(
    f'[data-testid="stMain"] {chart}'
    for chart in (
        ".pluie-chart .main-svg",
        '[data-testid="stPlotlyChart"] .main-svg',
        '[data-testid="stVegaLiteChart"] .marks',
    )
)
STATE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const heading = document.querySelector('[data-testid="stMain"] h1');
  return {state: app ? app.getAttribute('data-test-script-state') : null,
          titled: heading !== null, heading: heading ? heading.textContent : null,
          charted: document.querySelector('%s') !== null, path: location.pathname.replace(/^\\/+/, ''),
          clicked: window.__clickedAt, started: window.__runStartedAt,
          last: window.__lastChange, visible: window.__lastVisible, now: performance.now()};
}""" % CHART_DRAWN.replace("'", "\\'")
# the pages that draw a chart in their default view: done once it is drawn
CHARTED = {"Agreement", "Thresholds", "Distributions", "Correlation"}
MENU_LINK = '[data-testid="stSidebar"] a[data-testid="stPageLink-NavLink"][href="{path}"]'


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


def settle(page, title: str, quiet: float, timeout: float, done=lambda found: True) -> dict:
    """Wait until the page in ``page`` has settled (its script stopped, its title drawn, its chart drawn
    where it draws one, ``done`` true, no change of any kind for ``quiet`` seconds); its last STATE."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = page.evaluate(STATE)
        if (
            found["state"] == "notRunning"
            and found["titled"]
            and (found["charted"] or title not in CHARTED)
            and done(found)
            and found["now"] - found["last"] >= quiet * 1000
        ):
            return found
        time.sleep(0.1)
    raise TimeoutError(
        f"{title} did not settle in {timeout:g} s: script {found['state']}, at /{found['path']}, "
        f"title {found['heading']!r}, chart drawn {found['charted']}, "
        f"last change {(found['now'] - found['last']) / 1000:.1f} s ago"
    )


def time_page(context, url: str, quiet: float, timeout: float, title: str = "") -> tuple[float, float]:
    """Seconds from opening the address in a new tab to the page's last visible change and to its last DOM
    change of any kind, once it has settled (no change of any kind for ``quiet`` seconds)."""
    page = context.new_page()
    try:
        page.goto(url, wait_until="commit")
        found = settle(page, title or url, quiet, timeout)
        return found["visible"] / 1000, found["last"] / 1000
    finally:
        page.close()


def time_click(page, title: str, path: str, quiet: float, timeout: float) -> tuple[float, float]:
    """Seconds from a click on ``title``'s link in the menu of the tab ``page`` to the page's last visible
    change and to its last DOM change of any kind, once it has settled. The click is a person's (the
    mouse, on the link); its time is the click event's, taken in the page before the app handles it."""
    before = page.evaluate(STATE)["heading"]
    page.locator(MENU_LINK.format(path=path)).click()

    def reached(found):  # the new page's run, not the old page still standing
        return (
            found["clicked"] >= 0
            and found["started"] > found["clicked"]
            and found["path"] == path
            and found["heading"] != before
        )

    found = settle(page, title, quiet, timeout, reached)
    return (found["visible"] - found["clicked"]) / 1000, (found["last"] - found["clicked"]) / 1000


def serve(args):
    """The app on --db as `make run` starts it, once its warm-up says it is ready: (server, the line it
    waited for or None, seconds it waited)."""
    # no admin password: the pages are open (the app says so in the sidebar)
    env = {key: "" for key in ("PLUIE_ADMIN_PASSWORD", "PLUIE_ADMIN_PASSWORD_HASH")}
    log = Path(args.db).with_suffix(".streamlit.log")
    server = start_app(
        f"sqlite:///{Path(args.db).resolve()}", log, extra_env=env, app=Path(args.app).resolve(), like_make_run=True
    )  # a copy without scripts/serve.py: `streamlit run`
    launcher = Path(args.app).resolve().parent / "scripts" / "serve.py"
    source = launcher.read_text() if launcher.exists() else ""
    # the line that ends the server's warm-up: its first figures read, or (older copies) its modules loaded
    ready = next((line for line in ("first figures are read", "modules are loaded") if line in source), None)
    started = time.monotonic()
    deadline = started + 300  # as a person would: open the first page once the server says it is ready
    while ready and ready not in log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.2)
    return server, ready, time.monotonic() - started


def browse(walk):
    """Run ``walk(context)`` in headless Chromium, a tab 1400 x 900 with the DOM watched."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            context.add_init_script(WATCH_DOM)
            return walk(context)
        finally:
            browser.close()


def walk_tabs(args, pages) -> tuple[dict, dict, str | None, float]:
    """The older walk: every page in a new tab, twice, on a fresh server; seconds per page (visible, and any
    change), each [first, again]."""
    times: dict[str, list[float]] = {title: [] for title, _, _ in pages}  # visible: first, again
    any_change: dict[str, list[float]] = {title: [] for title, _, _ in pages}
    server, ready, ready_after = serve(args)

    def walk(context):
        for visit in ("first", "again"):
            for title, path, quiet in pages:
                seconds, last = time_page(context, f"{server.url}/{path}", quiet, args.timeout, title)
                times[title].append(seconds)
                any_change[title].append(last)
                print(f"  {title} ({visit}): {seconds:.1f} s (any change: {last:.1f} s)", file=sys.stderr)

    try:
        browse(walk)
    finally:
        stop_app(server)
    return times, any_change, ready, ready_after


def walk_person(args, pages) -> tuple[tuple[float, float], dict, dict, str | None, float]:
    """The person's walk on a fresh server: the app opened in a new tab, each page through the menu of that
    tab (Datasets, the page it opened on, last), each page's address in a new tab. (visible, any change) for
    the opening, and per page for the menu and the new tab."""
    menu: dict[str, tuple[float, float]] = {}
    new_tab: dict[str, tuple[float, float]] = {}
    home = next(page for page in PAGES if page[1] == "")
    server, ready, ready_after = serve(args)

    def walk(context):
        tab = context.new_page()
        tab.goto(f"{server.url}/", wait_until="commit")
        found = settle(tab, home[0], home[2], args.timeout)
        opened = found["visible"] / 1000, found["last"] / 1000
        print(f"  the app opened in a new tab: {opened[0]:.1f} s (any change: {opened[1]:.1f} s)", file=sys.stderr)
        for title, path, quiet in sorted(pages, key=lambda page: page[1] == ""):  # Datasets last
            if path == home[1] and len(pages) == 1:
                continue  # the tab shows it already: there is nothing to click
            menu[title] = time_click(tab, title, path, quiet, args.timeout)
            print(f"  {title} (menu): {menu[title][0]:.1f} s (any change: {menu[title][1]:.1f} s)", file=sys.stderr)
        tab.close()
        for title, path, quiet in pages:
            new_tab[title] = time_page(context, f"{server.url}/{path}", quiet, args.timeout, title)
            print(
                f"  {title} (new tab): {new_tab[title][0]:.1f} s (any change: {new_tab[title][1]:.1f} s)",
                file=sys.stderr,
            )
        return opened

    try:
        opened = browse(walk)
    finally:
        stop_app(server)
    return opened, menu, new_tab, ready, ready_after


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--labels", type=int, default=300_000)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--db", default="data/bench_analysis.db", help="the store (built when missing)")
    parser.add_argument(
        "--as-is",
        action="store_true",
        help="time --db as it is: build nothing, add nothing (bench/serving.py --db's campaign of "
        "6,000 annotators, a copy of a real store)",
    )
    parser.add_argument(
        "--walk",
        choices=("person", "tabs", "both"),
        default="both",
        help="person: new tab, the menu, new tabs; tabs: every page in a new tab, twice (the older "
        "walk); both (default): each on its own fresh server, side by side",
    )
    parser.add_argument(
        "--limit",
        type=float,
        default=2.0,
        help="seconds allowed per page through the menu (tabs: per page, either visit)",
    )
    parser.add_argument("--tab-limit", type=float, default=3.0, help="seconds allowed per page in a new tab (person)")
    parser.add_argument("--only", default="", help="comma-separated page titles to time (default: every page)")
    parser.add_argument("--timeout", type=float, default=180.0, help="seconds before a page counts as stuck")
    parser.add_argument(
        "--app",
        default=str(REPO_ROOT / "app.py"),
        help="the app.py to serve, e.g. of another copy of the code to compare (git archive main)",
    )
    args = parser.parse_args(argv)

    Path(args.db).parent.mkdir(parents=True, exist_ok=True)
    if args.as_is:
        if not Path(args.db).is_file():
            parser.error(f"--as-is: no store at {args.db}")
    else:
        started = time.monotonic()
        build_store(args.db, args.pairs, args.labels, args.annotators)
        print(f"the store is ready in {time.monotonic() - started:.1f} s", file=sys.stderr)
    wanted = {w.strip().lower() for w in args.only.split(",") if w.strip()}
    pages = [p for p in PAGES if not wanted or p[0].lower() in wanted]
    if not pages:
        parser.error(f"--only: no page is named {args.only!r}")
    person = walk_person(args, pages) if args.walk in ("person", "both") else None
    tabs = walk_tabs(args, pages) if args.walk in ("tabs", "both") else None

    size = f"the store {args.db} as it is" if args.as_is else f"{args.pairs:,} pairs, {args.labels:,} labels"
    print(
        f"\n{size}; seconds until the page stops changing where a "
        "person can see it (and until its last DOM change of any kind, a table's hidden copy included)"
    )
    for name, walked in (("person", person), ("tabs", tabs)):
        if walked and walked[-2]:
            print(
                f'{name}: first page opened once the server said "{walked[-2]}", '
                f"{walked[-1]:.1f} s after it first answered"
            )
    print()
    missed = []
    if person:
        opened, menu, new_tab, _, _ = person
        print(
            f"the app opened in a new tab: {opened[0]:.1f} s (any change: {opened[1]:.1f} s)"
            + ("" if opened[0] <= args.tab_limit else f", over {args.tab_limit:g} s")
        )
        if opened[0] > args.tab_limit:
            missed.append("the app opened")
        header = (
            f"| page | through the menu (s) | new tab (s) | goal (menu ≤ {args.limit:g} s, tab ≤ {args.tab_limit:g} s) "
            "| menu, any change | new tab, any change |"
        )
        columns = 6
        if tabs:
            header += " every page in a new tab: first | again |"
            columns += 2
        print(header + "\n|" + "---|" * columns)
        for title, _, _ in pages:
            clicked, opened_tab = menu.get(title), new_tab[title]
            met = (clicked is None or clicked[0] <= args.limit) and opened_tab[0] <= args.tab_limit
            if not met:
                missed.append(title)
            row = (
                f"| {title} | {'—' if clicked is None else f'{clicked[0]:.1f}'} | {opened_tab[0]:.1f} "
                f"| {'met' if met else 'missed'} | {'—' if clicked is None else f'{clicked[1]:.1f}'} "
                f"| {opened_tab[1]:.1f} |"
            )
            if tabs:
                first, again = tabs[0][title]
                row += f" {first:.1f} | {again:.1f} |"
            print(row)
    else:
        times, any_change, _, _ = tabs
        print("| page | first | again | first, any change | again, any change |\n|---|---|---|---|---|")
        for title, (first, again) in times.items():
            first_any, again_any = any_change[title]
            print(f"| {title} | {first:.1f} | {again:.1f} | {first_any:.1f} | {again_any:.1f} |")
        missed = [title for title, seconds in times.items() if max(seconds) > args.limit]
    load = os.getloadavg()
    print(f"\nload average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} (1 / 5 / 15 min) on {os.cpu_count()} cores")
    if missed:
        goal = f"over {args.limit:g} s" if not person else "goal missed"
        print(f"{goal}: {', '.join(missed)}")
    return 1 if missed else 0


if __name__ == "__main__":
    from db import access

    access.install_operator()  # a bench writes as the store's operator, as the worker and the command line do
    sys.exit(main())
