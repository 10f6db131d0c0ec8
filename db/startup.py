"""Opening the store at a start: connected (db.engine), the schema brought to the newest revision,
and what a crash left behind removed. Every process that uses the store (the app, the worker, the
command line) opens it through init_db, exported by the package (``from db import init_db``).

Above db.engine and db.datasets, which it calls: db.engine stays the bottom of the store, imported
by every other module and importing none of them (tests/test_layers.py: no import cycle in db).
"""
from __future__ import annotations

from typing import Optional

from sqlalchemy import Engine

from db.engine import make_engine, migrate

__all__ = ["init_db"]


def init_db(url: Optional[str] = None) -> Engine:
    """An engine on the store at ``url`` (db.engine.database_url when None), its schema migrated, and
    the hidden half-imports a crash or a kill left removed (db.datasets.remove_stale_imports)."""
    # imported here: `import db` (any db module) stays as light as db.engine; db.datasets reads pandas
    from db.datasets import remove_stale_imports

    engine = make_engine(url)
    migrate(engine)
    remove_stale_imports(engine)
    return engine
