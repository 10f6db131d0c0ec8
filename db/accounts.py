"""People who sign in: accounts, their roles, passwords and invitations (lab.roles).

An owner adds a person with a role (add_account), then gives them an invitation link (invite: a token
shown once, only its sha256 stored, like an annotator's personal link) where they set their password
(accept_invitation), or adds them with a password from the command line. A person may also sign in with
the team's identity provider (OpenID Connect): the provider's e-mail is matched to an account's
(account_by_email). Every change to an account needs an owner (db.access.require("own")), except the
first account of a store, which whoever holds the store creates (the command line, or the first start
from the configured admin password: ensure_owner_from_admin_password). The last active owner cannot be
demoted or disabled, so a team never locks itself out.

Sessions: raising ``session_epoch`` ends every session of the account (set_password, set_role,
disable_account, end_sessions); ui.access.signin signs its session tokens with the epoch and the password hash.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import os
import unicodedata
from dataclasses import dataclass
from typing import Optional

import bcrypt
from sqlalchemy import Engine, func, select
from sqlalchemy.exc import IntegrityError

from db import access
from db.engine import read_session, write_session
from db.limits import check_length, clean_name
from db.models import Account, utcnow
from lab.auth import bcrypt_hash, bcrypt_input, configured_hash, hash_token, new_token
from lab.lookalike import name_key
from lab.roles import Actor, check_role

__all__ = [
    "AccountError",
    "AccountInfo",
    "MIN_PASSWORD",
    "INVITE_HOURS",
    "accounts_in_force",
    "list_accounts",
    "account",
    "account_by_name",
    "account_by_email",
    "add_account",
    "invite",
    "invitation_account",
    "accept_invitation",
    "set_password",
    "set_role",
    "disable_account",
    "enable_account",
    "end_sessions",
    "check_password",
    "password_matches",
    "ensure_owner_from_admin_password",
    "actor_for",
    "OWNER_FROM_ADMIN",
    "password_fingerprint",
]

MIN_PASSWORD = 8  # characters
INVITE_HOURS = 72.0  # how long an invitation link works
OWNER_FROM_ADMIN = "admin"  # the account the configured admin password becomes


class AccountError(ValueError):
    """An account change that cannot be made; the message says why, in a sentence."""


@dataclass(frozen=True)
class AccountInfo:
    id: int
    name: str
    email: Optional[str]
    role: str
    has_password: bool
    invite_expires_at: Optional[dt.datetime]  # an invitation waits (None: none)
    session_epoch: int
    created_at: dt.datetime
    created_by: str
    disabled_at: Optional[dt.datetime]

    @property
    def active(self) -> bool:
        return self.disabled_at is None


def _info(row: Account) -> AccountInfo:
    return AccountInfo(
        id=row.id,
        name=row.name,
        email=row.email,
        role=row.role,
        has_password=row.password_hash is not None,
        invite_expires_at=row.invite_expires_at if row.invite_hash else None,
        session_epoch=row.session_epoch,
        created_at=row.created_at,
        created_by=row.created_by,
        disabled_at=row.disabled_at,
    )


def actor_for(info: AccountInfo) -> Actor:
    return Actor(info.name, info.role, info.id)


def _clean_email(email: Optional[str]) -> Optional[str]:
    text = str(email or "").strip().lower()
    if not text:
        return None
    check_length("The e-mail", text, AccountError, 320)
    if (
        "@" not in text
        or text.startswith("@")
        or text.endswith("@")
        or any(c.isspace() or unicodedata.category(c) == "Cc" for c in text)
    ):
        raise AccountError(f"{text!r} is not an e-mail address.")
    return text


def _role(role: str) -> str:
    try:
        return check_role(role)
    except ValueError as exc:
        raise AccountError(str(exc)) from None


def _hash_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD:
        raise AccountError(f"A password needs at least {MIN_PASSWORD} characters.")
    check_length("The password", password, AccountError, 1000)
    return bcrypt_hash(password)


def accounts_in_force(engine: Engine) -> bool:
    """True once the store has an active account: sign-in is then needed on every organiser page."""
    with read_session(engine) as session:
        return session.scalar(select(func.count()).select_from(Account).where(Account.disabled_at.is_(None))) > 0


def list_accounts(engine: Engine) -> list[AccountInfo]:
    with read_session(engine) as session:
        return [_info(row) for row in session.scalars(select(Account).order_by(Account.name))]


def account(engine: Engine, account_id: int) -> Optional[AccountInfo]:
    with read_session(engine) as session:
        row = session.get(Account, account_id)
        return _info(row) if row is not None else None


def _reads_the_same(session, name: str) -> list[Account]:
    """The accounts whose name reads as ``name`` does (lab.lookalike.name_key: letter case, spacing and
    look-alike letters of any script aside), in the order they were made. Compared here rather than by a
    column: a store may hold two such accounts from before names were folded, and both keep working."""
    key = name_key(name)
    rows = session.scalars(select(Account).order_by(Account.id))
    return [row for row in rows if name_key(row.name) == key]


def account_by_name(engine: Engine, name: str) -> Optional[AccountInfo]:
    """The account named ``name``: its exact name first, else the one account whose name reads the same
    ("Sam" and a Cyrillic "ѕam" find "sam"); None when there is none, or several read the same and none is
    the name exactly (from before names were folded: each signs in by its own name)."""
    try:
        name = clean_name("The account name", name, AccountError)
    except AccountError:
        return None
    with read_session(engine) as session:
        row = session.scalar(select(Account).where(Account.name == name))
        if row is None:
            same = _reads_the_same(session, name)
            row = same[0] if len(same) == 1 else None
        return _info(row) if row is not None else None


def account_by_email(engine: Engine, email: str) -> Optional[AccountInfo]:
    try:
        email = _clean_email(email)
    except AccountError:
        return None
    if email is None:
        return None
    with read_session(engine) as session:
        row = session.scalar(select(Account).where(Account.email == email))
        return _info(row) if row is not None else None


def _require_owner_unless_first(session) -> None:
    if session.scalar(select(func.count()).select_from(Account)) > 0:
        access.require("own")


def add_account(
    engine: Engine, name: str, role: str, *, email: Optional[str] = None, password: Optional[str] = None
) -> AccountInfo:
    """A new account (an owner's act, except a store's first account). Without a password the person
    signs in through an invitation link (invite) or the identity provider (``email``)."""
    name = clean_name("The account name", name, AccountError)
    role = _role(role)
    email = _clean_email(email)
    password_hash = _hash_password(password) if password is not None else None
    try:
        with write_session(engine) as session:
            _require_owner_unless_first(session)
            same = _reads_the_same(session, name)
            if any(row.name == name for row in same):
                raise AccountError("An account with this name exists already.")
            if same:
                raise AccountError(
                    f"An account named “{same[0].name}” exists already, and “{name}” reads the same "
                    "(letter case and look-alike letters aside): choose another name."
                )
            row = Account(
                name=name,
                role=role,
                email=email,
                password_hash=password_hash,
                created_at=utcnow(),
                created_by=access.actor_name(),
            )
            session.add(row)
            session.flush()
            access.record(session, "account added", "account", row.id, f"{name} added as {role}")
            return _info(row)
    except IntegrityError:
        taken = "name" if account_by_name(engine, name) else "e-mail"
        raise AccountError(f"An account with this {taken} exists already.") from None


def _row(session, account_id: int) -> Account:
    row = session.get(Account, account_id)
    if row is None:
        raise AccountError(f"There is no account {account_id}.")
    return row


def invite(engine: Engine, account_id: int, hours: float = INVITE_HOURS) -> str:
    """A new invitation link's token for the account (shown once; only its sha256 is kept; a new one
    replaces the last). The person opens ?invite=<token> and sets their password."""
    token = new_token()
    with write_session(engine) as session:
        access.require("own")
        row = _row(session, account_id)
        if row.disabled_at is not None:
            raise AccountError(f"{row.name} is disabled: enable the account first.")
        row.invite_hash = hash_token(token)
        row.invite_expires_at = utcnow() + dt.timedelta(hours=hours)
        access.record(session, "invitation made", "account", row.id, f"an invitation link for {row.name}")
    return token


def invitation_account(engine: Engine, token: str) -> Optional[AccountInfo]:
    """The account an invitation token is for, None when it is unknown, used or expired."""
    if not token:
        return None
    with read_session(engine) as session:
        row = session.scalar(select(Account).where(Account.invite_hash == hash_token(token)))
        if (
            row is None
            or row.disabled_at is not None
            or row.invite_expires_at is None
            or row.invite_expires_at < utcnow()
        ):
            return None
        return _info(row)


def accept_invitation(engine: Engine, token: str, password: str) -> AccountInfo:
    """Set the password of the invitation's account; the link stops working."""
    password_hash = _hash_password(password)
    with write_session(engine) as session:
        row = session.scalar(select(Account).where(Account.invite_hash == hash_token(token or "")))
        if (
            row is None
            or row.disabled_at is not None
            or row.invite_expires_at is None
            or row.invite_expires_at < utcnow()
        ):
            raise AccountError("This invitation link is not valid any more: ask an owner for a new one.")
        row.password_hash = password_hash
        row.invite_hash = None
        row.invite_expires_at = None
        row.session_epoch += 1
        with access.acting_as(actor_for(_info(row))):  # whoever opened the link is the account itself
            access.record(session, "password set", "account", row.id, f"{row.name} set a password from an invitation")
        return _info(row)


def set_password(engine: Engine, account_id: int, password: str) -> AccountInfo:
    """A new password (the account itself or an owner); every session of the account ends."""
    password_hash = _hash_password(password)
    with write_session(engine) as session:
        actor = access.current_actor()
        if actor.account_id != account_id:
            access.require("own")
        row = _row(session, account_id)
        row.password_hash = password_hash
        row.session_epoch += 1
        access.record(session, "password changed", "account", row.id, f"the password of {row.name} changed")
        return _info(row)


def _other_active_owners(session, account_id: int) -> int:
    return session.scalar(
        select(func.count())
        .select_from(Account)
        .where(Account.role == "owner", Account.disabled_at.is_(None), Account.id != account_id)
    )


def set_role(engine: Engine, account_id: int, role: str) -> AccountInfo:
    role = _role(role)
    with write_session(engine) as session:
        access.require("own")
        row = _row(session, account_id)
        if row.role == "owner" and role != "owner" and not _other_active_owners(session, account_id):
            raise AccountError(f"{row.name} is the only owner: make someone else an owner first.")
        before, row.role = row.role, role
        row.session_epoch += 1
        access.record(session, "role changed", "account", row.id, f"{row.name}: {before} → {role}")
        return _info(row)


def disable_account(engine: Engine, account_id: int) -> AccountInfo:
    """The account cannot sign in any more (its sessions end); what it did keeps its name."""
    with write_session(engine) as session:
        access.require("own")
        row = _row(session, account_id)
        if row.role == "owner" and not _other_active_owners(session, account_id):
            raise AccountError(f"{row.name} is the only owner: make someone else an owner first.")
        row.disabled_at = utcnow()
        row.session_epoch += 1
        access.record(session, "account disabled", "account", row.id, f"{row.name} disabled")
        return _info(row)


def enable_account(engine: Engine, account_id: int) -> AccountInfo:
    with write_session(engine) as session:
        access.require("own")
        row = _row(session, account_id)
        row.disabled_at = None
        access.record(session, "account enabled", "account", row.id, f"{row.name} enabled")
        return _info(row)


def end_sessions(engine: Engine, account_id: int) -> None:
    """End every session of the account, on every browser (the account itself or an owner)."""
    with write_session(engine) as session:
        if access.current_actor().account_id != account_id:
            access.require("own")
        row = _row(session, account_id)
        row.session_epoch += 1
        access.record(session, "sessions ended", "account", row.id, f"every session of {row.name} ended")


@functools.cache
def _no_such() -> str:
    """A hash to check an unknown name's password against: made once, at the first check (0.3 s of bcrypt
    that every process importing the store paid at start before)."""
    return bcrypt_hash("no such account")


def check_password(engine: Engine, name: str, password: str) -> Optional[AccountInfo]:
    """The active account ``name`` when ``password`` is its password, else None (an unknown name costs
    the same bcrypt check, so timing does not tell which names exist)."""
    found = password_matches(engine, name, password)
    return found if found is not None and found.active else None


def password_matches(engine: Engine, name: str, password: str) -> Optional[AccountInfo]:
    """The account ``name``, active or disabled, when ``password`` is its password, else None (so only who
    knows the password learns that an account is disabled; the same bcrypt check for an unknown name)."""
    found = account_by_name(engine, name)
    stored = None
    with read_session(engine) as session:
        if found is not None:
            stored = session.get(Account, found.id).password_hash
    try:
        matches = bcrypt.checkpw(bcrypt_input(password or ""), (stored or _no_such()).encode("ascii"))
    except ValueError:  # a malformed stored hash matches nothing
        matches = False
    if not matches or stored is None or found is None:
        return None
    return found


def _configured_admin_hash() -> Optional[str]:
    plain = os.environ.get("PLUIE_ADMIN_PASSWORD")
    if plain:
        return bcrypt_hash(plain)
    return configured_hash()


def ensure_owner_from_admin_password(engine: Engine) -> Optional[AccountInfo]:
    """A store from before accounts, with an admin password configured: on its first start that password
    becomes the owner account "admin" (the same password signs in, name "admin"). Nothing when the store
    has accounts already or no password is configured. Returns the account made, if any."""
    configured = _configured_admin_hash()
    if configured is None:
        return None
    try:
        with write_session(engine) as session:
            if session.scalar(select(func.count()).select_from(Account)) > 0:
                return None
            row = Account(
                name=OWNER_FROM_ADMIN,
                role="owner",
                password_hash=configured,
                created_at=utcnow(),
                created_by="the configured admin password",
            )
            session.add(row)
            session.flush()
            access.record(
                session,
                "account added",
                "account",
                row.id,
                f"{OWNER_FROM_ADMIN} added as owner, from the configured admin password",
            )
            return _info(row)
    except IntegrityError:  # two servers started at once on one store: the other made it
        return None


def password_fingerprint(engine: Engine, account_id: int) -> Optional[str]:
    """What a session token of the account is signed with beside the server's secret: its epoch and
    password hash, so a changed password, role or a logout everywhere ends every token at once. None: no
    such active account."""
    with read_session(engine) as session:
        row = session.get(Account, account_id)
        if row is None or row.disabled_at is not None:
            return None
        return hashlib.sha256(
            f"{row.session_epoch}:{row.role}:{row.password_hash or ''}:{row.email or ''}".encode()
        ).hexdigest()
