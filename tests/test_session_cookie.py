"""The sign-in cookie set by the server (issue 39, item 4): ui.access.session_cookie's routes, served by
server.py, set it HttpOnly and SameSite=Strict, Secure under HTTPS, in exchange for a one-time grant that the
signed-in session made; logging out clears it. The routes are driven here with Starlette's TestClient; the
browser's side (document.cookie cannot read it, reloads and tabs keep it) is test_browser_session_cookie.py."""

from __future__ import annotations

import time

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from lab import auth
from lab.auth import ADMIN_COOKIE


@pytest.fixture
def cookies_module(monkeypatch, tmp_path):
    """ui.access.session_cookie with a server secret of this test's own and the page's navigation recorded
    instead of drawn (hand_over and hand_back run inside a Streamlit page)."""
    for name in ("PLUIE_ADMIN_PASSWORD_HASH", "PLUIE_ADMIN_SESSION_HOURS", "PLUIE_TRUSTED_PROXIES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "correct horse")
    monkeypatch.setenv("PLUIE_SECRET_KEY", "a secret only this test knows")
    from ui.access import session_cookie

    # routes() marks this process as serving them: put that back after the test (AppTests later in this
    # process have no routes), and start from no grants
    monkeypatch.setattr(session_cookie, "_installed", False)
    monkeypatch.setattr(session_cookie, "_grants", {})
    visited: list[str] = []
    monkeypatch.setattr(session_cookie, "_navigate", lambda address, current_page=False: visited.append(address))
    session_cookie.visited = visited
    return session_cookie


NONCE = "the-nonce-of-the-browser-that-signed-in"


def client(
    module, base_url: str = "http://testserver", peer: str = "203.0.113.9", nonce: str | None = NONCE
) -> TestClient:
    """A browser: the one that signed in (its nonce, BROWSER_COOKIE), unless ``nonce`` says otherwise."""
    return TestClient(
        Starlette(routes=module.routes()),
        base_url=base_url,
        follow_redirects=False,
        client=(peer, 50000),
        cookies={module.BROWSER_COOKIE: nonce} if nonce else None,
    )


def grant_of(module, token: str, nonce: str = NONCE) -> str:
    """The grant hand_over put in the address it sends the browser to."""
    assert module.hand_over(token, nonce)
    address = module.visited[-1]
    assert address.startswith("/_pluie/session?grant=")
    return address.split("grant=", 1)[1].split("&", 1)[0]


def set_cookie(response) -> str:
    headers = response.headers.get_list("set-cookie")
    assert len(headers) == 1, headers
    return headers[0]


def test_a_grant_sets_an_httponly_strict_cookie_once(cookies_module):
    token, expires = auth.issue_admin_session()
    grant = grant_of(cookies_module, token)
    http = client(cookies_module)
    response = http.get(f"/_pluie/session?grant={grant}&next=/review?campaign=3")
    assert response.status_code == 303 and response.headers["location"] == "/review?campaign=3"
    header = set_cookie(response)
    parts = [part.strip().lower() for part in header.split(";")]
    assert header.startswith(f"{ADMIN_COOKIE}={token};")
    assert "httponly" in parts and "samesite=strict" in parts and "path=/" in parts
    assert "secure" not in parts  # plain http: a Secure cookie would never come back
    max_age = int(next(part for part in parts if part.startswith("max-age=")).split("=")[1])
    assert expires - time.time() - 5 <= max_age <= expires - time.time() + 1
    assert cookies_module.routes_installed()

    again = http.get(f"/_pluie/session?grant={grant}&next=/review")  # a grant is good once
    assert again.status_code == 303 and again.headers["location"] == "/"
    assert not again.headers.get_list("set-cookie")


def test_https_makes_it_secure_and_a_trusted_proxy_may_say_so(cookies_module, monkeypatch):
    token, _ = auth.issue_admin_session()
    secure = client(cookies_module, "https://testserver").get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}&next=/"
    )
    assert "secure" in [part.strip().lower() for part in set_cookie(secure).split(";")]

    said = {"X-Forwarded-Proto": "https"}
    untrusted = client(cookies_module).get(f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said)
    assert "secure" not in [part.strip().lower() for part in set_cookie(untrusted).split(";")]
    monkeypatch.setenv("PLUIE_TRUSTED_PROXIES", "10.1.2.0/24")
    still = client(cookies_module).get(f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said)
    assert "secure" not in [part.strip().lower() for part in set_cookie(still).split(";")]
    trusted = client(cookies_module, peer="10.1.2.3").get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said
    )
    assert "secure" in [part.strip().lower() for part in set_cookie(trusted).split(";")]
    # a server listening on "::" sees an IPv4 proxy IPv4-mapped: it is the same address (issue 52)
    mapped = client(cookies_module, peer="::ffff:10.1.2.3").get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said
    )
    assert "secure" in [part.strip().lower() for part in set_cookie(mapped).split(";")]


@pytest.mark.parametrize(
    "asked, sent_to",
    [
        ("/pairs", "/pairs"),
        ("https://elsewhere.example/", "/"),
        ("//elsewhere.example/path", "/"),
        ("/\\elsewhere.example", "/"),
        ("javascript:alert(1)", "/"),
        ("/ok\r\nSet-Cookie:%20x=1", "/"),
        ("", "/"),
    ],
)
def test_the_next_page_is_a_path_of_this_site(cookies_module, asked, sent_to):
    from urllib.parse import quote

    token, _ = auth.issue_admin_session()
    response = client(cookies_module).get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}&next={quote(asked, safe='')}"
    )
    assert response.status_code == 303 and response.headers["location"] == sent_to


def test_unknown_expired_and_dead_grants_set_nothing(cookies_module, monkeypatch):
    http = client(cookies_module)
    for address in ("/_pluie/session", "/_pluie/session?grant=guessed&next=/pairs", "/_pluie/logout?grant=guessed"):
        response = http.get(address)
        assert response.status_code == 303 and response.headers["location"] == "/"
        assert not response.headers.get_list("set-cookie"), address

    token, _ = auth.issue_admin_session()
    grant = grant_of(cookies_module, token)
    later = time.monotonic() + 61
    monkeypatch.setattr(cookies_module.time, "monotonic", lambda: later)
    stale = http.get(f"/_pluie/session?grant={grant}&next=/pairs")
    assert stale.headers["location"] == "/" and not stale.headers.get_list("set-cookie")
    monkeypatch.undo()

    ended, _ = auth.issue_admin_session()
    grant = grant_of(cookies_module, ended)
    auth.end_admin_session(ended)  # logged out between the grant and its use
    refused = http.get(f"/_pluie/session?grant={grant}&next=/pairs")
    assert refused.headers["location"] == "/" and not refused.headers.get_list("set-cookie")


def test_logging_out_clears_the_cookie_and_a_session_grant_is_no_logout(cookies_module):
    token, _ = auth.issue_admin_session()
    http = client(cookies_module)
    session_grant = grant_of(cookies_module, token)
    assert cookies_module.hand_back(NONCE)
    assert cookies_module.visited[-1].startswith("/_pluie/logout?grant=")
    logout_grant = cookies_module.visited[-1].split("grant=", 1)[1]

    assert not http.get(f"/_pluie/logout?grant={session_grant}").headers.get_list("set-cookie")
    response = http.get(f"/_pluie/logout?grant={logout_grant}")
    assert response.status_code == 303 and response.headers["location"] == "/"
    parts = [part.strip().lower() for part in set_cookie(response).split(";")]
    assert parts[0] == f'{ADMIN_COOKIE.lower()}=""' or parts[0] == f"{ADMIN_COOKIE.lower()}="
    assert "max-age=0" in parts and "httponly" in parts and "path=/" in parts
    assert not http.get(f"/_pluie/logout?grant={logout_grant}").headers.get_list("set-cookie")  # once


def test_the_cookie_routes_are_where_server_py_serves_them(cookies_module):
    """server.py builds the app on app.py beside it with these routes (what `make run` serves)."""
    import importlib
    import sys

    from streamlit import config

    from tests.paths import REPO

    sys.modules.pop("server", None)
    anchor = config._main_script_path  # st.App sets it for the whole process: the later tests' is theirs
    try:
        server = importlib.import_module("server")
    finally:
        config._main_script_path = anchor
        sys.modules.pop("server", None)
    assert server.app.script_path.resolve() == (REPO / "app.py").resolve()
    paths = {route.path for route in server.app._user_routes}
    assert {"/_pluie/session", "/_pluie/logout"} <= paths
    assert cookies_module.BrowserNonce in [m.cls for m in server.app._user_middleware]  # each browser's nonce


def test_a_grant_opened_in_another_browser_sets_nothing(cookies_module):
    """Issue 56, item 2: a person who stops their own redirect and hands the link to someone else does not
    sign that browser in as themselves: the grant is the signing-in browser's (its nonce), once."""
    token, _ = auth.issue_admin_session()
    for other in (client(cookies_module, nonce="another-browser"), client(cookies_module, nonce=None)):
        planted = other.get(f"/_pluie/session?grant={grant_of(cookies_module, token)}&next=/pairs")
        assert planted.status_code == 303 and planted.headers["location"] == "/"
        assert not planted.headers.get_list("set-cookie")
    assert not cookies_module.hand_over(token, None)  # a session whose browser has no nonce sends nothing
    assert len(cookies_module.visited) == 2
    grant = grant_of(cookies_module, token)
    client(cookies_module, nonce="another-browser").get(f"/_pluie/session?grant={grant}")
    late = client(cookies_module).get(f"/_pluie/session?grant={grant}")  # tried elsewhere: used up
    assert not late.headers.get_list("set-cookie")
    logout = cookies_module.hand_back(NONCE) and cookies_module.visited[-1].split("grant=", 1)[1]
    assert (
        not client(cookies_module, nonce="another-browser")
        .get(f"/_pluie/logout?grant={logout}")
        .headers.get_list("set-cookie")
    )  # a log-out is the browser's too


def test_a_browser_signed_in_as_another_account_is_not_switched(cookies_module, tmp_path, monkeypatch):
    from db import init_db
    from db.accounts import add_account, password_fingerprint

    engine = init_db(f"sqlite:///{tmp_path / 'store.db'}")
    sam = add_account(engine, "sam", "viewer", password="sam's long password")
    kim = add_account(engine, "kim", "organiser", password="kim's long password")
    monkeypatch.setattr(auth, "_FINGERPRINTS", lambda account_id: password_fingerprint(engine, account_id))

    def token_of(info):
        return auth.issue_admin_session(account_id=info.id, fingerprint=password_fingerprint(engine, info.id))[0]

    held, kims = token_of(sam), token_of(kim)
    browser = client(cookies_module)
    browser.cookies.set(ADMIN_COOKIE, held)
    kept = browser.get(f"/_pluie/session?grant={grant_of(cookies_module, kims)}&next=/pairs?dataset=2")
    assert kept.status_code == 303 and kept.headers["location"] == "/pairs?dataset=2&pluie_signin=kept"
    assert not kept.headers.get_list("set-cookie")
    assert auth.admin_session_expiry(kims) is None  # the sign-in not used is ended
    again = browser.get(f"/_pluie/session?grant={grant_of(cookies_module, token_of(sam))}&next=/pairs")
    assert again.headers["location"] == "/pairs" and set_cookie(again)  # the same account: a new token
    auth.end_admin_session(held)
    browser = client(cookies_module)
    browser.cookies.set(ADMIN_COOKIE, held)  # a cookie that no longer counts holds nobody's sign-in
    replaced = browser.get(f"/_pluie/session?grant={grant_of(cookies_module, token_of(kim))}&next=/pairs")
    assert replaced.headers["location"] == "/pairs" and set_cookie(replaced)
    engine.dispose()


def test_a_page_gives_a_browser_without_one_its_nonce(cookies_module):
    from starlette.middleware import Middleware
    from starlette.responses import HTMLResponse, JSONResponse
    from starlette.routing import Route

    app = Starlette(
        routes=[
            Route("/", lambda request: HTMLResponse("<html></html>")),
            Route("/_stcore/health", lambda request: JSONResponse({})),
        ],
        middleware=cookies_module.middleware(),
    )
    assert all(isinstance(m, Middleware) for m in cookies_module.middleware())
    fresh = TestClient(app).get("/")
    header = set_cookie(fresh)
    parts = [part.strip().lower() for part in header.split(";")]
    assert header.startswith(f"{cookies_module.BROWSER_COOKIE}=") and len(header.split(";")[0]) > 30
    assert "httponly" in parts and "samesite=lax" in parts and "path=/" in parts
    assert set_cookie(TestClient(app).get("/")) != header  # each browser its own
    assert not TestClient(app).get("/_stcore/health").headers.get_list("set-cookie")  # pages only
    known = TestClient(app, cookies={cookies_module.BROWSER_COOKIE: "already"}).get("/")
    assert not known.headers.get_list("set-cookie")  # kept, never replaced
