"""The scoring queue: one work item per (run, pair).

New pairs are queued for every active run in scope inside the import's own transaction, so
an import and its queued work land together or not at all.
"""
from __future__ import annotations

from typing import Iterable

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from db.models import RunDataset, ScoreRun, WorkItem


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
    for run_id in runs_in_scope(session, dataset_id):
        rows = [{"run_id": run_id, "pair_id": pid, "status": "pending", "attempts": 0} for pid in pair_ids]
        if rows:
            session.execute(insert(WorkItem), rows)
            total += len(rows)
    return total
