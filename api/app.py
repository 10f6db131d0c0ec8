"""The API's application: its routes (api.routes, api.hooks) under /api/v1, and every error as JSON.

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
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import PREFIX, hooks
from api import routes as api_routes
from api.base import MAX_BODY, REFUSALS, ApiError


def routes() -> list:
    """The API as one route for st.App (server.py): everything under PREFIX."""
    from starlette.routing import Mount

    return [Mount(PREFIX, app=create_app())]


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
    app = FastAPI(
        title="PLUIE Lab API",
        version="1",
        openapi_url="/openapi.json",
        docs_url=None,
        redoc_url=None,
        description="Datasets, pairs, score runs, campaigns, labels and publishing, for scripts and "
        "pipelines. Every request sends `Authorization: Bearer <token>`.",
    )

    @app.exception_handler(ApiError)
    async def _api_error(request, exc: ApiError):
        return _error(exc.status, exc.message, exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request, exc: RequestValidationError):
        return _error(400, _validation_sentence(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request, exc: StarletteHTTPException):
        message = {
            404: "There is no such address in the API (see /api/v1/openapi.json).",
            405: "This address does not take this method (see /api/v1/openapi.json).",
        }.get(exc.status_code, str(exc.detail))
        if exc.status_code == 400 and message == "There was an error parsing the body":  # FastAPI's, e.g. JSON
            # nested past Python's recursion limit
            message = (
                "The body could not be read as JSON (nested too deep, or not JSON): send one object with "
                "the fields the route documents (see /api/v1/openapi.json)."
            )
        return _error(exc.status_code, message)

    @app.middleware("http")
    async def _bounded(request: Request, call_next):
        """A body past the import's bound is refused from its header, before a byte of it is read."""
        size = request.headers.get("content-length", "")
        if size.isdigit() and int(size) > MAX_BODY:
            return _error(
                413,
                f"The request is {int(size) / 1e6:.1f} MB; the API takes at most {MAX_BODY / 1e6:.0f} MB "
                "at once: send the pairs in parts (append: true).",
            )
        return await call_next(request)

    for kind, status in REFUSALS.items():
        app.add_exception_handler(kind, functools.partial(_refusal, status))

    @app.exception_handler(Exception)
    async def _failed(request, exc: Exception):  # after the response, Starlette logs the exception itself
        return _error(500, "Something went wrong on the server; its log has the details.")

    app.include_router(api_routes.router)
    app.include_router(hooks.router)
    return app
