"""The sign-in cookie, set by the server so that the page's scripts cannot read it.

Streamlit gives a page no way to set a cookie, and a cookie written by the page's JavaScript can be read
by any script on the page. So server.py serves two routes beside the app (routes()): after a sign-in the
session makes a one-time grant for its token (hand_over: random, good for 60 seconds and for one use,
kept in this process's memory) and sends the browser to /_pluie/session?grant=..., which sets the cookie
(pluie_core.auth.ADMIN_COOKIE: HttpOnly, SameSite=Strict, Path=/, for the token's remaining life; Secure
under HTTPS) and sends it back to the page it was on. A log-out does the same through /_pluie/logout,
which clears the cookie. The browser sends the cookie with every new session's websocket handshake, where
cookie_token reads it. A grant the server did not make, or made too long ago, or already used, sets nothing.

Without server.py (plain `streamlit run app.py`, AppTest) there are no routes (routes_installed is False):
pages.signin then keeps the sign-in for the tab only.
"""
from __future__ import annotations

import json
import secrets
import threading
import time
from typing import Optional
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import RedirectResponse
from starlette.routing import Route

from pluie_core import auth

SESSION_PATH = "/_pluie/session"
LOGOUT_PATH = "/_pluie/logout"
GRANT_SECONDS = 60.0
MOST_GRANTS = 10_000  # outstanding grants kept at once: the oldest go first (each one is a signed-in person's)

_lock = threading.Lock()
_grants: dict[str, tuple[float, Optional[str]]] = {}  # grant -> (valid until, on this process's clock; token, None: log out)
_installed = False


def routes() -> list[Route]:
    """The cookie's routes, for st.App (server.py). Building them tells the pages that they are served."""
    global _installed
    _installed = True
    return [Route(SESSION_PATH, _set_cookie, methods=["GET"]), Route(LOGOUT_PATH, _clear_cookie, methods=["GET"])]


def routes_installed() -> bool:
    """True when this server process serves the routes (started from server.py, as `make run` does)."""
    return _installed


def cookie_token() -> Optional[str]:
    """The session token in the cookie the browser sent when this Streamlit session began, if any."""
    import streamlit as st

    value = st.context.cookies.get(auth.ADMIN_COOKIE)
    return value if isinstance(value, str) and value else None


def hand_over(token: str) -> None:
    """After a sign-in in this session: send the browser to the route that sets its cookie to ``token``,
    and back to the page it is on."""
    _navigate(f"{SESSION_PATH}?grant={_grant(token)}&next=", current_page=True)


def hand_back() -> None:
    """After a log-out in this session: send the browser to the route that clears its cookie."""
    _navigate(f"{LOGOUT_PATH}?grant={_grant(None)}")


def _grant(token: Optional[str]) -> str:
    grant = secrets.token_urlsafe(24)
    now = time.monotonic()
    with _lock:
        for old in [key for key, (until, _) in _grants.items() if until <= now]:
            del _grants[old]
        while len(_grants) >= MOST_GRANTS:
            del _grants[next(iter(_grants))]
        _grants[grant] = (now + GRANT_SECONDS, token)
    return grant


def _redeem(grant: Optional[str], logging_out: bool) -> tuple[bool, Optional[str]]:
    """(valid, token) for a grant, which is used up: valid when this process made it, less than a minute
    ago, for this route (a token to set, or None to log out)."""
    with _lock:
        found = _grants.pop(grant, None) if grant else None
    if found is None or found[0] <= time.monotonic() or (found[1] is None) != logging_out:
        return False, None
    return True, found[1]


def _navigate(address: str, current_page: bool = False) -> None:
    """Send this session's browser to ``address`` (a path of this site), followed by the page it is on
    (percent-encoded) when ``current_page``."""
    from pages.shared import page_script

    tail = " + encodeURIComponent(location.pathname + location.search)" if current_page else ""
    page_script(f"window.location.replace({json.dumps(address)}{tail});", "pluie-session-cookie")


def _next_page(asked: Optional[str]) -> str:
    """Where to go after the cookie is set: a path of this site ("/..." but not "//..." nor "/\\..."), else "/"."""
    if (not asked or not asked.startswith("/") or asked.startswith("//") or "\\" in asked or len(asked) > 2000
            or any(ord(c) < 33 or ord(c) == 127 for c in asked)):
        return "/"
    return quote(asked, safe="/?&=%:@!$'()*+,;-._~#")


def _secure(request: Request) -> bool:
    """Whether the browser reached us over HTTPS: the connection's scheme (TLS here, or a proxy on this
    machine that uvicorn believes), or X-Forwarded-Proto from a configured trusted proxy."""
    if request.url.scheme == "https":
        return True
    said = request.headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
    if said != "https" or request.client is None:
        return False
    try:
        return auth.is_trusted_proxy(request.client.host)
    except ValueError:  # a configuration that names no addresses: not trusted
        return False


def _set_cookie(request: Request) -> RedirectResponse:
    # a plain function: Starlette runs it on a worker thread, since checking a token may read the store
    valid, token = _redeem(request.query_params.get("grant"), logging_out=False)
    end = auth.admin_session_expiry(token) if valid else None
    if end is None:  # a grant not made here, used, stale; or a token ended since
        return RedirectResponse("/", status_code=303)
    response = RedirectResponse(_next_page(request.query_params.get("next")), status_code=303)
    response.set_cookie(auth.ADMIN_COOKIE, token, max_age=max(1, int(end - time.time())), path="/",
                        secure=_secure(request), httponly=True, samesite="strict")
    return response


def _clear_cookie(request: Request) -> RedirectResponse:
    valid, _ = _redeem(request.query_params.get("grant"), logging_out=True)
    response = RedirectResponse("/", status_code=303)
    if valid:
        response.delete_cookie(auth.ADMIN_COOKIE, path="/", secure=_secure(request), httponly=True, samesite="strict")
    return response
