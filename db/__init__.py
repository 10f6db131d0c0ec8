"""The store: schema (models), connection and sessions (engine), and every query the app and the
worker make, one module per concern. Pages and the worker call these functions; no SQL elsewhere."""

from db.engine import database_url, make_engine, read_session, write_session
from db.startup import init_db

__all__ = ["database_url", "init_db", "make_engine", "read_session", "write_session"]
