import os

import pytest

# shared fixtures, registered once for the whole session (a session fixture imported into several
# modules would run once per module): browser + app_server, tiny models, the SQLite/PostgreSQL stores
pytest_plugins = ["tests.browser", "tests.tiny_models", "tests.store_fixtures"]

# keep torch and BLAS from fighting over the two cores the suite runs on
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# a fresh store started like `make run` gets no demo PLUIE run (a real 135M model to load and score):
# only the tests of that run (test_demo_judge.py) ask for it
os.environ.setdefault("PLUIE_DEMO_RUN", "0")


@pytest.fixture
def db_url(tmp_path):
    """A real SQLite file, fresh for each test."""
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture
def engine(db_url):
    from db import init_db

    engine = init_db(db_url)
    yield engine
    engine.dispose()
