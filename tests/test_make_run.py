"""`make run` starts the scoring worker with the server, before any browser opens a page (issue 12).

The app is started with the very command the Makefile's `run` target runs (read with `make -n`),
on a temporary SQLite store and a free port."""

import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from db import init_db, queue
from tests.browser import free_port, wait_for_app
from tests.paths import REPO
from tests.test_worker import wait_until


def load_serve():
    """scripts/serve.py as a module (it is a script, not a package's module)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("serve", REPO / "scripts" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    return serve


def make_run_command(port: int) -> list[str]:
    """The command `make run` ends with (the install steps before it are left out)."""
    if not shutil.which("make"):
        pytest.fail("make is missing: the README's first command needs it")
    planned = subprocess.run(
        ["make", "-n", "-s", "run", f"PORT={port}"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    )
    command = [line for line in planned.stdout.splitlines() if line.strip()][-1]
    assert f"--server.port {port}" in command
    return shlex.split(command)


def start_like_make_run(tmp_path, **env):
    port = free_port()
    environment = {
        **os.environ,
        "PLUIE_DB_URL": f"sqlite:///{tmp_path / 'store.db'}",
        "PLUIE_WORKER_LOG": str(tmp_path / "worker.log"),
        "STREAMLIT_SERVER_HEADLESS": "true",
        "STREAMLIT_BROWSER_GATHER_USAGE_STATS": "false",
        **env,
    }
    environment.pop("PLUIE_STARTED_WORKER", None)
    if "PLUIE_NO_WORKER" not in env:
        environment.pop("PLUIE_NO_WORKER", None)
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(make_run_command(port), cwd=REPO, env=environment, stdout=log, stderr=subprocess.STDOUT)
    return process, f"http://127.0.0.1:{port}", environment["PLUIE_DB_URL"]


def server_is_up(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def worker_children(pid: int) -> list[int]:
    """The worker.py processes whose parent is `pid` (read from /proc)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == pid and b"worker.py" in (stat.parent / "cmdline").read_bytes():
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue  # a process that ended while we looked
    return found


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(process) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGINT)  # Ctrl-C in the terminal of `make run`
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.slow
def test_make_run_starts_one_worker_with_the_server_and_stops_it_with_the_server(tmp_path, browser):
    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")  # an existing store, as after a first run
    started = time.monotonic()
    process, url, db_url = start_like_make_run(tmp_path)
    try:
        # no browser has opened a page: the server's worker process is running within 10 s
        wait_until(
            lambda: len(worker_children(process.pid)) == 1,
            10 - (time.monotonic() - started),
            "the worker process",
            tmp_path / "server.log",
        )
        [worker_pid] = worker_children(process.pid)

        # the first page runs app.py, which asks for a worker again, maybe before this one has
        # registered in the store: still one worker
        wait_until(lambda: server_is_up(url), 60, "the server", tmp_path / "server.log")
        page = browser.new_page()
        page.goto(url)
        wait_for_app(page)
        page.get_by_text("PLUIE Lab").first.wait_for(timeout=30_000)
        page.close()
        assert worker_children(process.pid) == [worker_pid]
        # the server's warm-up has read the pages' first figures (none in an empty store), and says so
        wait_until(
            lambda: "serve: the pages' first figures are read" in (tmp_path / "server.log").read_text(),
            60,
            "the warm-up's read-ahead",
            tmp_path / "server.log",
        )

        # it serves the store: registered, with a heartbeat (importing torch and pandas can take
        # longer than 10 s on a loaded machine; a few seconds on an idle one)
        wait_until(lambda: len(queue.alive_workers(engine)) == 1, 60, "the worker's heartbeat", tmp_path / "worker.log")
        assert [w.pid for w in queue.alive_workers(engine)] == [worker_pid]
        assert worker_children(process.pid) == [worker_pid]
    finally:
        stop(process)
    # the worker goes with the server, and says so in the store
    wait_until(lambda: not pid_alive(worker_pid), 30, "the worker to exit", tmp_path / "worker.log")
    assert queue.alive_workers(engine) == []
    engine.dispose()


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port` (read from /proc/net/tcp and tcp6)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


LOOPBACK = {"0100007F", "00000000000000000000000001000000"}  # 127.0.0.1 and ::1 as /proc writes them


def test_make_run_with_pluie_no_worker_starts_none_and_without_a_password_listens_on_localhost_only(tmp_path):
    """Issue 23, item 10: with no admin password the server is reachable from this machine only,
    and says how to open it up."""
    process, url, db_url = start_like_make_run(
        tmp_path,
        PLUIE_NO_WORKER="1",
        PLUIE_ADMIN_PASSWORD="",
        PLUIE_ADMIN_PASSWORD_HASH="",
        STREAMLIT_SERVER_ADDRESS="",
    )
    try:
        wait_until(lambda: server_is_up(url), 60, "the server", tmp_path / "server.log")
        port = int(url.rsplit(":", 1)[1])
        addresses = listening_addresses(port)
        assert addresses and addresses <= LOOPBACK, addresses  # not 0.0.0.0 / :: (every interface)
        time.sleep(2)
        engine = init_db(db_url)
        assert queue.alive_workers(engine) == []
        engine.dispose()
    finally:
        stop(process)
    assert not (tmp_path / "worker.log").exists()
    log = (tmp_path / "server.log").read_text()
    assert f"no admin password is set, so PLUIE Lab listens on this machine only: http://localhost:{port}" in log
    assert "set PLUIE_ADMIN_PASSWORD" in log and "--server.address 0.0.0.0" in log


def test_with_a_password_or_a_chosen_address_the_server_listens_as_asked(monkeypatch, tmp_path):
    serve = load_serve()
    monkeypatch.chdir(tmp_path)  # no .streamlit/config.toml naming an address here
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PLUIE_ADMIN_PASSWORD", "PLUIE_ADMIN_PASSWORD_HASH", "STREAMLIT_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    assert serve.listening_options(["--server.port", "9"])[0] == ["--server.port", "9", "--server.address", "localhost"]
    chosen = ["--server.address", "0.0.0.0"]
    assert serve.listening_options(chosen) == (chosen, None)
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "config.toml").write_text('[server]\naddress = "10.0.0.5"\n')
    assert serve.listening_options([]) == ([], None)
    (tmp_path / ".streamlit" / "config.toml").unlink()
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "s3cret")
    assert serve.listening_options(["--server.port", "9"]) == (["--server.port", "9"], None)


def test_a_second_call_in_the_same_process_starts_no_second_worker(tmp_path, monkeypatch):
    """The app page's call finds the worker the launcher started, before it has registered."""
    import worker_launch as launcher

    url = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.delenv("PLUIE_NO_WORKER", raising=False)
    monkeypatch.delenv(launcher.STARTED_WORKER_ENV, raising=False)
    first = launcher.ensure_worker_running(url, log_path=tmp_path / "worker.log")
    try:
        assert first is not None
        assert launcher.ensure_worker_running(url) is None  # at once: not registered yet
        engine = init_db(url)
        assert queue.alive_workers(engine) == []
        engine.dispose()
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(timeout=60)
    # that worker has gone: the next call starts one again
    second = launcher.ensure_worker_running(url, log_path=tmp_path / "worker.log")
    assert second is not None
    second.send_signal(signal.SIGTERM)
    second.wait(timeout=60)


def test_the_install_says_what_it_does_as_it_goes(tmp_path):
    """`make run` installs through scripts/install_requirements.py (no silent `pip -qq` for minutes): it
    says what it installs and why it takes long, one line per package, and pip's output when it fails."""
    import sys

    planned = subprocess.run(
        ["make", "-n", "-B", "-s", "install"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
    ).stdout
    assert "scripts/install_requirements.py requirements.txt" in planned and "-qq" not in planned
    assert (
        "make run PORT="
        in subprocess.run(
            ["make", "-n", "-s", "run"], cwd=REPO, capture_output=True, text=True, check=True, timeout=60
        ).stdout
    )
    script = str(REPO / "scripts" / "install_requirements.py")
    present = tmp_path / "present.txt"
    present.write_text("pandas\n")  # already installed: pip needs no network
    done = subprocess.run(
        [sys.executable, script, str(present), "app's packages"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Installing the app's packages of {present}" in done.stdout and "already there" in done.stdout
    missing = tmp_path / "missing.txt"
    missing.write_text(f"{tmp_path / 'no-such-project'}\n")
    failed = subprocess.run([sys.executable, script, str(missing)], capture_output=True, text=True, timeout=300)
    assert failed.returncode != 0 and "pip failed" in failed.stdout and "no-such-project" in failed.stdout


@pytest.mark.slow
def test_serve_warms_up_the_pages_imports_on_a_thread_before_streamlit_starts(monkeypatch):
    """Issue 20: the first page opened on a fresh server does not wait for scipy, pandas, the charts...:
    scripts/serve.py imports what app.py and the pages import on a thread started before Streamlit."""
    import sys
    import threading

    import streamlit.web.cli

    import worker_launch as launcher

    serve = load_serve()
    wanted = serve.page_imports()
    # read from the pages' own source: the statistics, the store's reads, the drawing libraries
    assert {
        "pluie_core.stats",
        "pluie_core.evaluation.correlation",
        "db.datasets",
        "db.review",
        "pandas",
        "pyarrow",
        "torch",
    } <= set(wanted)
    assert "streamlit" not in wanted

    seen = {}

    def fake_streamlit(prog_name):  # what runs where Streamlit would start: the warm-up is under way
        seen["threads"] = [t.name for t in threading.enumerate()]
        seen["argv"] = list(sys.argv)
        return 0

    loaded = []
    monkeypatch.setattr(serve, "page_imports", lambda: ["json", "not_a_module_anywhere", "colorsys"])
    monkeypatch.setattr(serve.importlib, "import_module", lambda name: loaded.append(name) or __import__(name))
    monkeypatch.setattr(launcher, "ensure_worker_running", lambda **kwargs: None)
    monkeypatch.setattr(streamlit.web.cli, "main", fake_streamlit)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert serve.main(["--server.address", "127.0.0.1"]) == 0
    assert "pluie-warm-up" in seen["threads"] or loaded  # started before Streamlit (or already done)
    assert seen["argv"][:2] == ["streamlit", "run"]
    [thread] = [t for t in threading.enumerate() if t.name == "pluie-warm-up"] or [None]
    if thread is not None:
        thread.join(10)
    # every module asked for, one that cannot be imported skipped without stopping the rest
    assert loaded == ["json", "not_a_module_anywhere", "colorsys"]


def test_the_warm_up_keeps_streamlits_no_runtime_warning_out_of_the_console(tmp_path, monkeypatch):
    """`make run` printed "WARNING ... No runtime found, using MemoryCacheStorageManager" at every start:
    the warm-up imports the pages before Streamlit's runtime exists, and Streamlit checks each
    st.cache_data's options as the decorator is applied. That warning is dropped from the warm-up
    thread only: the same decorator applied elsewhere still logs it."""
    import importlib
    import logging
    import sys

    import streamlit.runtime

    serve = load_serve()
    for name in ("warmed_page_of_cached_reads", "unwarmed_page_of_cached_reads"):
        (tmp_path / f"{name}.py").write_text(
            "import streamlit as st\n\n\n@st.cache_data(ttl=600, max_entries=8, show_spinner=False)\n"
            "def counts(x):\n    return x\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(streamlit.runtime, "exists", lambda: False)  # as before Streamlit has started
    monkeypatch.setattr(serve, "read_ahead_at_start", lambda: None)
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    cache_log = logging.getLogger("streamlit.runtime.caching.cache_data_api")
    filters = list(cache_log.filters)
    cache_log.addHandler(handler)
    try:
        serve.warm_up(["warmed_page_of_cached_reads"]).join(30)
        assert "warmed_page_of_cached_reads" in sys.modules  # imported, quietly
        assert not [r.getMessage() for r in records]
        importlib.import_module("unwarmed_page_of_cached_reads")  # not the warm-up's: Streamlit's warning as ever
        assert [r.getMessage() for r in records] == ["No runtime found, using MemoryCacheStorageManager"]
    finally:
        cache_log.removeHandler(handler)
        cache_log.filters[:] = filters


def test_no_full_garbage_collection_after_each_run_and_the_start_up_objects_are_frozen(monkeypatch):
    """A full collection after every run walked the ~400,000 objects of the loaded modules and the pages'
    first figures (0.25-0.37 s holding the GIL at 100,000 pairs, every session's messages waiting):
    the app's Streamlit configuration turns it off, and the warm-up freezes what it loaded, so that
    Python's own full collections skip it too."""
    import gc

    from streamlit import config

    monkeypatch.chdir(REPO)  # Streamlit reads .streamlit/config.toml from the directory it is started in
    config.get_config_options(force_reparse=True)
    try:
        assert config.get_option("runner.postScriptGC") is False
    finally:
        monkeypatch.undo()
        config.get_config_options(force_reparse=True)

    serve = load_serve()
    monkeypatch.setattr(serve, "read_ahead_at_start", lambda: None)
    gc.unfreeze()
    try:
        serve.warm_up(["json"]).join(30)
        assert gc.get_freeze_count() > 10_000  # this process's modules, out of every full collection
    finally:
        gc.unfreeze()  # the rest of the test session collects as usual


def test_the_installer_says_installing_1_package(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("install_requirements", REPO / "scripts" / "install_requirements.py")
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)

    class Pip:  # what pip prints when it installs one package
        def __init__(self, lines):
            self.stdout = iter(lines)

        def wait(self):
            return 0

    for lines, said in (
        (["Collecting tqdm\n", "Installing collected packages: tqdm\n"], "installing 1 package..."),
        (["Collecting a\n", "Collecting b\n", "Installing collected packages: a, b\n"], "installing 2 packages..."),
    ):
        monkeypatch.setattr(installer.subprocess, "Popen", lambda *args, lines=lines, **kwargs: Pip(lines))
        assert installer.install("requirements.txt", "test tools") == 0
        assert f"  {said}\n" in capsys.readouterr().out
