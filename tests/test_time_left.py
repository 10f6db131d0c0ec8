"""The Scoring page's rate and time left from a run's own pieces (issue 56, item 6): the arithmetic
(lab.time_left), the store's figures while the worker takes runs in turn (db.runs.runs_progress), and
the page's line (AppTest)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select, update

from db import queue
from db.engine import write_session
from db.models import Score, ScoreRun, WorkItem
from db.runs import create_run, runs_progress
from lab.time_left import ROUGH_PAIRS, RunWork, seconds_per_pair, time_left
from tests.store_fixtures import add_pairs, sentence_pairs
from tests.test_scoring_page import open_page, store  # noqa: F401 (fixture: the page's SQLite store)


def test_a_run_alone_has_its_own_work_left_over_the_workers():
    (estimate,) = time_left([RunWork("a", left=30, seconds_per_pair=0.5, timed_pairs=200)]).values()
    assert (estimate.low, estimate.high, estimate.pairs_per_second, estimate.rough) == (15.0, 15.0, 2.0, False)
    assert not estimate.is_range
    halved = time_left([RunWork("a", 30, 0.5, 200)], workers=2)["a"]
    assert (halved.low, halved.high) == (7.5, 7.5)
    assert time_left([RunWork("a", 30, 0.5, 200)], workers=0)["a"].low == 15.0  # no live worker: as if one


def test_runs_taken_in_turn_share_the_time_until_each_is_done():
    runs = [
        RunWork("a", 30, 0.5, 200),  # 15 s of its own work
        RunWork("b", 10, 0.5, 200),  # 5 s: done first, during a's turns
        RunWork("c", 100, 1.0, 200),
    ]  # 100 s: shares every turn until a is done
    got = time_left(runs)
    assert got["a"].low == got["a"].high == 15 + 5 + 15
    assert got["b"].low == 5 + 5 + 5
    assert got["c"].low == 100 + 15 + 5
    # a run whose rate is not measured yet may take no turn or every turn: a range, the same for any wall clock
    unknown = time_left(runs + [RunWork("d", 50, None)])
    assert (unknown["a"].low, unknown["a"].high) == (35, 35 + 15) and unknown["a"].is_range
    assert "d" not in unknown
    # nothing left, or no rate: no estimate
    assert time_left([RunWork("e", 0, 0.5, 10), RunWork("f", 5, None)]) == {}


def test_an_estimate_on_few_pairs_is_rough():
    assert time_left([RunWork("a", 30, 0.5, ROUGH_PAIRS - 1)])["a"].rough
    assert not time_left([RunWork("a", 30, 0.5, ROUGH_PAIRS)])["a"].rough
    assert seconds_per_pair(10.0, 40) == 0.25
    assert seconds_per_pair(0.0, 0) is None and seconds_per_pair(3.0, 0) is None


def _scored_earlier(engine, run_id: int, pairs: int, compute_seconds: float, seconds_ago: float) -> None:
    """``pairs`` of the run scored by a worker's piece that took ``compute_seconds``, written ``seconds_ago``."""
    batch = queue.claim_batch(engine, "W", pairs, 60, run_ids=[run_id])
    queue.complete_batch(
        engine,
        "W",
        run_id,
        [queue.ScoredItem(i.item_id, i.pair_id, 0.5) for i in batch.items],
        compute_seconds=compute_seconds,
    )
    when = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None) - dt.timedelta(seconds=seconds_ago)
    with write_session(engine) as session:
        session.execute(update(Score).where(Score.run_id == run_id).values(created_at=when))


def test_the_time_left_does_not_swing_while_the_worker_scores_the_other_runs(store):
    """A run whose piece was written 5 s ago (its turn) and one written 55 s ago (the other runs' turns since):
    the wall clock's rate reads 10 pairs in 5 s, then in 55 s, eleven times longer; the run's own pieces
    say the same in both: 30 pairs left at 0.5 s each, 15 s, to 30 s while the other run's rate is unknown."""
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(40))
    mine = create_run(engine, name="mine", kind="baseline", model="levenshtein")
    create_run(engine, name="other", kind="baseline", model="bleu")  # queued, its rate not measured yet
    seen = []
    for seconds_ago in (5, 55):
        with write_session(engine) as session:  # the run as before its piece
            session.execute(
                update(WorkItem)
                .where(WorkItem.run_id == mine)
                .values(status="pending", lease_owner=None, lease_expires_at=None)
            )
            session.execute(Score.__table__.delete().where(Score.run_id == mine))
            session.execute(update(ScoreRun).where(ScoreRun.id == mine).values(compute_seconds=0.0, timed_pairs=0))
        _scored_earlier(engine, mine, 10, 5.0, seconds_ago)
        progress = {p.name: p for p in runs_progress(engine)}["mine"]
        seen.append((progress.pairs_per_second, progress.seconds_left, progress.seconds_left_high, progress.rough))
    assert seen[0] == seen[1] == (2.0, 15.0, 30.0, True)

    page = open_page()
    line = next(str(p.proto.text) for p in page.get("progress") if "mine" in str(p.proto.text))
    assert "10 / 40 scored · 2.0 pairs/s when scored · time left 15 s to 30 s (rough: few pairs timed yet)" in line


def test_a_run_scored_without_timings_falls_back_on_the_wall_clock_marked_rough(store):
    url, engine = store
    add_pairs(engine, "d", sentence_pairs(8))
    run = create_run(engine, name="lev", kind="baseline", model="levenshtein")
    batch = queue.claim_batch(engine, "A", 4, 60)
    queue.complete_batch(engine, "A", run, [queue.ScoredItem(i.item_id, i.pair_id, 0.5) for i in batch.items])
    with write_session(engine) as session:
        assert session.scalar(select(ScoreRun.timed_pairs).where(ScoreRun.id == run)) == 0
    progress = {p.id: p for p in runs_progress(engine)}[run]
    assert progress.pairs_per_second and progress.rough
    assert progress.seconds_left == pytest.approx(4 / progress.pairs_per_second)
