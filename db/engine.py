"""Connecting to the store: the URL setting, engine options, sessions and migrations.

The URL comes from, in order: the argument, the PLUIE_DB_URL environment variable, the
`[database] url` of pluie_lab.toml in the working directory, and the embedded default
`sqlite:///<data dir>/pluie_lab.db` (data dir: PLUIE_DATA_DIR, default ./data). Any SQLAlchemy URL
works (PostgreSQL for teams).

A SQLite store is made readable by its owner only (0600; SQLite gives its -wal and -shm files the
same mode). A write that cannot be done because the store is busy past its busy timeout
(PLUIE_DB_BUSY_TIMEOUT seconds, default 30), full, read-only or failing raises StoreUnavailable,
whose message is one sentence for the person who asked, never the SQL or the file's path; so does
any read or write that finds the store's server gone (refused, dropped, timed out).
"""

from __future__ import annotations

import functools
import os
import re
import stat
import threading
import time
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, TypeVar

from sqlalchemy import Engine, String, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, InternalError, OperationalError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.orm import Session
from sqlalchemy.sql.functions import GenericFunction

from lab.places import data_dir

CONFIG_FILE = "pluie_lab.toml"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
DEFAULT_BUSY_TIMEOUT = 30.0  # seconds a SQLite write waits for another's lock before giving up


def default_url() -> str:
    """The embedded store: <data dir>/pluie_lab.db."""
    return f"sqlite:///{data_dir() / 'pluie_lab.db'}"


class StoreUnavailable(RuntimeError):
    """The store could not take a write (busy, full, read-only, failing disk), or its server could not
    be reached for a read or a write; the message is one sentence for the user. Nothing of the
    transaction was written (unless the server went away during the commit itself: then it cannot tell)."""

    def __init__(self, message: str, reason: str, busy: bool = False, transient: bool = False):
        super().__init__(message)
        self.reason = reason  # a few words: "the store is busy"
        self.busy = busy  # another writer held the lock: trying again later may work
        self.transient = busy or transient  # trying again in a moment may work (busy, or its server gone)


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


# what the drivers say when the store's server is gone: refused, dropped, timed out, shutting down (psycopg 3
# and 2); SQLAlchemy also marks an error that cost it its connection (connection_invalidated)
_LOST = re.compile(
    r"connection failed|connection refused|could not connect|server closed the connection"
    r"|connection (is|already) closed|consuming input failed|sending query failed"
    r"|could not (receive|send) data|timeout expired|connection timed out|connection reset"
    r"|terminating connection|database system is (shutting down|starting up|in recovery)"
    r"|could not translate host name|no route to host|network is unreachable|ssl syscall error"
)


def _unreachable(exc: DBAPIError) -> Optional[StoreUnavailable]:
    """The sentence for a store whose server cannot be reached, or None for any other database error."""
    if not (
        exc.connection_invalidated
        or (isinstance(exc, (OperationalError, InterfaceError)) and _LOST.search(str(exc.orig).lower()))
    ):
        return None
    return StoreUnavailable(
        "The store cannot be reached just now: try again in a moment, and tell the person "
        "who runs the app if it lasts.",
        "the store cannot be reached",
        transient=True,
    )


def _unavailable(exc: DBAPIError) -> Optional[StoreUnavailable]:
    """The sentence for a store that cannot take a write, or None for any other database error."""
    lost = _unreachable(exc)
    if lost is not None:
        return lost
    if not isinstance(exc, (OperationalError, InternalError)):  # a constraint, a bad value...: not the store's state
        return None
    text = str(exc.orig).lower()
    if (
        "database is locked" in text
        or "table is locked" in text
        or "lock timeout" in text
        or "could not obtain lock" in text
    ):
        return StoreUnavailable(
            f"The store is busy: another write held it for more than {busy_timeout():g} s, "
            "so nothing was saved; try again in a moment.",
            "the store is busy",
            busy=True,
        )
    if "disk is full" in text or "no space left" in text:
        return StoreUnavailable(
            "The store's disk is full, so nothing was saved: ask the person who runs "
            "the app to free some space, then try again.",
            "the store's disk is full",
        )
    if "readonly database" in text or "read-only transaction" in text:
        return StoreUnavailable(
            "The store is read-only, so nothing was saved: ask the person who runs the "
            "app to make it writable, then try again.",
            "the store is read-only",
        )
    if "disk i/o error" in text or "unable to open database" in text:
        return StoreUnavailable(
            "The store could not be written (a disk error), so nothing was saved: "
            "try again, and tell the person who runs the app if it happens again.",
            "the store could not be written",
        )
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


def _lower(text):
    return None if text is None else str(text).lower()


class unicode_lower(GenericFunction):
    """``lower()`` of every letter, not of ASCII only: PostgreSQL's own lower() (the one its ILIKE applies
    to both sides in a UTF-8 database), and on SQLite, whose lower() leaves "É" as it is, Python's
    str.lower registered on every connection as pluie_lower. So "été" finds "ÉTÉ" on both stores alike."""

    type = String()
    identifier = "unicode_lower"  # func.lower stays SQL's own lower()
    name = "lower"
    inherit_cache = True


@compiles(unicode_lower, "sqlite")
def _unicode_lower_on_sqlite(element, compiler, **kw):
    return f"pluie_lower({compiler.process(element.clauses, **kw)})"


# seconds a PostgreSQL connection attempt may take before the store counts as unreachable
CONNECT_TIMEOUT = 10


def make_engine(url: Optional[str] = None) -> Engine:
    """An engine with the settings the app relies on. For SQLite: WAL (readers never wait for
    the worker's writes), foreign keys on, a busy timeout, and transactions that begin
    IMMEDIATE when asked (see write_session) so that read-then-write claims never deadlock."""
    url = database_url(url)
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        # a server that cannot be reached answers within seconds (StoreUnavailable), not after the system's
        # TCP timeout of about two minutes; a connect_timeout in the URL wins
        connect_args = (
            {}
            if "connect_timeout" in parsed.query or parsed.get_backend_name() != "postgresql"
            else {"connect_timeout": CONNECT_TIMEOUT}
        )
        return create_engine(url, pool_pre_ping=True, connect_args=connect_args)

    if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
        _owner_only(Path(parsed.database))
    timeout = busy_timeout()
    # isolation_level=None hands transaction control to the events below (SQLAlchemy's
    # documented recipe for pysqlite), so BEGIN is emitted by us, when we want it.
    engine = create_engine(url, connect_args={"timeout": timeout, "check_same_thread": False, "isolation_level": None})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()
        dbapi_connection.create_function("pluie_lower", 1, _lower, deterministic=True)  # see unicode_lower

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
        connection.exec_driver_sql(f"BEGIN {mode}")

    return engine


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A session for reads. A store whose server cannot be reached raises StoreUnavailable."""
    try:
        with Session(engine, expire_on_commit=False) as session:
            yield session
    except DBAPIError as exc:
        lost = _unreachable(exc)
        if lost is None:
            raise
        raise lost from None


@contextmanager
def write_session(engine: Engine) -> Iterator[Session]:
    """One transaction that commits at the end, or rolls everything back on any error:
    nothing is ever half-written. On SQLite it takes the write lock at BEGIN. A store that cannot
    take the write (busy past its timeout, full, read-only, its server gone) raises StoreUnavailable."""
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
# KeyError. One at a time per process, then; and one process at a time per store (_store_migration_lock):
# SQLite's own locks refused the second of two processes migrating a new store at once ("database is locked"
# on an ALTER TABLE, a read lock that cannot become a write lock), as the app's read-ahead and a worker or a
# command starting beside it do.
_MIGRATING = threading.Lock()
MIGRATION_LOCK_KEY = 0x504C554945  # "PLUIE": the PostgreSQL advisory lock every migrating process takes


@contextmanager
def _store_migration_lock(engine: Engine) -> Iterator[None]:
    """One migrating process at a time per store: a lock file beside a SQLite file (fcntl.flock, released when
    the process ends, whatever way), a session advisory lock on PostgreSQL; nothing elsewhere (an in-memory
    SQLite store is one process's own, and a system without fcntl keeps the database's own locks)."""
    if is_sqlite(engine):
        database = engine.url.database or ""
        try:
            import fcntl
        except ImportError:  # not a POSIX system
            fcntl = None
        if fcntl is None or not database or database == ":memory:" or database.startswith("file:"):
            yield
            return
        with open(f"{database}.migrate-lock", "a+b") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
        return
    if engine.dialect.name == "postgresql":
        from sqlalchemy import text

        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK_KEY})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK_KEY})
                connection.commit()
        return
    yield


def migrate(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to the newest revision (or to ``revision``: the tests build older stores
    this way). Run at every start: a user's database is upgraded in place, never recreated. Every
    migration goes through here, one at a time per process (_MIGRATING) and per store (_store_migration_lock)."""
    from alembic import command

    with _MIGRATING, _store_migration_lock(engine):
        command.upgrade(alembic_config(engine), revision)
