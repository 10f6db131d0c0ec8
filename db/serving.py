"""Serving a campaign to its annotators: every query and write of the serving protocol and the labels.

Serving follows the protocol of ParaPLUIE appendix A.3: the training pairs first (the same for
everyone, in the same order, not counted), then the campaign's queue up to the annotator's quota.
A pair is reserved (an Assignment row, and one more on its CampaignPair counter) before it is
shown, in the same transaction, so that overlap targets hold when several people label at once;
an annotator's place is the store, so closing the browser and coming back resumes. Here too: an
answer's write (record_label, and the adaptive overlap it may raise), the annotators' counters
(progress) and the feedback shown on a training pair once answered. Campaigns are set up in
db.campaigns; annotators and their links in db.annotators.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from sqlalchemy import Engine, and_, case, exists, func, select, update
from sqlalchemy.orm import Session

from db.analysis import counted_label
from db.campaigns import CampaignError
from db.engine import read_session, retry_when_busy, write_session
from db.models import (
    Annotator,
    Assignment,
    Campaign,
    CampaignPair,
    GoldPair,
    Label,
    Pair,
    TrainingPair,
    utcnow,
)
from db.webhooks import emit
from lab.auth import hash_token
from pluie_core.aggregation import pair_posterior, wants_another
from pluie_core.labels import LEVELS
from pluie_core.quality import gold_check_count, serve_check_now


class StaleAnswerError(CampaignError):
    """The answer stored for a pair is no longer the one the page showed (another tab or window)."""


@dataclass(frozen=True)
class ServedPair:
    """One pair as an annotator sees it: which sentence is on top was drawn when it was served."""

    position: int  # 0-based over the whole session, training first
    pair_id: int
    top: str
    bottom: str
    source_on_top: bool
    is_training: bool
    number: int  # 1-based, within the training trial or within the quota
    out_of: int  # training size, or quota
    level: Optional[int]  # the annotator's current answer, when revisiting
    comment: Optional[str] = None  # and the comment and flag given with it
    flagged: bool = False


@dataclass(frozen=True)
class TrainingFeedback:
    """What an annotator sees once they have answered a training pair: their answer, the level the
    organiser expects (None when none was given) and the organiser's explanation ("" when none)."""

    position: int
    number: int
    out_of: int
    top: str
    bottom: str
    answer: int
    expected_level: Optional[int]
    explanation: str


@dataclass(frozen=True)
class Progress:
    """An annotator's counter, as they and the organiser see it (progress, annotator_progress)."""

    training_done: int
    training_total: int
    done: int  # answered pairs after the training trial, gold checks included (invisible as such)
    # out of: the quota and the gold checks planned; once finished, what was served (= done: the counter is full)
    quota: int
    finished: bool = False  # nothing left to serve them now: their quota and its checks, or all they could reach
    queue_ran_out: bool = False  # finished before the quota: the queue had no more pairs for them
    planned: int = 0  # what the counter read out of before they finished: the quota and the gold checks planned


# ---------------------------------------------------------------- serving and labels


def _training_size(session: Session, campaign_id: int) -> int:
    return session.scalar(select(func.count()).select_from(TrainingPair).where(TrainingPair.campaign_id == campaign_id))


def _gold_checks(session: Session, campaign: Campaign) -> int:
    """Gold checks planned for each annotator of the campaign: those of a full quota
    (pluie_core.quality.gold_check_count). A person whose queue runs out first gets the share of what
    they got (_checks_left)."""
    if not campaign.gold_rate:
        return 0
    n_gold = session.scalar(select(func.count()).select_from(GoldPair).where(GoldPair.campaign_id == campaign.id))
    return gold_check_count(campaign.quota, campaign.gold_rate, n_gold)


def _checks_left(
    session: Session, campaign: Campaign, annotator_id: int, pairs: int, gold_served: int, planned: int
) -> int:
    """The gold checks still due to an annotator whose ordinary pairs, served and still reachable, number
    ``pairs``: the share of checks of those pairs (gold_check_count, never more than the ``planned`` of a
    full quota) less the checks served, and never more than the gold pairs they have not been served."""
    due = min(planned, gold_check_count(pairs, campaign.gold_rate, planned)) - gold_served
    if due <= 0:
        return 0
    unseen = session.scalar(
        select(func.count())
        .select_from(GoldPair)
        .where(
            GoldPair.campaign_id == campaign.id,
            ~exists().where(
                Assignment.campaign_id == campaign.id,
                Assignment.annotator_id == annotator_id,
                Assignment.pair_id == GoldPair.pair_id,
            ),
        )
    )
    return min(due, int(unseen))


def _has_slot(campaign: Campaign):
    """A queue row of the campaign with a slot left: a fixed overlap is the campaign's; an adaptive one,
    each pair's own (its n_wanted, raised by record_label)."""
    wanted = CampaignPair.n_wanted if campaign.overlap_max is not None else campaign.overlap
    return and_(CampaignPair.campaign_id == campaign.id, CampaignPair.n_assigned < wanted)


def _already_mine(campaign: Campaign, annotator_id: int):
    return exists().where(
        Assignment.campaign_id == campaign.id,
        Assignment.annotator_id == annotator_id,
        Assignment.pair_id == CampaignPair.pair_id,
    )


def _reachable(session: Session, campaign: Campaign, annotator_id: int, limit: int) -> int:
    """How many queue pairs this annotator could be served now (a slot left, never served to them),
    counted up to ``limit`` (the quota left: reading further would not change what is served)."""
    if limit <= 0:
        return 0
    found = (
        select(CampaignPair.pair_id)
        .where(_has_slot(campaign), ~_already_mine(campaign, annotator_id))
        .limit(int(limit))
        .subquery()
    )
    return int(session.scalar(select(func.count()).select_from(found)))


def _served(
    session: Session, campaign: Campaign, n_training: int, assignment: Assignment, annotator_id: int
) -> ServedPair:
    pair = session.get(Pair, assignment.pair_id)
    level, comment, flagged = session.execute(
        select(Label.level, Label.comment, Label.flagged).where(
            Label.annotator_id == annotator_id, Label.pair_id == pair.id
        )
    ).first() or (None, None, False)
    is_training = assignment.position < n_training
    top, bottom = (pair.source, pair.hypothesis) if assignment.source_on_top else (pair.hypothesis, pair.source)
    return ServedPair(
        position=assignment.position,
        pair_id=pair.id,
        top=top,
        bottom=bottom,
        source_on_top=assignment.source_on_top,
        is_training=is_training,
        number=assignment.position + 1 if is_training else assignment.position - n_training + 1,
        # gold checks are numbered like any pair (invisible as such): out of quota + checks planned
        out_of=n_training if is_training else campaign.quota + _gold_checks(session, campaign),
        level=level,
        comment=comment,
        flagged=bool(flagged),
    )


def progress(engine: Engine, annotator_id: int) -> Progress:
    """The annotator's counter (annotator_progress)."""
    with read_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        campaign = session.get(Campaign, annotator.campaign_id)
        return progress_counters(session, campaign, [annotator_id])[annotator_id]


def annotator_progress(engine: Engine, campaign_id: int) -> dict[int, Progress]:
    """Every annotator's counter, by annotator id, the same the annotator sees (the organiser's progress
    column): answered pairs after the training trial, gold checks included, out of the quota and the checks
    planned; once nothing is left to serve them (finished), out of what was served, so the counter is full."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        ids = list(session.scalars(select(Annotator.id).where(Annotator.campaign_id == campaign_id)))
        return progress_counters(session, campaign, ids)


def progress_counters(session: Session, campaign: Campaign, annotator_ids: Sequence[int]) -> dict[int, Progress]:
    """The counters of these annotators of the campaign, in a few grouped reads on covering indexes
    whatever their number (the Live campaign view reads thousands): finished is what _reserve would
    decide now (no pair open, the training trial done, no queue pair they could get within their quota,
    no check still due: _checks_left). Positions run 0, 1, 2... and a pair is reserved only when none
    is open, so only an annotator's last pair can be open. Shared with db.annotators.annotator_rows,
    which reads them in its own session."""
    ids = list(annotator_ids)
    n_training = _training_size(session, campaign.id)
    planned = _gold_checks(session, campaign)
    whose = (
        Assignment.annotator_id == ids[0]
        if len(ids) == 1
        # the page's own counter, or the campaign's
        else Assignment.annotator_id.in_(select(Annotator.id).where(Annotator.campaign_id == campaign.id))
    )
    last = (
        select(Assignment.annotator_id, func.count().label("n"), func.max(Assignment.position).label("p"))
        .where(whose)
        .group_by(Assignment.annotator_id)
        .subquery()
    )
    served = {
        aid: (int(n), int(p), bool(is_open))
        for aid, n, p, is_open in session.execute(
            select(last.c.annotator_id, last.c.n, last.c.p, Assignment.done_at.is_(None)).join(
                Assignment, and_(Assignment.annotator_id == last.c.annotator_id, Assignment.position == last.c.p)
            )
        )
    }
    checks = (
        select(Assignment.annotator_id, func.count())
        .where(Assignment.campaign_id == campaign.id, Assignment.is_gold.is_(True), whose)
        .group_by(Assignment.annotator_id)
    )
    gold_served = dict(session.execute(checks).all())
    rows = {}
    for aid in ids:
        n, _, is_open = served.get(aid, (0, -1, False))
        rows[aid] = (n, int(gold_served.get(aid, 0)), is_open)
    # who might have nothing left: no pair open, the training trial done, their quota not reached
    # (a queue pair to get?) or reached (only checks still due)
    waiting = [aid for aid, (n, _, is_open) in rows.items() if not is_open and n >= n_training]
    short = [aid for aid in waiting if rows[aid][0] - n_training - rows[aid][1] < campaign.quota]
    reachable: set[int] = set()
    if len(ids) == 1:
        reachable = {aid for aid in short if _reachable(session, campaign, aid, 1)}
    elif short:
        open_pairs = session.scalar(select(func.count()).select_from(CampaignPair).where(_has_slot(campaign)))
        # an annotator served fewer pairs than there are open ones can surely get one; the others are counted
        unsure = {aid for aid in short if rows[aid][0] >= open_pairs}
        reachable = set(short) - unsure
        if unsure and open_pairs:
            open_mine = dict(
                session.execute(
                    select(Assignment.annotator_id, func.count())
                    .join(
                        CampaignPair,
                        and_(
                            CampaignPair.campaign_id == Assignment.campaign_id,
                            CampaignPair.pair_id == Assignment.pair_id,
                        ),
                    )
                    .where(Assignment.campaign_id == campaign.id, _has_slot(campaign))
                    .group_by(Assignment.annotator_id)
                ).all()
            )
            reachable |= {aid for aid in unsure if open_pairs - open_mine.get(aid, 0) > 0}
    candidates = {aid for aid in waiting if aid not in reachable}
    n_gold, gold_seen = 0, {}
    if planned and candidates:  # the checks still due can be served only from gold pairs not served to them yet
        n_gold = session.scalar(select(func.count()).select_from(GoldPair).where(GoldPair.campaign_id == campaign.id))
        gold_seen = dict(
            session.execute(
                checks.join(
                    GoldPair,
                    and_(GoldPair.campaign_id == Assignment.campaign_id, GoldPair.pair_id == Assignment.pair_id),
                )
            ).all()
        )
    result = {}
    for aid, (n, gold, is_open) in rows.items():
        answered = n - int(is_open)  # all but the last, when it is open
        training_done = min(answered, n_training)
        done = answered - training_done  # answered after the training trial, checks included
        finished = ran_out = False
        if aid in candidates:
            ordinary = n - n_training - gold
            due = min(planned, gold_check_count(ordinary, campaign.gold_rate, planned)) - gold if planned else 0
            finished = due <= 0 or n_gold - gold_seen.get(aid, 0) <= 0
            ran_out = finished and ordinary < campaign.quota
        result[aid] = Progress(
            training_done,
            n_training,
            done,
            done if finished else campaign.quota + planned,
            finished,
            ran_out,
            campaign.quota + planned,
        )
    return result


def _open_assignment(session: Session, annotator_id: int) -> Optional[Assignment]:
    return session.scalar(
        select(Assignment)
        .where(Assignment.annotator_id == annotator_id, Assignment.done_at.is_(None))
        .order_by(Assignment.position)
        .limit(1)
    )


def serve_next(engine: Engine, annotator_id: int) -> Optional[ServedPair]:
    """The pair this annotator should label now: the one already reserved for them (resume), or
    a newly reserved one. None when they are done: quota reached, queue exhausted, campaign closed
    or link revoked."""
    with read_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        if annotator is None or annotator.revoked_at is not None:
            return None
        campaign = session.get(Campaign, annotator.campaign_id)
        open_one = _open_assignment(session, annotator_id)
        if open_one is not None:
            return _served(session, campaign, _training_size(session, campaign.id), open_one, annotator_id)
        if not campaign.active:
            return None
    with write_session(engine) as session:  # BEGIN IMMEDIATE on SQLite: one reservation at a time
        # the row lock (PostgreSQL; SQLite's write lock already covers it) keeps two tabs of one
        # annotator from reserving two pairs at the same position
        annotator = session.get(Annotator, annotator_id, with_for_update=True)
        if annotator.revoked_at is not None:
            return None
        campaign = session.get(Campaign, annotator.campaign_id)
        n_training = _training_size(session, campaign.id)
        open_one = _open_assignment(session, annotator_id)  # a second tab may have reserved meanwhile
        if open_one is None:
            open_one = _reserve(session, campaign, annotator_id, n_training)
        if open_one is None:
            return None
        return _served(session, campaign, n_training, open_one, annotator_id)


def _reserve(session: Session, campaign: Campaign, annotator_id: int, n_training: int) -> Optional[Assignment]:
    """The next pair for this annotator. After the training trial: an ordinary pair of the queue up to the
    quota, and gold checks (outside the quota) served within the pairs they can actually get: at each step a
    check comes with the chance of the checks still due among the steps left (pluie_core.quality.
    serve_check_now), the checks due being the share of checks of the ordinary pairs served and still
    reachable (_checks_left). So a queue that empties before the quota gives fewer checks, spread over
    what the person got; those still due once it is empty are served at the end."""
    served, gold_served = session.execute(
        select(func.count(), func.coalesce(func.sum(case((Assignment.is_gold, 1), else_=0)), 0)).where(
            Assignment.annotator_id == annotator_id
        )
    ).one()
    served, gold_served = int(served), int(gold_served)
    is_gold = False
    if served < n_training:
        pair_id = session.scalar(
            select(TrainingPair.pair_id).where(TrainingPair.campaign_id == campaign.id, TrainingPair.position == served)
        )
    else:
        step = served - n_training
        ordinary = step - gold_served
        quota_left = campaign.quota - ordinary
        planned = _gold_checks(session, campaign)
        pair_id = None
        if not planned:
            pair_id = _reserve_queue_pair(session, campaign, annotator_id) if quota_left > 0 else None
        else:
            pairs_left = _reachable(session, campaign, annotator_id, quota_left)
            checks_left = _checks_left(session, campaign, annotator_id, ordinary + pairs_left, gold_served, planned)
            if serve_check_now(checks_left, pairs_left, f"check:{campaign.seed}:{annotator_id}:{step}"):
                pair_id = _reserve_gold_pair(session, campaign, annotator_id, step)
                is_gold = pair_id is not None
            elif pairs_left:
                pair_id = _reserve_queue_pair(session, campaign, annotator_id)
                if pair_id is None and _checks_left(session, campaign, annotator_id, ordinary, gold_served, planned):
                    # the pairs left were taken meanwhile (another annotator): a check still due instead
                    pair_id = _reserve_gold_pair(session, campaign, annotator_id, step)
                    is_gold = pair_id is not None
    if pair_id is None:
        return None
    assignment = Assignment(
        campaign_id=campaign.id,
        annotator_id=annotator_id,
        pair_id=pair_id,
        position=served,
        source_on_top=random.random() < 0.5,
        is_gold=is_gold,
    )
    session.add(assignment)
    session.flush()
    return assignment


def _reserve_gold_pair(session: Session, campaign: Campaign, annotator_id: int, step: int) -> Optional[int]:
    """A gold pair of the campaign this annotator has never been served (in any role), drawn at
    random from the side of the paraphrase boundary they have been served fewer checks of (either side on
    a tie, or where the other has none left): each person's checks stay as balanced as the keys allow, so
    a constant answer scores about half of their checks, not whatever a random draw gave. None when they
    have seen them all. The annotator's row lock makes this race-free."""
    seen = exists().where(
        Assignment.campaign_id == campaign.id,
        Assignment.annotator_id == annotator_id,
        Assignment.pair_id == GoldPair.pair_id,
    )
    unseen = sorted(
        session.execute(
            select(GoldPair.pair_id, GoldPair.binary_label).where(GoldPair.campaign_id == campaign.id, ~seen)
        ).all()
    )
    if not unseen:
        return None
    checks = dict(
        session.execute(
            select(GoldPair.binary_label, func.count())
            .join(
                Assignment, and_(Assignment.campaign_id == GoldPair.campaign_id, Assignment.pair_id == GoldPair.pair_id)
            )
            .where(
                GoldPair.campaign_id == campaign.id,
                Assignment.annotator_id == annotator_id,
                Assignment.is_gold.is_(True),
            )
            .group_by(GoldPair.binary_label)
        ).all()
    )
    by_side = {side: [p for p, b in unseen if b == side] for side in (0, 1)}
    fewer = 0 if checks.get(0, 0) < checks.get(1, 0) else 1 if checks.get(1, 0) < checks.get(0, 0) else None
    pool = by_side[fewer] if fewer is not None and by_side[fewer] else [p for p, _ in unseen]
    return random.Random(f"{campaign.seed}:{annotator_id}:{step}").choice(pool)


def _reserve_queue_pair(session: Session, campaign: Campaign, annotator_id: int) -> Optional[int]:
    """Take one slot of the first pair in serving order that still has one and that this annotator
    has not seen. The conditional UPDATE is the guard: on PostgreSQL, where two transactions may
    pick the same pair, the loser updates no row and tries the next pair."""
    already_mine = _already_mine(campaign, annotator_id)
    # a fixed overlap is the campaign's; an adaptive one, each pair's own (its n_wanted, raised by record_label)
    has_slot = _has_slot(campaign)
    # "share": the pairs assigned fewest times first, so annotators get different pairs while there
    # are enough; "overlap": the serving order alone, so each pair is filled before the next
    order = (CampaignPair.n_assigned, CampaignPair.rank) if campaign.distribution == "share" else (CampaignPair.rank,)
    candidate = select(CampaignPair.pair_id).where(has_slot, ~already_mine).order_by(*order).limit(1)
    # PostgreSQL: a candidate another annotator is reserving right now is skipped rather than waited
    # for (SKIP LOCKED), so concurrent reservations do not queue up behind one row; only when every
    # candidate is being reserved does it wait (the plain query), so no slot is ever missed (SQLite: no-op)
    skipping = candidate.with_for_update(skip_locked=True)
    for _ in range(100):
        pair_id = session.scalar(skipping)
        if pair_id is None:
            pair_id = session.scalar(candidate)
        if pair_id is None:
            return None
        taken = session.execute(
            update(CampaignPair)
            .where(has_slot, CampaignPair.pair_id == pair_id)
            .values(n_assigned=CampaignPair.n_assigned + 1)
        )
        if taken.rowcount == 1:
            return pair_id
    return None


def served_at(engine: Engine, annotator_id: int, position: int) -> Optional[ServedPair]:
    """A pair this annotator has already been served (to go back and change the answer)."""
    with read_session(engine) as session:
        assignment = session.scalar(
            select(Assignment).where(Assignment.annotator_id == annotator_id, Assignment.position == position)
        )
        if assignment is None:
            return None
        campaign = session.get(Campaign, assignment.campaign_id)
        return _served(session, campaign, _training_size(session, campaign.id), assignment, annotator_id)


MAX_COMMENT = 500


def clean_comment(comment: Optional[str]) -> Optional[str]:
    """An annotator's comment as stored: spaces trimmed, NUL characters removed (PostgreSQL cannot
    hold them in text), None when empty; longer than MAX_COMMENT characters is refused with a sentence."""
    comment = (comment or "").replace("\x00", "").strip()
    if len(comment) > MAX_COMMENT:
        raise CampaignError(f"A comment has at most {MAX_COMMENT} characters: your answer was not saved.")
    return comment or None


LINK_GONE = (
    "This link is no longer valid (it has been replaced or revoked): your answer was not saved. "
    "Ask the person who sent it to you for your current link."
)
CAMPAIGN_CLOSED = (
    "This campaign is closed for now: your answer was not saved. "
    "Your earlier answers are kept; come back to this link when it reopens."
)


@retry_when_busy  # an answer waits for a busy store a little longer before the page says so
def record_label(
    engine: Engine,
    annotator_id: int,
    position: int,
    level: int,
    seconds_spent: float,
    *,
    replacing: Optional[int] = None,
    token: Optional[str] = None,
    comment: Optional[str] = None,
    flagged: bool = False,
) -> None:
    """Store an answer at once, over exactly what the page showed: a first answer to a pair shown
    unanswered (replacing=None), or a change of the answer `replacing` that the annotator went
    back to. When the stored answer is not that one (the same link open in another tab or window
    answered meanwhile), nothing is written and StaleAnswerError says so: no answer is ever
    replaced except through "back". A change adds the time spent, so seconds_spent is the total
    time the annotator looked at the pair.

    ``comment`` (optional, at most MAX_COMMENT characters) and ``flagged`` (the pair goes to
    Review's queue) are part of the answer: a change through "back" replaces them with the ones given.

    token: the personal link the page was opened with (the labelling page always gives it). Inside
    the transaction, under the annotator's row lock that db.annotators' new_link and revoke_annotator
    take too, the link must still be this annotator's, not revoked, and the campaign open: otherwise
    nothing is written and CampaignError says so in one sentence, whatever the timing."""
    if level not in range(len(LEVELS)):
        raise CampaignError("That answer is not on the scale.")
    comment, flagged = clean_comment(comment), bool(flagged)
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id, with_for_update=True)  # one answer at a time
        if annotator is None or annotator.revoked_at is not None:
            raise CampaignError(LINK_GONE)
        if token is not None and (len(token) > 200 or annotator.token_hash != hash_token(token)):
            raise CampaignError(LINK_GONE)  # replaced under "Replace a lost link" since the page opened
        if not session.scalar(select(Campaign.active).where(Campaign.id == annotator.campaign_id)):
            raise CampaignError(CAMPAIGN_CLOSED)
        assignment = session.scalar(
            select(Assignment).where(Assignment.annotator_id == annotator_id, Assignment.position == position)
        )
        if assignment is None:
            raise CampaignError("This pair is not in your queue.")
        is_training = position < _training_size(session, assignment.campaign_id)
        seconds = max(0.0, float(seconds_spent))
        mine = and_(Label.annotator_id == annotator_id, Label.pair_id == assignment.pair_id)
        stored, was_flagged = session.execute(select(Label.level, Label.flagged).where(mine)).first() or (None, False)
        if replacing is None:
            if stored is not None:
                raise StaleAnswerError(
                    f"This pair was already answered in another tab or window (“{LEVELS[stored]}”): "
                    "the answer you just gave was not saved. Here is your current pair."
                )
            # the conditional update is the guard: it takes the reservation only while still open
            done = session.execute(
                update(Assignment)
                .where(Assignment.id == assignment.id, Assignment.done_at.is_(None))
                .values(done_at=utcnow())
            )
            if done.rowcount != 1:
                raise StaleAnswerError(
                    "This pair was already answered in another tab or window: "
                    "the answer you just gave was not saved. Here is your current pair."
                )
            session.add(
                Label(
                    pair_id=assignment.pair_id,
                    annotator_id=annotator_id,
                    campaign_id=assignment.campaign_id,
                    level=level,
                    source_on_top=assignment.source_on_top,
                    is_training=is_training,
                    seconds_spent=seconds,
                    comment=comment,
                    flagged=flagged,
                )
            )
        else:
            changed = session.execute(
                update(Label)
                .where(mine, Label.level == replacing)
                .values(
                    level=level,
                    seconds_spent=func.coalesce(Label.seconds_spent, 0.0) + seconds,
                    updated_at=utcnow(),
                    comment=comment,
                    flagged=flagged,
                )
            )
            if changed.rowcount != 1:
                now = "no answer" if stored is None else f"“{LEVELS[stored]}”"
                raise StaleAnswerError(
                    f"This answer was changed in another tab or window (it is now {now}): "
                    "the answer you just gave was not saved."
                )
        if not is_training and not assignment.is_gold:
            _adapt_overlap(session, assignment.campaign_id, assignment.pair_id)
        if flagged and not was_flagged:  # a change through "back" that keeps the flag says nothing new
            emit(
                session,
                "pair.flagged",
                {
                    "pair_id": assignment.pair_id,
                    "campaign_id": assignment.campaign_id,
                    "annotator": annotator.name,
                    "comment": comment,
                },
            )


def _adapt_overlap(session: Session, campaign_id: int, pair_id: int) -> None:
    """Adaptive overlap, in the transaction of the answer that may change it: a queue pair holding the
    answers it asked for gets one more annotator while it holds fewer usable answers than the campaign's
    least ("Don't know" never counts) or its posterior is below the campaign's confidence (wants_another;
    the posterior is the campaign's fitted model's, db.adaptive, once it decides, else the vote share).
    The pair's posterior is kept beside its queue row. The pair's row is locked before its answers are
    counted (PostgreSQL: two answers to one pair at once are counted one after the other, so neither
    misses the other's; SQLite's write lock already orders them). A raise is never taken back here:
    the slot may already be served (db.adaptive.refit_campaign may lower an unserved one)."""
    campaign = session.get(Campaign, campaign_id)
    if campaign.overlap_max is None:
        return
    row = session.execute(
        select(CampaignPair.n_wanted)
        .where(CampaignPair.campaign_id == campaign_id, CampaignPair.pair_id == pair_id)
        .with_for_update()
    ).first()
    if row is None or row.n_wanted is None:
        return
    session.flush()  # the answer just added or changed is counted
    answers = session.execute(
        select(Label.annotator_id, Label.level).where(
            Label.campaign_id == campaign_id, Label.pair_id == pair_id, counted_label()
        )
    ).all()
    annotators, levels = [a for a, _ in answers], [lv for _, lv in answers]
    posterior = pair_posterior(annotators, levels, campaign.adaptive_fit)
    values: dict[str, Any] = {"posterior": posterior}
    if wants_another(
        levels, row.n_wanted, campaign.overlap_max, campaign.confidence, least=campaign.overlap, posterior=posterior
    ):
        values["n_wanted"] = row.n_wanted + 1
    session.execute(
        update(CampaignPair)
        .where(
            CampaignPair.campaign_id == campaign_id,
            CampaignPair.pair_id == pair_id,
            CampaignPair.n_wanted == row.n_wanted,
        )
        .values(**values)
    )


# ---------------------------------------------------------------- training feedback


def training_feedback(engine: Engine, annotator_id: int, position: int) -> Optional[TrainingFeedback]:
    """The feedback on a training pair this annotator has answered (TrainingFeedback); None when
    the position is not a training pair, is not answered, or the organiser gave the pair neither an
    expected level nor an explanation."""
    with read_session(engine) as session:
        row = session.execute(
            select(
                Assignment.campaign_id,
                Assignment.source_on_top,
                Pair.source,
                Pair.hypothesis,
                TrainingPair.expected_level,
                TrainingPair.explanation,
                Label.level,
            )
            .join(
                TrainingPair,
                and_(
                    TrainingPair.campaign_id == Assignment.campaign_id,
                    TrainingPair.position == Assignment.position,
                    TrainingPair.pair_id == Assignment.pair_id,
                ),
            )
            .join(Pair, Pair.id == Assignment.pair_id)
            .join(Label, and_(Label.annotator_id == Assignment.annotator_id, Label.pair_id == Assignment.pair_id))
            .where(Assignment.annotator_id == annotator_id, Assignment.position == int(position))
        ).first()
        if row is None or row.level is None or (row.expected_level is None and not row.explanation):
            return None
        out_of = _training_size(session, row.campaign_id)
    top, bottom = (row.source, row.hypothesis) if row.source_on_top else (row.hypothesis, row.source)
    return TrainingFeedback(
        int(position), int(position) + 1, out_of, top, bottom, int(row.level), row.expected_level, row.explanation or ""
    )
