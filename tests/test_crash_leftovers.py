"""A publish killed mid-way (kill -9: no clean-up of its own runs) leaves its hidden, half-written
folder beside the one it was writing (issue 38, item 7): the next publish into the same parent
folder removes such leftovers, but never the folder another publish is writing at that moment."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pandas as pd

from db.datasets import import_pairs
from db.publish import publish_dataset
from tests.paths import REPO


def leftovers(parent):
    return sorted(path.name for path in parent.iterdir() if ".partial" in path.name)


def with_pairs(engine, n=40):
    import_pairs(
        engine,
        "toy",
        pd.DataFrame(
            {"source": [f"a source {i}" for i in range(n)], "hypothesis": [f"a hypothesis {i}" for i in range(n)]}
        ),
    )


def test_a_publish_killed_mid_way_leaves_a_folder_the_next_publish_removes_but_a_live_one_stays(
    engine, db_url, tmp_path
):
    with_pairs(engine)
    parent = tmp_path / "published"
    # a real publish, in a process of its own, killed with SIGKILL after its first chunks
    killed = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(REPO)!r})
        from db import access, init_db
        from db.publish import publish_dataset

        access.install_operator()  # a process of its own says who writes, as the command line does

        def progress(done, total):
            if done >= 10:
                os.kill(os.getpid(), signal.SIGKILL)

        publish_dataset(init_db({db_url!r}), {str(parent / "first")!r}, licence="mit", chunk_size=5,
                        n_boot=10, progress=progress)
        """),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    left = leftovers(parent)
    assert len(left) == 1 and left[0].startswith(".first.partial-"), left
    assert any((parent / left[0]).rglob("*.parquet"))  # half a dataset: what a crash leaves
    # a leftover of an older release (no writer in its name), untouched for two days
    old = parent / ".older.partial-0123abcd"
    (old / "data").mkdir(parents=True)
    (old / "data" / "rows.parquet").write_bytes(b"x" * 100)
    two_days_ago = time.time() - 2 * 86400
    for path in (old / "data" / "rows.parquet", old / "data", old):
        os.utime(path, (two_days_ago, two_days_ago))

    # a publish of this process, writing right now (held in its progress callback)
    writing, release = threading.Event(), threading.Event()
    outcome = {}

    def hold(done, total):
        writing.set()
        release.wait(60)

    def live_publish():
        try:
            outcome["result"] = publish_dataset(
                engine, parent / "live", licence="mit", chunk_size=5, n_boot=10, progress=hold
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcome["error"] = exc

    thread = threading.Thread(target=live_publish)
    thread.start()
    try:
        assert writing.wait(60)
        live = [name for name in leftovers(parent) if name.startswith(".live.partial-")]
        assert len(live) == 1

        second = publish_dataset(engine, parent / "second", licence="mit", chunk_size=5, n_boot=10)
        assert second.n_pairs == 40 and (parent / "second" / "README.md").is_file()
        # the killed one and the old one are gone; the one being written is not
        assert leftovers(parent) == live
    finally:
        release.set()
        thread.join(120)
    assert "error" not in outcome, outcome.get("error")
    assert outcome["result"].n_pairs == 40 and (parent / "live" / "README.md").is_file()
    assert leftovers(parent) == [] and not (parent / "first").exists()
