import os
import shutil
from pathlib import Path

import pytest

# shared fixtures, registered once for the whole session (a session fixture imported into several
# modules would run once per module): browser + app_server, tiny models, the SQLite/PostgreSQL stores,
# the analysis tests' built store, the demo judge's weights
pytest_plugins = [
    "tests.browser",
    "tests.tiny_models",
    "tests.store_fixtures",
    "tests.analysis_store",
    "tests.demo_model",
]

# keep torch and BLAS from fighting over the two cores the suite runs on
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# a fresh store started like `make run` gets no demo PLUIE run (a real 135M model to load and score):
# only the tests of that run (test_demo_judge.py) ask for it
os.environ.setdefault("PLUIE_DEMO_RUN", "0")
# passwords hashed at bcrypt's lowest cost (lab.auth.bcrypt_rounds), here and in the servers and
# commands the tests start: still real hashes, checked for real, in a millisecond instead of a quarter of a
# second (the suite made a few hundred). tests/test_accounts.py checks the default cost on its own.
os.environ.setdefault("PLUIE_BCRYPT_ROUNDS", "4")


def pytest_configure(config):
    # the app's servers the tests start are children of a parent with Streamlit and the pages' libraries
    # imported once (tests/preloaded.py, tests/browser.py); benchmarks start theirs as a person does
    import tests.browser

    tests.browser.PRELOADED_SERVERS = True


@pytest.fixture(scope="session", autouse=True)
def component_scan_once_per_process():
    """Each AppTest scans the installed distributions for Streamlit components on its first run (parsing the
    metadata of every package: about 0.25 s on an idle core, 40 % of an AppTest module's time under the suite).
    The packages installed do not change while the tests run, so the real scan is made once per test process
    and each AppTest registers its result, as a server does once at its start."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    once = functools.cache(scan)
    manifest_scanner.scan_component_manifests = lambda max_workers=None: list(once())
    yield
    manifest_scanner.scan_component_manifests = scan


@pytest.fixture(scope="session", autouse=True)
def store_operator_from_the_start():
    """The operator installed before any fixture of a wider scope than a test's (a module's store built before
    the first test of its process: with store_operator alone, it wrote with nothing installed and was refused)."""
    from db import access

    access.install_operator()


@pytest.fixture(autouse=True)
def store_operator():
    """Each test starts as the store's own operator (db.access.install_operator()), as the worker and the command
    line say at their start: a test's direct calls to the store are allowed and named by nobody. An app run in
    this process (AppTest) installs the app's writer; the next test starts as the operator again."""
    from db import access

    access.install_operator()
    yield
    access.install_operator()


@pytest.fixture
def db_url(tmp_path):
    """A real SQLite file, fresh for each test."""
    return f"sqlite:///{tmp_path / 'store.db'}"


@pytest.fixture(scope="session")
def migrated_sqlite_file(tmp_path_factory):
    """A SQLite file that init_db brought from empty to the newest revision, once per session
    (the migrations take about half a second; a few hundred tests want a fresh store)."""
    from db import init_db

    path = tmp_path_factory.mktemp("migrated") / "template.db"
    init_db(f"sqlite:///{path}").dispose()  # the last connection closed: the WAL is checkpointed and gone
    assert not Path(f"{path}-wal").exists()
    return path


@pytest.fixture(scope="session")
def migrated_copy(migrated_sqlite_file):
    """``migrated_copy(url)``: a copy of the session's migrated SQLite file put at a sqlite:/// ``url`` (a store
    that init_db then finds at the newest revision), for the fixtures that open a store of their own; ``url``.
    A store already at ``url`` is left as it is: a test asking for ``engine`` (or a store fixture built on it) and
    ``app_server`` gets the app serving the store its first fixture filled, not an empty copy written over it
    while that fixture's connection is open."""

    def place(url: str) -> str:
        path = Path(url.removeprefix("sqlite:///"))
        if not path.exists():
            shutil.copyfile(migrated_sqlite_file, path)
        return url

    return place


@pytest.fixture
def engine(db_url, migrated_copy):
    """The store at db_url, migrated: a copy of the session's freshly migrated file, opened by
    init_db like any store (it checks the revision, finds it at head and sets the file mode). The
    migrations from an empty file are run by the tests that call init_db themselves."""
    from db import init_db

    engine = init_db(migrated_copy(db_url))
    yield engine
    engine.dispose()


@pytest.fixture(autouse=True)
def _no_page_error(request):
    """A page that raises shows one sentence (ui.base.page.run_page) instead of a stack trace, so an
    AppTest's `not at.exception` would no longer see it: any page error logged during a test fails
    that test, unless it is marked page_error (a test of the guard itself)."""
    import logging

    class Collect(logging.Handler):
        def __init__(self):
            super().__init__(logging.ERROR)
            self.records = []

        def emit(self, record):
            self.records.append(record)

    collect, logger = Collect(), logging.getLogger("pluie_lab.pages")
    logger.addHandler(collect)
    yield collect.records
    logger.removeHandler(collect)
    if collect.records and request.node.get_closest_marker("page_error") is None:
        record = collect.records[0]
        detail = logging.Formatter().formatException(record.exc_info) if record.exc_info else ""
        pytest.fail(f"a page raised: {record.getMessage()}\n{detail}", pytrace=False)
