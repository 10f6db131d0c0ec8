"""Checking a model when a run is created: in seconds without internet (the local cache first, a
short probe of the hub, remembered), for PLUIE runs and for the baselines that take a model; and
the first import of transformers from several threads at once (two script runs of a fresh server)."""
import json
import os
import socket
import subprocess
import sys

import pytest

from tests.paths import REPO

OFFLINE_CHECK = """
import json, time
import transformers, pluie_core.scorer, db.runs  # imported before the clock starts: only the checks are timed

def pluie():
    from pluie_core.scorer import check_model
    check_model("someone/no-such-model")

def s3c():
    from db.runs import check_baseline_model
    check_baseline_model("s3c", {"model": "someone/no-such-encoder"})

out = {}
for key, call in (("pluie", pluie), ("s3c", s3c)):
    start = time.monotonic()
    try:
        call()
        out[key] = ["accepted", time.monotonic() - start]
    except Exception as exc:
        out[key] = [str(exc), time.monotonic() - start]
print(json.dumps(out))
"""

CONCURRENT_IMPORT = """
import json, sys, threading
from pluie_core.scorer import check_model
barrier, results = threading.Barrier(16), []
def work():
    barrier.wait()
    try:
        results.append(check_model(sys.argv[1])[-1])
    except Exception as exc:
        results.append(f"{type(exc).__name__}: {exc}")
threads = [threading.Thread(target=work) for _ in range(16)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps(results))
"""


def run_python(code: str, *args: str, env: dict, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout, env={**env, "PYTHONPATH": str(REPO)})


def test_an_unknown_hub_id_is_refused_in_seconds_when_the_hub_does_not_answer():
    # the hub's address is a local port that takes connections and never answers (as a network that
    # drops packets does); HF_HUB_OFFLINE is not set, so the check has to find out by itself
    with socket.socket() as black_hole:
        black_hole.bind(("127.0.0.1", 0))
        black_hole.listen(64)
        env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")}
        env["HF_ENDPOINT"] = f"http://127.0.0.1:{black_hole.getsockname()[1]}"
        done = run_python(OFFLINE_CHECK, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for key, name in (("pluie", "someone/no-such-model"), ("s3c", "someone/no-such-encoder")):
        sentence, seconds = result[key]
        assert sentence == (f"The model {name} is not in the local Hugging Face cache, and the Hugging Face hub "
                            f"({env['HF_ENDPOINT']}) does not answer from this machine: download the model where "
                            "there is internet access, or give a local model directory."), sentence
        assert seconds < 8, result  # the probe waits 3 s once; before, the hub client retried for ~50 s
    assert result["s3c"][1] < 1, result  # the probe's answer is remembered


@pytest.mark.slow
def test_sixteen_threads_checking_a_model_at_once_on_a_fresh_interpreter(tiny_model_path):
    # transformers' lazy module is not thread-safe while it first loads: without the import lock,
    # most of these threads got "cannot import name 'AutoTokenizer' from 'transformers'"
    done = run_python(CONCURRENT_IMPORT, str(tiny_model_path), env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results) == 16 and all(r.startswith("the answers") for r in results), results
