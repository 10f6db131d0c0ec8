"""The store and the files the app writes (issue 23, items 5 and 9): the SQLite store is its owner's
only and lives in the data folder; a busy, full or read-only store answers with one sentence and
writes nothing; a dataset is published only inside the folders the app may write to."""

from __future__ import annotations

import os
import sqlite3
import stat

import pandas as pd
import pytest

from db import init_db
from db.datasets import import_pairs
from db.engine import StoreUnavailable, retry_when_busy
from db.publish import PublishError, publish_dataset
from lab.places import publish_roots
from tests.test_publish import build, export_page


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_store_is_made_owner_only_in_the_data_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLUIE_DB_URL", raising=False)
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path / "elsewhere"))
    old = os.umask(0o022)  # the usual umask, which left the store readable by everyone (0644)
    try:
        engine = init_db()
        import_pairs(engine, "toy", pd.DataFrame({"source": ["a"], "hypothesis": ["b"]}))
        store = tmp_path / "elsewhere" / "pluie_lab.db"
        assert store.is_file() and not (tmp_path / "data").exists()  # PLUIE_DATA_DIR moves the store
        files = [store, *(p for p in (tmp_path / "elsewhere").glob("pluie_lab.db-*"))]
        assert {p.name for p in files} >= {"pluie_lab.db", "pluie_lab.db-wal", "pluie_lab.db-shm"}  # WAL open
        assert {p.name: mode(p) for p in files} == {p.name: 0o600 for p in files}
        assert mode(tmp_path / "elsewhere") == 0o700
        engine.dispose()

        # a store made before this release, open to everyone, is tightened when opened
        older = tmp_path / "older.db"
        sqlite3.connect(older).close()
        older.chmod(0o644)
        init_db(f"sqlite:///{older}").dispose()
        assert mode(older) == 0o600
    finally:
        os.umask(old)


def test_publishing_from_the_page_stays_inside_the_allowed_folders(engine, tmp_path, monkeypatch):
    build(engine)
    data = tmp_path / "data"
    data.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (data / "link").symlink_to(outside)  # a link inside the data folder that leads out of it
    monkeypatch.setenv("PLUIE_DATA_DIR", str(data))
    monkeypatch.delenv("PLUIE_PUBLISH_DIRS", raising=False)
    monkeypatch.chdir(tmp_path)
    roots = publish_roots()
    for folder, message in [
        (data / ".." / "outside" / "x", "outside the folders the app may write to"),
        (outside / "x", "outside the folders"),
        ("/etc/pluie", "outside the folders"),
        (data / "link" / "x", "outside the folders"),
        (data / "link", "is a symbolic link"),
        (data, "outside the folders"),  # the data folder itself holds the store
        ("", "Name the folder"),
    ]:
        with pytest.raises(PublishError, match=message):
            publish_dataset(engine, folder, licence="mit", n_boot=20, within=roots)
    assert list(outside.iterdir()) == [] and sorted(p.name for p in data.iterdir()) == ["link"]

    done = publish_dataset(engine, "data/published/ok", licence="mit", n_boot=20, within=roots)  # relative: cwd
    assert done.folder == data.resolve() / "published" / "ok" and (done.folder / "README.md").is_file()
    monkeypatch.setenv("PLUIE_PUBLISH_DIRS", f"{outside}{os.pathsep}/nonexistent")  # the configuration opens one more
    done = publish_dataset(engine, outside / "x", licence="mit", n_boot=20, within=publish_roots())
    assert (done.folder / "README.md").is_file()

    # a folder that cannot be written (here /proc, read-only even for root): a sentence, nothing left
    with pytest.raises(PublishError, match=r"^The folder /proc/pluie-x cannot be written \(.+\)\.$"):
        publish_dataset(engine, "/proc/pluie-x", licence="mit", n_boot=20)


def test_the_export_page_refuses_a_folder_outside_the_data_folder(engine, db_url, tmp_path, monkeypatch):
    build(engine)
    at = export_page(db_url, tmp_path, monkeypatch)
    at.text_input[0].set_value(str(tmp_path / "data" / ".." / "stolen"))
    at.text_input[2].set_value("cc-by-4.0")
    at.button[0].click()
    at.run()
    assert not at.exception, at.exception
    assert "is outside the folders the app may write to" in at.error[0].value
    assert not (tmp_path / "stolen").exists()


# ------------------------------------------------------------------ a busy, full or read-only store


@pytest.fixture
def quick_store(tmp_path, monkeypatch):
    """A real SQLite file whose writes give up on a held lock after 0.2 s (instead of 30)."""
    monkeypatch.setenv("PLUIE_DB_BUSY_TIMEOUT", "0.2")
    path = tmp_path / "store.db"
    engine = init_db(f"sqlite:///{path}")
    yield engine, path
    engine.dispose()


def held_lock(path):
    """A second connection that holds the store's write lock (BEGIN EXCLUSIVE) until closed."""
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    return other


def test_a_write_past_the_busy_timeout_is_one_sentence_and_writes_nothing(quick_store):
    engine, path = quick_store
    frame = pd.DataFrame({"source": ["a", "c"], "hypothesis": ["b", "d"]})
    other = held_lock(path)
    try:
        with pytest.raises(
            StoreUnavailable,
            match=r"^The store is busy: another write held it for more than 0\.2 s, "
            r"so nothing was saved; try again in a moment\.$",
        ) as caught:
            import_pairs(engine, "toy", frame)
        assert caught.value.busy and "pluie_lab" not in str(caught.value) and "store.db" not in str(caught.value)
    finally:
        other.rollback()
        other.close()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM datasets").scalar() == 0  # all or nothing
    import_pairs(engine, "toy", frame)  # the lock gone, the same import goes through whole
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT COUNT(*) FROM pairs").scalar() == 2


def test_a_busy_write_is_tried_again_once_the_lock_is_gone(quick_store):
    engine, path = quick_store
    other = held_lock(path)
    tries = []

    def add_dataset():
        tries.append(1)
        if len(tries) == 2:  # the holder lets go between the two tries
            other.rollback()
        import_pairs(engine, "x", pd.DataFrame({"source": ["a"], "hypothesis": ["b"]}))

    try:
        retry_when_busy(add_dataset, attempts=2, pause=0.05)()
    finally:
        other.close()
    assert len(tries) == 2
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT name FROM datasets").scalars().all() == ["x"]


def test_a_full_or_read_only_store_is_one_sentence(quick_store):
    engine, path = quick_store
    import_pairs(engine, "first", pd.DataFrame({"source": ["a"], "hypothesis": ["b"]}))
    readonly = init_db(f"sqlite:///file:{path}?mode=ro&uri=true")
    with pytest.raises(StoreUnavailable, match=r"^The store is read-only, so nothing was saved"):
        import_pairs(readonly, "second", pd.DataFrame({"source": ["c"], "hypothesis": ["d"]}))
    readonly.dispose()

    with engine.connect() as conn:
        pages = conn.exec_driver_sql("PRAGMA page_count").scalar()
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _tiny(dbapi_connection, _record):  # a disk with no room left for this store
        dbapi_connection.execute(f"PRAGMA max_page_count={pages}")

    engine.dispose()
    long = pd.DataFrame({"source": ["x" * 5000] * 50, "hypothesis": [f"y{i}" for i in range(50)]})
    with pytest.raises(StoreUnavailable, match=r"^The store's disk is full, so nothing was saved"):
        import_pairs(engine, "big", long)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT name FROM datasets").scalars().all() == ["first"]


def test_an_annotator_whose_answer_meets_a_locked_store_keeps_it_on_screen_and_sends_it_again(quick_store, monkeypatch):
    """The second connection holds the lock past the busy timeout (and the one retry): the page says
    so in one sentence, shows the same pair with its answers, and the same key then saves it."""
    from streamlit.testing.v1 import AppTest

    from db import annotators, serving
    from db import campaigns as camp
    from tests.annotation_fixtures import make_dataset, numbered_pairs
    from tests.paths import REPO

    engine, path = quick_store
    ds, _ = make_dataset(engine, "demo", numbered_pairs(5))
    cid = camp.create_campaign(engine, "Pilot", [ds], quota=2, n_training=0)
    aid, token = annotators.create_annotator(engine, cid, "ann")
    annotators.set_annotator_profile(engine, aid, "Ann", "good")
    monkeypatch.setenv("PLUIE_DB_URL", f"sqlite:///{path}")
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=30)
    at.query_params["token"] = token
    at.run()
    shown = [h.proto.body for h in at.html if "pluie-pair" in h.proto.body and "<style>" not in h.proto.body]
    other = held_lock(path)
    try:
        at.button(key="answer-3-0").click().run()
    finally:
        other.rollback()
        other.close()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "Your answer “Same meaning” was not saved because the store is busy: press it again in a moment."
    ]
    assert [h.proto.body for h in at.html if "pluie-pair" in h.proto.body and "<style>" not in h.proto.body] == shown
    assert serving.progress(engine, aid).done == 0
    at.button(key="answer-3-0").click().run()  # the same pair, the same key: saved now
    assert not at.error and serving.progress(engine, aid).done == 1


def test_stores_opened_on_several_threads_at_once_are_all_migrated(tmp_path):
    """Alembic keeps a running migration's context in module globals: threads of one process that
    open fresh stores at the same moment (the app's read-ahead thread and a page, or two sessions'
    first runs) must each get a fully migrated store, not a KeyError from the other's context."""
    import threading

    from sqlalchemy import inspect as schema

    from db import init_db

    urls = [f"sqlite:///{tmp_path / f'store{i}.db'}" for i in range(8)]
    start, errors, engines = threading.Barrier(len(urls)), [], []

    def open_store(url):
        start.wait()
        try:
            engines.append(init_db(url))
        except Exception as error:  # noqa: BLE001 - collected and reported below
            errors.append(error)

    threads = [threading.Thread(target=open_store, args=(url,)) for url in urls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    assert len(engines) == len(urls)
    for engine in engines:
        assert {"pairs", "labels", "campaigns"} <= set(schema(engine).get_table_names())
        engine.dispose()


MIGRATE_AT_ONCE = """
import sys, time
sys.path.insert(0, sys.argv[1])
from db import init_db
start = float(sys.argv[3])
while time.time() < start:
    time.sleep(0.001)
init_db(sys.argv[2]).dispose()
print("migrated")
"""


def test_processes_that_open_a_new_store_at_once_all_migrate_it(tmp_path):
    """The app's read-ahead, a worker and a command starting beside it each migrate the store they open: on a new
    store they did so at the same moment, and SQLite refused the second ("database is locked" on an ALTER TABLE)
    until each migrating process waited for the others (db.engine._store_migration_lock: a lock file beside a
    SQLite store; an advisory lock on PostgreSQL, which every PostgreSQL test's store takes)."""
    import subprocess
    import sys
    import time

    from sqlalchemy import inspect as schema

    from tests.paths import REPO

    url = f"sqlite:///{tmp_path / 'new.db'}"
    at = time.time() + 4  # every process past its imports, then all at once
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", MIGRATE_AT_ONCE, str(REPO), url, str(at)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    results = [process.communicate(timeout=180) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, [err[-2000:] for _, err in results]
    assert all(out.strip() == "migrated" for out, _ in results)
    engine = init_db(url)
    try:
        assert "kept_values" in schema(engine).get_table_names()
    finally:
        engine.dispose()
