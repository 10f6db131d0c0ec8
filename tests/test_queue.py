"""The queue on a real store (SQLite file and PostgreSQL): claims, leases, completion, run controls."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections import Counter

import pytest
from sqlalchemy import func, select

from db import init_db, queue
from db.engine import read_session, write_session
from db.models import Score, ScoreRun, WorkItem
from db.runs import (
    DEFAULT_BASELINES,
    RunError,
    cancel_run,
    create_run,
    ensure_default_runs,
    pause_run,
    resume_run,
    retry_run,
    runs_progress,
    scores_by_pair,
)
from pluie_core.baselines import BASELINES
from tests.store_fixtures import add_pairs, sentence_pairs


@pytest.fixture
def engine(store_url):
    engine = init_db(store_url)
    yield engine
    engine.dispose()


def scored(run_id, batch, value=1.0):
    return [queue.ScoredItem(i.item_id, i.pair_id, value) for i in batch.items]


def test_new_run_queues_existing_pairs_and_import_queues_new_ones(engine):
    first = add_pairs(engine, "first", sentence_pairs(5))
    everywhere = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    only_second = add_pairs(engine, "second", sentence_pairs(3, seed=1))
    scoped = create_run(
        engine, name="scoped", kind="baseline", model="chrf", dataset_ids=[_dataset_id(engine, "second")]
    )
    add_pairs(engine, "third", sentence_pairs(4, seed=2))

    with read_session(engine) as session:
        per_run = Counter(session.scalars(select(WorkItem.run_id)))
    assert per_run[everywhere] == 5 + 3 + 4  # queued at creation, then by each import
    assert per_run[scoped] == 3  # only its dataset, not the later import of "third"
    assert len(first) == 5 and len(only_second) == 3


def _dataset_id(engine, name):
    from db.models import Dataset

    with read_session(engine) as session:
        return session.scalar(select(Dataset.id).where(Dataset.name == name))


def test_claims_are_disjoint_and_expired_leases_are_claimed_again(engine):
    add_pairs(engine, "d", sentence_pairs(10))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")

    a = queue.claim_batch(engine, "A", 4, lease_seconds=60)
    b = queue.claim_batch(engine, "B", 4, lease_seconds=0.5)
    assert a.run_id == b.run_id == run
    assert not set(a.item_ids) & set(b.item_ids)
    c = queue.claim_batch(engine, "C", 10, lease_seconds=60)
    assert len(c.items) == 2  # only the unclaimed rest
    assert queue.claim_batch(engine, "D", 10, lease_seconds=60) is None

    time.sleep(1.0)  # B's lease expires: B is taken for dead
    d = queue.claim_batch(engine, "D", 10, lease_seconds=60)
    assert sorted(d.item_ids) == sorted(b.item_ids)

    # B comes back late: it holds nothing any more, so it writes nothing.
    assert queue.renew_lease(engine, "B", b.item_ids, 60) == 0
    assert queue.complete_batch(engine, "B", run, scored(run, b, value=-1.0)) == 0
    assert queue.complete_batch(engine, "D", run, scored(run, d, value=2.0)) == len(d.items)
    assert queue.complete_batch(engine, "A", run, scored(run, a)) == 4
    # a second completion of the same items (a retried request) writes nothing either
    assert queue.complete_batch(engine, "A", run, scored(run, a)) == 0

    by_pair = scores_by_pair(engine, run)
    assert all(len(v) == 1 for v in by_pair.values()) and len(by_pair) == 8
    assert {by_pair[i.pair_id][0] for i in d.items} == {2.0}


def test_renewed_lease_is_not_taken(engine):
    add_pairs(engine, "d", sentence_pairs(3))
    create_run(engine, name="lev", kind="baseline", model="levenshtein")
    a = queue.claim_batch(engine, "A", 3, lease_seconds=0.6)
    for _ in range(3):
        time.sleep(0.3)
        assert queue.renew_lease(engine, "A", a.item_ids, 0.6) == 3
    assert queue.claim_batch(engine, "B", 3, lease_seconds=60) is None


def test_release_and_repeated_errors_fail_the_item(engine):
    add_pairs(engine, "d", sentence_pairs(1))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    for attempt in range(1, queue.MAX_ATTEMPTS + 1):
        batch = queue.claim_batch(engine, "A", 5, lease_seconds=60)
        assert batch is not None, f"attempt {attempt}"
        queue.release_batch(engine, "A", batch.item_ids, error="boom")
    assert queue.claim_batch(engine, "A", 5, lease_seconds=60) is None
    progress = {p.id: p for p in runs_progress(engine)}[run]
    assert (progress.failed, progress.done, progress.item_error) == (1, 0, "boom")

    retry_run(engine, run)  # the run is still active: its failed pair is queued again
    assert queue.claim_batch(engine, "A", 5, lease_seconds=60) is not None
    with pytest.raises(RunError, match="Nothing to retry"):
        retry_run(engine, run)


def test_a_runs_sentence_is_the_error_of_its_failed_pairs_not_of_one_still_to_retry(engine):
    """runs_progress counts from the claim index and reads the error of failed items only: a pending item
    whose last try failed (it will be tried again) does not give the sentence shown for the failed ones."""
    from sqlalchemy import update

    add_pairs(engine, "d", sentence_pairs(2))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    other = create_run(engine, name="lev again", kind="baseline", model="levenshtein")
    for _ in range(queue.MAX_ATTEMPTS):
        batch = queue.claim_batch(engine, "A", 5, lease_seconds=60, run_ids=[run])
        first, second = sorted(batch.item_ids)
        queue.release_batch(engine, "A", [first], error="boom")
        queue.release_batch(engine, "A", [second])
    with write_session(engine) as session:  # its last try failed too, and it has tries left
        session.execute(
            update(WorkItem).where(WorkItem.id == second).values(error="zzz: a try that failed", attempts=1)
        )
    progress = {p.id: p for p in runs_progress(engine)}
    assert (progress[run].total, progress[run].done, progress[run].failed, progress[run].item_error) == (
        2,
        0,
        1,
        "boom",
    )
    assert (progress[other].total, progress[other].done, progress[other].failed, progress[other].item_error) == (
        2,
        0,
        0,
        None,
    )


def test_pause_resume_cancel_and_failed_runs_stop_claims(engine):
    add_pairs(engine, "d", sentence_pairs(4))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    pause_run(engine, run)
    assert queue.claim_batch(engine, "A", 5, 60) is None
    add_pairs(engine, "e", sentence_pairs(2, seed=3))  # a paused run still gets new pairs queued
    resume_run(engine, run)
    batch = queue.claim_batch(engine, "A", 2, 60)
    assert batch is not None
    queue.fail_run(engine, run, "The model 'x' could not be loaded: no such path")
    assert queue.claim_batch(engine, "B", 10, 60) is None
    with read_session(engine) as session:
        stored = session.get(ScoreRun, run)
        assert stored.status == "failed" and "could not be loaded" in stored.error
        # the failed run's claimed items went back to the queue for a later retry
        assert session.scalar(select(func.count()).select_from(WorkItem).where(WorkItem.status == "claimed")) == 0
    retry_run(engine, run)
    again = queue.claim_batch(engine, "B", 10, 60)
    assert len(again.items) == 6
    cancel_run(engine, run)
    assert queue.claim_batch(engine, "C", 10, 60) is None
    with pytest.raises(RunError, match="cancelled run cannot"):
        pause_run(engine, run)


def test_worker_prefers_the_run_it_has_loaded(engine):
    add_pairs(engine, "d", sentence_pairs(6))
    first = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    second = create_run(engine, name="chrf", kind="baseline", model="chrf")
    assert queue.claim_batch(engine, "A", 2, 60).run_id == first
    assert queue.claim_batch(engine, "A", 2, 60, prefer_run_id=second).run_id == second
    assert queue.claim_batch(engine, "A", 2, 60, run_ids=[second]).run_id == second


def test_default_runs_are_created_once(engine):
    ensure_default_runs(engine)
    ensure_default_runs(engine)
    with read_session(engine) as session:
        names = sorted(session.scalars(select(ScoreRun.name)))
    assert names == sorted(name for name, _, _ in DEFAULT_BASELINES)
    # one run per baseline of the registry that needs no model named, the paper's BLEU beside sacreBLEU's
    assert {"BLEU", "BLEU (paper)", "Levenshtein", "BERTScore"} <= set(names) and "BERT-iBLEU" not in names
    assert len(names) == sum(b.default_run for b in BASELINES.values())


def test_run_requests_a_user_must_fix_raise_readable_errors(engine):
    with pytest.raises(RunError, match="Give a model"):
        create_run(engine, model=" ")
    with pytest.raises(RunError, match="exactly two answer words"):
        create_run(engine, model="m", answers=["Yes"])
    with pytest.raises(RunError, match="Direction"):
        create_run(engine, model="m", direction="sideways")
    create_run(engine, model="m", name="same")
    with pytest.raises(RunError, match="already exists"):
        create_run(engine, model="m", name="same")


def test_concurrent_claimers_never_share_an_item(engine):
    """Four threads with their own connections drain one queue; every item is scored once."""
    add_pairs(engine, "d", sentence_pairs(120))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    claimed: list[int] = []
    lock = threading.Lock()
    errors = []

    def drain(worker_id):
        try:
            while (batch := queue.claim_batch(engine, worker_id, 7, lease_seconds=60)) is not None:
                with lock:
                    claimed.extend(batch.item_ids)
                queue.complete_batch(engine, worker_id, batch.run_id, scored(run, batch))
        except Exception as exc:  # surfaced below: a thread's failure must fail the test
            errors.append(exc)

    threads = [threading.Thread(target=drain, args=(f"W{k}",)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert len(claimed) == len(set(claimed)) == 120
    with read_session(engine) as session:
        assert session.scalar(select(func.count()).select_from(Score)) == 120


def test_progress_counts_rate_and_time_left(engine):
    add_pairs(engine, "d", sentence_pairs(10))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    before = {p.id: p for p in runs_progress(engine)}[run]
    assert (before.total, before.done, before.pairs_per_second, before.seconds_left) == (10, 0, None, None)
    batch = queue.claim_batch(engine, "A", 6, 60)
    queue.complete_batch(engine, "A", run, scored(run, batch))
    after = {p.id: p for p in runs_progress(engine)}[run]
    assert (after.total, after.done, after.failed) == (10, 6, 0)
    assert 0 < after.pairs_per_second <= 6  # six scores over at least one second
    assert after.seconds_left == pytest.approx(4 / after.pairs_per_second)
    pause_run(engine, run)
    assert {p.id: p for p in runs_progress(engine)}[run].seconds_left is None  # a paused run has no ETA


def test_a_finished_run_shows_the_rate_it_ran_at(engine):
    add_pairs(engine, "d", sentence_pairs(8))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    batch = queue.claim_batch(engine, "A", 8, 60)
    queue.complete_batch(engine, "A", run, scored(run, batch))
    base = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=30)
    with write_session(engine) as session:  # the 8 scores were written over 2 s, 30 s ago
        for i, score in enumerate(session.scalars(select(Score).order_by(Score.id))):
            score.created_at = base + dt.timedelta(seconds=2 * i / 7)
    progress = {p.id: p for p in runs_progress(engine)}[run]
    assert progress.done == 8 and progress.seconds_left is None
    assert progress.pairs_per_second == pytest.approx(4.0)  # not 8 over the 30 s since
