"""Starting the app's scoring worker: the glue the app (app.py, scripts/serve.py) and the Scoring page's
"Start a worker" button call. It starts ``worker.py`` as a process of its own and never imports it, so
that the pages layer reaches the worker only through this launcher (tests/test_layers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from db import init_db, queue
from db.engine import database_url
from db.runs import ensure_first_start_runs
from lab.places import data_dir

REPO = Path(__file__).resolve().parent


def alive(pid: int) -> bool:
    """Whether a process with this id exists (one of another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# "<pid> <store url>" of the worker this process started: a second call in the same process (the
# app page's, after scripts/serve.py started one with the server) finds it even before that
# worker has registered in the store.
STARTED_WORKER_ENV = "PLUIE_STARTED_WORKER"
# the niceness of the worker the app starts: it shares the machine with the server (bench/serving.py --scoring)
APP_WORKER_NICE = 10


def _started_here(url: str) -> bool:
    pid, _, started_url = os.environ.get(STARTED_WORKER_ENV, "").partition(" ")
    if started_url != url or not pid.isdigit():
        return False
    try:
        exited, _ = os.waitpid(int(pid), os.WNOHANG)  # our child: reaped if it has exited
    except ChildProcessError:  # not a child of this process
        return alive(int(pid))
    return exited == 0


def ensure_worker_running(
    url: Optional[str] = None, *, log_path: Optional[Path] = None, demo_run: bool = False
) -> Optional[subprocess.Popen]:
    """Start a background worker for the app unless one is alive on this store (or was started by
    this process and is still running) or PLUIE_NO_WORKER is set. The worker exits when the process
    that started it (the app) goes away. scripts/serve.py (make run) calls it as the server starts;
    app.py calls it again once per app process (st.cache_resource), a no-op then. With ``demo_run``
    (scripts/serve.py), a fresh store also gets the demo judge's PLUIE run (ensure_first_start_runs),
    even when PLUIE_NO_WORKER is set."""
    no_worker = os.environ.get("PLUIE_NO_WORKER", "").strip() not in ("", "0")
    if no_worker and not demo_run:
        return None
    url = database_url(url)
    if _started_here(url):
        return None
    engine = init_db(url)
    try:
        ensure_first_start_runs(engine, demo=demo_run)
        if no_worker or queue.alive_workers(engine):
            return None
    finally:
        engine.dispose()
    log_path = Path(log_path or os.environ.get("PLUIE_WORKER_LOG") or data_dir() / "worker.log")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log_file:
        started = subprocess.Popen(
            # below the server's priority: an annotator's next pair is served at once while a model scores
            [
                sys.executable,
                str(REPO / "worker.py"),
                "--db",
                url,
                "--parent-pid",
                str(os.getpid()),
                "--nice",
                str(APP_WORKER_NICE),
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C in the app's terminal reaches the worker via --parent-pid
        )
    os.environ[STARTED_WORKER_ENV] = f"{started.pid} {url}"
    return started
