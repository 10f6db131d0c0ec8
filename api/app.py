"""The API's frame: the store it opens, who a request acts for (its token), and errors as JSON.

Every error is ``{"error": "<one sentence>"}`` with its status: 400 a request the store refuses (the same
sentence the page shows), 401 no or a bad token, 403 a role that may not, 404 nothing there, 409 a stale
revision, 413 too large, 429 too many wrong tokens from this address, 503 the store unreachable. A write is
one transaction of the store: an error leaves nothing half-written.
"""
from __future__ import annotations

import functools
from typing import Optional

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException as StarletteHTTPException

from db import access, init_db
from db.api_tokens import token_account
from db.campaigns import StaleFormError
from db.review import StaleReviewError
from db.engine import StoreUnavailable, database_url
from lab.auth import LOGIN_GUARD, client_address, try_password
from pluie_core.io import MAX_BYTES
from lab.roles import Actor, NotAllowed

MAX_BODY = MAX_BYTES + (1 << 20)  # a pair file's bound (pluie_core.io.MAX_BYTES), and a form's fields around it
THROTTLE_ACCOUNT = "API token"  # the account name the login guard counts wrong tokens under
NO_TOKEN = ("Send a personal token: Authorization: Bearer <token> (make one in “Your tokens” on the Preferences "
            "page, on the Accounts page, or with python -m db accounts token NAME).")
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
REFUSALS: dict[type, int] = {NotAllowed: 403, StaleFormError: 409, StaleReviewError: 409, StoreUnavailable: 503,
                             ValueError: 400}


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


def _error(status: int, message: str, headers: Optional[dict] = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def _validation_sentence(exc: RequestValidationError) -> str:
    """The first thing wrong with a request's fields, as a sentence: “quota: Input should be a valid integer.”"""
    first = exc.errors()[0] if exc.errors() else {}
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("body", "query", "path"))
    message = str(first.get("msg", "the request is not valid")).rstrip(".")
    return f"{where}: {message}." if where else f"{message[:1].upper()}{message[1:]}."


async def _refusal(status: int, request, exc: Exception) -> JSONResponse:
    return _error(status, str(exc))


def create_app() -> FastAPI:
    from api import hooks, routes

    app = FastAPI(title="PLUIE Lab API", version="1", openapi_url="/openapi.json", docs_url=None, redoc_url=None,
                  description="Datasets, pairs, score runs, campaigns, labels and publishing, for scripts and "
                              "pipelines. Every request sends `Authorization: Bearer <token>`.")

    @app.exception_handler(ApiError)
    async def _api_error(request, exc: ApiError):
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc: RequestValidationError):
        return _error(400, _validation_sentence(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request, exc: StarletteHTTPException):
        message = {404: "There is no such address in the API (see /api/v1/openapi.json).",
                   405: "This address does not take this method (see /api/v1/openapi.json)."}.get(
            exc.status_code, str(exc.detail))
        if exc.status_code == 400 and message == "There was an error parsing the body":  # FastAPI's, e.g. JSON
            # nested past Python's recursion limit
            message = ("The body could not be read as JSON (nested too deep, or not JSON): send one object with "
                       "the fields the route documents (see /api/v1/openapi.json).")
        return _error(exc.status_code, message)

    @app.middleware("http")
    async def _bounded(request: Request, call_next):
        """A body past the import's bound is refused from its header, before a byte of it is read."""
        size = request.headers.get("content-length", "")
        if size.isdigit() and int(size) > MAX_BODY:
            return _error(413, f"The request is {int(size) / 1e6:.1f} MB; the API takes at most {MAX_BODY / 1e6:.0f} MB "
                               "at once: send the pairs in parts (append: true).")
        return await call_next(request)

    for kind, status in REFUSALS.items():
        app.add_exception_handler(kind, functools.partial(_refusal, status))

    @app.exception_handler(Exception)
    async def _failed(request, exc: Exception):  # after the response, Starlette logs the exception itself
        return _error(500, "Something went wrong on the server; its log has the details.")

    app.include_router(routes.router)
    app.include_router(hooks.router)
    return app


def acting(actor: Actor):
    """The block's reads and writes done for ``actor`` (db.access: checked and attributed as that account)."""
    return access.acting_as(actor)
