"""Review and adjudication: the organiser's queue of pairs whose labels disagree, every read the
review page makes, and the one write, a reviewer's final level of a pair.

Decisions live in their own table (db.models.Adjudication: who, when, why), never in the
annotators' labels. Each decision on a pair is a new revision; the reviewer names the revision
they saw (``seen_revision``, 0 = none), and a write over any other is refused
(StaleReviewError), so two reviewers at once never overwrite each other without a word: the
unique (pair, revision) makes the store itself refuse the second of two simultaneous writes.
"""

from __future__ import annotations

from typing import Iterable, Optional

import numpy as np
import pandas as pd
from sqlalchemy import Engine, select
from sqlalchemy.exc import IntegrityError

from db import access
from db.analysis import annotator_choices, counted_label, pair_datasets, pair_detail
from db.engine import read_session, retry_when_busy, write_session
from db.export import pair_aggregation
from db.limits import NAME_LENGTH as NAME_LENGTH  # re-exported: pages/review.py reads review.NAME_LENGTH
from db.limits import clean_name
from db.models import Adjudication, Dataset, GoldPair, Label, Pair
from db.queries import ADJUDICATION_COLUMNS, adjudications_in_force, current_adjudications, number_frame
from pluie_core.labels import LEVELS, majority_level
from pluie_core.review import check_final_level, disagreement_queue

__all__ = [
    "ReviewError",
    "StaleReviewError",
    "review_queue",
    "review_item",
    "adjudicate",
    "current_adjudications",
    "flag_counts",
    "level_rows",
    "ADJUDICATION_COLUMNS",
]

MAX_NOTE = 2000


class ReviewError(ValueError):
    """Something a reviewer asked for that cannot be done; the message says why, in a sentence."""


class StaleReviewError(ReviewError):
    """The pair's final level changed since the reviewer's page showed it (another reviewer)."""


def _of_datasets(session, pair_ids: np.ndarray, dataset_ids: Optional[list[int]]) -> np.ndarray:
    """Which of ``pair_ids`` belong to the datasets (all of them when dataset_ids is None or names
    every dataset): read from the pairs' dataset_id index."""
    if dataset_ids is None or set(session.scalars(select(Dataset.id))) <= set(dataset_ids):
        return np.ones(len(pair_ids), dtype=bool)
    return np.isin(pair_ids, pair_datasets(session, dataset_ids).index)


def flag_counts(
    engine: Engine, dataset_ids: Optional[Iterable[int]] = None, campaign_id: Optional[int] = None
) -> pd.Series:
    """How many annotators flagged each pair (training answers aside; with ``campaign_id``, in that
    campaign only), indexed by pair_id; only flagged pairs. One pass over the labels' rows, counted here: a GROUP BY made SQLite walk the
    pair index and fetch every label's row out of order (2.4 s at 300,000 labels, 20 s at 3M)."""
    dataset_ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    with read_session(engine) as session:
        pair_ids = np.asarray(
            session.connection()
            .execute(
                select(Label.pair_id).where(
                    Label.flagged.is_(True), Label.is_training.is_(False), *_in_campaign(campaign_id)
                )
            )
            .scalars()
            .all(),
            dtype=np.int64,
        )
        pair_ids = pair_ids[_of_datasets(session, pair_ids, dataset_ids)] if len(pair_ids) else pair_ids
    return pd.Series(pair_ids, dtype="int64").value_counts().sort_index().rename("n_flags").rename_axis("pair_id")


def _in_campaign(campaign_id: Optional[int]) -> list:
    """The condition on labels of one campaign (none: every label)."""
    return [] if campaign_id is None else [Label.campaign_id == int(campaign_id)]


def level_rows(
    engine: Engine, dataset_ids: Optional[Iterable[int]] = None, campaign_id: Optional[int] = None
) -> pd.DataFrame:
    """pair_id and level (0-4) of every label on the five-level scale (training answers aside) of
    the datasets (with ``campaign_id``, the labels given in that campaign): all the review queue reads
    of the labels (labels_long's nine columns took three times as long at 3,000,000 labels)."""
    dataset_ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    with read_session(engine) as session:
        levels = number_frame(
            session,
            select(Label.pair_id, Label.level).where(
                counted_label(), Label.level.is_not(None), *_in_campaign(campaign_id)
            ),
            ["pair_id", "level"],
            integers=["pair_id", "level"],
        )
        if len(levels):
            levels = levels[_of_datasets(session, levels["pair_id"].to_numpy(), dataset_ids)].reset_index(drop=True)
    return levels


def review_queue(
    engine: Engine,
    dataset_ids: Optional[Iterable[int]] = None,
    show: str = "pending",
    aggregation: Optional[str] = None,
    campaign_id: Optional[int] = None,
) -> pd.DataFrame:
    """The pairs whose five-level labels disagree and the pairs an annotator flagged (training
    labels aside), in review order (pluie_core.review.disagreement_queue: flagged first, then across
    the paraphrase boundary, then by spread), with majority_level (the rule that holds without a
    decision), n_flags, and the decision in force: final_level, reviewer, revision (0 = never
    adjudicated), key_disagrees (with ``campaign_id``: a gold key of the campaign that disagrees with
    annotators who agree, pluie_core.review.key_conflicts; such a pair is in the queue, after the flagged
    ones). ``show``: "pending" (no decision in force), "adjudicated", "flagged" (flagged
    pairs, decided or not) or "all". ``aggregation`` (a pluie_core.aggregation method) adds the
    method's aggregated_level, posterior and uncertainty (db.export.pair_aggregation, over the five
    levels) and orders the queue by uncertainty, the least certain pair first (then pair id).
    ``campaign_id``: the labels and flags given in that campaign only (a pilot's never mix into the main
    round's queue)."""
    if show not in ("pending", "adjudicated", "flagged", "all"):
        raise ReviewError("Show pending, adjudicated, flagged or all pairs.")
    dataset_ids = None if dataset_ids is None else [int(d) for d in dataset_ids]
    queue = disagreement_queue(
        level_rows(engine, dataset_ids, campaign_id),
        flag_counts(engine, dataset_ids, campaign_id),
        campaign_keys(engine, campaign_id),
    )
    decided = current_adjudications(engine, dataset_ids).reindex(queue.index)
    queue["final_level"] = decided["level"].round().astype("Int64")
    queue["reviewer"] = decided["reviewer"].where(decided["level"].notna())
    queue["revision"] = decided["revision"].fillna(0).astype(int)
    if show == "pending":
        queue = queue[queue["final_level"].isna()]
    elif show == "adjudicated":
        queue = queue[queue["final_level"].notna()]
    elif show == "flagged":
        queue = queue[queue["n_flags"] > 0]
    if aggregation is not None:
        fitted = pair_aggregation(engine, dataset_ids, campaign_id=campaign_id, method=aggregation).pairs.reindex(
            queue.index
        )
        queue["aggregated_level"] = pd.to_numeric(fitted["label"], errors="coerce").astype("Float64").astype("Int64")
        queue["posterior"] = fitted["posterior"].astype(float)
        queue["uncertainty"] = fitted["uncertainty"].astype(float)
        queue = (
            queue.reset_index()
            .sort_values(["uncertainty", "pair_id"], ascending=[False, True], kind="stable")
            .set_index("pair_id")
        )
    return queue


def campaign_keys(engine: Engine, campaign_id: Optional[int]) -> Optional[pd.DataFrame]:
    """A campaign's gold keys, indexed by pair_id: level (NaN: side only), binary_label, accept_adjacent,
    derivation; None without a campaign."""
    if campaign_id is None:
        return None
    with read_session(engine) as session:
        rows = session.execute(
            select(
                GoldPair.pair_id, GoldPair.level, GoldPair.binary_label, GoldPair.accept_adjacent, GoldPair.derivation
            ).where(GoldPair.campaign_id == int(campaign_id))
        ).all()
    frame = pd.DataFrame(rows, columns=["pair_id", "level", "binary_label", "accept_adjacent", "derivation"])
    frame["level"] = pd.to_numeric(frame["level"], errors="coerce").astype(float)
    frame["accept_adjacent"] = frame["accept_adjacent"].fillna(False).astype(bool)
    return frame.set_index("pair_id")


def review_item(engine: Engine, pair_id: int) -> Optional[dict]:
    """What the review page shows of one pair: pluie_core-ready pair fields, every label (annotator,
    level, level_name, english_level, seconds_spent, comment, flagged), every score, the majority level, the
    decision in force (None, or a dict of ADJUDICATION_COLUMNS) and the pair's history of
    decisions (a frame, newest first)."""
    people = annotator_choices(engine)
    detail = pair_detail(engine, pair_id, people)
    if detail is None:
        return None
    with read_session(engine) as session:
        history = pd.DataFrame(
            session.execute(
                select(
                    Adjudication.pair_id,
                    Adjudication.revision,
                    Adjudication.level,
                    Adjudication.reviewer,
                    Adjudication.note,
                    Adjudication.created_at,
                )
                .where(Adjudication.pair_id == int(pair_id))
                .order_by(Adjudication.revision.desc())
            ).all(),
            columns=ADJUDICATION_COLUMNS,
        )
    history["level"] = pd.to_numeric(history["level"], errors="coerce").astype("Int64")
    history["decision"] = history["level"].map(lambda v: "withdrawn" if pd.isna(v) else LEVELS[int(v)])
    levels = detail["labels"]["level"].dropna()
    detail["majority_level"] = majority_level(int(x) for x in levels)
    detail["n_flags"] = int(detail["labels"]["flagged"].sum())
    detail["revision"] = int(history["revision"].max()) if len(history) else 0
    current = history.iloc[0].to_dict() if len(history) and pd.notna(history.iloc[0]["level"]) else None
    detail["adjudication"] = current
    detail["history"] = history.drop(columns="pair_id")
    return detail


@retry_when_busy
def adjudicate(
    engine: Engine, pair_id: int, level: Optional[int], reviewer: str, note: str = "", *, seen_revision: int = 0
) -> int:
    """Set a pair's final level (0-3), or withdraw the decision in force (level None: back to the
    majority rule), as ``reviewer`` with an optional ``note``; all or nothing. ``seen_revision`` is
    the revision the reviewer's page showed (0 when the pair had none): when another reviewer has
    decided since, nothing is written and StaleReviewError says so. Returns the new revision.

    Reviewers and above only (db.access). Signed in, the decision is the account's, whatever ``reviewer``
    says; on a store without accounts ``reviewer`` is the name kept, as typed on the Review page."""
    actor = access.require("review")
    if actor.signed_in:
        reviewer = actor.name
    if not (reviewer or "").strip():
        raise ReviewError("Give your name as reviewer: every decision says who took it.")
    reviewer = clean_name("The reviewer's name", reviewer, ReviewError)
    note = (note or "").strip()
    if "\x00" in note:  # no store keeps it alike (PostgreSQL refuses it in text)
        raise ReviewError("A note cannot hold a NUL character (U+0000): remove it, then decide again.")
    if len(note) > MAX_NOTE:
        raise ReviewError(f"A note has at most {MAX_NOTE:,} characters.")
    if level is not None:
        try:
            level = check_final_level(level)
        except (TypeError, ValueError) as exc:
            raise ReviewError(str(exc)) from None
    seen_revision = int(seen_revision)
    try:
        with write_session(engine) as session:
            if session.get(Pair, int(pair_id)) is None:
                raise ReviewError("This pair no longer exists (its dataset was deleted).")
            in_force = session.execute(adjudications_in_force(pair_ids=[int(pair_id)])).first()
            revision = 0 if in_force is None else int(in_force.revision)
            if revision != seen_revision and in_force is None:
                raise StaleReviewError("This pair has no decision any more: your decision was not saved.")
            if revision != seen_revision:
                now = "withdrawn" if in_force.level is None else f"“{LEVELS[in_force.level]}”"
                raise StaleReviewError(
                    f"{in_force.reviewer} decided on this pair meanwhile (now {now}): "
                    "your decision was not saved, and the page shows the queue as it stands now."
                )
            if level is None and (in_force is None or in_force.level is None):
                raise ReviewError("This pair has no final level to withdraw.")
            session.add(
                Adjudication(pair_id=int(pair_id), revision=revision + 1, level=level, reviewer=reviewer, note=note)
            )
            session.flush()  # the unique (pair, revision) refuses a simultaneous second write here
            return revision + 1
    except IntegrityError:
        raise StaleReviewError(
            "Another reviewer decided on this pair at the same moment: your decision was "
            "not saved, and the page shows the queue as it stands now."
        ) from None
