"""The worker as a real process on a real store: crashes, concurrency, imports during a run,
SIGTERM, and the app's auto-start. (An unloadable model: tests/test_scoring_page.py.)"""

from __future__ import annotations

import os
import random
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from db import init_db, queue
from db.engine import read_session
from db.models import Score, ScoreRun, Worker, WorkItem
from db.runs import DEFAULT_BASELINES, create_run, scores_by_pair
from tests.preloaded import preloaded
from tests.store_fixtures import add_pairs, sentence_pairs

REPO = Path(__file__).resolve().parents[1]


# what worker.py imports besides the project's own modules: preloaded once per test process (tests/preloaded.py)
WORKER_LIBRARIES = (
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.llama.modeling_llama",
    "transformers.generation.continuous_batching",
    "tokenizers",
    "numpy",
    "pandas",
    "sqlalchemy",
    "sqlalchemy.dialects.sqlite",
    "alembic",
    "alembic.command",
    "alembic.config",
    "jinja2",
    "tabulate",
)


def start_worker(url: str, *args: str, log: Path):
    """worker.py on this store, as a process of its own (a child of the test process's preloaded parent, which
    has imported torch and transformers once: tests/preloaded.py); Popen's poll, wait and send_signal."""
    env = {**os.environ, "PLUIE_DB_URL": url}
    return preloaded(WORKER_LIBRARIES).start(
        ["worker.py", "--db", url, "--no-default-runs", "--poll-seconds", "0.2", *args], cwd=REPO, env=env, log=log
    )


def done_count(engine, run_id: int) -> int:
    with read_session(engine) as session:
        return session.scalar(
            select(func.count()).select_from(WorkItem).where(WorkItem.run_id == run_id, WorkItem.status == "done")
        )


def held_by(engine, pid: int) -> int:
    """Items leased to the worker process `pid` (worker ids carry the pid)."""
    with read_session(engine) as session:
        return session.scalar(
            select(func.count())
            .select_from(WorkItem)
            .where(WorkItem.status == "claimed", WorkItem.lease_owner.like(f"%-{pid}-%"))
        )


def written_by(engine, pid: int) -> int:
    """Scores written by the worker process `pid`."""
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Score).where(Score.worker_id.like(f"%-{pid}-%")))


def wait_until(condition, timeout: float, what: str, log: Path | None = None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.02)
    tail = log.read_text()[-3000:] if log and log.exists() else ""
    raise AssertionError(f"timed out after {timeout}s waiting for {what}\n{tail}")


def assert_one_score_per_pair(engine, run_id: int, pair_ids) -> dict[int, float]:
    by_pair = scores_by_pair(engine, run_id)
    doubled = {p: v for p, v in by_pair.items() if len(v) != 1}
    assert not doubled, f"pairs scored more than once: {doubled}"
    assert sorted(by_pair) == sorted(pair_ids), "some pairs have no score"
    return {p: v[0] for p, v in by_pair.items()}


@pytest.fixture(scope="module")
def tiny_model(tiny_model_builder):  # noqa: F811
    pytest.importorskip("pluie_core.scorer")
    return tiny_model_builder()


@pytest.mark.slow
def test_sigkilled_worker_loses_nothing_and_scores_nothing_twice(store_url, tmp_path, tiny_model):
    """A worker killed at random moments mid-run, five times and more, then stopped with SIGTERM,
    then let finish: every pair has exactly one score, equal to what the scorer gives for that pair
    alone. The worker overlaps its store work with scoring (the default): a kill may land while it
    writes one claim, holds the next, or both."""
    from pluie_core.scorer import PluieScorer

    url = store_url
    engine = init_db(url)
    pairs = sentence_pairs(400)
    pair_ids = add_pairs(engine, "crash", pairs)
    run = create_run(engine, name="tiny", model=str(tiny_model), template="fs-direct", device="cpu")
    log = tmp_path / "worker.log"
    rng = random.Random(1234)
    args = ("--runs", str(run), "--claim-size", "4", "--batch-size", "4", "--lease-seconds", "2", "--device", "cpu")

    def interrupt_while_scoring(worker, sig):
        """Send `sig` at a random moment once this incarnation is scoring (not while it imports
        torch): up to 0.2 s after its first write, sooner if it has already written 40 pairs,
        so that the run is still going however fast the machine is."""
        wait_until(lambda: written_by(engine, worker.pid) > 0 or worker.poll() is not None, 120, "a first batch", log)
        moment = time.monotonic() + rng.uniform(0.0, 0.2)
        while time.monotonic() < moment and written_by(engine, worker.pid) < 40:
            time.sleep(0.005)
        worker.send_signal(sig)

    kills = 0
    while kills < 5:
        assert done_count(engine, run) < len(pairs), f"the run finished after only {kills} kills"
        worker = start_worker(url, *args, log=log)
        interrupt_while_scoring(worker, signal.SIGKILL)
        worker.wait(timeout=30)
        kills += 1
    assert done_count(engine, run) < len(pairs)

    # SIGTERM at a random moment: the batch in hand is finished and written, then a clean exit
    worker = start_worker(url, *args, log=log)
    interrupt_while_scoring(worker, signal.SIGTERM)
    assert worker.wait(timeout=120) == 0, log.read_text()[-3000:]
    assert held_by(engine, worker.pid) == 0, "a stopped worker must not keep items leased"
    with read_session(engine) as session:
        record = session.scalar(select(Worker).where(Worker.pid == worker.pid))
    assert record.stopped_at is not None and record.pairs_done == written_by(engine, worker.pid)
    assert done_count(engine, run) < len(pairs)

    final = start_worker(url, *args, "--exit-when-idle", log=log)
    assert final.wait(timeout=300) == 0, log.read_text()[-3000:]
    stored = assert_one_score_per_pair(engine, run, pair_ids)

    # the scorer's values for the 400 pairs in one call (its batches are exact per pair: each pair's tokens
    # are attended on their own, so one call gives each pair's score alone; checked here on a sample,
    # whose one-pair calls alone took 8 s for the 400 on a busy machine)
    scorer = PluieScorer(str(tiny_model), template="fs-direct", device="cpu")
    expected = dict(zip(pair_ids, (float(v) for v in scorer.score([s for s, _ in pairs], [h for _, h in pairs]))))
    for i in [0, len(pairs) - 1, *rng.sample(range(1, len(pairs) - 1), 6)]:
        alone = float(scorer.score([pairs[i][0]], [pairs[i][1]])[0])
        assert expected[pair_ids[i]] == pytest.approx(alone, abs=1e-5), f"pair {pair_ids[i]} in one call and alone"
    for pair_id in pair_ids:
        assert stored[pair_id] == pytest.approx(expected[pair_id], abs=1e-4), f"pair {pair_id}"
    with read_session(engine) as session:
        # the dead workers' leases were taken over: some items were claimed more than once
        assert session.scalar(select(func.max(WorkItem.attempts)).where(WorkItem.run_id == run)) > 1
    engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("mode", [(), ("--no-overlap",)], ids=["overlap", "no-overlap"])
def test_two_workers_on_one_queue_never_score_a_pair_twice(store_url, tmp_path, mode, tiny_model):  # noqa: F811
    engine = init_db(store_url)
    log = tmp_path / "workers.log"
    workers = [start_worker(store_url, "--claim-size", "5", "--device", "cpu", *mode, log=log) for _ in range(2)]
    try:
        wait_until(lambda: len(queue.alive_workers(engine)) == 2, 120, "two workers", log)
        # the work arrives while both are waiting, so both take part. A model's run first: the first claim
        # of each worker loads the model, seconds in which the store is free for the other's claims (on
        # baselines alone, one worker writing without a pause could keep SQLite's lock from the other
        # until the work was done: seen on CI, 800 pairs in 1.2 s by one worker)
        pair_ids = add_pairs(engine, "shared", sentence_pairs(400))
        runs = [
            create_run(engine, name="tiny", model=str(tiny_model), template="fs-direct", device="cpu"),
            *(create_run(engine, name=n, kind="baseline", model=n) for n in ("levenshtein", "chrf")),
        ]
        wait_until(lambda: all(done_count(engine, r) == 400 for r in runs), 180, "all pairs scored", log)
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        codes = [w.wait(timeout=60) for w in workers]
    assert codes == [0, 0], log.read_text()[-3000:]
    for run in runs:
        assert_one_score_per_pair(engine, run, pair_ids)
    with read_session(engine) as session:
        writers = set(session.scalars(select(Score.worker_id).distinct()))
        stopped = session.scalars(select(Worker.stopped_at)).all()
    assert len(writers) == 2, "both workers should have written scores"
    assert all(stopped), "a worker stopped by SIGTERM records its stop"
    engine.dispose()


@pytest.mark.slow
def test_pairs_imported_during_an_active_run_are_scored_without_asking(tmp_path):
    from worker import baseline_registry

    url = f"sqlite:///{tmp_path / 'store.db'}"
    engine = init_db(url)
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    log = tmp_path / "worker.log"
    worker = start_worker(url, "--device", "cpu", log=log)
    try:
        first = add_pairs(engine, "first", sentence_pairs(30))
        wait_until(lambda: done_count(engine, run) == 30, 120, "the first import scored", log)
        later = sentence_pairs(25, seed=7)
        later_ids = add_pairs(engine, "later", later)
        wait_until(lambda: done_count(engine, run) == 55, 60, "the later import scored", log)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    stored = assert_one_score_per_pair(engine, run, first + later_ids)
    expected = baseline_registry()["levenshtein"]([s for s, _ in later], [h for _, h in later])
    np.testing.assert_allclose([stored[i] for i in later_ids], expected, atol=1e-9)
    engine.dispose()


def test_app_starts_one_worker_when_none_is_alive(tmp_path, monkeypatch):
    import worker_launch as launcher

    url = f"sqlite:///{tmp_path / 'store.db'}"
    monkeypatch.delenv("PLUIE_NO_WORKER", raising=False)
    started = launcher.ensure_worker_running(url, log_path=tmp_path / "worker.log")
    assert started is not None
    try:
        engine = init_db(url)
        wait_until(
            lambda: len(queue.alive_workers(engine)) == 1, 120, "the worker's heartbeat", tmp_path / "worker.log"
        )
        assert launcher.ensure_worker_running(url) is None  # one is alive: no second one
        with read_session(engine) as session:  # the baseline runs exist from the first start
            assert session.scalar(select(func.count()).select_from(ScoreRun).where(ScoreRun.kind == "baseline")) == len(
                DEFAULT_BASELINES
            )
        monkeypatch.setenv("PLUIE_NO_WORKER", "1")
        engine.dispose()
    finally:
        started.send_signal(signal.SIGTERM)
        assert started.wait(timeout=60) == 0
    assert launcher.ensure_worker_running(url) is None  # switched off by PLUIE_NO_WORKER


@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
def test_runs_of_one_model_share_its_weights_and_directions_are_scored_right(tmp_path, tiny_model, overlap):
    """In process, the same worker code: a forward, a backward and a symmetric run of one model,
    with the next claim fetched while the model scores (it may belong to the next run) or not."""
    from pluie_core.scorer import PluieScorer
    from worker import ScoringWorker

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    pairs = sentence_pairs(6)
    pair_ids = add_pairs(engine, "d", pairs)
    runs = {
        d: create_run(engine, name=d, model=str(tiny_model), template="direct", direction=d, device="cpu")
        for d in ("forward", "backward", "symmetric")
    }
    worker = ScoringWorker(engine, device="cpu", batch_size=4, claim_size=4, overlap=overlap, poll_seconds=0.1)
    worker.run(exit_when_idle=True)

    held = {id(m.weights[0]) for m in worker._metrics.values()}
    assert len(held) == 1, "the model should be loaded once for its three runs"
    scorer = PluieScorer(str(tiny_model), template="direct", device="cpu")
    sources, hypotheses = [s for s, _ in pairs], [h for _, h in pairs]
    forward, backward = scorer.score(sources, hypotheses), scorer.score(hypotheses, sources)
    assert not np.allclose(forward, backward, atol=1e-3)  # else the directions could not be told apart
    expected = {"forward": forward, "backward": backward, "symmetric": (forward + backward) / 2}
    for direction, run in runs.items():
        stored = assert_one_score_per_pair(engine, run, pair_ids)
        np.testing.assert_allclose([stored[p] for p in pair_ids], expected[direction], atol=1e-4)
    with read_session(engine) as session:
        details = session.scalar(select(Score.details).where(Score.run_id == runs["symmetric"]).limit(1))
    assert set(details) == {"forward", "backward"}
    engine.dispose()


@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
def test_the_store_works_while_the_model_scores(tmp_path, monkeypatch, overlap):
    """While the model scores claim k, the worker already holds claim k+1 and has written claim k-1
    (overlap), or holds claim k alone (no overlap); either way every pair is scored once, the
    claims are as large as asked and independent of the scorer's batch size."""
    import worker as worker_module
    from pluie_core.baselines import BASELINES, Baseline, levenshtein

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    pairs = sentence_pairs(23)
    pair_ids = add_pairs(engine, "d", pairs)
    seen = []  # per claim: (its size, items leased when scoring, items done)

    def leased_and_done():
        with read_session(engine) as session:
            rows = dict(session.execute(select(WorkItem.status, func.count()).group_by(WorkItem.status)).all())
        return rows.get("claimed", 0), rows.get("done", 0)

    def observed(sources, hypotheses):
        done_before = 5 * len(seen)  # claims of 5: the claims already scored
        expect_held = min(5, len(pairs) - done_before - len(sources)) + len(sources) if overlap else len(sources)
        wait_until(
            lambda: leased_and_done() == (expect_held, done_before),
            30,
            f"claim {len(seen)}: {expect_held} items leased and {done_before} done",
        )
        seen.append((len(sources), *leased_and_done()))
        return levenshtein(sources, hypotheses)

    monkeypatch.setitem(BASELINES, "observed", Baseline("observed", observed, False, "levenshtein, watched"))
    run = create_run(engine, name="observed", kind="baseline", model="observed")  # runs name registry baselines
    worker = worker_module.ScoringWorker(
        engine, device="cpu", claim_size=5, batch_size=2, overlap=overlap, poll_seconds=0.1
    )
    assert worker.run(exit_when_idle=True) == len(pairs)
    assert [n for n, _, _ in seen] == [5, 5, 5, 5, 3]
    if overlap:  # this claim and the next one leased; the previous one already written
        assert [(held, done) for _, held, done in seen] == [(10, 0), (10, 5), (10, 10), (8, 15), (3, 20)]
    else:
        assert [(held, done) for _, held, done in seen] == [(5, 0), (5, 5), (5, 10), (5, 15), (3, 20)]
    stored = assert_one_score_per_pair(engine, run, pair_ids)
    np.testing.assert_allclose([stored[p] for p in pair_ids], levenshtein(*zip(*pairs)), atol=1e-9)
    assert leased_and_done() == (0, len(pairs))
    engine.dispose()


def test_claims_hold_a_few_seconds_of_work_in_whole_batches(tmp_path):
    import worker as worker_module

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    automatic = worker_module.ScoringWorker(engine, device="cpu")
    assert automatic._claim_size(1) == worker_module.FIRST_CLAIM  # no rate measured yet
    seconds, step = worker_module.CLAIM_SECONDS, worker_module.MIN_CLAIM
    for rate in (0.5, 30.0, 333.0, 1e6):
        automatic._rates[1] = rate
        sorted_enough = min(worker_module.SORT_BATCHES * step, rate * worker_module.SORT_SECONDS)
        expected = min(max(step, int(max(rate * seconds, sorted_enough)) // step * step), worker_module.MAX_CLAIM)
        assert automatic._claim_size(1) == expected
    assert automatic._claim_size(1) == worker_module.MAX_CLAIM and automatic._claim_size(2) == worker_module.FIRST_CLAIM
    batched = worker_module.ScoringWorker(engine, device="cpu", batch_size=50)
    batched._rates[1] = 30.0  # 8 batches of 50 are 13 s of work (under SORT_SECONDS): more than 6 s of it
    assert batched._claim_size(1) == worker_module.SORT_BATCHES * 50
    batched._rates[1] = 500.0  # 6 s of work is more than 8 batches
    assert batched._claim_size(1) == int(500.0 * seconds) // 50 * 50  # whole batches of the scorer
    batched._rates[1] = 0.1
    assert batched._claim_size(1) == 50
    assert worker_module.ScoringWorker(engine, device="cpu", claim_size=7)._claim_size(1) == 7
    engine.dispose()
