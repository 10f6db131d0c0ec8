"""PLUIE Lab's chart component, a packaged st.components.v2 component (declared in ../pyproject.toml): Streamlit
finds it through the installed distribution (make install: editable, from the checkout) and serves ASSETS at
/_stcore/bidi-components/COMPONENT/. ASSETS holds the module that draws a figure in the page (MODULE) and the
plotly.js it draws with (BUNDLE: the traces the pages draw, built by scripts/plotly_bundle). ui.charts registers
the component with MODULE and draws every figure with it; this package imports nothing of the app."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

COMPONENT = "pluie-plotly.chart"  # the project's name and its component's (pyproject.toml), as Streamlit names it
ASSETS = Path(__file__).parent / "frontend"  # pyproject.toml's asset_dir
MODULE = "plotly_chart.js"  # the component's JavaScript, relative to ASSETS
BUNDLE = "plotly.pluie.min.js"  # plotly.js, relative to ASSETS: MODULE loads it from beside itself
_digests: dict[tuple[str, int, int], str] = {}  # (file, mtime_ns, size) -> its digest, read once


def digest(name: str) -> str | None:
    """A hash of ASSETS' file ``name`` as it is now (hex); None for any other name (a folder, a path, nothing).
    The bundle's address carries its digest (ui.charts.PLOTLY_JS: ?v=), so a rebuilt bundle is a new address."""
    if not name or "/" in name or "\\" in name or name.startswith("."):
        return None
    path = ASSETS / name
    try:
        stat = os.stat(path)
    except OSError:
        return None
    if not path.is_file():
        return None
    key = (name, stat.st_mtime_ns, stat.st_size)
    if key not in _digests:
        _digests[key] = hashlib.blake2b(path.read_bytes(), digest_size=16).hexdigest()
    return _digests[key]
