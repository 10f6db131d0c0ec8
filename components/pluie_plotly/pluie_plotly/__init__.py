"""PLUIE Lab's chart component, a packaged st.components.v2 component (declared in ../pyproject.toml): Streamlit
finds it through the installed distribution (make install: editable, from the checkout) and serves ASSETS at
/_stcore/bidi-components/COMPONENT/. ASSETS holds the module that draws a figure in the page (MODULE) and the
plotly.js it draws with (BUNDLE: the traces the pages draw, built by scripts/plotly_bundle). ui.charts registers
the component with MODULE and draws every figure with it; this package imports nothing of the app."""

from pathlib import Path

COMPONENT = "pluie-plotly.chart"  # the project's name and its component's (pyproject.toml), as Streamlit names it
ASSETS = Path(__file__).parent / "frontend"  # pyproject.toml's asset_dir
MODULE = "plotly_chart.js"  # the component's JavaScript, relative to ASSETS
BUNDLE = "plotly.pluie.min.js"  # plotly.js, relative to ASSETS: MODULE loads it from beside itself
