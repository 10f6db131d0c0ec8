"""The worker's progress is honest (issue 37), on real stores (a SQLite file and PostgreSQL) with the
real worker code: a claim is sized for the run it holds, scores are written as they are computed, lost
work is dropped at once, and runs are served in turn. The slow runs are a real small PLUIE model on the
CPU (worker processes) or a registered baseline that takes its time (the worker in this process)."""

from __future__ import annotations

import dataclasses
import signal
import threading
import time

import pytest

import worker as worker_module
from db import init_db, queue
from db.datasets import delete_dataset
from db.engine import read_session
from db.models import Dataset, WorkItem
from db.runs import create_run, pause_run, resume_run, runs_progress
from pluie_core.baselines import BASELINES, Baseline, levenshtein
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.test_worker import done_count, held_by, start_worker, wait_until


@pytest.fixture
def engine(store_url):
    engine = init_db(store_url)
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def slow_model(tiny_model_builder):
    """A random PLUIE model big enough to be slow on the CPU (about 50-150 pairs/s on FS-DIRECT)."""
    pytest.importorskip("pluie_core.scorer")
    return tiny_model_builder(hidden_size=512, num_layers=4)


def slowly(seconds_per_pair: float, calls: list | None = None, name: str = ""):
    """Levenshtein that takes `seconds_per_pair` a pair: a slow metric through the worker's real path."""

    def score(sources, hypotheses):
        if calls is not None:
            calls.append(name)
        time.sleep(seconds_per_pair * len(sources))
        return levenshtein(sources, hypotheses)

    return score


def progress_of(engine, run_id):
    return next(p for p in runs_progress(engine) if p.id == run_id)


def dataset_id(engine, name):
    from sqlalchemy import select

    with read_session(engine) as session:
        return session.scalar(select(Dataset.id).where(Dataset.name == name))


def claimed(engine, run_id) -> int:
    from sqlalchemy import func, select

    with read_session(engine) as session:
        return session.scalar(
            select(func.count()).select_from(WorkItem).where(WorkItem.run_id == run_id, WorkItem.status == "claimed")
        )


# ------------------------------------------------------------------ worker processes


@pytest.mark.slow
def test_a_slow_run_after_a_fast_one_shows_its_scores_within_a_minute(store_url, tmp_path, slow_model):
    """The browser walk's case: the worker has scored a fast baseline (thousands of pairs a second), then
    a PLUIE run is created. Its first claim is small and its scores land piece by piece, the first within
    a minute of the run's creation, so the count, rate and time left move while the run has work (before:
    one claim of every pair, no score until all were scored). SIGTERM stops it within a piece, the rest
    of its claims handed back."""
    engine = init_db(store_url)
    n = 1200
    add_pairs(engine, "d", sentence_pairs(n))
    fast = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    log = tmp_path / "worker.log"
    worker = start_worker(store_url, "--device", "cpu", log=log)
    seen = []  # (seconds since the slow run was created, its pairs done), at each change
    try:
        wait_until(lambda: done_count(engine, fast) == n, 120, "the fast run scored", log)
        created = time.monotonic()
        slow = create_run(engine, name="slow", model=str(slow_model), template="fs-direct", device="cpu")
        shown = []

        def progressed():
            done = done_count(engine, slow)
            if done and (not seen or seen[-1][1] != done):
                seen.append((time.monotonic() - created, done))
                if len(seen) == 3:
                    shown.append(progress_of(engine, slow))  # what the Scoring page reads now
            return len(seen) >= 3 or done == n

        wait_until(progressed, 120, "the slow run's scores", log)
        worker.send_signal(signal.SIGTERM)
        code = worker.wait(timeout=60)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert code == 0, log.read_text()[-3000:]
    first_seconds, first_done = seen[0]
    assert first_seconds < 60, f"the first score came {first_seconds:.0f} s after the run was created"
    assert first_done <= worker_module.FIRST_CLAIM, f"the first write held {first_done} pairs: the claim was not small"
    assert len(seen) >= 3 and seen[2][1] < n, f"the scores did not arrive in pieces: {seen}"
    page = shown[0]
    assert page.pairs_per_second and page.seconds_left, "the page should show a rate and a time left"
    assert done_count(engine, slow) < n, "SIGTERM should stop the worker within a piece"
    assert held_by(engine, worker.pid) == 0, "a stopped worker hands its claims back"
    engine.dispose()


@pytest.mark.slow
def test_a_dataset_deleted_mid_claim_lets_the_next_import_be_scored_at_once(store_url, tmp_path, slow_model):
    """A dataset deleted while the worker scores a claim of its pairs (and holds the next one): the worker
    drops both between two pieces, hands back nothing it no longer owns and scores the next import at
    once (before: it computed the whole deleted claim, logging a lost lease every 5 s); the deleted pairs
    leave the run's progress and compute time in the same moment."""
    engine = init_db(store_url)
    add_pairs(engine, "doomed", sentence_pairs(3000))
    run = create_run(engine, name="slow", model=str(slow_model), template="fs-direct", device="cpu")
    log = tmp_path / "worker.log"
    worker = start_worker(store_url, "--device", "cpu", "--claim-size", "1500", log=log)
    try:
        wait_until(lambda: done_count(engine, run) > 0, 180, "the first scores", log)
        assert held_by(engine, worker.pid) > 0  # mid-claim
        delete_dataset(engine, dataset_id(engine, "doomed"))
        deleted = time.monotonic()
        gone = progress_of(engine, run)
        add_pairs(engine, "next", sentence_pairs(20, seed=5))
        wait_until(lambda: done_count(engine, run) == 20, 120, "the next import scored", log)
        waited = time.monotonic() - deleted
        after = progress_of(engine, run)
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0, log.read_text()[-3000:]
    assert waited < 15, f"the next import waited {waited:.1f} s for the deleted claim"
    assert log.read_text().count("lost the lease") <= 1, "a lost lease is said once, not every 5 s"
    assert (gone.total, gone.done, gone.timed_pairs, gone.compute_seconds) == (0, 0, 0, pytest.approx(0.0))
    assert (after.total, after.done, after.timed_pairs) == (20, 20, 20)
    engine.dispose()


# ------------------------------------------------------------------ the worker in this process


def test_claims_take_the_runs_in_turn_each_sized_for_its_run(engine):
    add_pairs(engine, "d", sentence_pairs(10))
    a, b, c = (create_run(engine, name=n, kind="baseline", model=n) for n in ("levenshtein", "chrf", "bleu"))
    sizes = {a: 2, b: 3, c: 4}
    first = queue.claim_batch(engine, "W", sizes.get, 60, after_run_id=a)
    assert (first.run_id, len(first.items)) == (b, 3)  # the run after the one claimed last, sized for it
    second = queue.claim_batch(engine, "W", sizes.get, 60, after_run_id=c)
    assert (second.run_id, len(second.items)) == (a, 2)  # round again after the last run
    assert queue.claim_batch(engine, "W", sizes.get, 60, after_run_id=a, prefer_run_id=a).run_id == a
    pause_run(engine, b)
    assert queue.claim_batch(engine, "W", sizes.get, 60, after_run_id=a).run_id == c  # a paused run has no turn
    assert queue.claim_batch(engine, "W", 1, 60).run_id == a  # no turn given: the oldest run


@pytest.mark.parametrize("overlap", [True, False], ids=["overlap", "no-overlap"])
def test_a_new_run_is_scored_while_others_still_have_work(engine, monkeypatch, overlap):
    """A run created while the worker scores another takes every other claim from the next claim or
    the one after (the one fetched ahead) on, until one of them has nothing left (before: it waited
    until the first run had scored every pair)."""
    calls: list[str] = []

    def first(sources, hypotheses):
        calls.append("first")
        if calls.count("first") == 1:  # the first claim is being scored: a new run
            create_run(engine, name="second", kind="baseline", model="second")
        return levenshtein(sources, hypotheses)

    monkeypatch.setitem(BASELINES, "first", Baseline("first", first, False, "levenshtein"))
    monkeypatch.setitem(BASELINES, "second", Baseline("second", slowly(0.0, calls, "second"), False, "levenshtein"))
    add_pairs(engine, "d", sentence_pairs(100))
    create_run(engine, name="first", kind="baseline", model="first")
    worker = worker_module.ScoringWorker(
        engine, device="cpu", claim_size=10, overlap=overlap, poll_seconds=0.05, refit_seconds=None
    )
    assert worker.run(exit_when_idle=True) == 200
    start = calls.index("second")
    assert start <= 2, f"the new run waited: {calls}"
    for j in range(start + 1, len(calls)):
        if calls[j] == calls[j - 1]:  # the same run twice in a row only once the other has no work left
            other = "first" if calls[j] == "second" else "second"
            assert other not in calls[j:], calls


def test_a_claim_is_sized_for_the_run_it_holds(engine, monkeypatch):
    """After a fast run (its rate: thousands of pairs a second) a slow run's first claim is FIRST_CLAIM
    pairs, and each later one about CLAIM_SECONDS of work at the slow run's own rate (before: the fast
    run's claim size, every pair of the slow run in one claim)."""
    monkeypatch.setattr(worker_module, "CLAIM_SECONDS", 0.2)
    monkeypatch.setattr(worker_module, "SORT_SECONDS", 0.5)
    monkeypatch.setattr(worker_module, "PIECE_SECONDS", 0.1, raising=False)
    monkeypatch.setitem(BASELINES, "slowpoke", Baseline("slowpoke", slowly(0.004), False, "slow"))
    add_pairs(engine, "d", sentence_pairs(300))
    fast = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    slow = create_run(engine, name="slowpoke", kind="baseline", model="slowpoke")
    claims = []
    real_claim = queue.claim_batch

    def recorded(*args, **kwargs):
        batch = real_claim(*args, **kwargs)
        if batch is not None:
            claims.append((batch.run_id, len(batch.items)))
        return batch

    monkeypatch.setattr(queue, "claim_batch", recorded)
    worker = worker_module.ScoringWorker(engine, device="cpu", overlap=False, poll_seconds=0.05, refit_seconds=None)
    assert worker.run(exit_when_idle=True) == 600
    slow_claims = [size for run, size in claims if run == slow]
    assert slow_claims[0] == worker_module.FIRST_CLAIM, claims
    # 0.2 s of work at 250 pairs/s or less, at least 8 batches of 16 when that is at most 0.5 s: 128 at most
    assert max(slow_claims) <= 8 * worker_module.MIN_CLAIM and len(slow_claims) >= 3, claims
    assert max(size for run, size in claims if run == fast) > 128  # the fast run's claims are its own


def test_loading_the_model_is_said_only_while_it_loads(tmp_path, monkeypatch, tiny_model_path):
    """The worker's state reads "loading the model" while the run's model loads and "scoring" from its
    first piece on (before: "loading the model" until the first claim was written)."""
    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    add_pairs(engine, "d", sentence_pairs(40))
    create_run(engine, name="tiny", model=str(tiny_model_path), template="fs-direct", device="cpu")
    states = []

    def state():
        return next(iter(queue.worker_states(engine).values()))

    real_load = worker_module.load_metric

    def observed_load(*args, **kwargs):
        states.append(("load", state()))
        metric = real_load(*args, **kwargs)

        def score(sources, hypotheses):
            states.append(("score", state()))
            return metric.score(sources, hypotheses)

        return dataclasses.replace(metric, score=score)

    monkeypatch.setattr(worker_module, "load_metric", observed_load)
    worker = worker_module.ScoringWorker(engine, device="cpu", overlap=False, poll_seconds=0.05, refit_seconds=None)
    assert worker.run(exit_when_idle=True) == 40
    assert states[0] == ("load", "loading the model")
    assert states[1:] and all(s == ("score", "scoring") for s in states[1:]), states
    engine.dispose()


def test_pausing_a_run_stops_its_scoring_within_seconds(engine, monkeypatch):
    """A run paused while the worker scores a long claim of it: the worker stops between two pieces and
    hands the rest back to the queue (before: the whole claim was scored and written)."""
    monkeypatch.setattr(worker_module, "PIECE_SECONDS", 0.1, raising=False)
    monkeypatch.setitem(BASELINES, "slowpoke", Baseline("slowpoke", slowly(0.002), False, "slow"))
    add_pairs(engine, "d", sentence_pairs(1000))
    run = create_run(engine, name="slowpoke", kind="baseline", model="slowpoke")
    worker = worker_module.ScoringWorker(engine, device="cpu", claim_size=1000, poll_seconds=0.05, refit_seconds=None)
    thread = threading.Thread(target=worker.run, kwargs={"exit_when_idle": True}, daemon=True)
    thread.start()
    wait_until(lambda: done_count(engine, run) > 0, 60, "the first piece")
    pause_run(engine, run)
    at_pause = done_count(engine, run)
    thread.join(timeout=15)
    assert not thread.is_alive(), "with its only run paused the worker should have nothing left to do"
    after = done_count(engine, run)
    assert after < 1000 and after - at_pause <= 100, f"{after - at_pause} pairs scored after the pause"
    assert claimed(engine, run) == 0, "the rest of the claim goes back to the queue"
    resume_run(engine, run)
    assert len(queue.claim_batch(engine, "other", 2000, 60).items) == 1000 - after


def test_deleted_pairs_leave_the_compute_time_at_once(engine):
    add_pairs(engine, "keep", sentence_pairs(6))
    add_pairs(engine, "drop", sentence_pairs(4, seed=1))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    batch = queue.claim_batch(engine, "A", 10, 60)
    scored = [queue.ScoredItem(i.item_id, i.pair_id, 1.0) for i in batch.items]
    assert queue.complete_batch(engine, "A", run, scored, compute_seconds=5.0) == 10
    before = progress_of(engine, run)
    assert (before.done, before.timed_pairs, before.compute_seconds) == (10, 10, pytest.approx(5.0))
    delete_dataset(engine, dataset_id(engine, "drop"))
    after = progress_of(engine, run)
    assert (after.total, after.done, after.timed_pairs) == (6, 6, 6)
    assert after.compute_seconds == pytest.approx(3.0) and after.seconds_per_pair == pytest.approx(0.5)
