"""Personal tokens for the HTTP API (api/): made, listed, revoked, and looked up by a request.

A token is shown once, when it is made; the store keeps its sha256 (lab.auth.hash_token, as invitation
links) and its first characters, so a list can tell tokens apart without holding them. A request with a
token acts as the token's account with the account's role *at the time of the request*: a changed role
changes what the token may do, a disabled account's tokens stop working, and a revoked token stops at once.

Anyone signed in makes and revokes their own tokens; an owner also makes, lists and revokes anyone's
(the Accounts page, ``python -m db accounts token NAME``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sqlalchemy import select
from sqlalchemy.engine import Engine

from db import access
from db.engine import read_session, write_session
from db.limits import clean_name
from db.models import Account, ApiToken, utcnow
from lab.auth import hash_token

TOKEN_PREFIX = "pluie_"  # every token starts so: a secret scanner (or a person) can tell what it is
SHOWN_CHARACTERS = 10  # of the token, kept to tell tokens apart in a list
MOST_TOKENS = 20  # live tokens per account


class TokenError(ValueError):
    """A token that cannot be made or revoked as asked; the message is the sentence to show."""


@dataclass(frozen=True)
class TokenInfo:
    id: int
    account_id: int
    account: str
    name: str
    prefix: str
    created_at: object
    last_used_at: object
    revoked_at: object

    @property
    def live(self) -> bool:
        return self.revoked_at is None


def new_api_token() -> str:
    import secrets

    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def _may_manage(account_id: int) -> None:
    """Anyone signed in manages their own tokens; an owner anyone's."""
    actor = access.current_actor()
    if actor.account_id != account_id:
        access.require("own")


def _info(row: ApiToken, account: str) -> TokenInfo:
    return TokenInfo(
        row.id, row.account_id, account, row.name, row.prefix, row.created_at, row.last_used_at, row.revoked_at
    )


def create_token(engine: Engine, account_id: int, name: str = "") -> tuple[TokenInfo, str]:
    """A new token for the account: (its info, the token itself, shown once and never stored)."""
    name = clean_name("The token's name", name or "API token", TokenError)
    token = new_api_token()
    with write_session(engine) as session:
        _may_manage(account_id)
        account = session.get(Account, account_id)
        if account is None:
            raise TokenError(f"There is no account {account_id}.")
        if account.disabled_at is not None:
            raise TokenError(f"{account.name} is disabled: enable the account first.")
        live = session.scalars(
            select(ApiToken.id).where(ApiToken.account_id == account_id, ApiToken.revoked_at.is_(None))
        ).all()
        if len(live) >= MOST_TOKENS:
            raise TokenError(f"{account.name} has {MOST_TOKENS} live tokens already: revoke one first.")
        row = ApiToken(
            account_id=account_id,
            name=name,
            token_hash=hash_token(token),
            prefix=token[:SHOWN_CHARACTERS],
            created_at=utcnow(),
        )
        session.add(row)
        session.flush()
        access.record(session, "token made", "account", account_id, f"an API token {name!r} for {account.name}")
        return _info(row, account.name), token


def list_tokens(engine: Engine, account_id: Optional[int] = None) -> list[TokenInfo]:
    """The account's tokens (every account's for an owner when ``account_id`` is None), newest first."""
    if account_id is None:
        access.require("own")
    else:
        _may_manage(account_id)
    query = select(ApiToken, Account.name).join(Account, Account.id == ApiToken.account_id)
    if account_id is not None:
        query = query.where(ApiToken.account_id == account_id)
    with read_session(engine) as session:
        return [_info(row, name) for row, name in session.execute(query.order_by(ApiToken.id.desc())).all()]


def revoke_token(engine: Engine, token_id: int) -> TokenInfo:
    """End a token at once (its owner, or an owner); revoking a revoked token changes nothing."""
    with write_session(engine) as session:
        row = session.get(ApiToken, int(token_id))
        if row is None:
            raise TokenError(f"There is no token {token_id}.")
        _may_manage(row.account_id)
        account = session.get(Account, row.account_id)
        if row.revoked_at is None:
            row.revoked_at = utcnow()
            access.record(
                session, "token revoked", "account", row.account_id, f"the API token {row.name!r} of {account.name}"
            )
        return _info(row, account.name)


def token_account(engine: Engine, token: Optional[str]) -> Optional[tuple[int, str, str]]:
    """(account id, name, role) of a live token's account, enabled; None for anything else. Records the use
    (last_used_at, at most once a minute, so reads stay reads)."""
    if not token or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    with read_session(engine) as session:
        found = session.execute(
            select(ApiToken.id, ApiToken.last_used_at, Account.id, Account.name, Account.role)
            .join(Account, Account.id == ApiToken.account_id)
            .where(
                ApiToken.token_hash == hash_token(token), ApiToken.revoked_at.is_(None), Account.disabled_at.is_(None)
            )
        ).first()
    if found is None:
        return None
    token_id, last_used, account_id, name, role = found
    now = utcnow()
    if last_used is None or (now - last_used).total_seconds() > 60:
        try:
            with write_session(engine) as session:
                session.get(ApiToken, token_id).last_used_at = now
        except Exception:  # a busy store must not refuse a read for a bookkeeping write
            pass
    return int(account_id), str(name), str(role)
