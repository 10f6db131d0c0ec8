"""PLUIE through a real vLLM server (issue 54, first part: the library and the command line): the scores equal
the in-process PluieScorer's on the same model folder, one direction and symmetric; what the server cannot
do is refused before anything is scored, in one sentence; a server that goes away costs an error, never a
wrong score. The server is vLLM's CPU build in a venv of its own (tests/vllm_server.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pluie_core.cli import main
from pluie_core.endpoint import EndpointError, EndpointScorer
from pluie_core.scorer import PluieError, PluieScorer
from tests.test_scoring_page import store  # noqa: F401 (fixture: the page's SQLite store)
from tests.tiny_models import tiny_model_builder  # noqa: F401 (fixture)
from tests.vllm_server import KEY_NAME, vllm_server  # noqa: F401 (fixture)

pytestmark = pytest.mark.slow

SOURCES = [
    "The cat drinks water.",
    "A man plays the guitar.",
    "Two dogs run in the park.",
    "It rains today.",
    "She bought a new car.",
    "The meeting was postponed to Monday.",
] * 3
HYPOTHESES = [
    "The cat drinks milk.",
    "Someone is playing a guitar.",
    "Dogs are running in a park.",
    "It is sunny today.",
    "She purchased a new automobile.",
    "The meeting moved to Monday.",
] * 3


@pytest.fixture(scope="module")
def local(vllm_server):
    return PluieScorer(str(vllm_server.folder), template="fs-direct", dtype="float32")


@pytest.fixture
def server_key(vllm_server, monkeypatch):
    """The test server's key in the environment variable KEY_NAME (runs name it, as they name a real key)."""
    monkeypatch.setenv(KEY_NAME, vllm_server.api_key)
    return KEY_NAME


def test_the_servers_scores_are_the_in_process_scorers(vllm_server, local):
    remote = EndpointScorer(
        vllm_server.url, vllm_server.model, template="fs-direct", concurrency=3, api_key=vllm_server.api_key
    )
    assert remote.mode == "allowed"  # vLLM honours allowed_token_ids, and its raw log-probs agree with echo's
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
    # the other way, which any server with the completions route reads: the prompt's own log-probs (echo)
    echo = EndpointScorer(
        vllm_server.url, vllm_server.model, template="fs-direct", mode="echo", api_key=vllm_server.api_key
    )
    assert echo.mode == "echo" and np.abs(echo.score(SOURCES[:6], HYPOTHESES[:6]) - want[:6]).max() < 1e-3


def test_what_the_server_cannot_do_is_refused_before_scoring(vllm_server, tiny_model_builder, server_key):
    with pytest.raises(EndpointError, match="does not serve a model named 'other'; it serves: tiny-judge"):
        EndpointScorer(vllm_server.url, "other", api_key_env=server_key)
    with pytest.raises(PluieError, match="'Yes please' is not a single token"):
        EndpointScorer(vllm_server.url, vllm_server.model, answers=("Yes please", "No"), api_key_env=server_key)
    # a local tokenizer that is not the served model's: the server encodes the prompt otherwise
    other = tiny_model_builder(vocab_size=600)
    with pytest.raises(EndpointError, match="encodes the prompt differently from the local one"):
        EndpointScorer(vllm_server.url, vllm_server.model, tokenizer=str(other), api_key_env=server_key)
    with pytest.raises(EndpointError, match="must start with http"):
        EndpointScorer("localhost:8000", vllm_server.model)
    with pytest.raises(EndpointError, match="generates an explanation"):
        EndpointScorer(vllm_server.url, vllm_server.model, template="indirect", api_key_env=server_key)


def test_a_server_that_goes_away_is_an_error_never_a_score(vllm_server):
    remote = EndpointScorer(vllm_server.url, vllm_server.model, retries=1, backoff=0.05, api_key=vllm_server.api_key)
    remote.base_url = remote.root = "http://127.0.0.1:9"  # nothing listens there: the server is gone
    with pytest.raises(EndpointError, match=r"cannot be reached .*\(after 1 retries\)"):
        remote.score(SOURCES[:2], HYPOTHESES[:2])
    with pytest.raises(EndpointError, match="cannot be reached"):
        EndpointScorer("http://127.0.0.1:9/v1", "x", retries=0)


def test_the_command_line_scores_through_the_server(vllm_server, tmp_path, capsys, monkeypatch, server_key):
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame({"source": SOURCES[:4], "hypothesis": HYPOTHESES[:4]}).to_csv(pairs, sep="\t", index=False)
    out, ref = tmp_path / "out.csv", tmp_path / "ref.csv"
    assert (
        main(
            [
                "score",
                str(pairs),
                "--endpoint",
                vllm_server.url,
                "--model",
                vllm_server.model,
                "--symmetric",
                "--api-key-env",
                server_key,
                "--no-progress",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    assert (
        main(
            [
                "score",
                str(pairs),
                "--model",
                str(vllm_server.folder),
                "--dtype",
                "float32",
                "--symmetric",
                "--no-progress",
                "-o",
                str(ref),
            ]
        )
        == 0
    )
    got, want = pd.read_csv(out), pd.read_csv(ref)
    assert np.abs(got["pluie"] - want["pluie"]).max() < 1e-3
    monkeypatch.delenv("PLUIE_NO_SUCH_KEY", raising=False)
    assert (
        main(
            [
                "score",
                str(pairs),
                "--endpoint",
                vllm_server.url,
                "--model",
                vllm_server.model,
                "--api-key-env",
                "PLUIE_NO_SUCH_KEY",
                "-o",
                str(tmp_path / "x.csv"),
            ]
        )
        != 0
    )
    assert "The server's API key PLUIE_NO_SUCH_KEY is not set here" in capsys.readouterr().err


def test_a_run_on_a_server_with_a_key_is_refused_without_the_right_one_and_reads_streamlit_secrets(
    vllm_server, local, engine, tmp_path, monkeypatch
):
    """The server was started with --api-key: creating a run with no key, a name that holds none, or a wrong key is
    refused with a sentence naming what to set, the store unchanged; the right key, held in Streamlit's secrets
    file under a section, scores the run in the worker; only the key's name is ever stored."""
    from sqlalchemy import func, select

    from db.datasets import import_pairs
    from db.engine import read_session
    from db.models import ScoreRun, WorkItem
    from db.runs import RunError, create_run, scores_by_pair
    from worker import ScoringWorker

    dataset = import_pairs(
        engine, "pairs", pd.DataFrame({"source": SOURCES[:4], "hypothesis": HYPOTHESES[:4]})
    ).dataset_id
    monkeypatch.chdir(tmp_path)  # Streamlit's secrets file is read from the working folder, as Streamlit reads it
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: tmp_path / "home"))  # not this machine's own file
    monkeypatch.delenv("PLUIE_JUDGE_KEY", raising=False)

    def create(key_name=None):
        options = {"endpoint": vllm_server.url, **({"api_key_env": key_name} if key_name else {})}
        return create_run(
            engine, model=vllm_server.model, dataset_ids=[dataset], check_model=True, options=options, name="keyed"
        )

    with pytest.raises(
        RunError,
        match=r"asks for an API key \(401: Unauthorized\): name the environment variable "
        r"or Streamlit secret that holds it",
    ):
        create()
    with pytest.raises(
        RunError,
        match=r"API key PLUIE_JUDGE_KEY is not set here: neither an environment variable "
        r"nor Streamlit's secrets \(.streamlit/secrets.toml\) hold PLUIE_JUDGE_KEY",
    ):
        create("PLUIE_JUDGE_KEY")
    monkeypatch.setenv("PLUIE_JUDGE_KEY", "not-the-key")
    with pytest.raises(
        RunError,
        match=r"refused the API key of PLUIE_JUDGE_KEY \(401: Unauthorized\): set "
        r"PLUIE_JUDGE_KEY to the key the server was started with",
    ):
        create("PLUIE_JUDGE_KEY")
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(f'[judges]\ntiny = "{vllm_server.api_key}"\n')
    with pytest.raises(RunError, match="refused the API key of PLUIE_JUDGE_KEY"):  # the environment comes first
        create("PLUIE_JUDGE_KEY")
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0
        assert session.scalar(select(func.count()).select_from(WorkItem)) == 0
    # the right key, from Streamlit's secrets: the run is created with the secret's name only, and scored
    run_id = create("judges.tiny")
    with read_session(engine) as session:
        assert session.get(ScoreRun, run_id).options == {"endpoint": vllm_server.url, "api_key_env": "judges.tiny"}
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, run_ids=[run_id]).run(exit_when_idle=True)
    scores = scores_by_pair(engine, run_id)
    got = np.array([scores[p][0] for p in sorted(scores)])
    assert len(got) == 4 and np.abs(got - local.score(SOURCES[:4], HYPOTHESES[:4])).max() < 1e-3
    engine.dispose()
    files = [Path(engine.url.database + end) for end in ("", "-wal")]
    assert not any(vllm_server.api_key.encode() in f.read_bytes() for f in files if f.exists())  # nowhere stored


# ---------------------------------------------------------------- a run whose model is the server, in the worker
class Relay:
    """A real TCP relay in front of the vLLM server, switched off and on by the test: the server "goes away"
    (connections refused) and comes back on the same address."""

    def __init__(self, target: int):
        import socket

        self.target, self.conns, self.listener = target, [], None
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]

    def on(self) -> None:
        import socket
        import threading

        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", self.port))
        self.listener.listen(64)
        listener = self.listener

        def pump(src, dst):
            try:
                while data := src.recv(65536):
                    dst.sendall(data)
            except OSError:
                pass
            finally:
                for s in (src, dst):
                    try:
                        s.close()
                    except OSError:
                        pass

        def accept():
            while True:
                try:
                    client, _ = listener.accept()
                except OSError:
                    return
                upstream = socket.create_connection(("127.0.0.1", self.target))
                self.conns += [client, upstream]
                threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
                threading.Thread(target=pump, args=(upstream, client), daemon=True).start()

        threading.Thread(target=accept, daemon=True).start()

    def off(self) -> None:
        import socket

        if self.listener is not None:
            try:
                self.listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked in the relay's thread
            except OSError:
                pass
            self.listener.close()
        for conn in self.conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass
        self.conns = []


def test_a_run_on_the_server_scores_in_the_worker_and_waits_when_it_goes_away(vllm_server, local, store, server_key):
    """The server goes away before the worker's claim: the pairs go back uncounted, the run stays active, and the
    Scoring page says why with the worker's sentence about the server; back on the same address, every pair is
    scored once, as in process, and the page's sentence is gone."""
    from sqlalchemy import select

    from db.datasets import import_pairs
    from db.engine import read_session
    from db.models import ScoreRun, WorkItem
    from db.runs import RunError, create_run, scores_by_pair
    from tests.test_scoring_page import open_page
    from worker import ScoringWorker

    url, engine = store
    dataset = import_pairs(
        engine, "pairs", pd.DataFrame({"source": SOURCES[:6], "hypothesis": HYPOTHESES[:6]})
    ).dataset_id
    # asked first: a model the server does not serve is a sentence, and no run is stored
    with pytest.raises(RunError, match="does not serve a model named 'nope'"):
        create_run(
            engine,
            model="nope",
            options={"endpoint": vllm_server.url, "api_key_env": server_key},
            dataset_ids=[dataset],
            check_model=True,
        )
    with pytest.raises(RunError, match="found by its name: an environment variable or a key of Streamlit's secrets"):
        create_run(
            engine,
            model=vllm_server.model,
            options={"endpoint": vllm_server.url, "api_key_env": "my key"},
            dataset_ids=[dataset],
        )
    with read_session(engine) as session:
        assert session.scalar(select(ScoreRun.id)) is None
    port = int(vllm_server.url.rsplit(":", 1)[1].split("/")[0])
    relay = Relay(port)
    relay.on()
    run_id = create_run(
        engine,
        model=vllm_server.model,
        dataset_ids=[dataset],
        check_model=True,
        direction="symmetric",
        options={"endpoint": f"http://127.0.0.1:{relay.port}/v1", "concurrency": 2, "api_key_env": server_key},
    )
    relay.off()  # the server goes away before the worker starts
    worker = ScoringWorker(engine, device="cpu", poll_seconds=0.1, run_ids=[run_id])
    assert worker.run(once=True) == 0
    with read_session(engine) as session:
        run = session.get(ScoreRun, run_id)
        items = session.execute(
            select(WorkItem.status, WorkItem.attempts, WorkItem.error).where(WorkItem.run_id == run_id)
        ).all()
    assert run.status == "active"  # not failed: the pairs wait for the server
    assert {s for s, _, _ in items} == {"pending"} and {a for _, a, _ in items} == {0}  # the claim did not count
    assert all("cannot be reached" in e and "The pairs wait for it." in e for _, _, e in items)
    page = open_page()  # the Scoring page: the run waits, and says for what, in the worker's words
    warnings = [w.value.replace("\u2060", "") for w in page.warning]
    waiting = [w for w in warnings if w.startswith("Run “")]
    assert len(waiting) == 1, warnings
    assert waiting[0].startswith(
        f"Run “{run.name}” is waiting: The server at http://127.0.0.1:{relay.port} cannot be reached (ConnectError"
    )
    assert waiting[0].endswith("(after 3 retries). The pairs wait for it.")
    relay.on()  # back on the same address: every pair is scored, once, as the in-process scorer scores it
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, run_ids=[run_id]).run(exit_when_idle=True)
    relay.off()
    scores = scores_by_pair(engine, run_id)
    with read_session(engine) as session:
        order = session.execute(
            select(WorkItem.pair_id, WorkItem.status).where(WorkItem.run_id == run_id).order_by(WorkItem.pair_id)
        ).all()
    assert {s for _, s in order} == {"done"} and all(len(scores[p]) == 1 for p, _ in order)
    want = local.score(SOURCES[:6], HYPOTHESES[:6], symmetric=True)
    got = np.array([scores[p][0] for p, _ in order])
    assert np.abs(got - want).max() < 1e-3
    page = open_page()
    assert not [w.value for w in page.warning if "is waiting" in w.value]
    assert any("6 / 6 scored" in str(p.proto.text) for p in page.get("progress"))


def test_the_new_run_form_offers_a_model_on_a_server(vllm_server, store, server_key):
    from sqlalchemy import select

    from db.engine import read_session
    from db.models import ScoreRun
    from tests.store_fixtures import add_pairs, sentence_pairs
    from tests.test_scoring_page import open_page, widget

    url, engine = store
    add_pairs(engine, "d", sentence_pairs(3))
    page = open_page()
    widget(page.text_input, "Model").input(vllm_server.model)
    widget(page.radio, "Where the model runs").set_value("on a server (OpenAI-compatible)")
    widget(page.text_input, "Run name (optional)").input("served")
    widget(page.button, "Create run").click()
    page.run()  # no address: a sentence, nothing stored
    shown = [e.value.replace("\u2060", "") for e in page.error]  # user_text's word joiners keep it from a link
    assert shown == ["Give the server's address (e.g. http://host:8000/v1) with its API key variable and tokenizer."]
    widget(page.text_input, "Server address (on a server)").input(vllm_server.url)
    widget(page.number_input, "Requests in flight").set_value(4)
    widget(page.button, "Create run").click()
    page.run()  # no key named: the server's 401, and what to fill in
    assert "asks for an API key (401: Unauthorized): name the environment variable or Streamlit secret" in page.error[
        0
    ].value.replace("\u2060", "")
    widget(page.text_input, "API key name (optional)").input(server_key)
    widget(page.text_input, "Model").input("not-served")
    widget(page.button, "Create run").click()
    page.run()
    assert "does not serve a model named 'not-served'; it serves: tiny-judge" in page.error[0].value
    with read_session(engine) as session:
        assert session.scalar(select(ScoreRun).where(ScoreRun.name == "served")) is None
    widget(page.text_input, "Model").input(vllm_server.model)
    widget(page.button, "Create run").click()
    page.run()
    assert not page.exception and not page.error, [e.value for e in page.error]
    with read_session(engine) as session:
        run = session.scalar(select(ScoreRun).where(ScoreRun.name == "served"))
    assert (run.model, run.options) == (
        vllm_server.model,
        {"endpoint": vllm_server.url, "concurrency": 4, "api_key_env": server_key},
    )
    assert run.device is None and run.dtype is None


def test_an_llm_judge_on_the_server_answers_as_in_process_and_scores_a_run_in_the_worker(
    vllm_server, engine, server_key
):
    """LLM-Yes/No with its model on the server (pluie_core.endpoint.EndpointJudge): the prompts LLMJudge renders,
    the server's greedy answers equal to transformers' on the same model folder; a run of that kind names the
    server, is asked first (a model not served is a sentence, nothing stored) and is scored by the worker with
    those answers."""
    from sqlalchemy import func, select

    from db.datasets import import_pairs
    from db.engine import read_session
    from db.models import Score, ScoreRun
    from db.runs import RunError, create_run
    from pluie_core.endpoint import EndpointJudge
    from pluie_core.judges import LLMJudge
    from worker import ScoringWorker

    local_judge = LLMJudge(str(vllm_server.folder), kind="yes-no", device="cpu", dtype="float32", max_new_tokens=4)
    served = EndpointJudge(
        vllm_server.url, vllm_server.model, kind="yes-no", api_key_env=server_key, max_new_tokens=4, concurrency=2
    )
    assert served.judge.prompts(SOURCES[:3], HYPOTHESES[:3]) == local_judge.prompts(SOURCES[:3], HYPOTHESES[:3])
    want = local_judge.score(SOURCES[:6], HYPOTHESES[:6])
    got = served.judge.score(SOURCES[:6], HYPOTHESES[:6])
    assert got.texts == want.texts and all(want.texts)  # the same greedy answers, not empty ones
    assert np.array_equal(got.values, want.values, equal_nan=True) and got.answers == want.answers

    dataset = import_pairs(
        engine, "pairs", pd.DataFrame({"source": SOURCES[:6], "hypothesis": HYPOTHESES[:6]})
    ).dataset_id
    with pytest.raises(RunError, match="does not serve a model named 'nope'"):
        create_run(
            engine,
            kind="llm-yes-no",
            model="nope",
            dataset_ids=[dataset],
            check_model=True,
            options={"endpoint": vllm_server.url, "api_key_env": server_key},
        )
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(ScoreRun)) == 0
    run_id = create_run(
        engine,
        kind="llm-yes-no",
        model=vllm_server.model,
        dataset_ids=[dataset],
        check_model=True,
        options={"endpoint": vllm_server.url, "api_key_env": server_key, "concurrency": 2},
    )
    ScoringWorker(engine, device="cpu", poll_seconds=0.1, run_ids=[run_id]).run(exit_when_idle=True)
    with read_session(engine) as session:
        stored = session.execute(
            select(Score.pair_id, Score.details).where(Score.run_id == run_id).order_by(Score.pair_id)
        ).all()
    full = LLMJudge((local_judge.model, local_judge.tokenizer), kind="yes-no").score(SOURCES[:6], HYPOTHESES[:6])
    assert [d["answer"] for _, d in stored] == full.texts  # the template's own bound (10 tokens), as in process
