"""A campaign's annotators: their names, personal links (tokens), revocation and profile.

An annotator is a name the organiser gives and a personal link whose token only the link carries
(the store keeps its hash); a lost link is replaced (new_link), a revoked one stops at once. The
labelling page finds its annotator by the link (annotator_for_token) and knows only AnnotatorView.
The organiser's table of annotators (annotator_rows) reads their counters from db.serving.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Optional, Sequence

from sqlalchemy import Engine, func, select, update

from db import access
from db.campaigns import CampaignError
from db.engine import read_session, write_session
from db.limits import clean_name, invisible
from db.models import Annotator, Assignment, Campaign, CampaignPair, utcnow
from db.serving import progress_counters
from lab.auth import hash_token, new_token
from pluie_core.labels import ENGLISH_LEVELS


@dataclass(frozen=True)
class AnnotatorView:
    """What the labelling page may know about its annotator: nothing about scores or others."""

    annotator_id: int
    display_name: Optional[str]
    english_level: Optional[str]
    campaign_name: str
    guidelines: str
    campaign_active: bool

    @property
    def needs_profile(self) -> bool:
        return not self.display_name or self.english_level not in ENGLISH_LEVELS


# ---------------------------------------------------------------- annotators and access


def _same_name(name: str) -> str:
    # "Alice", " alice " and "ALICE" are one name to the people reading the tables, and so are "Zoë" typed
    # two ways (NFC) and "s\u200bam" (invisible characters): a name stored before names were cleaned too
    name = unicodedata.normalize("NFC", "".join(c for c in name if not invisible(c)))
    return " ".join(name.split()).casefold()


def _shown(name: str) -> str:
    """The start of a refused name, for its sentence: control characters as U+FFFD, never sent on."""
    return "".join(c if c.isprintable() or c == " " else "\ufffd" for c in name[:30])


def person_name(what: str, name: Optional[str]) -> str:
    """A person's name as the store keeps it (db.limits.clean_name: NFC, invisible characters removed, no
    control character, at most 200 characters), with its spaces collapsed; CampaignError otherwise."""
    return " ".join(clean_name(what, " ".join(str(name or "").split()), CampaignError).split())


def create_annotators(engine: Engine, campaign_id: int, names: Sequence[str]) -> list[tuple[int, str, str]]:
    """New annotators of the campaign: (id, name, personal-link token) each, in the given order.
    Tokens are returned once and never stored (only their hashes are). All or nothing: a name
    given twice, or already used in the campaign (letter case and spacing aside, revoked links
    included), refuses the whole list, so that no two rows of the results share a name; a lost
    link is replaced with new_link, which keeps the annotator and their labels. Organisers only (db.access)."""
    access.require("organise", "add annotators")
    names = [" ".join((n or "").split()) for n in names]
    names = [person_name(f"The annotator name “{_shown(n)}…”", n) for n in names if n]
    if not names:
        raise CampaignError("Give the annotator a name (for you; they choose their display name).")
    seen: dict[str, str] = {}
    for name in names:
        if _same_name(name) in seen:
            raise CampaignError(
                f"“{seen[_same_name(name)]}” is in the list twice: give each annotator a name of their own."
            )
        seen[_same_name(name)] = name
    with write_session(engine) as session:
        # the campaign's row lock (PostgreSQL) keeps two admins from adding the same name at once
        if session.get(Campaign, campaign_id, with_for_update=True) is None:
            raise CampaignError("This campaign does not exist (any more).")
        existing = session.scalars(select(Annotator.name).where(Annotator.campaign_id == campaign_id))
        taken = {_same_name(n): n for n in existing}
        clash = next((n for n in names if _same_name(n) in taken), None)
        if clash is not None:
            raise CampaignError(
                f"This campaign already has an annotator called “{taken[_same_name(clash)]}”: no link was created. "
                "Choose another name, or give them a new link under “Replace a lost link”."
            )
        created = []
        for name in names:
            token = new_token()
            annotator = Annotator(name=name, campaign_id=campaign_id, token_hash=hash_token(token), is_external=False)
            session.add(annotator)
            session.flush()
            created.append((annotator.id, annotator.name, token))
        access.record(
            session,
            "links",
            "campaign",
            campaign_id,
            f"Created {'a personal link' if len(created) == 1 else 'personal links'} for "
            f"{', '.join(name for _, name, _ in created)}.",
        )
        return created


def create_annotator(engine: Engine, campaign_id: int, name: str) -> tuple[int, str]:
    """One new annotator of the campaign and their personal-link token (see create_annotators)."""
    ((annotator_id, _, token),) = create_annotators(engine, campaign_id, [name])
    return annotator_id, token


def new_link(engine: Engine, annotator_id: int) -> str:
    """A new personal link for the same annotator, e.g. when theirs is lost: the old link stops
    working at once, the labels and the place in the queue stay theirs, and a revoked annotator
    can label again. Returns the new token (shown once, only its hash is stored). Organisers only."""
    access.require("organise", "make a new labelling link")
    token = new_token()
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id, with_for_update=True)
        if annotator is None or annotator.campaign_id is None:
            raise CampaignError("This annotator does not exist (any more).")
        annotator.token_hash = hash_token(token)
        annotator.revoked_at = None
        access.record(
            session,
            "new link",
            "campaign",
            annotator.campaign_id,
            f"Replaced the link of {annotator.name}: the old one no longer works.",
        )
    return token


def revoke_annotator(engine: Engine, annotator_id: int) -> None:
    """The link stops working; a pair reserved but not answered goes back to the queue.
    Labels already given stay. Organisers only (db.access)."""
    access.require("organise", "revoke an annotator's link")
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id, with_for_update=True)  # after an answer being stored
        if annotator is None:
            raise CampaignError("This annotator does not exist.")
        if annotator.revoked_at is None:
            annotator.revoked_at = utcnow()
            access.record(
                session, "revoke", "campaign", annotator.campaign_id, f"Revoked the link of {annotator.name}."
            )
        for assignment in session.scalars(
            select(Assignment).where(Assignment.annotator_id == annotator_id, Assignment.done_at.is_(None))
        ):
            session.execute(
                update(CampaignPair)
                .where(
                    CampaignPair.campaign_id == assignment.campaign_id,
                    CampaignPair.pair_id == assignment.pair_id,
                )
                .values(n_assigned=CampaignPair.n_assigned - 1)
            )
            session.delete(assignment)


def annotator_for_token(engine: Engine, token: Optional[str]) -> Optional[Annotator]:
    """The annotator whose personal link carries this token; None for an unknown or revoked one."""
    if not token or len(token) > 200:
        return None
    with read_session(engine) as session:
        annotator = session.scalar(select(Annotator).where(Annotator.token_hash == hash_token(token)))
        if annotator is None or annotator.revoked_at is not None or annotator.campaign_id is None:
            return None
        return annotator


def annotator_view(engine: Engine, annotator_id: int) -> AnnotatorView:
    with read_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        campaign = session.get(Campaign, annotator.campaign_id)
        return AnnotatorView(
            annotator.id,
            annotator.display_name,
            annotator.english_level,
            campaign.name,
            campaign.guidelines,
            campaign.active,
        )


def set_annotator_profile(engine: Engine, annotator_id: int, display_name: str, english_level: str) -> None:
    if not (display_name or "").strip():
        raise CampaignError("Please enter a name to be shown with your labels.")
    display_name = person_name("Your name", display_name)
    if english_level not in ENGLISH_LEVELS:
        raise CampaignError("Please choose your English level: " + ", ".join(ENGLISH_LEVELS) + ".")
    with write_session(engine) as session:
        annotator = session.get(Annotator, annotator_id)
        session.get(Campaign, annotator.campaign_id, with_for_update=True)  # one profile at a time (PostgreSQL)
        others = session.scalars(
            select(Annotator.display_name).where(
                Annotator.campaign_id == annotator.campaign_id,
                Annotator.id != annotator_id,
                Annotator.display_name.is_not(None),
            )
        )
        if _same_name(display_name) in {_same_name(n) for n in others}:
            raise CampaignError(
                f"Someone else in this campaign already goes by “{display_name}”: "
                "please add an initial or choose another name, so that your labels stay yours."
            )
        annotator.display_name = display_name
        annotator.english_level = english_level


def annotator_rows(engine: Engine, campaign_id: int) -> list[dict]:
    """One row per annotator of the campaign, for the admin's table; ``labelled``: the annotator's own
    counter (db.serving.annotator_progress: gold checks included, full once nothing is left for them)."""
    with read_session(engine) as session:
        campaign = session.get(Campaign, campaign_id)
        ids = list(session.scalars(select(Annotator.id).where(Annotator.campaign_id == campaign_id)))
        counters = progress_counters(session, campaign, ids)
        last = dict(
            session.execute(
                select(Assignment.annotator_id, func.max(Assignment.done_at))
                .where(Assignment.campaign_id == campaign_id)
                .group_by(Assignment.annotator_id)
            ).all()
        )
        rows = []
        for a in session.scalars(select(Annotator).where(Annotator.campaign_id == campaign_id).order_by(Annotator.id)):
            rows.append(
                {
                    "id": a.id,
                    "name": a.name,
                    "display name": a.display_name or "",
                    "English": a.english_level or "",
                    "labelled": f"{counters[a.id].done} / {counters[a.id].quota}",
                    "last answer": last.get(a.id),
                    "status": "revoked" if a.revoked_at else "active",
                }
            )
        return rows
