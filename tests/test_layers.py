"""The layers, checked rather than remembered: pluie_core <- lab <- db <- ui <- pages, and the worker and the API
beside the page helpers (docs/architecture.md).

Every .py file of the layers is parsed (ast, never imported), and every import it makes is read:
module-level and inside functions, ``import x``, ``from x import y`` and relative imports. The
rules:

- pluie_core imports nothing from lab, db, pages, api, worker, app, streamlit, sqlalchemy or alembic:
  the library installs and runs without the app or a store (``pip install .``);
- lab (the app's own rules: roles, sign-in, the data folder) may import pluie_core, but nothing from db,
  pages, api, worker, app, streamlit, sqlalchemy or alembic: rules without the store or a page;
- db imports nothing from pages, worker, app or streamlit: the store knows no page;
- ui (the page helpers) imports neither the pages, the worker, the API nor app.py; inside it, each floor
  imports only its own and the floors below (UI_FLOORS: base, access, charts, views, forms, frame);
- pages do not import the worker (they queue work through db.queue);
- api (the HTTP API) imports neither Streamlit, the page helpers, the pages nor the worker;
- no import cycle anywhere in the house (every package and top-level module of HOUSE), function-level
  imports included: a cycle hidden in a function is a seam in the wrong place (one module's reads belong
  below the other's).

A failure names the file, the line and the import.
"""

from __future__ import annotations

import ast
import functools
import io
from dataclasses import dataclass
from pathlib import Path

from tests.paths import REPO

# layer (a top-level package or module of the checkout) -> the top-level names it must not import
FORBIDDEN = {
    "pluie_core": (
        "lab",
        "db",
        "ui",
        "pages",
        "api",
        "worker",
        "worker_launch",
        "app",
        "streamlit",
        "sqlalchemy",
        "alembic",
    ),
    # the app's rules without Streamlit or the store (roles, sign-in, the data folder): above the library only
    "lab": ("db", "ui", "pages", "api", "worker", "worker_launch", "app", "streamlit", "sqlalchemy", "alembic"),
    "db": ("ui", "pages", "api", "worker", "worker_launch", "app", "streamlit"),
    # the page helpers: below the pages, beside the worker and the API
    "ui": ("pages", "api", "worker", "worker_launch", "app"),
    "pages": ("worker", "api"),
    # the HTTP API (server.py mounts it): glue like the pages, without Streamlit, and no page imports it
    "api": ("ui", "pages", "worker", "worker_launch", "app", "streamlit"),
    # the launcher starts worker.py as a process: importing it would load the worker into the app
    "worker_launch": ("worker", "pages", "app", "streamlit"),
}
# ui's floors, lowest first: a module imports only from its own floor and those below (ui/__init__.py says what
# each holds)
UI_FLOORS = ("ui.base", "ui.access", "ui.charts", "ui.views", "ui.forms", "ui.frame")
# every package and top-level module of the house: no import circle among any of their modules
HOUSE = ("pluie_core", "lab", "db", "ui", "pages", "api", "app", "server", "worker", "worker_launch")
# Wrong-way imports known and waiting for their move, as "file: import" (no line number: lines move).
# Each is a debt, not a permission: test_every_known_exception_still_exists fails once one is gone,
# so the entry is removed with the import.
KNOWN_EXCEPTIONS: set[str] = set()


@dataclass(frozen=True)
class Import:
    path: Path  # the importing file, relative to the root
    line: int
    module: str  # the absolute module imported ("db.review"; for ``from db import access``, "db.access")
    text: str  # the import as written

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def module_name(path: Path) -> str:
    """db/review.py -> db.review; db/__init__.py -> db."""
    parts = list(path.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_files(root: Path, layer: str) -> list[Path]:
    """The .py files of a layer (a package folder or a top-level module), relative to ``root``."""
    folder = root / layer
    if folder.is_dir():
        return sorted(p.relative_to(root) for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
    single = root / f"{layer}.py"
    return [single.relative_to(root)] if single.is_file() else []


def imports_of(root: Path, path: Path) -> list[Import]:
    """Every import of one file, wherever it stands in the file (functions, classes, branches)."""
    return _imports_in(root, path, (root / path).read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)  # each rule reads every file: parse each text once
def _imports_in(root: Path, path: Path, source: str) -> list[Import]:
    tree = ast.parse(source, filename=str(path))
    lines = io.StringIO(source, newline="").readlines()  # ast.get_source_segment splits the file at each call

    def segment(node: ast.stmt) -> str:
        """ast.get_source_segment(source, node): the offsets count UTF-8 bytes."""
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        start, end = node.col_offset, node.end_col_offset
        if first == last:
            return lines[first].encode()[start:end].decode()
        return (
            lines[first].encode()[start:].decode()
            + "".join(lines[first + 1 : last])
            + lines[last].encode()[:end].decode()
        )

    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.append(Import(path, node.lineno, alias.name, segment(node)))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from ..db import y
                anchor = package.split(".") if package else []
                anchor = anchor[: len(anchor) - (node.level - 1)] if node.level > 1 else anchor
                base = ".".join([*anchor, *([base] if base else [])])
            text = segment(node)
            for alias in node.names:
                # ``from db import access`` imports the module db.access when there is one
                candidate = f"{base}.{alias.name}" if base else alias.name
                target = candidate if _is_module(root, candidate) else base
                found.append(Import(path, node.lineno, target, text))
    return sorted(found, key=lambda i: (i.line, i.module))


def _is_module(root: Path, dotted: str) -> bool:
    relative = Path(*dotted.split("."))
    return (root / relative).with_suffix(".py").is_file() or (root / relative / "__init__.py").is_file()


def wrong_way_imports(root: Path) -> list[tuple[Import, str, str]]:
    """(the import, its layer, the top-level name it must not reach) of every import a layer must not make."""
    found = []
    for layer, forbidden in FORBIDDEN.items():
        for path in layer_files(root, layer):
            for imp in imports_of(root, path):
                top = imp.module.split(".")[0]
                if top in forbidden:
                    found.append((imp, layer, top))
    return found


def layer_violations(root: Path, known: frozenset[str] = frozenset()) -> list[str]:
    """One line per import a layer must not make, "file:line: the import  (what it reaches)"; those
    in ``known`` ("file: import") left out."""
    return [
        f"{imp}  ({layer} must not import {top})"
        for imp, layer, top in wrong_way_imports(root)
        if f"{imp.path}: {imp.text}" not in known
    ]


def import_cycles(root: Path, packages: tuple[str, ...] = HOUSE) -> list[str]:
    """The import cycles among the modules of ``packages`` (function-level imports included), each as
    "a -> b -> a" with the file:line of every edge."""
    modules = {module_name(p): p for package in packages for p in layer_files(root, package)}
    edges: dict[str, dict[str, Import]] = {name: {} for name in modules}
    for name, path in modules.items():
        for imp in imports_of(root, path):
            # an import of the package itself (from db import init_db) runs no sibling's code but
            # __init__'s, which is a module like the others here
            if imp.module in modules and imp.module != name:
                edges[name].setdefault(imp.module, imp)
    cycles, seen = [], set()
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                key = frozenset(cycle)
                if key not in seen:
                    seen.add(key)
                    hops = "; ".join(str(edges[a][b]) for a, b in zip(cycle, cycle[1:]))
                    cycles.append(f"{' -> '.join(cycle)}  ({hops})")
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(modules):
        if name not in state:
            visit(name)
    return cycles


def test_each_layer_imports_only_the_layers_below_it():
    problems = layer_violations(REPO, frozenset(KNOWN_EXCEPTIONS))
    assert not problems, "Imports across the layers the wrong way:\n" + "\n".join(problems)


def test_every_known_exception_still_exists():
    """A known wrong-way import that has been moved leaves the list with it."""
    found = {f"{imp.path}: {imp.text}" for imp, _, _ in wrong_way_imports(REPO)}
    gone = sorted(KNOWN_EXCEPTIONS - found)
    assert not gone, "Known exceptions no longer in the code (remove them from KNOWN_EXCEPTIONS):\n" + "\n".join(gone)


def floor_violations(root: Path) -> list[str]:
    """One line per import of a ui module that reaches a floor above its own (UI_FLOORS)."""

    def floor(module: str) -> int | None:
        return next((i for i, f in enumerate(UI_FLOORS) if module == f or module.startswith(f + ".")), None)

    found = []
    for path in layer_files(root, "ui"):
        own = floor(module_name(path))
        for imp in imports_of(root, path):
            reached = floor(imp.module)
            if own is not None and reached is not None and reached > own:
                found.append(f"{imp}  ({UI_FLOORS[own]} must not import {UI_FLOORS[reached]}, a floor above it)")
    return found


def test_the_house_has_no_import_cycle():
    cycles = import_cycles(REPO)
    assert not cycles, "Import cycles:\n" + "\n".join(cycles)


def test_each_page_helper_imports_only_its_floor_and_those_below():
    problems = floor_violations(REPO)
    assert not problems, "Page helpers importing a floor above their own:\n" + "\n".join(problems)


def test_every_module_of_ui_is_on_a_floor_and_pages_holds_page_scripts_only():
    """A newcomer tells a page from a helper by where it lives: pages/ holds the scripts of the menu, the
    labelling view and the invitation page, nothing else; every ui module is on one of the floors."""
    from ui.base.menu import MENU

    scripts = {p.stem for p in (REPO / "pages").glob("*.py")}
    assert scripts == {key for entries in MENU.values() for key, _, _ in entries} | {"annotate", "invitation"}
    assert not [p for p in (REPO / "pages").iterdir() if p.is_file() and p.suffix != ".py"]
    outside = [
        str(p)
        for p in layer_files(REPO, "ui")
        if p != Path("ui/__init__.py") and not any(module_name(p).startswith(f) for f in UI_FLOORS)
    ]
    assert not outside, outside


def test_the_layers_are_found_and_read():
    """The checks read the real tree: the layers are there, and imports of every form are seen."""
    assert (
        len(layer_files(REPO, "db")) > 10 and len(layer_files(REPO, "pages")) > 5 and len(layer_files(REPO, "ui")) > 20
    )
    assert layer_files(REPO, "pluie_core") and layer_files(REPO, "worker") == [Path("worker.py")]
    assert {Path("lab/roles.py"), Path("lab/auth.py"), Path("lab/places.py")} <= set(layer_files(REPO, "lab"))
    assert "lab.places" in {imp.module for imp in imports_of(REPO, Path("lab/auth.py"))}
    review = {imp.module for imp in imports_of(REPO, Path("db/review.py"))}
    assert {"db.access", "db.engine", "pluie_core.review"} <= review


def _plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_planted_wrong_way_import_is_caught_with_its_file_and_line(tmp_path):
    root = _plant(
        tmp_path,
        {
            "pluie_core/__init__.py": "",
            "pluie_core/stats.py": "import math\n\n\ndef f():\n    from db.analysis import frame\n    return frame\n",
            "pluie_core/sub/__init__.py": "",
            "pluie_core/sub/deep.py": "from ... import pages\n",  # relative, out of the package
            "db/__init__.py": "",
            "db/analysis.py": "import streamlit as st\n",
            "pages/__init__.py": "",
            "pages/home.py": "if True:\n    import worker\n",
            "worker.py": "",
            "pluie_core/cli.py": "from lab import places\n",  # the library reaching the app's rules
            "lab/__init__.py": "",
            "lab/places.py": "import pluie_core.io\n\n\ndef f():\n    from db.engine import read_session\n",
        },
    )
    problems = layer_violations(root)
    assert any(p.startswith("pluie_core/stats.py:5: from db.analysis import frame") for p in problems), problems
    assert any(p.startswith("db/analysis.py:1: import streamlit as st") for p in problems), problems
    assert any(p.startswith("pages/home.py:2: import worker") for p in problems), problems
    assert any(p.startswith("pluie_core/sub/deep.py:1:") and "must not import pages" in p for p in problems), problems
    assert any(p.startswith("pluie_core/cli.py:1: from lab import places") for p in problems), problems
    assert any(p.startswith("lab/places.py:5: from db.engine import read_session") for p in problems), problems
    assert len(problems) == 6, problems  # lab importing pluie_core is not one


def test_a_planted_cycle_hidden_in_a_function_is_caught(tmp_path):
    root = _plant(
        tmp_path,
        {
            "db/__init__.py": "from db.engine import init_db\n",
            "db/engine.py": "def init_db():\n    from db.datasets import tidy\n    tidy()\n",
            "db/datasets.py": "from db import engine\n\n\ndef tidy():\n    pass\n",
            "db/review.py": "from .export import pair_aggregation\n",
            "db/export.py": "from db.engine import init_db\n",  # not a cycle
        },
    )
    cycles = import_cycles(root)
    assert len(cycles) == 1, cycles
    assert cycles[0].startswith("db.engine -> db.datasets -> db.engine"), cycles
    assert "db/engine.py:2: from db.datasets import tidy" in cycles[0], cycles
    assert "db/datasets.py:1: from db import engine" in cycles[0], cycles
    # and a second, through a relative import, once export reads review back
    _plant(root, {"db/export.py": "def f():\n    from . import review\n"})
    assert any("db.export -> db.review -> db.export" in c for c in import_cycles(root)), import_cycles(root)


def test_a_planted_cycle_across_packages_and_a_floor_climbed_are_caught(tmp_path):
    root = _plant(
        tmp_path,
        {
            "ui/__init__.py": "",
            "ui/base/__init__.py": "",
            "ui/base/page.py": "def f():\n    from ui.frame import admin_page\n",  # climbs to the top floor
            "ui/frame.py": "from ui.base import page\n\n\ndef admin_page():\n    pass\n",
            "api/__init__.py": "",
            "api/app.py": "from api import routes\n",
            "api/routes.py": "def g():\n    import api.app\n",
        },
    )
    cycles = import_cycles(root)
    assert any(c.startswith("api.app -> api.routes -> api.app") for c in cycles), cycles
    assert any("ui.base.page -> ui.frame -> ui.base.page" in c for c in cycles), cycles
    floors = floor_violations(root)
    assert floors == [
        "ui/base/page.py:2: from ui.frame import admin_page  (ui.base must not import ui.frame, a floor above it)"
    ], floors


def test_the_chart_component_imports_nothing_of_the_house():
    """components/pluie_plotly, a distribution of its own (the chart component: ui.charts registers it, server.py
    serves its files through pluie_plotly.caching), imports nothing of the house: installed, it stands alone."""
    root = REPO / "components" / "pluie_plotly"
    files = layer_files(root, "pluie_plotly")
    assert {Path("pluie_plotly/__init__.py"), Path("pluie_plotly/caching.py")} <= set(files)
    reached = [str(imp) for path in files for imp in imports_of(root, path) if imp.module.split(".")[0] in HOUSE]
    assert not reached, "The chart component importing the app:\n" + "\n".join(reached)
