"""Connecting to the store: the URL setting, engine options, sessions and migrations.

The URL comes from, in order: the argument, the PLUIE_DB_URL environment variable, the
`[database] url` of pluie_lab.toml in the working directory, and the embedded default
`sqlite:///data/pluie_lab.db`. Any SQLAlchemy URL works (PostgreSQL for teams).
"""
from __future__ import annotations

import os
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

DEFAULT_URL = "sqlite:///data/pluie_lab.db"
CONFIG_FILE = "pluie_lab.toml"
MIGRATIONS = Path(__file__).resolve().parent / "migrations"


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
    return DEFAULT_URL


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

    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None hands transaction control to the events below (SQLAlchemy's
    # documented recipe for pysqlite), so BEGIN is emitted by us, when we want it.
    engine = create_engine(url, connect_args={"timeout": 30, "check_same_thread": False, "isolation_level": None})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
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
    nothing is ever half-written. On SQLite it takes the write lock at BEGIN."""
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


def alembic_config(engine: Engine):
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["engine"] = engine
    return config


def migrate(engine: Engine) -> None:
    """Bring the schema to the newest revision. Run at every start: a user's database is
    upgraded in place, never recreated."""
    from alembic import command

    command.upgrade(alembic_config(engine), "head")


def init_db(url: Optional[str] = None) -> Engine:
    engine = make_engine(url)
    migrate(engine)
    return engine
