"""The scoring queue: one work item per (run, pair), claimed by workers under a lease.

New pairs are queued for every active run in scope inside the import's own transaction, so
an import and its queued work land together or not at all.

A worker claims a batch of one run's items (SKIP LOCKED on PostgreSQL; on SQLite the claim runs
in a BEGIN IMMEDIATE transaction, which serialises writers), renews the lease while it scores,
and writes the scores in the same transaction that marks the items done, but only for items
whose lease it still holds. An item whose lease expired (its worker died) is claimable again.
The unique (run, pair) constraint on scores is the last guard against a double score.

Runs are served in turn: a worker's next claim goes to the first active run with work after the run
it claimed last, in run order, wrapping round (claim_batch's ``after_run_id``), so a run created while
others still have work is scored from the next claim on. The run is chosen before the claim's size,
which the worker gives per run (a claim holds a few seconds of work at that run's own rate).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import pandas as pd
from sqlalchemy import Engine, and_, exists, func, insert, literal, or_, select, update
from sqlalchemy.orm import Session

from db.engine import read_session, write_session
from db.models import Dataset, Pair, Preference, RunDataset, Score, ScoreRun, Worker, WorkItem, utcnow
from pluie_core.run_kinds import preference_item_kinds, run_kind

# An item that failed this many claims with an error (not a crash) is given up as failed.
MAX_ATTEMPTS = 3
# Runs that score only the pairs a preference links (LLM-choice: each candidate against its partner;
# the kinds that compare preference items, pluie_core.run_kinds)
CHOICE_RUN_KINDS = preference_item_kinds()
# A worker reports a heartbeat every few seconds; one silent for longer than this is taken for dead.
WORKER_ALIVE_SECONDS = 20.0


def runs_in_scope(session: Session, dataset_id: int) -> list[int]:
    """Active or paused runs that apply to this dataset (a run with no dataset rows applies to all)."""
    runs = session.scalars(select(ScoreRun).where(ScoreRun.status.in_(("active", "paused")))).all()
    scoped: dict[int, set[int]] = {}
    for run_id, ds_id in session.execute(select(RunDataset.run_id, RunDataset.dataset_id)):
        scoped.setdefault(run_id, set()).add(ds_id)
    return [run.id for run in runs if run.id not in scoped or dataset_id in scoped[run.id]]


def enqueue_pairs(session: Session, dataset_id: int, pair_ids: Iterable[int]) -> int:
    """Queue the given new pairs of one dataset for every run in scope. Returns items queued."""
    pair_ids = list(pair_ids)
    total = 0
    in_scope = runs_in_scope(session, dataset_id)
    choice_runs = (
        set(session.scalars(select(ScoreRun.id).where(ScoreRun.id.in_(in_scope), ScoreRun.kind.in_(CHOICE_RUN_KINDS))))
        if in_scope
        else set()
    )
    linked = _linked_pairs(session, dataset_id) if choice_runs else set()
    for run_id in in_scope:
        ids = [pid for pid in pair_ids if pid in linked] if run_id in choice_runs else pair_ids
        rows = [{"run_id": run_id, "pair_id": pid, "status": "pending", "attempts": 0} for pid in ids]
        if rows:
            session.execute(insert(WorkItem), rows)
            total += len(rows)
    return total


def enqueue_missing(session: Session, run_id: int) -> int:
    """Queue every pair in the run's scope that has no work item yet (a new run, or pairs imported
    while the run was cancelled or failed). One INSERT ... SELECT, whatever the number of pairs."""
    scoped = select(RunDataset.dataset_id).where(RunDataset.run_id == run_id)
    has_scope = session.scalar(select(exists(scoped)))
    already = select(WorkItem.id).where(WorkItem.run_id == run_id, WorkItem.pair_id == Pair.id)
    pairs = select(literal(run_id), Pair.id, literal("pending"), literal(0)).where(~exists(already))
    # a large import still being written is queued by its last transaction (db.datasets.import_pair_chunks)
    pairs = pairs.where(Pair.dataset_id.not_in(select(Dataset.id).where(Dataset.import_state.is_not(None))))
    if has_scope:
        pairs = pairs.where(Pair.dataset_id.in_(scoped))
    if session.scalar(select(ScoreRun.kind).where(ScoreRun.id == run_id)) in CHOICE_RUN_KINDS:
        pairs = pairs.where(
            or_(exists().where(Preference.pair_a_id == Pair.id), exists().where(Preference.pair_b_id == Pair.id))
        )  # only pairs with a partner
    result = session.execute(insert(WorkItem).from_select(["run_id", "pair_id", "status", "attempts"], pairs))
    return result.rowcount or 0


def _linked_pairs(session: Session, dataset_id: int) -> set[int]:
    """The pairs of a dataset that a preference links (those an LLM-choice run scores)."""
    rows = session.execute(
        select(Preference.pair_a_id, Preference.pair_b_id).where(Preference.dataset_id == dataset_id)
    ).all()
    return {int(p) for row in rows for p in row}


@dataclass
class ClaimedItem:
    item_id: int
    pair_id: int
    source: str
    hypothesis: str


@dataclass
class Batch:
    """Items of one run, leased to one worker until `lease_expires_at`."""

    run_id: int
    worker_id: str
    items: list[ClaimedItem]
    lease_expires_at: dt.datetime

    @property
    def item_ids(self) -> list[int]:
        return [item.item_id for item in self.items]


@dataclass
class ScoredItem:
    item_id: int
    pair_id: int
    value: float
    details: Optional[dict[str, Any]] = field(default=None)


def _claimable(now: dt.datetime):
    expired = and_(WorkItem.status == "claimed", WorkItem.lease_expires_at < now)
    return or_(WorkItem.status == "pending", expired)


def claim_batch(
    engine: Engine,
    worker_id: str,
    batch_size: Union[int, Callable[[int], int]],
    lease_seconds: float,
    prefer_run_id: Optional[int] = None,
    run_ids: Optional[Sequence[int]] = None,
    after_run_id: Optional[int] = None,
) -> Optional[Batch]:
    """Lease up to `batch_size` claimable items of one active run to `worker_id`, or None when
    there is nothing to do. ``batch_size``: pairs, or a function of the chosen run's id giving them (a
    claim sized for the run it holds). Which run: `prefer_run_id` while it has work (a worker stays on
    a run whose model it has just loaded), else the first run with work after `after_run_id` (the run
    the worker claimed last) in run order, wrapping round, so that every run with work gets a claim in
    turn; with neither, the oldest run. `run_ids` restricts the worker to some runs."""
    now = utcnow()
    with write_session(engine) as session:
        runs = runs_with_work(session, now, run_ids)
        if not runs:
            return None
        if prefer_run_id in runs:
            runs.remove(prefer_run_id)
            runs.insert(0, prefer_run_id)
        elif after_run_id is not None:
            later = [r for r in runs if r > after_run_id]
            runs = later + [r for r in runs if r <= after_run_id]
        for run_id in runs:  # the next in turn, or the one after when other workers hold all of its items
            size = batch_size(run_id) if callable(batch_size) else batch_size
            # SKIP LOCKED: concurrent PostgreSQL workers take disjoint items without waiting;
            # SQLite ignores the clause (the IMMEDIATE transaction already excludes other writers).
            item_ids = session.scalars(
                select(WorkItem.id)
                .where(WorkItem.run_id == run_id, _claimable(now))
                .order_by(WorkItem.id)
                .limit(max(1, int(size)))
                .with_for_update(skip_locked=True)
            ).all()
            if item_ids:
                break
        else:
            return None
        expires = now + dt.timedelta(seconds=lease_seconds)
        session.execute(
            update(WorkItem)
            .where(WorkItem.id.in_(item_ids))
            .values(status="claimed", lease_owner=worker_id, lease_expires_at=expires, attempts=WorkItem.attempts + 1)
        )
        rows = session.execute(
            select(WorkItem.id, Pair.id, Pair.source, Pair.hypothesis)
            .join(Pair, Pair.id == WorkItem.pair_id)
            .where(WorkItem.id.in_(item_ids))
            .order_by(WorkItem.id)
        ).all()
    items = [ClaimedItem(item_id=r[0], pair_id=r[1], source=r[2], hypothesis=r[3]) for r in rows]
    return Batch(run_id=run_id, worker_id=worker_id, items=items, lease_expires_at=expires)


def runs_with_work(session: Session, now: dt.datetime, run_ids: Optional[Sequence[int]] = None) -> list[int]:
    """The active runs with a claimable item, in run order: two index seeks per run (a pending item, an
    expired lease), whatever the number of items each run has done."""
    of_run = WorkItem.run_id == ScoreRun.id
    pending = select(WorkItem.id).where(of_run, WorkItem.status == "pending").exists()
    expired = select(WorkItem.id).where(of_run, WorkItem.status == "claimed", WorkItem.lease_expires_at < now).exists()
    query = select(ScoreRun.id).where(ScoreRun.status == "active", or_(pending, expired)).order_by(ScoreRun.id)
    if run_ids is not None:
        query = query.where(ScoreRun.id.in_(list(run_ids)))
    return list(session.scalars(query))


def _held(worker_id: str, item_ids: Sequence[int]):
    return and_(WorkItem.id.in_(list(item_ids)), WorkItem.status == "claimed", WorkItem.lease_owner == worker_id)


def renew_lease(engine: Engine, worker_id: str, item_ids: Sequence[int], lease_seconds: float) -> int:
    """Extend the lease on the items this worker still holds; returns how many it holds."""
    if not item_ids:
        return 0
    expires = utcnow() + dt.timedelta(seconds=lease_seconds)
    with write_session(engine) as session:
        result = session.execute(update(WorkItem).where(_held(worker_id, item_ids)).values(lease_expires_at=expires))
        return result.rowcount or 0


def held_items(engine: Engine, worker_id: str, item_ids: Sequence[int], active_only: bool = True) -> set[int]:
    """The items of `item_ids` this worker still holds (not deleted, not taken over by another worker
    after its lease expired), and with `active_only` only those of a run still active (not paused,
    cancelled or failed): what it may go on scoring. A read, cheap enough between two pieces of a claim."""
    if not item_ids:
        return set()
    query = select(WorkItem.id).where(_held(worker_id, item_ids))
    if active_only:
        query = query.join(ScoreRun, ScoreRun.id == WorkItem.run_id).where(ScoreRun.status == "active")
    with read_session(engine) as session:
        return set(session.scalars(query))


def complete_batch(
    engine: Engine, worker_id: str, run_id: int, scored: Sequence[ScoredItem], compute_seconds: Optional[float] = None
) -> int:
    """Write the scores of the items this worker still holds and mark them done, in one
    transaction. Items it no longer holds (its lease expired and another worker took them) are
    skipped: that worker writes them. A lease that expired but was not taken yet is still held:
    the claim that would take it serialises with this transaction. Returns the scores written.
    ``compute_seconds``: the time the metric took for ``scored``; its share for the scores written
    is added to the run's compute time in the same transaction."""
    if not scored:
        return 0
    by_item = {s.item_id: s for s in scored}
    with write_session(engine) as session:
        held = session.scalars(select(WorkItem.id).where(_held(worker_id, list(by_item))).with_for_update()).all()
        if not held:
            return 0
        now = utcnow()
        session.execute(
            insert(Score),
            [
                {
                    "run_id": run_id,
                    "pair_id": by_item[i].pair_id,
                    "value": _stored_value(by_item[i].value),
                    "details": by_item[i].details,
                    "worker_id": worker_id,
                    "created_at": now,
                }
                for i in held
            ],
        )
        session.execute(
            update(WorkItem)
            .where(WorkItem.id.in_(held))
            .values(status="done", lease_owner=None, lease_expires_at=None, error=None)
        )
        if compute_seconds is not None:
            session.execute(
                update(ScoreRun)
                .where(ScoreRun.id == run_id)
                .values(
                    compute_seconds=ScoreRun.compute_seconds + float(compute_seconds) * len(held) / len(by_item),
                    timed_pairs=ScoreRun.timed_pairs + len(held),
                    updated_at=ScoreRun.updated_at,
                )
            )
        return len(held)


def forget_compute_time(session: Session, pair_ids) -> None:
    """Before the pairs `pair_ids` (ids, or a SELECT of them) are deleted, in the same transaction: take
    their scores out of each run's compute time, so the Scoring page's figures stop counting them at
    once (their scores and queued work go with them through the cascades). A run's compute seconds are
    kept per run, not per score, so the deleted scores take their share of them: seconds per pair stays
    what it was, pairs timed and compute seconds fall by the deleted pairs' share."""
    gone = dict(
        session.execute(
            select(Score.run_id, func.count()).where(Score.pair_id.in_(pair_ids)).group_by(Score.run_id)
        ).all()
    )
    if not gone:
        return
    totals = dict(
        session.execute(
            select(Score.run_id, func.count()).where(Score.run_id.in_(list(gone))).group_by(Score.run_id)
        ).all()
    )
    timed = session.execute(
        select(ScoreRun.id, ScoreRun.timed_pairs, ScoreRun.compute_seconds).where(
            ScoreRun.id.in_(list(gone)), ScoreRun.timed_pairs > 0
        )
    ).all()
    for run_id, pairs, seconds in timed:
        # every score written since compute time is kept was timed: then exactly the deleted ones go
        drop = min(pairs, round(pairs * gone[run_id] / totals[run_id]))
        if drop:  # as increments, so that a batch written meanwhile still adds its own
            session.execute(
                update(ScoreRun)
                .where(ScoreRun.id == run_id)
                .values(
                    timed_pairs=ScoreRun.timed_pairs - drop,
                    compute_seconds=ScoreRun.compute_seconds
                    - (float(seconds or 0.0) if drop == pairs else float(seconds or 0.0) * drop / pairs),
                    updated_at=ScoreRun.updated_at,
                )
            )


def _stored_value(value) -> Optional[float]:
    """NaN (an LLM judge's unparsed answer) is stored as NULL: SQLite has no NaN."""
    value = None if value is None else float(value)
    return None if value is None or value != value else value


def release_batch(
    engine: Engine, worker_id: str, item_ids: Sequence[int], error: Optional[str] = None, count_attempt: bool = True
) -> int:
    """Hand back the items this worker still holds: pending again, or failed with `error` once
    they have failed MAX_ATTEMPTS claims. ``count_attempt`` False: the claim does not count (the judge's
    server did not answer: the pairs wait for it, pending, however long it is away). Returns the number
    released."""
    if not item_ids:
        return 0
    with write_session(engine) as session:
        values: dict[str, Any] = {"status": "pending", "lease_owner": None, "lease_expires_at": None}
        if not count_attempt:
            values["attempts"] = (
                func.max(WorkItem.attempts - 1, 0)
                if engine.dialect.name == "sqlite"
                else func.greatest(WorkItem.attempts - 1, 0)
            )
        if error is not None:
            if count_attempt:
                session.execute(
                    update(WorkItem)
                    .where(_held(worker_id, item_ids), WorkItem.attempts >= MAX_ATTEMPTS)
                    .values(status="failed", lease_owner=None, lease_expires_at=None, error=error)
                )
            values["error"] = error
        result = session.execute(update(WorkItem).where(_held(worker_id, item_ids)).values(**values))
        return result.rowcount or 0


def fail_run(engine: Engine, run_id: int, reason: str) -> None:
    """Mark a run failed with a reason the scoring page shows (e.g. its model cannot be loaded).
    Its items stay queued: retrying the run picks them up again."""
    with write_session(engine) as session:
        session.execute(
            update(ScoreRun).where(ScoreRun.id == run_id).values(status="failed", error=reason, updated_at=utcnow())
        )
        session.execute(
            update(WorkItem)
            .where(WorkItem.run_id == run_id, WorkItem.status == "claimed")
            .values(status="pending", lease_owner=None, lease_expires_at=None)
        )


def run_config(engine: Engine, run_id: int) -> Optional[ScoreRun]:
    with read_session(engine) as session:
        return session.get(ScoreRun, run_id)


# --- workers: registration, heartbeat, throughput, last error ---------------------------------


def register_worker(engine: Engine, worker_id: str, hostname: str, pid: int, device: str) -> None:
    with write_session(engine) as session:
        now = utcnow()
        session.add(Worker(id=worker_id, hostname=hostname, pid=pid, device=device, started_at=now, heartbeat_at=now))


def heartbeat(
    engine: Engine,
    worker_id: str,
    *,
    current_run_id: Optional[int] = None,
    pairs_done: Optional[int] = None,
    pairs_per_second: Optional[float] = None,
    last_error: Optional[str] = None,
    new_run: bool = False,
) -> None:
    """Record that the worker is alive, and what it is doing when given. ``pairs_per_second`` is the
    rate of its current run (0 while not measured yet); ``new_run`` says it is loading the model of the
    run it has just taken: its rate is cleared until the model is loaded."""
    values: dict[str, Any] = {"heartbeat_at": utcnow(), "current_run_id": current_run_id}
    if pairs_done is not None:
        values["pairs_done"] = pairs_done
    if new_run:
        values["pairs_per_second"] = None
    elif pairs_per_second is not None:
        values["pairs_per_second"] = pairs_per_second
    if last_error is not None:
        values["last_error"] = last_error
    with write_session(engine) as session:
        session.execute(update(Worker).where(Worker.id == worker_id).values(**values))


def stop_worker(engine: Engine, worker_id: str) -> None:
    with write_session(engine) as session:
        now = utcnow()
        session.execute(
            update(Worker).where(Worker.id == worker_id).values(stopped_at=now, heartbeat_at=now, current_run_id=None)
        )


def alive_workers(engine: Engine, within_seconds: float = WORKER_ALIVE_SECONDS) -> list[Worker]:
    """Workers that have not stopped and reported a heartbeat within the last `within_seconds`."""
    since = utcnow() - dt.timedelta(seconds=within_seconds)
    with read_session(engine) as session:
        return list(
            session.scalars(
                select(Worker)
                .where(Worker.stopped_at.is_(None), Worker.heartbeat_at >= since)
                .order_by(Worker.started_at)
            )
        )


def pending_count(engine: Engine, run_ids: Optional[Sequence[int]] = None) -> int:
    """Items of active runs still waiting for a score (pending or leased)."""
    query = (
        select(func.count())
        .select_from(WorkItem)
        .join(ScoreRun, ScoreRun.id == WorkItem.run_id)
        .where(ScoreRun.status == "active", WorkItem.status.in_(("pending", "claimed")))
    )
    if run_ids is not None:
        query = query.where(WorkItem.run_id.in_(list(run_ids)))
    with read_session(engine) as session:
        return session.scalar(query) or 0


def _held_runs(session: Session, now: dt.datetime, run_ids: Iterable[int]) -> set[tuple[str, int]]:
    """(worker, run) of every live lease of these runs: the claims a worker holds. Looked up run by run
    in the claim index (run_id, status, lease_expires_at), not over every item of every run."""
    run_ids = sorted(set(run_ids))
    if not run_ids:
        return set()
    return set(
        session.execute(
            select(WorkItem.lease_owner, WorkItem.run_id)
            .where(WorkItem.run_id.in_(run_ids), WorkItem.status == "claimed", WorkItem.lease_expires_at > now)
            .distinct()
        ).all()
    )


def uses_model(kind: str, options: Optional[dict]) -> bool:
    """Whether a run's worker loads a model before its first scores: PLUIE and the LLM judges, and
    the baselines given a model (SBERT, BERTScore, S3C, NMTScore...): the kind's ``needs_model``
    (pluie_core.run_kinds), or a model its options name."""
    record = run_kind(kind)
    return record is None or record.needs_model or bool((options or {}).get("model"))


def worker_states(
    engine: Engine, within_seconds: float = WORKER_ALIVE_SECONDS, workers: Optional[list[Worker]] = None
) -> dict[str, str]:
    """What each live worker is doing, as it reports it: "idle"; "loading the model" (it has taken a
    run that uses a model, holds a claim of it, and loads the model: the heartbeat of a run whose model
    loads clears its rate, the next one, once it is loaded, gives it, 0 until measured); "starting" (the
    same for a run without a model, briefly); or "scoring"."""
    now = utcnow()
    workers = alive_workers(engine, within_seconds) if workers is None else workers
    with read_session(engine) as session:
        held = _held_runs(session, now, (w.current_run_id for w in workers if w.current_run_id is not None))
        runs = {r.id: r for r in session.execute(select(ScoreRun.id, ScoreRun.kind, ScoreRun.options)).all()}
    states = {}
    for w in workers:
        run = runs.get(w.current_run_id)
        if run is None:
            states[w.id] = "idle"
        elif w.pairs_per_second is None and (w.id, run.id) in held:
            states[w.id] = "loading the model" if uses_model(run.kind, run.options) else "starting"
        else:
            states[w.id] = "scoring"
    return states


def workers_overview(engine: Engine, within_seconds: float = WORKER_ALIVE_SECONDS) -> pd.DataFrame:
    """The live workers, for the scoring page: where they run, what they do (worker_states), how fast
    on their current run (pairs / s of that run's latest pieces, not an average over every run they
    served), the last error."""
    now = utcnow()
    workers = alive_workers(engine, within_seconds)
    states = worker_states(engine, within_seconds, workers)
    with read_session(engine) as session:
        names = dict(session.execute(select(ScoreRun.id, ScoreRun.name)).all())
    rows = [
        {
            "worker": w.id,
            "host": w.hostname,
            "pid": w.pid,
            "device": w.device,
            "run": names.get(w.current_run_id, "idle") if w.current_run_id else "idle",
            "state": states.get(w.id, "idle"),
            "pairs scored": w.pairs_done,
            "pairs / s": round(w.pairs_per_second, 1) if w.pairs_per_second and states.get(w.id) == "scoring" else None,
            "heartbeat (s ago)": round((now - w.heartbeat_at).total_seconds(), 1),
            "last error": w.last_error or "",
        }
        for w in workers
    ]
    columns = [
        "worker",
        "host",
        "pid",
        "device",
        "run",
        "state",
        "pairs scored",
        "pairs / s",
        "heartbeat (s ago)",
        "last error",
    ]
    return pd.DataFrame(rows, columns=columns)
