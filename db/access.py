"""Who the running code writes for, checked inside the write path (lab.roles).

Every write a person can ask for from a page calls ``require(action)`` before it writes, so the role is
checked where the write happens, whatever button, form or forged message led there. The actor comes from,
in order: ``acting_as`` (the command line, tests, a script acting for a named account); the resolver the
app registers (``set_resolver``: the person signed in to the Streamlit session that runs this thread,
NOBODY when accounts are in force and nobody is); else OPEN — the library, the worker, the command line,
a store without accounts — where everything is allowed, as before accounts existed.

``record`` writes one line of the activity log (db.models.Activity) in the caller's transaction, under
the current actor's name: who saved a campaign's settings, added an account, paused a run.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Callable, Iterator, Optional

from sqlalchemy.orm import Session

from db.models import Activity, utcnow
from lab.roles import NOBODY, OPEN, Actor, NotAllowed
from lab.roles import require as _require

__all__ = ["Actor", "NotAllowed", "OPEN", "NOBODY", "acting_as", "current_actor", "set_resolver", "require",
           "actor_name", "record"]

_ACTOR: contextvars.ContextVar[Optional[Actor]] = contextvars.ContextVar("pluie_actor", default=None)
_RESOLVER: Optional[Callable[[], Optional[Actor]]] = None


def set_resolver(resolver: Optional[Callable[[], Optional[Actor]]]) -> None:
    """Register how to find the actor when no ``acting_as`` is in force: the app's (pages.signin) returns
    the signed-in person of the Streamlit session running this thread, and None outside one."""
    global _RESOLVER
    _RESOLVER = resolver


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """Run the block's writes for ``actor`` (checked and attributed as that account)."""
    token = _ACTOR.set(actor)
    try:
        yield actor
    finally:
        _ACTOR.reset(token)


def current_actor() -> Actor:
    actor = _ACTOR.get()
    if actor is not None:
        return actor
    if _RESOLVER is not None:
        resolved = _RESOLVER()
        if resolved is not None:
            return resolved
    return OPEN


def require(action: str, doing: Optional[str] = None) -> Actor:
    """The current actor when its role allows ``action`` (lab.roles.ACTIONS), else NotAllowed
    with a sentence naming what was refused (``doing``: "delete a dataset"; else the action's words)."""
    return _require(current_actor(), action, doing)


def actor_name() -> str:
    """The name a write records as its author: the signed-in account's, "" on a store without accounts."""
    return current_actor().name


def record(session: Session, action: str, subject: str, subject_id: Optional[int], summary: str = "") -> None:
    """Add a line to the activity log in ``session``'s transaction (written with it, or not at all)."""
    session.add(Activity(at=utcnow(), actor=actor_name(), action=action[:60], subject=subject[:40],
                         subject_id=subject_id, summary=summary))
