"""PLUIE through a real vLLM server (issue 54, first part: the library and the command line): the scores equal
the in-process PluieScorer's on the same model folder, one direction and symmetric; what the server cannot
do is refused before anything is scored, in one sentence; a server that goes away costs an error, never a
wrong score. The server is vLLM's CPU build in a venv of its own (tests/vllm_server.py)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pluie_core.cli import main
from pluie_core.endpoint import EndpointError, EndpointScorer
from pluie_core.scorer import PluieError, PluieScorer
from tests.tiny_models import tiny_model_builder  # noqa: F401 (fixture)
from tests.vllm_server import vllm_server  # noqa: F401 (fixture)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("vllm")]

SOURCES = ["The cat drinks water.", "A man plays the guitar.", "Two dogs run in the park.", "It rains today.",
           "She bought a new car.", "The meeting was postponed to Monday."] * 3
HYPOTHESES = ["The cat drinks milk.", "Someone is playing a guitar.", "Dogs are running in a park.",
              "It is sunny today.", "She purchased a new automobile.", "The meeting moved to Monday."] * 3


@pytest.fixture(scope="module")
def local(vllm_server):
    return PluieScorer(str(vllm_server.folder), template="fs-direct", dtype="float32")


def test_the_servers_scores_are_the_in_process_scorers(vllm_server, local):
    remote = EndpointScorer(vllm_server.url, vllm_server.model, template="fs-direct", concurrency=3)
    assert remote.prompts(SOURCES[:2], HYPOTHESES[:2]) == local.prompts(SOURCES[:2], HYPOTHESES[:2])
    assert remote.answer_ids == local.answer_ids
    got, logprobs = remote.score(SOURCES, HYPOTHESES, return_logprobs=True)
    want, want_logprobs = local.score(SOURCES, HYPOTHESES, return_logprobs=True)
    assert np.abs(got - want).max() < 1e-3 and np.abs(logprobs - want_logprobs).max() < 1e-3
    assert np.std(got) > 0.01  # not a constant: the pairs differ
    both = remote.score(SOURCES[:6], HYPOTHESES[:6], symmetric=True)
    assert np.abs(both - local.score(SOURCES[:6], HYPOTHESES[:6], symmetric=True)).max() < 1e-3
    seen = []
    remote.score(SOURCES, HYPOTHESES, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (len(SOURCES), len(SOURCES))


def test_what_the_server_cannot_do_is_refused_before_scoring(vllm_server, tiny_model_builder):
    with pytest.raises(EndpointError, match="does not serve a model named 'other'; it serves: tiny-judge"):
        EndpointScorer(vllm_server.url, "other")
    with pytest.raises(PluieError, match="'Yes please' is not a single token"):
        EndpointScorer(vllm_server.url, vllm_server.model, answers=("Yes please", "No"))
    # a local tokenizer that is not the served model's: the server encodes the prompt otherwise
    other = tiny_model_builder(vocab_size=600)
    with pytest.raises(EndpointError, match="encodes the prompt differently from the local one"):
        EndpointScorer(vllm_server.url, vllm_server.model, tokenizer=str(other))
    with pytest.raises(EndpointError, match="must start with http"):
        EndpointScorer("localhost:8000", vllm_server.model)
    with pytest.raises(EndpointError, match="generates an explanation"):
        EndpointScorer(vllm_server.url, vllm_server.model, template="indirect")


def test_a_server_that_goes_away_is_an_error_never_a_score(vllm_server):
    remote = EndpointScorer(vllm_server.url, vllm_server.model, retries=1, backoff=0.05)
    remote.base_url = remote.root = "http://127.0.0.1:9"  # nothing listens there: the server is gone
    with pytest.raises(EndpointError, match=r"cannot be reached .*\(after 1 retries\)"):
        remote.score(SOURCES[:2], HYPOTHESES[:2])
    with pytest.raises(EndpointError, match="cannot be reached"):
        EndpointScorer("http://127.0.0.1:9/v1", "x", retries=0)


def test_the_command_line_scores_through_the_server(vllm_server, tmp_path, capsys, monkeypatch):
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame({"source": SOURCES[:4], "hypothesis": HYPOTHESES[:4]}).to_csv(pairs, sep="\t", index=False)
    out, ref = tmp_path / "out.csv", tmp_path / "ref.csv"
    assert main(["score", str(pairs), "--endpoint", vllm_server.url, "--model", vllm_server.model, "--symmetric",
                 "--no-progress", "-o", str(out)]) == 0
    assert main(["score", str(pairs), "--model", str(vllm_server.folder), "--dtype", "float32", "--symmetric",
                 "--no-progress", "-o", str(ref)]) == 0
    got, want = pd.read_csv(out), pd.read_csv(ref)
    assert np.abs(got["pluie"] - want["pluie"]).max() < 1e-3
    monkeypatch.delenv("PLUIE_NO_SUCH_KEY", raising=False)
    assert main(["score", str(pairs), "--endpoint", vllm_server.url, "--model", vllm_server.model,
                 "--api-key-env", "PLUIE_NO_SUCH_KEY", "-o", str(tmp_path / "x.csv")]) != 0
    assert "PLUIE_NO_SUCH_KEY that should hold the server's API key is not set" in capsys.readouterr().err
