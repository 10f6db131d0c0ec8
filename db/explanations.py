"""Why this score: each word's contribution to a pair's PLUIE score (pluie_core.explain), computed on
demand where the model lives, by the worker, and kept.

A page requests the explanation of a (PLUIE run, pair) (request_explanation: one row per pair and run,
however often asked); a worker claims it under a lease (claim_explanation), computes it with the run's
scorer and stores it (store_explanation) or its sentence (fail_explanation); the page reads it back
(explanation). A worker that dies leaves the request claimable again once its lease expires. Deleting
the run or the pair deletes its explanations (cascades).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Optional, Sequence

from sqlalchemy import Engine, and_, case, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from db import access
from db.engine import read_session, retry_when_busy, write_session
from db.models import Explanation as ExplanationRow
from db.models import Pair, RunDataset, Score, ScoreRun, utcnow
from pluie_core.explain import Explanation, explanation_from_json, explanation_to_json, sentence_tokens
from pluie_core.run_kinds import BASELINE, PLUIE

__all__ = [
    "ExplanationError",
    "ExplanationState",
    "ClaimedExplanation",
    "PluieRun",
    "pluie_runs_for_pair",
    "request_explanation",
    "explanation",
    "claim_explanation",
    "store_explanation",
    "fail_explanation",
    "explanations_waiting",
    "words_of_pair",
]


class ExplanationError(ValueError):
    """An explanation that cannot be asked for; the message says why, in a sentence."""


@dataclass(frozen=True)
class PluieRun:
    """A PLUIE run that covers a pair, and the pair's score under it (None: not scored yet)."""

    id: int
    name: str
    status: str
    answers: tuple[str, str]
    score: Optional[float]


@dataclass(frozen=True)
class ExplanationState:
    """What the store holds for a (run, pair): status "queued", "claimed" (a worker computes it), "done"
    (``explanation`` set) or "failed" (``error``: a sentence)."""

    run_id: int
    pair_id: int
    status: str
    explanation: Optional[Explanation]
    error: Optional[str]
    requested_at: dt.datetime
    done_at: Optional[dt.datetime]


@dataclass(frozen=True)
class ClaimedExplanation:
    id: int
    run_id: int
    pair_id: int
    direction: str
    source: str
    hypothesis: str


def _answers(run: ScoreRun) -> tuple[str, str]:
    answers = [str(a).strip() for a in (run.answers or [])]
    return (answers[0], answers[1]) if len(answers) >= 2 else ("Yes", "No")


def _covers(session, run: ScoreRun, dataset_id: int) -> bool:
    scoped = set(session.scalars(select(RunDataset.dataset_id).where(RunDataset.run_id == run.id)))
    return not scoped or dataset_id in scoped


def pluie_runs_for_pair(engine: Engine, pair_id: int) -> list[PluieRun]:
    """The PLUIE runs whose scope covers the pair (its dataset, or every dataset), oldest first, each with
    the pair's score under it."""
    with read_session(engine) as session:
        dataset_id = session.scalar(select(Pair.dataset_id).where(Pair.id == int(pair_id)))
        if dataset_id is None:
            return []
        runs = session.scalars(select(ScoreRun).where(ScoreRun.kind == PLUIE).order_by(ScoreRun.id)).all()
        scoped: dict[int, set[int]] = {}  # one read for every run's datasets (no rows: every dataset)
        for run_id, scoped_dataset in (
            session.execute(
                select(RunDataset.run_id, RunDataset.dataset_id).where(RunDataset.run_id.in_([r.id for r in runs]))
            )
            if runs
            else ()
        ):
            scoped.setdefault(run_id, set()).add(scoped_dataset)
        covering = [r for r in runs if r.id not in scoped or dataset_id in scoped[r.id]]
        scores = (
            dict(
                session.execute(
                    select(Score.run_id, Score.value).where(
                        Score.pair_id == int(pair_id), Score.run_id.in_([r.id for r in covering])
                    )
                ).all()
            )
            if covering
            else {}
        )
    return [PluieRun(r.id, r.name, r.status, _answers(r), scores.get(r.id)) for r in covering]


def _state(row: ExplanationRow) -> ExplanationState:
    return ExplanationState(
        row.run_id,
        row.pair_id,
        row.status,
        explanation_from_json(row.result) if row.status == "done" and row.result else None,
        row.error,
        row.requested_at,
        row.done_at,
    )


def explanation(engine: Engine, run_id: int, pair_id: int) -> Optional[ExplanationState]:
    """What the store holds for the pair under the run, or None when no one asked yet."""
    with read_session(engine) as session:
        row = session.scalar(
            select(ExplanationRow).where(ExplanationRow.run_id == int(run_id), ExplanationRow.pair_id == int(pair_id))
        )
        return None if row is None else _state(row)


@retry_when_busy
def _request(engine: Engine, run_id: int, pair_id: int) -> None:
    with write_session(engine) as session:
        access.require("explain")
        run = session.get(ScoreRun, run_id)
        if run is None:
            raise ExplanationError(f"There is no run {run_id} (any more): it was deleted.")
        if run.kind != PLUIE:
            raise ExplanationError(
                f"Run {run_id} is a {'baseline' if run.kind == BASELINE else 'judge'} run: “why this score” "
                "needs a PLUIE run, whose score is log p(yes) − log p(no)."
            )
        pair = session.get(Pair, pair_id)
        if pair is None:
            raise ExplanationError(f"There is no pair {pair_id} (any more): its dataset was deleted.")
        if not _covers(session, run, pair.dataset_id):
            raise ExplanationError(f"Pair {pair_id} is outside run {run_id}'s datasets: that run does not score it.")
        row = session.scalar(
            select(ExplanationRow).where(ExplanationRow.run_id == run_id, ExplanationRow.pair_id == pair_id)
        )
        if row is None:
            session.add(ExplanationRow(run_id=run_id, pair_id=pair_id, status="queued", requested_at=utcnow()))
        elif row.status == "failed":  # asked again: tried again
            row.status, row.error, row.requested_at, row.done_at = "queued", None, utcnow(), None


def request_explanation(engine: Engine, run_id: int, pair_id: int) -> ExplanationState:
    """Ask for the explanation of the pair under the run: one request per (run, pair), however often
    asked (one already done is kept; one that failed is queued again). Raises ExplanationError, with a
    sentence, for a run that is not a PLUIE run, a pair outside the run's datasets, or either gone;
    NotAllowed, nothing written, below a reviewer (db.access)."""
    run_id, pair_id = int(run_id), int(pair_id)
    try:
        _request(engine, run_id, pair_id)
    except IntegrityError:  # asked at the same moment from another page: that request stands
        pass
    return explanation(engine, run_id, pair_id)


def words_of_pair(source: str, hypothesis: str) -> int:
    """How many words an explanation leaves out one at a time (each one more pair for the model)."""
    return sum(is_word for text in (source, hypothesis) for *_, is_word in sentence_tokens(text))


def _claimable(now: dt.datetime):
    return or_(
        ExplanationRow.status == "queued",
        and_(ExplanationRow.status == "claimed", ExplanationRow.lease_expires_at < now),
    )


def claim_explanation(
    engine: Engine,
    worker_id: str,
    lease_seconds: float,
    prefer_run_ids: Sequence[int] = (),
    run_ids: Optional[Sequence[int]] = None,
) -> Optional[ClaimedExplanation]:
    """Lease the next requested explanation to ``worker_id`` (one of the runs of ``prefer_run_ids`` first:
    those whose model the worker has loaded; then the oldest request), or None when none waits.
    ``run_ids`` restricts the worker to some runs."""
    now = utcnow()
    query = (
        select(ExplanationRow.id)
        .where(_claimable(now))
        .order_by(
            case((ExplanationRow.run_id.in_(list(prefer_run_ids) or [-1]), 0), else_=1),
            ExplanationRow.requested_at,
            ExplanationRow.id,
        )
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    if run_ids is not None:
        query = query.where(ExplanationRow.run_id.in_(list(run_ids)))
    with read_session(engine) as session:  # a read first: the worker asks between every two claims
        if session.scalar(select(ExplanationRow.id).where(_claimable(now)).limit(1)) is None:
            return None
    with write_session(engine) as session:
        explanation_id = session.scalar(query)
        if explanation_id is None:
            return None
        session.execute(
            update(ExplanationRow)
            .where(ExplanationRow.id == explanation_id)
            .values(status="claimed", lease_owner=worker_id, lease_expires_at=now + dt.timedelta(seconds=lease_seconds))
        )
        row = session.execute(
            select(
                ExplanationRow.id,
                ExplanationRow.run_id,
                ExplanationRow.pair_id,
                ScoreRun.direction,
                Pair.source,
                Pair.hypothesis,
            )
            .join(ScoreRun, ScoreRun.id == ExplanationRow.run_id)
            .join(Pair, Pair.id == ExplanationRow.pair_id)
            .where(ExplanationRow.id == explanation_id)
        ).one()
    return ClaimedExplanation(row[0], row[1], row[2], row[3] or "forward", row[4], row[5])


def renew_explanation(engine: Engine, worker_id: str, explanation_id: int, lease_seconds: float) -> bool:
    """Extend the lease of an explanation ``worker_id`` holds (the worker's lease keeper, while it computes);
    False where it holds it no more."""
    with write_session(engine) as session:
        return bool(
            session.execute(
                update(ExplanationRow)
                .where(
                    ExplanationRow.id == int(explanation_id),
                    ExplanationRow.lease_owner == worker_id,
                    ExplanationRow.status == "claimed",
                )
                .values(lease_expires_at=utcnow() + dt.timedelta(seconds=lease_seconds))
            ).rowcount
        )


def _finish(engine: Engine, worker_id: str, explanation_id: int, **values) -> bool:
    with write_session(engine) as session:
        result = session.execute(
            update(ExplanationRow)
            .where(
                ExplanationRow.id == explanation_id,
                ExplanationRow.status == "claimed",
                ExplanationRow.lease_owner == worker_id,
            )
            .values(lease_owner=None, lease_expires_at=None, done_at=utcnow(), **values)
        )
        return bool(result.rowcount)


def store_explanation(engine: Engine, worker_id: str, explanation_id: int, result: Explanation) -> bool:
    """Keep a computed explanation, if this worker still holds its request (its run or pair not deleted
    meanwhile, its lease not taken over). Returns whether it was kept."""
    return _finish(engine, worker_id, explanation_id, status="done", result=explanation_to_json(result), error=None)


def fail_explanation(engine: Engine, worker_id: str, explanation_id: int, error: str) -> bool:
    """Record why the explanation could not be computed (a sentence the page shows); asking again retries."""
    return _finish(engine, worker_id, explanation_id, status="failed", error=str(error)[:2000], result=None)


def explanations_waiting(engine: Engine, run_ids: Optional[Sequence[int]] = None) -> int:
    """Requests not computed yet (queued, or being computed)."""
    query = select(func.count()).select_from(ExplanationRow).where(ExplanationRow.status.in_(("queued", "claimed")))
    if run_ids is not None:
        query = query.where(ExplanationRow.run_id.in_(list(run_ids)))
    with read_session(engine) as session:
        return session.scalar(query) or 0
