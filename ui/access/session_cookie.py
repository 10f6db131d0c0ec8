"""The sign-in cookie, set by the server so that the page's scripts cannot read it.

Streamlit gives a page no way to set a cookie, and a cookie written by the page's JavaScript can be read
by any script on the page. So server.py serves two routes beside the app (routes()): after a sign-in the
session makes a one-time grant for its token (hand_over: random, good for 60 seconds and for one use,
kept in this process's memory) and sends the browser to /_pluie/session?grant=..., which sets the cookie
(lab.auth.ADMIN_COOKIE: HttpOnly, SameSite=Strict, Path=/, for the token's remaining life; Secure
under HTTPS) and sends it back to the page it was on. A log-out does the same through /_pluie/logout,
which clears the cookie. The browser sends the cookie with every new session's websocket handshake, where
cookie_token reads it. A grant the server did not make, or made too long ago, or already used, sets nothing.

A grant is good only in the browser that signed in (issue 56, item 2: a person who stopped their own
redirect could otherwise hand the link to someone else, who would be signed in as them). Every page the
server sends to a browser without one sets a random cookie of its own (BROWSER_COOKIE, by BrowserNonce,
the middleware server.py installs), which the browser sends with the session's websocket handshake; the
grant remembers it (browser_nonce), and the route sets the sign-in cookie only for a request that carries
the same one. Another browser has another nonce, or none. And a browser already signed in as one account
is never switched to another by the route: the sign-in cookie it has is kept, and the page it goes back to
says so (KEPT_PARAM).

Without server.py (plain `streamlit run app.py`, AppTest) there are no routes (routes_installed is False):
ui.access.signin then keeps the sign-in for the tab only.
"""

from __future__ import annotations

import hmac
import json
import secrets
import threading
import time
from typing import Optional
from urllib.parse import quote

from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from lab import auth

SESSION_PATH = "/_pluie/session"
LOGOUT_PATH = "/_pluie/logout"
BROWSER_COOKIE = "pluie_browser"  # this browser's random nonce, set by the server before any sign-in
KEPT_PARAM = "pluie_signin"  # ?pluie_signin=kept: the route kept the browser's sign-in as another account
GRANT_SECONDS = 60.0
MOST_GRANTS = 10_000  # outstanding grants kept at once: the oldest go first (each one is a signed-in person's)

_lock = threading.Lock()
# grant -> (valid until, on this process's clock; token, None: log out; the browser's nonce)
_grants: dict[str, tuple[float, Optional[str], str]] = {}
_installed = False


def routes() -> list[Route]:
    """The cookie's routes, for st.App (server.py). Building them tells the pages that they are served."""
    global _installed
    _installed = True
    return [Route(SESSION_PATH, _set_cookie, methods=["GET"]), Route(LOGOUT_PATH, _clear_cookie, methods=["GET"])]


def middleware() -> list[Middleware]:
    """The middleware that gives each browser its nonce (BrowserNonce), for st.App (server.py)."""
    return [Middleware(BrowserNonce)]


class BrowserNonce:
    """ASGI middleware: a page (an HTML response) sent to a browser that has no BROWSER_COOKIE sets one,
    random, HttpOnly, SameSite=Lax (a link from elsewhere still carries it), for the browser's session."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or HTTPConnection(scope).cookies.get(BROWSER_COOKIE):
            await self.app(scope, receive, send)
            return

        async def send_with_nonce(message):
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                if headers.get("content-type", "").startswith("text/html"):
                    cookie = Response()
                    cookie.set_cookie(
                        BROWSER_COOKIE,
                        secrets.token_urlsafe(24),
                        path="/",
                        secure=_secure(Request(scope)),
                        httponly=True,
                        samesite="lax",
                    )
                    headers.append("set-cookie", cookie.headers["set-cookie"])
            await send(message)

        await self.app(scope, receive, send_with_nonce)


def routes_installed() -> bool:
    """True when this server process serves the routes (started from server.py, as `make run` does)."""
    return _installed


def cookie_token() -> Optional[str]:
    """The session token in the cookie the browser sent when this Streamlit session began, if any."""
    import streamlit as st

    value = st.context.cookies.get(auth.ADMIN_COOKIE)
    return value if isinstance(value, str) and value else None


def browser_nonce() -> Optional[str]:
    """The nonce (BROWSER_COOKIE) the browser sent when this Streamlit session began, if any."""
    import streamlit as st

    value = st.context.cookies.get(BROWSER_COOKIE)
    return value if isinstance(value, str) and value else None


def hand_over(token: str, browser: Optional[str]) -> bool:
    """After a sign-in in this session: send the browser to the route that sets its cookie to ``token``,
    and back to the page it is on. ``browser``: the nonce this session's browser carries (browser_nonce);
    without one no route would accept the grant, so nothing is sent (False): the sign-in lasts this tab."""
    if not browser:
        return False
    _navigate(f"{SESSION_PATH}?grant={_grant(token, browser)}&next=", current_page=True)
    return True


def hand_back(browser: Optional[str]) -> bool:
    """After a log-out in this session: send the browser to the route that clears its cookie (the token
    is refused already: a browser without a nonce keeps a dead cookie, and nothing is sent)."""
    if not browser:
        return False
    _navigate(f"{LOGOUT_PATH}?grant={_grant(None, browser)}")
    return True


def _grant(token: Optional[str], browser: str) -> str:
    grant = secrets.token_urlsafe(24)
    now = time.monotonic()
    with _lock:
        for old in [key for key, (until, _, _) in _grants.items() if until <= now]:
            del _grants[old]
        while len(_grants) >= MOST_GRANTS:
            del _grants[next(iter(_grants))]
        _grants[grant] = (now + GRANT_SECONDS, token, browser)
    return grant


def _redeem(request: Request, logging_out: bool) -> tuple[bool, Optional[str]]:
    """(valid, token) for the request's grant, which is used up: valid when this process made it, less
    than a minute ago, for this route (a token to set, or None to log out), and the request comes from
    the browser whose session made it (its BROWSER_COOKIE)."""
    grant = request.query_params.get("grant")
    with _lock:
        found = _grants.pop(grant, None) if grant else None
    if found is None or found[0] <= time.monotonic() or (found[1] is None) != logging_out:
        return False, None
    sent = request.cookies.get(BROWSER_COOKIE) or ""
    if not hmac.compare_digest(sent.encode(), found[2].encode()):
        return False, None
    return True, found[1]


def _navigate(address: str, current_page: bool = False) -> None:
    """Send this session's browser to ``address`` (a path of this site), followed by the page it is on
    (percent-encoded) when ``current_page``."""
    from ui.base.page import page_script

    tail = " + encodeURIComponent(location.pathname + location.search)" if current_page else ""
    page_script(f"window.location.replace({json.dumps(address)}{tail});", "pluie-session-cookie")


def _next_page(asked: Optional[str]) -> str:
    """Where to go after the cookie is set: a path of this site ("/..." but not "//..." nor "/\\..."), else "/"."""
    if (
        not asked
        or not asked.startswith("/")
        or asked.startswith("//")
        or "\\" in asked
        or len(asked) > 2000
        or any(ord(c) < 33 or ord(c) == 127 for c in asked)
    ):
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


def _kept(address: str) -> str:
    """``address`` (a path of this site) with KEPT_PARAM added to its query."""
    path, hash_mark, fragment = address.partition("#")
    return f"{path}{'&' if '?' in path else '?'}{KEPT_PARAM}=kept{hash_mark}{fragment}"


def _set_cookie(request: Request) -> RedirectResponse:
    # a plain function: Starlette runs it on a worker thread, since checking a token may read the store
    valid, token = _redeem(request, logging_out=False)
    end = auth.admin_session_expiry(token) if valid else None
    if end is None:  # a grant not made here, used, stale, another browser's; or a token ended since
        return RedirectResponse("/", status_code=303)
    next_page = _next_page(request.query_params.get("next"))
    held = request.cookies.get(auth.ADMIN_COOKIE)
    if (
        held
        and held != token
        and auth.session_account(held) != auth.session_account(token)
        and auth.admin_session_expiry(held) is not None
    ):
        # signed in as another account on this browser (another tab): never switched silently
        auth.end_admin_session(token)  # the sign-in not used ends here
        return RedirectResponse(_kept(next_page), status_code=303)
    response = RedirectResponse(next_page, status_code=303)
    response.set_cookie(
        auth.ADMIN_COOKIE,
        token,
        max_age=max(1, int(end - time.time())),
        path="/",
        secure=_secure(request),
        httponly=True,
        samesite="strict",
    )
    return response


def _clear_cookie(request: Request) -> RedirectResponse:
    valid, _ = _redeem(request, logging_out=True)
    response = RedirectResponse("/", status_code=303)
    if valid:
        response.delete_cookie(auth.ADMIN_COOKIE, path="/", secure=_secure(request), httponly=True, samesite="strict")
    return response
