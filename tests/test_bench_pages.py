"""bench/pages.py's walk of a person (issue 40, item 4) at a tiny size: that it runs and reaches each page,
never how fast (the limits are set out of the way; bench/results holds the figures)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.browser


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_pages", REPO / "bench" / "pages.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_the_persons_walk_reaches_each_page_through_the_menu_and_in_a_new_tab(tmp_path):
    # a page with a table and one with a chart; a page that never settles raises TimeoutError. Run as a person
    # runs it, in a process of its own: its Playwright cannot start in a test process where the session's
    # Chromium (tests.browser.chromium) already runs, which depends on the order the tests come in
    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "pages.py"),
            "--pairs",
            "200",
            "--labels",
            "600",
            "--annotators",
            "5",
            "--db",
            str(tmp_path / "bench.db"),
            "--walk",
            "person",
            "--only",
            "Pairs,Agreement",
            "--limit",
            "600",
            "--tab-limit",
            "600",
            "--timeout",
            "90",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr[-3000:]
    assert "the app opened in a new tab:" in out
    rows = {
        cells[0]: cells[1:]
        for cells in (
            [c.strip() for c in line.strip("|").split("|")] for line in out.splitlines() if line.startswith("| ")
        )
    }
    assert rows.pop("page")[:3] == ["through the menu (s)", "new tab (s)", "goal (menu ≤ 600 s, tab ≤ 600 s)"]
    assert set(rows) == {"Pairs", "Agreement"}
    for title, (menu, new_tab, goal, *_) in rows.items():
        assert float(menu) > 0 and float(new_tab) > 0 and goal == "met", (title, out)


PAGE = """<html><head></head><body><div id=root style="height:2000px"></div><script>
setTimeout(() => { const shown = document.createElement('p'); shown.textContent = 'shown';
  document.getElementById('root').append(shown); }, 200);
setTimeout(() => {
  const style = document.createElement('style'); style.textContent = '.x{color:red}'; document.head.append(style);
  const away = document.createElement('div'); away.textContent = 'measure';
  away.style.cssText = 'position:absolute;left:-10000px;top:-10000px;width:100px;height:100px';
  document.body.append(away);
  const brief = document.createElement('div'); brief.textContent = 'measured'; document.body.append(brief); brief.remove();
  document.createElement('div').style.font = 'italic 16px cursive';  // outside the document
  window.__unseenDone = performance.now();
}, 900);
</script></body></html>"""


def watched(browser, tmp_path, html: str):
    """A new context whose pages bench/pages.py watches (its WATCH_DOM), and a page of it on ``html``."""
    (tmp_path / "page.html").write_text(html)
    context = browser.new_context()
    context.add_init_script(load_bench().WATCH_DOM)
    page = context.new_page()
    page.goto((tmp_path / "page.html").as_uri())
    return context, page


def test_what_a_person_sees_leaves_out_the_head_off_screen_and_detached_changes(browser, tmp_path):
    """Plotly's code, loaded once the browser is idle, adds styles to the head and measures text with elements
    off the screen or outside the document: no one sees those changes, and the page's last visible change
    stays the paragraph drawn at 0.2 s, while its last change of any kind is at 0.9 s."""
    context, page = watched(browser, tmp_path, PAGE)
    page.wait_for_function("window.__unseenDone !== undefined", timeout=10_000)
    page.wait_for_timeout(100)
    visible, last, unseen = page.evaluate("[window.__lastVisible, window.__lastChange, window.__unseenDone]")
    assert last >= unseen - 5  # the unseen changes were observed
    assert visible < unseen - 400  # and none of them counted as seen
    # a change a person sees still counts, on the body itself too
    page.evaluate("document.body.append(Object.assign(document.createElement('p'), {textContent: 'late'}))")
    page.wait_for_timeout(50)
    assert page.evaluate("window.__lastVisible") > unseen
    context.close()


STALE_PAGE = """<html><head></head><body><div data-testid=stApp data-test-script-state=notRunning>
<div id=box data-testid=stElementContainer data-stale=false class=fresh>box</div></div><script>
const box = document.getElementById('box'), app = document.querySelector('[data-testid=stApp]');
const mark = (stale) => { box.setAttribute('data-stale', String(stale)); box.className = stale ? 'stale' : 'fresh'; };
window.__steps = {};
setTimeout(() => { window.__steps.drawn = performance.now(); box.textContent = 'drawn'; }, 100);
// a refresh: the script runs, the box is marked stale and cleared 100 ms later, the same box redrawn
setTimeout(() => { app.setAttribute('data-test-script-state', 'running'); mark(true); }, 600);
setTimeout(() => { mark(false); app.setAttribute('data-test-script-state', 'notRunning');
  window.__steps.refreshed = performance.now(); }, 700);
// a slow run: marked stale for 0.9 s, so its fade shows from 0.5 s after the mark
setTimeout(() => { window.__steps.marked = performance.now(); mark(true); }, 1200);
setTimeout(() => { window.__steps.fading = performance.now(); }, 1750);
setTimeout(() => { mark(false); window.__steps.cleared = performance.now(); }, 2100);
</script></body></html>"""


def test_a_stale_mark_cleared_before_streamlit_fades_it_and_the_script_state_are_not_seen(browser, tmp_path):
    """Streamlit fades a stale element 0.5 s after marking it: a periodic refresh that marks its elements and
    clears the marks within 0.1 s (Scoring's st.fragment(run_every=2)) changes nothing a person sees, nor does
    the app's script-state attribute; a mark that lasts longer counts from its fade's start, and its clearing."""
    context, page = watched(browser, tmp_path, STALE_PAGE)
    page.wait_for_function("window.__steps.refreshed !== undefined", timeout=10_000)
    page.wait_for_timeout(100)
    visible, last, steps = page.evaluate("[window.__lastVisible, window.__lastChange, window.__steps]")
    assert last >= steps["refreshed"] - 5  # the refresh was observed
    assert steps["drawn"] - 5 <= visible < steps["refreshed"] - 400  # and not seen: the page's last sight is 'drawn'
    page.wait_for_function("window.__steps.fading !== undefined", timeout=10_000)
    assert page.evaluate("window.__lastVisible") >= steps["drawn"] and page.evaluate("window.__lastVisible") > (
        page.evaluate("window.__steps.marked") + 400
    )  # the fade started 0.5 s after the mark: seen
    page.wait_for_function("window.__steps.cleared !== undefined", timeout=10_000)
    page.wait_for_timeout(50)
    assert page.evaluate("window.__lastVisible") >= page.evaluate("window.__steps.cleared") - 5
    context.close()
