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
