"""Who writes to the store is said by each process at its start, never by an import (issue 57, item 2).

db.access answers "who is this write for?" from acting_as, else from what the process installed (db.access.install):
the app installs the signed-in person of the session (ui.access.signin.install_access, at app.py's start and every
page's first line), the worker and the command line install the store's operator (OPEN). A process that installed
nothing writes nothing; in the app, a thread with no session writes nothing while accounts exist.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import pandas as pd
import pytest
from sqlalchemy import func, select

from db import access, accounts
from db.datasets import import_pairs
from db.engine import read_session
from db.models import Dataset
from lab.roles import NOBODY, OPEN, NotAllowed
from tests.paths import REPO
from tests.store_fixtures import app_store  # noqa: F401 - fixture


def pairs() -> pd.DataFrame:
    return pd.DataFrame({"source": ["a cat sat", "it rains"], "hypothesis": ["a cat was sitting", "it is raining"]})


def datasets(engine) -> int:
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Dataset))


def in_a_thread(call):
    """``call()`` on a thread of its own (no Streamlit session, no acting_as): its result or its exception."""
    result = {}

    def run():
        try:
            result["value"] = call()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(60)
    return result


def test_a_process_that_installed_nothing_writes_nothing_and_says_why(engine):
    access.install(None)
    with pytest.raises(NotAllowed) as refused:
        import_pairs(engine, "refused", pairs())
    assert str(refused.value) == access.NOT_INSTALLED
    assert datasets(engine) == 0  # the store as it was
    with access.acting_as(OPEN):  # a block acting for someone named is done, installed or not
        import_pairs(engine, "named", pairs())
    assert datasets(engine) == 1


def test_importing_the_app_s_modules_installs_nothing():
    """Safety does not hang on import order: every page helper, the frame and the server's modules imported,
    db.access still has nothing installed; the app's start installs it."""
    code = (
        "import importlib, pathlib\n"
        "mods = [str(p.with_suffix('')).replace('/', '.').removesuffix('.__init__') for p in sorted(pathlib.Path('ui')"
        ".rglob('*.py'))]\n"
        "for m in mods: importlib.import_module(m)\n"
        "import api.app, worker_launch\n"
        "from db import access\n"
        "print(len(mods), access.installed())\n"
        "from ui.access.signin import app_writer, install_access\n"
        "install_access()\n"
        "print(access.installed() is app_writer)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, installed, *rest = done.stdout.split()
    assert int(count) > 20 and installed == "None" and rest == ["True"]


def test_in_the_app_a_thread_without_a_session_writes_only_while_no_account_exists(app_store):  # noqa: F811
    from ui.access.signin import install_access

    engine = app_store
    install_access()  # as app.py does
    assert in_a_thread(access.current_actor)["value"] == OPEN  # no account: the open store of before
    assert "error" not in in_a_thread(lambda: import_pairs(engine, "open", pairs()))
    assert datasets(engine) == 1

    accounts.add_account(engine, "olga", "owner", password="olga's password")
    assert in_a_thread(access.current_actor)["value"] == NOBODY
    refused = in_a_thread(lambda: import_pairs(engine, "nobody's", pairs()))["error"]
    assert isinstance(refused, NotAllowed) and str(refused) == "Sign in to import pairs."
    assert datasets(engine) == 1  # nothing written
