"""lab: the app's own rules, with neither Streamlit nor the store: accounts' roles (``lab.roles``), sign-in
(``lab.auth``: personal-link tokens, the admin password, session tokens, the login throttle, the client's
address), the data folder and the folders the pages may write to (``lab.places``), names that read the same
(``lab.lookalike``), the Scoring page's model for this machine's GPUs (``lab.hardware``) and a run's time left
(``lab.time_left``).

Pure rules the store (db/), the HTTP API (api/), the pages, the worker and scripts/serve.py share, testable
without a database. They are PLUIE Lab's, not the metric's: they live beside pluie_core, not in it, so the
library's wheel (``pip install .``) holds none of them. lab may import pluie_core; pluie_core never imports
lab, and lab imports neither db, pages, the worker nor Streamlit (tests/test_layers.py).
"""
