"""People and roles, without a database: who may do what in PLUIE Lab.

Four roles, each able to do what the ones before it can (the order of ROLES):

- viewer: reads the pages (datasets, pairs, the analysis views);
- reviewer: also decides pairs' final levels on Review and asks "why this score";
- organiser: also imports and deletes datasets, starts and stops runs, runs campaigns (links,
  guidelines, quality settings), exports and publishes;
- owner: also adds people, changes their roles and ends their sessions (the Accounts page, `python -m db
  accounts`).

An Actor is whoever a write is done for: a signed-in account, or OPEN — a store used without accounts
(the app on this machine with no account and no admin password, the command line, the worker, a script),
where everything is allowed, as it always was. db.access holds the actor of the running code and every
write path checks it there (require), so a hidden button is never the only guard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

ROLES = ("viewer", "reviewer", "organiser", "owner")
ROLE_HELP = {
    "viewer": "reads the datasets, pairs and analysis pages",
    "reviewer": "also decides pairs' final levels (Review) and asks why a score",
    "organiser": "also imports, scores, runs campaigns, exports and publishes",
    "owner": "also adds people and changes their roles (Accounts)",
}
# what a write needs: the least role, and how the refusal names it
ACTIONS: dict[str, tuple[str, str]] = {
    "read": ("viewer", "read these pages"),
    "review": ("reviewer", "decide final levels"),
    "explain": ("reviewer", "ask why a score"),
    "organise": ("organiser", "import, score, run campaigns, export or publish"),
    "own": ("owner", "manage accounts"),
}


@dataclass(frozen=True)
class Actor:
    """Who a write is done for. ``name``: the account's name ("" when nobody is signed in on a store
    without accounts); ``role``: one of ROLES, or "" for nobody (refused everything)."""

    name: str
    role: str
    account_id: Optional[int] = None

    @property
    def signed_in(self) -> bool:
        return self.account_id is not None


OPEN = Actor("", "owner")  # a store used without accounts: everything allowed, nobody named
NOBODY = Actor("", "")  # accounts are in force and nobody is signed in: nothing allowed


class NotAllowed(PermissionError):
    """A write refused for the role of whoever asked; the message is the sentence to show."""


def check_role(role: str) -> str:
    """``role`` as stored, or ValueError with a sentence naming the roles."""
    cleaned = str(role or "").strip().lower()
    if cleaned not in ROLES:
        raise ValueError(f"{role!r} is not a role; the roles are {', '.join(ROLES)}.")
    return cleaned


def rank(role: str) -> int:
    """0 for viewer ... 3 for owner; -1 for nobody or an unknown role."""
    return ROLES.index(role) if role in ROLES else -1


def can(actor: Actor, action: str) -> bool:
    least, _ = ACTIONS[action]
    return rank(actor.role) >= rank(least)


def require(actor: Actor, action: str, doing: Optional[str] = None) -> Actor:
    """``actor`` when its role allows ``action`` (a key of ACTIONS), else NotAllowed with a sentence that
    names what was refused: ``doing`` ("delete a dataset"), else the action's own words."""
    if can(actor, action):
        return actor
    least, said = ACTIONS[action]
    doing = doing or said
    if not actor.role:
        raise NotAllowed(f"Sign in to {doing}.")
    return _refuse(actor, least, doing)


def with_article(word: str) -> str:
    """ "an organiser", "an owner", "a viewer", "a reviewer": the role (or any word) with its article."""
    word = str(word)
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def _refuse(actor: Actor, least: str, doing: str) -> Actor:
    raise NotAllowed(
        f"{actor.name or 'This account'} is {with_article(actor.role)}: only {with_article(least)} or "
        f"above can {doing}."
    )


# the least role that opens each page of the app (the key: the page's file name in pages/, its address);
# app.py lists only the pages the actor may open and refuses the others when opened by their address
PAGE_ROLES: dict[str, str] = {
    "home": "viewer",
    "pairs": "viewer",
    "import_pairs": "organiser",
    "export": "organiser",
    "scoring": "organiser",
    "campaigns": "organiser",
    "review": "reviewer",
    "live_campaign": "organiser",
    "agreement": "viewer",
    "thresholds": "viewer",
    "distributions": "viewer",
    "disagreements": "viewer",
    "scorecard": "viewer",
    "correlation": "viewer",
    "preferences": "viewer",
    "accounts": "owner",
    "api_access": "viewer",
}


def can_open(actor: Actor, page: str) -> bool:
    """Whether ``actor`` may open the page ``page`` (a key of PAGE_ROLES; an unknown page: owners only)."""
    return rank(actor.role) >= rank(PAGE_ROLES.get(page, "owner"))
