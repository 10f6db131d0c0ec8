"""Connecting to the store: the URL setting, engine options, sessions and migrations.

The URL comes from, in order: the argument, the PLUIE_DB_URL environment variable, the
`[database] url` of pluie_lab.toml in the working directory, and the embedded default
`sqlite:///<data dir>/pluie_lab.db` (data dir: PLUIE_DATA_DIR, default ./data). Any SQLAlchemy URL
works (PostgreSQL for teams).

A SQLite store is made readable by its owner only (0600; SQLite gives its -wal and -shm files the
same mode). A write that cannot be done because the store is busy past its busy timeout
(PLUIE_DB_BUSY_TIMEOUT seconds, default 30), full, read-only or failing raises StoreUnavailable,
whose message is one sentence for the person who asked, never the SQL or the file's path.
"""
from __future__ import annotations

import functools
import os
import stat
import threading
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, TypeVar

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InternalError, OperationalError
from sqlalchemy.orm import Session

from pluie_core.places import data_dir

CONFIG_FILE = "pluie_lab.toml"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a SQLite write waits for another's lock before giving up


def default_url() -> str:
    """The embedded store: <data dir>/pluie_lab.db."""
    return f"sqlite:///{data_dir() / 'pluie_lab.db'}"


class StoreUnavailable(RuntimeError):
    """The store could not take a write (busy, full, read-only, failing disk); the message is one
    sentence for the user. Nothing of the transaction was written."""

    def __init__(self, message: str, reason: str, busy: bool = False):
        super().__init__(message)
        self.reason = reason  # a few words: "the store is busy"
        self.busy = busy  # another writer held the lock: trying again later may work


def busy_timeout() -> float:
    """Seconds a SQLite write waits for another writer's lock: PLUIE_DB_BUSY_TIMEOUT, default 30."""
    raw = os.environ.get("PLUIE_DB_BUSY_TIMEOUT")
    try:
        seconds = float(raw) if raw else DEFAULT_BUSY_TIMEOUT
    except ValueError:
        seconds = float("nan")
    if not 0 <= seconds < 3600:
        raise ValueError(f"PLUIE_DB_BUSY_TIMEOUT must be a number of seconds from 0 to 3600, not {raw!r}.")
    return seconds


def _unavailable(exc: DBAPIError) -> Optional[StoreUnavailable]:
    """The sentence for a store that cannot take a write, or None for any other database error."""
    if not isinstance(exc, (OperationalError, InternalError)):  # a constraint, a bad value...: not the store's state
        return None
    text = str(exc.orig).lower()
    if "database is locked" in text or "table is locked" in text or "lock timeout" in text \
            or "could not obtain lock" in text:
        return StoreUnavailable(f"The store is busy: another write held it for more than {busy_timeout():g} s, "
                                "so nothing was saved; try again in a moment.", "the store is busy", busy=True)
    if "disk is full" in text or "no space left" in text:
        return StoreUnavailable("The store's disk is full, so nothing was saved: ask the person who runs "
                                "the app to free some space, then try again.", "the store's disk is full")
    if "readonly database" in text or "read-only transaction" in text:
        return StoreUnavailable("The store is read-only, so nothing was saved: ask the person who runs the "
                                "app to make it writable, then try again.", "the store is read-only")
    if "disk i/o error" in text or "unable to open database" in text:
        return StoreUnavailable("The store could not be written (a disk error), so nothing was saved: "
                                "try again, and tell the person who runs the app if it happens again.",
                                "the store could not be written")
    return None


def _owner_only(path: Path) -> None:
    """Make a SQLite file (and its -wal / -shm) readable and writable by its owner only: created
    with mode 0600 when new (SQLite then gives its -wal and -shm the same mode), tightened when an
    older one is open to others."""
    if not path.parent.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        pass
    except OSError:  # a folder SQLite cannot write either: it says so when connecting
        return
    for name in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        try:
            if name.stat().st_mode & 0o077 and name.stat().st_uid == os.getuid():
                name.chmod(stat.S_IRUSR | stat.S_IWUSR)
        except OSError:  # absent, or not ours to change
            pass


def database_url(url: Optional[str] = None) -> str:
    if url:
        return url
    if os.environ.get("PLUIE_DB_URL"):
        return os.environ["PLUIE_DB_URL"]
    config = Path(CONFIG_FILE)
    if config.is_file():
        with config.open("rb") as fh:
            configured = tomllib.load(fh).get("database", {}).get("url")
        if configured:
            return configured
    return default_url()


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


def make_engine(url: Optional[str] = None) -> Engine:
    """An engine with the settings the app relies on. For SQLite: WAL (readers never wait for
    the worker's writes), foreign keys on, a busy timeout, and transactions that begin
    IMMEDIATE when asked (see write_session) so that read-then-write claims never deadlock."""
    url = database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True)

    if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
        _owner_only(Path(parsed.database))
    timeout = busy_timeout()
    # isolation_level=None hands transaction control to the events below (SQLAlchemy's
    # documented recipe for pysqlite), so BEGIN is emitted by us, when we want it.
    engine = create_engine(url, connect_args={"timeout": timeout, "check_same_thread": False,
                                              "isolation_level": None})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")

    return engine


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    with Session(engine, expire_on_commit=False) as session:
        yield session


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One transaction that commits at the end, or rolls everything back on any error:
    nothing is ever half-written. On SQLite it takes the write lock at BEGIN. A store that cannot
    take the write (busy past its timeout, full, read-only) raises StoreUnavailable."""
    try:
        with engine.connect() as connection:
            if is_sqlite(engine):
                connection = connection.execution_options(sqlite_begin="IMMEDIATE")
            with Session(bind=connection, expire_on_commit=False) as session:
                try:
                    yield session
                    session.commit()
                except BaseException:
                    session.rollback()
                    raise
    except DBAPIError as exc:
        unavailable = _unavailable(exc)
        if unavailable is None:
            raise
        raise unavailable from None


Result = TypeVar("Result")


def retry_when_busy(fn: Callable[..., Result], attempts: int = 2, pause: float = 0.5) -> Callable[..., Result]:
    """`fn` (one write transaction of its own) tried again, after a short pause, when the store was
    busy past its timeout: `attempts` tries in all, so a write waits at most about
    attempts × the busy timeout before its StoreUnavailable reaches the user."""
    @functools.wraps(fn)
    def tried(*args, **kwargs):
        for attempt in range(attempts):
            try:
                return fn(*args, **kwargs)
            except StoreUnavailable as exc:
                if not exc.busy or attempt == attempts - 1:
                    raise
                time.sleep(pause)
    return tried


def alembic_config(engine: Engine):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


# Alembic keeps the running migration's context in module globals (alembic.context, alembic.op): two
# threads of one process migrating at once (two stores opened together, or a page's first read on the
# app's read-ahead thread while another thread opens a store) overwrite each other's and fail with a
# KeyError. One at a time per process, then; another process is kept out by the database's own locks.
_MIGRATING = threading.Lock()


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to the newest revision (or to ``revision``: the tests build older stores
    this way). Run at every start: a user's database is upgraded in place, never recreated. Every
    migration of the process goes through here, one at a time (_MIGRATING)."""
    from alembic import command

    with _MIGRATING:
        command.upgrade(alembic_config(engine), revision)


def init_db(url: Optional[str] = None) -> Engine:
    engine = make_engine(url)
    migrate(engine)
    return engine
