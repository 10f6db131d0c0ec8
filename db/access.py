"""Who the running code writes for, checked inside the write path (lab.roles).

Every write a person can ask for from a page calls ``require(action)`` before it writes, so the role is
checked where the write happens, whatever button, form or forged message led there. The actor comes from,
in order: ``acting_as`` (the command line's account commands, the API's requests, tests, a script acting for a
named account); else what the process installed at its start (``install``): the app installs the person signed
in to the Streamlit session that runs the thread (ui.access.signin.install_access), the worker and the command
line install OPEN (``install_actor``: a store's own operator, everything allowed). A process that installed
nothing writes nothing: its writes are refused with a sentence that says so. Nothing is installed by importing
a module, so no import order can open the store.

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

__all__ = [
    "Actor",
    "NotAllowed",
    "OPEN",
    "NOBODY",
    "UNSET",
    "acting_as",
    "current_actor",
    "install",
    "install_actor",
    "installed",
    "require",
    "actor_name",
    "record",
]

_ACTOR: contextvars.ContextVar[Optional[Actor]] = contextvars.ContextVar("pluie_actor", default=None)
_SOURCE: Optional[Callable[[], Optional[Actor]]] = None
# what a process that installed nothing writes as: nothing allowed (a role of ""), and a sentence that says why
UNSET = Actor("", "")
NOT_INSTALLED = (
    "This process has not said who writes to the store, so nothing is written: the app, the worker and "
    "the command line say so at their start (db.access.install)."
)


def install(source: Optional[Callable[[], Optional[Actor]]]) -> None:
    """Say, once at a process's start, who its writes are done for when no ``acting_as`` is in force: ``source()``
    gives the actor of the thread it runs on (the app's gives the signed-in person of the Streamlit session, and
    NOBODY or OPEN on a thread without one: ui.access.signin.install_access). None uninstalls (tests)."""
    global _SOURCE
    _SOURCE = source


def install_actor(actor: Actor) -> None:
    """Install one actor for every write of this process (the worker and the command line: OPEN)."""
    install(lambda: actor)


def install_operator() -> None:
    """Install the store's own operator (OPEN: everything allowed, nobody named) for every write of this process:
    what the worker, the command line, the benchmarks and a test process say at their start."""
    install_actor(OPEN)


def installed() -> Optional[Callable[[], Optional[Actor]]]:
    """What this process installed (None: nothing yet)."""
    return _SOURCE


@contextlib.contextmanager
def acting_as(actor: Actor) -> Iterator[Actor]:
    """Run the block's writes for ``actor`` (checked and attributed as that account)."""
    token = _ACTOR.set(actor)
    try:
        yield actor
    finally:
        _ACTOR.reset(token)


def current_actor() -> Actor:
    """``acting_as``'s actor, else the installed source's, else UNSET (nothing allowed). A source that cannot tell
    (None) gives UNSET too: a write nobody answers for is refused."""
    actor = _ACTOR.get()
    if actor is not None:
        return actor
    if _SOURCE is not None:
        resolved = _SOURCE()
        if resolved is not None:
            return resolved
    return UNSET


def require(action: str, doing: Optional[str] = None) -> Actor:
    """The current actor when its role allows ``action`` (lab.roles.ACTIONS), else NotAllowed
    with a sentence naming what was refused (``doing``: "delete a dataset"; else the action's words)."""
    actor = current_actor()
    if actor is UNSET:
        raise NotAllowed(NOT_INSTALLED)
    return _require(actor, action, doing)


def actor_name() -> str:
    """The name a write records as its author: the signed-in account's, "" on a store without accounts."""
    return current_actor().name


def record(session: Session, action: str, subject: str, subject_id: Optional[int], summary: str = "") -> None:
    """Add a line to the activity log in ``session``'s transaction (written with it, or not at all)."""
    session.add(
        Activity(
            at=utcnow(),
            actor=actor_name(),
            action=action[:60],
            subject=subject[:40],
            subject_id=subject_id,
            summary=summary,
        )
    )
