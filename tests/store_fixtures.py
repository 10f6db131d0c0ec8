"""Stores for the queue and worker tests: a real SQLite file, and a real PostgreSQL database.

PostgreSQL comes from PLUIE_TEST_POSTGRES_URL (CI) or from a throwaway cluster this module starts
with scripts/start_test_postgres.sh; the PostgreSQL cases skip only when neither is possible.
Each test gets a fresh database. conftest.py registers the fixtures for every test module.
app_store opens the app (AppTest) on a test's SQLite store; open_page, rerun, texts and widget are the
page helpers the tests of several modules share on it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.browser import free_port
from tests.paths import REPO

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a PostgreSQL server's maintenance database, or a skip."""
    if os.environ.get("PLUIE_TEST_POSTGRES_URL"):
        yield os.environ["PLUIE_TEST_POSTGRES_URL"]
        return
    if not shutil.which("runuser") and os.geteuid() == 0:
        pytest.skip("no way to start PostgreSQL as a non-root user")
    # not under pytest's tmp root: that is private to this user, and the server runs as "postgres"
    directory = Path(tempfile.mkdtemp(prefix="pluie-test-pg-"))
    started = subprocess.run(
        [str(REPO / "scripts" / "start_test_postgres.sh"), str(free_port()), str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if started.returncode != 0:
        pytest.skip(f"no PostgreSQL server could be started: {started.stderr.strip()[-300:]}")
    try:
        yield started.stdout.strip().splitlines()[-1]
    finally:
        pid_file = directory / "data" / "postmaster.pid"
        if pid_file.exists():
            pid = int(pid_file.read_text().splitlines()[0])
            os.kill(pid, signal.SIGINT)  # fast shutdown
            for _ in range(100):
                if not pid_file.exists():
                    break
                time.sleep(0.1)
        shutil.rmtree(directory, ignore_errors=True)


def fresh_postgres_database(server_url: str, template: str | None = None) -> str:
    """Create an empty database on the server (or a copy of the database ``template``) and return its URL."""
    name = f"pluie_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
    admin.dispose()
    return make_url(server_url).set(database=name).render_as_string(hide_password=False)


def drop_postgres_database(server_url: str, url: str) -> None:
    admin = create_engine(server_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)'))
    admin.dispose()


@pytest.fixture(scope="session")
def migrated_postgres_template(postgres_server):
    """The name of a PostgreSQL database that init_db brought from empty to the newest revision, once
    per session: store_url's databases are created from it (CREATE DATABASE ... TEMPLATE)."""
    from db import init_db

    url = fresh_postgres_database(postgres_server)
    init_db(url).dispose()  # no connection left open: PostgreSQL copies a template nobody is using
    yield make_url(url).database
    drop_postgres_database(postgres_server, url)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_url(request, tmp_path):
    """A fresh store URL: a SQLite file, then a PostgreSQL database, each a copy of one that init_db
    migrated from empty in this session (the tests open it with init_db, which finds it at the newest
    revision; the migrations take about half a second a store, a second on PostgreSQL)."""
    if request.param == "sqlite":
        shutil.copyfile(request.getfixturevalue("migrated_sqlite_file"), tmp_path / "store.db")
        yield f"sqlite:///{tmp_path / 'store.db'}"
        return
    server = request.getfixturevalue("postgres_server")
    url = fresh_postgres_database(server, template=request.getfixturevalue("migrated_postgres_template"))
    try:
        yield url
    finally:
        drop_postgres_database(server, url)


@pytest.fixture
def sqlite_url(tmp_path):
    return f"sqlite:///{tmp_path / 'store.db'}"


def add_pairs(engine, name: str, pairs: list[tuple[str, str]]) -> list[int]:
    """Import (source, hypothesis) pairs into a dataset through the app's own import (pairs and
    queued work in one transaction); returns the ids of the dataset's pairs."""
    import pandas as pd
    from sqlalchemy import select

    from db.datasets import import_pairs
    from db.engine import read_session
    from db.models import Dataset, Pair

    import_pairs(engine, name, pd.DataFrame(pairs, columns=["source", "hypothesis"]), append=True)
    with read_session(engine) as session:
        return list(session.scalars(select(Pair.id).join(Dataset).where(Dataset.name == name).order_by(Pair.id)))


def sentence_pairs(n: int, seed: int = 0) -> list[tuple[str, str]]:
    """n distinct, varied (source, hypothesis) pairs."""
    import random

    rng = random.Random(seed)
    words = (
        "cat dog water milk mouse soup tomato river house garden small big red quickly slowly "
        "drinks eats sees runs the a on in near old new"
    ).split()
    pairs = []
    for i in range(n):
        source = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + f" {i}"
        hypothesis = " ".join(rng.choice(words) for _ in range(rng.randint(3, 12))) + f" {i}"
        pairs.append((source, hypothesis))
    return pairs


def load_sqlite_copy(engine, path) -> None:
    """Copy the SQLite store at ``path`` (closed, its WAL checkpointed) into ``engine``'s store through
    the engine's own connection (SQLite's online backup, page by page): the same rows and ids, for
    tests that each want their own copy of a store built once."""
    import sqlite3

    source, raw = sqlite3.connect(path), engine.raw_connection()
    try:
        source.backup(raw.driver_connection)
    finally:
        raw.close()
        source.close()


@pytest.fixture
def app_store(db_url, engine, monkeypatch):
    """The app (AppTest) opened on this test's SQLite store: no worker started, no organiser password,
    the pages' cached engine and data cleared before and after (they are cached per process)."""
    import streamlit as st

    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    st.cache_resource.clear()
    st.cache_data.clear()
    yield engine
    st.cache_resource.clear()
    st.cache_data.clear()


# the app on app_store's store, a page at a time: opened as the menu opens it, rerun, read


def open_page(page: str) -> AppTest:
    """app.py run on the test's store (the app_store fixture), then pages/<page>.py, as the menu opens it."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=60)
    at.run()
    at.switch_page(f"pages/{page}.py")
    at.run()
    assert not at.exception, at.exception
    return at


def rerun(at: AppTest) -> AppTest:
    at.run()
    assert not at.exception, at.exception
    return at


def texts(at: AppTest) -> str:
    """The text a page shows: its markdown, captions, messages, titles and progress bars."""
    parts = [
        e.value
        for kind in ("markdown", "caption", "error", "success", "info", "warning", "title", "subheader")
        for e in at.get(kind)
        if isinstance(getattr(e, "value", None), str)
    ]
    parts += [str(getattr(p, "proto", "")) for p in at.get("progress")]
    return "\n".join(parts)


def widget(elements, label):
    return next(w for w in elements if w.label == label)


def score_everything(engine, run_id: int) -> None:
    """Score the run to its end with the worker, in this process."""
    from worker import ScoringWorker

    ScoringWorker(engine, device="cpu", run_ids=[run_id], poll_seconds=0.1).run(exit_when_idle=True)


def n_runs(engine) -> int:
    from sqlalchemy import func, select

    from db.engine import read_session
    from db.models import ScoreRun

    with read_session(engine) as session:
        return session.scalar(select(func.count(ScoreRun.id)))


def page_store_copy(engine, built_store, db_url: str, monkeypatch):
    """A page test's own copy of a store built once per module (``built_store``: (path, what its builder
    returned)): the copy loaded into ``engine``, the app pointed at it (no worker, no admin password, run from
    the checkout), and a deep copy of what the builder returned."""
    import copy

    from tests.paths import REPO

    path, built = built_store
    load_sqlite_copy(engine, path)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    monkeypatch.chdir(REPO)
    return copy.deepcopy(built)
