"""The page helpers: what the pages of pages/ draw with, in floors (each imports only its own floor and those
below it; tests/test_layers.py checks it):

- ui.base: the ground floor. The store's engine, the guard every page runs in, user_text (the one way user text is
  shown), scripts in the page, the menu's entries, and Streamlit's private objects the app relies on (one module).
- ui.access: who is using the app and what the app keeps for them. Sign-in (password, identity provider), the
  session cookie's server routes, and the memory of half-filled forms (keep: per account, else per browser).
- ui.charts: the analysis charts, drawn by the plotly component (components/pluie_plotly, a packaged Streamlit
  component: its module and the plotly.js bundle are its assets).
- ui.views: the analysis pages' reads, each cached per store state (store_reads, the pages' *_cache modules),
  the scope and selection of their sidebars, their tables, the read-only sections of Correlation and of Review's
  pair, and the read-ahead that fills the caches.
- ui.forms: forms and panels the pages draw: the new-run forms, the gold keys, the live view and quality
  settings, the New campaign form and a campaign's sections, the labelling view's parts, Import's file and
  import, Export's aggregation and publish form, Review's decision, Scorecard's benchmark forms, "why this score".
- ui.frame: the top floor, the first line of every page (admin_page, annotator_page) and the preloading of the
  browser's table and chart code.

No Streamlit page lives here: Streamlit serves a folder named pages/ file by file, and a helper there could be
opened by its address. Layers: pluie_core <- db <- ui <- pages (docs/architecture.md).
"""
