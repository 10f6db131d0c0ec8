"""The API's ground floor, which the routes build on: the store it opens, who a request acts for (its token),
the request body's base and the errors each refusal answers with (api.app turns them into JSON).

Every error is ``{"error": "<one sentence>"}`` with its status: 400 a request the store refuses (the same
sentence the page shows), 401 no or a bad token, 403 a role that may not, 404 nothing there, 409 a stale
revision, 413 too large, 429 too many wrong tokens from this address, 503 the store unreachable. A write is
one transaction of the store: an error leaves nothing half-written.
"""

from __future__ import annotations

import functools
from typing import Optional

from fastapi import Request
from pydantic import BaseModel, ConfigDict

from db import access, init_db
from db.api_tokens import token_account
from db.campaigns import StaleFormError
from db.engine import StoreUnavailable, database_url
from db.review import StaleReviewError
from lab.auth import LOGIN_GUARD, client_address, try_password
from lab.roles import Actor, NotAllowed
from pluie_core.io import MAX_BYTES

MAX_BODY = MAX_BYTES + (1 << 20)  # a pair file's bound (pluie_core.io.MAX_BYTES), and a form's fields around it
THROTTLE_ACCOUNT = "API token"  # the account name the login guard counts wrong tokens under
NO_TOKEN = (
    "Send a personal token: Authorization: Bearer <token> (make one in “Your tokens” on the Preferences "
    "page, on the Accounts page, or with python -m db accounts token NAME)."
)
BAD_TOKEN = "This token is not valid: it is unknown or revoked, or its account is disabled"


class Body(BaseModel):
    """What every route's JSON body derives from: an unknown field is a 400 naming it, never silently dropped."""

    model_config = ConfigDict(extra="forbid")


class ApiError(Exception):
    """An answer other than 2xx: ``status`` and the sentence to send."""

    def __init__(self, status: int, message: str, headers: Optional[dict] = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


# the store's refusals and the status each answers with (a class's nearest entry by inheritance wins): every
# refusal of the store and the library is a ValueError with its sentence (ImportRejected, PairFileError,
# RunError, CampaignError, PublishError, PairSearchError, TokenError...)
REFUSALS: dict[type, int] = {
    NotAllowed: 403,
    StaleFormError: 409,
    StaleReviewError: 409,
    StoreUnavailable: 503,
    ValueError: 400,
}


@functools.lru_cache(maxsize=4)
def _engine_for(url: str):
    return init_db(url)


def engine():
    """The store this server uses (PLUIE_DB_URL / pluie_lab.toml / the embedded default), migrated once."""
    return _engine_for(database_url())


def authenticate(request: Request) -> Actor:
    """The account a request acts for, from its bearer token; wrong tokens are counted per address as wrong
    passwords are (lab.auth.try_password), so guessing tokens is as slow as guessing passwords."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise ApiError(401, NO_TOKEN, {"WWW-Authenticate": "Bearer"})
    peer = request.client.host if request.client else None
    client = client_address(peer, request.headers.get("x-forwarded-for"))
    found: list = []

    def check() -> bool:
        found.append(token_account(engine(), token))
        return found[-1] is not None

    sentence = try_password(check, client, THROTTLE_ACCOUNT, LOGIN_GUARD, wrong=BAD_TOKEN)
    if sentence is not None:
        if sentence.startswith("Too many"):
            raise ApiError(429, sentence, {"Retry-After": sentence.rsplit(" ", 2)[-2]})
        raise ApiError(401, sentence, {"WWW-Authenticate": "Bearer"})
    account_id, name, role = found[-1]
    return Actor(name, role, account_id)


def acting(actor: Actor):
    """The block's reads and writes done for ``actor`` (db.access: checked and attributed as that account)."""
    return access.acting_as(actor)
