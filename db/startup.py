"""Opening the store at a start: connected (db.engine), the schema brought to the newest revision,
and what a crash left behind removed. Every process that uses the store (the app, the worker, the
command line) opens it through init_db, exported by the package (``from db import init_db``).

Above db.engine and db.datasets, which it calls: db.engine stays the bottom of the store, imported
by every other module and importing none of them (tests/test_layers.py: no import cycle in db).
"""

from __future__ import annotations

import logging
import threading
from typing import Optional

from sqlalchemy import Engine

from db.engine import make_engine, migrate

__all__ = ["init_db", "wait_for_cleanup"]

log = logging.getLogger("pluie_lab.store")
_cleanups: dict[int, threading.Thread] = {}  # id(engine) -> the thread removing its stale imports


def init_db(url: Optional[str] = None) -> Engine:
    """An engine on the store at ``url`` (db.engine.database_url when None), its schema migrated, and
    the hidden half-imports a crash or a kill left removed (db.datasets.remove_stale_imports) in the
    background: a killed import of a million pairs took 88 s to remove, and the app's first page waited on
    it without a word. The hidden pairs are seen by no page, campaign or worker meanwhile; a process that
    ends first leaves the rest to the next start (each step is a short transaction)."""
    # imported here: `import db` (any db module) stays as light as db.engine; db.datasets reads pandas
    from db.datasets import remove_stale_imports, stale_imports

    engine = make_engine(url)
    migrate(engine)
    stale = stale_imports(engine)
    if stale:
        pairs = sum(n for _, n in stale)
        log.warning(
            "removing %d half-written import%s (%s pairs) left by an import that was stopped, in the background",
            len(stale),
            "" if len(stale) == 1 else "s",
            f"{pairs:,}",
        )

        def clean() -> None:
            try:
                removed = remove_stale_imports(engine)
                log.warning("removed %d half-written import%s", removed, "" if removed == 1 else "s")
            except Exception as exc:  # the store away, the process ending: the next start goes on
                log.warning(
                    "the half-written imports were not all removed (%s): the next start goes on",
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                )

        thread = threading.Thread(target=clean, daemon=True, name="stale-imports")
        _cleanups[id(engine)] = thread
        thread.start()
    return engine


def wait_for_cleanup(engine: Engine, timeout: Optional[float] = None) -> bool:
    """Wait for init_db's removal of stale imports on ``engine`` (if any); whether it has finished."""
    thread = _cleanups.get(id(engine))
    if thread is None:
        return True
    thread.join(timeout)
    if not thread.is_alive():
        _cleanups.pop(id(engine), None)
        return True
    return False
