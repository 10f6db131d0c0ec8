"""bench/pages.py's walk of a person (issue 40, item 4) at a tiny size: that it runs and reaches each page,
never how fast (the limits are set out of the way; bench/results holds the figures)."""
from __future__ import annotations

import importlib.util

import pytest

from tests.paths import REPO

pytestmark = pytest.mark.browser


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_pages", REPO / "bench" / "pages.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    return bench


def test_the_persons_walk_reaches_each_page_through_the_menu_and_in_a_new_tab(tmp_path, capsys):
    bench = load_bench()
    # a page with a table and one with a chart; a page that never settles raises TimeoutError
    code = bench.main(["--pairs", "200", "--labels", "600", "--annotators", "5", "--db", str(tmp_path / "bench.db"),
                       "--walk", "person", "--only", "Pairs,Agreement", "--limit", "600", "--tab-limit", "600",
                       "--timeout", "90"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "the app opened in a new tab:" in out
    rows = {cells[0]: cells[1:] for cells in ([c.strip() for c in line.strip("|").split("|")]
                                              for line in out.splitlines() if line.startswith("| "))}
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


def test_what_a_person_sees_leaves_out_the_head_off_screen_and_detached_changes(browser, tmp_path):
    """Plotly's code, loaded once the browser is idle, adds styles to the head and measures text with elements
    off the screen or outside the document: no one sees those changes, and the page's last visible change
    stays the paragraph drawn at 0.2 s, while its last change of any kind is at 0.9 s."""
    bench = load_bench()
    (tmp_path / "page.html").write_text(PAGE)
    context = browser.new_context()
    context.add_init_script(bench.WATCH_DOM)
    page = context.new_page()
    page.goto((tmp_path / "page.html").as_uri())
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
