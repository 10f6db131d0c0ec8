"""Checking a model when a run is created: in seconds without internet (the local cache first, a
short probe of the hub, remembered), for PLUIE runs and for the baselines that take a model; and
the first import of transformers from several threads at once (two script runs of a fresh server)."""

import json
import os
import shutil
import socket
import subprocess
import sys

import pytest

from db.runs import RunError, create_run
from tests.paths import REPO
from tests.store_fixtures import add_pairs, n_runs, open_page, rerun, sentence_pairs, texts, widget

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
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**env, "PYTHONPATH": str(REPO)},
    )


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
        assert sentence == (
            f"The model {name} is not in the local Hugging Face cache, and the Hugging Face hub "
            f"({env['HF_ENDPOINT']}) does not answer from this machine: download the model where "
            "there is internet access, or give a local model directory."
        ), sentence
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


# -- a model that cannot work is refused when its run is created (issue 14, point 4)


@pytest.fixture
def store(app_store):
    return app_store  # tests.store_fixtures: the app on this test's store


@pytest.fixture(scope="module")
def model_without_chat_template(tiny_model_builder, tmp_path_factory):
    copy = tmp_path_factory.mktemp("no-chat") / "model"
    shutil.copytree(tiny_model_builder(), copy)
    (copy / "chat_template.jinja").unlink()
    return copy


def test_a_model_that_cannot_work_is_refused_at_creation(store, tmp_path, tiny_model_path, model_without_chat_template):
    engine = store
    add_pairs(engine, "d", sentence_pairs(3))
    (tmp_path / "empty").mkdir()
    cases = {
        "nonexistent-org/no-such-model-xyz": "not in the local Hugging Face cache",
        str(tmp_path / "missing"): "does not exist",
        str(tmp_path / "empty"): "no config.json",
        str(model_without_chat_template): "no chat template",
    }
    for model, reason in cases.items():
        with pytest.raises(RunError, match=reason):
            create_run(engine, model=model, check_model=True)
    with pytest.raises(RunError, match="not a single token"):
        create_run(engine, model=str(tiny_model_path), answers=["Absolutely certainly", "No"], check_model=True)
    assert n_runs(engine) == 0

    at = open_page("scoring")
    widget(at.text_input, "Model").input("nonexistent-org/no-such-model-xyz")
    widget(at.button, "Create run").click()
    rerun(at)
    assert any("not in the local Hugging Face cache" in e.value for e in at.error), [e.value for e in at.error]
    assert "Checked when you create the run" in texts(at)
    assert n_runs(engine) == 0

    widget(at.text_input, "Model").input(str(tiny_model_path))
    widget(at.button, "Create run").click()
    rerun(at)
    assert not at.error, [e.value for e in at.error]
    assert n_runs(engine) == 1 and "passed the checks" in texts(at)


def test_a_hub_id_in_the_local_cache_passes_offline(store, tmp_path, tiny_model_path, monkeypatch):
    from huggingface_hub import constants

    from pluie_core.scorer import check_model

    # the hub cache's own layout: models--<org>--<name>/refs/main -> snapshots/<commit>/<files>
    repo = tmp_path / "hub" / "models--tiny-org--tiny-chat"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(tiny_model_path, snapshot, ignore=shutil.ignore_patterns("*.safetensors"))
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    checked = check_model("tiny-org/tiny-chat", "fs-direct")
    assert checked[0] == "found in the local Hugging Face cache" and "one token each" in checked[-1]
    run = create_run(store, model="tiny-org/tiny-chat", check_model=True)
    assert n_runs(store) == 1 and run
    with pytest.raises(RunError, match="not in the local Hugging Face cache"):
        create_run(store, model="tiny-org/other-chat", check_model=True)
