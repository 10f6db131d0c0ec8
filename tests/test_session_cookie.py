"""Issue 39, item 4: the sign-in cookie is set by the server (pages.session_cookie's routes, served by
server.py), HttpOnly and SameSite=Strict, Secure under HTTPS, in exchange for a one-time grant that the
signed-in session made; logging out clears it. The routes are driven here with Starlette's TestClient;
the browser's side (document.cookie cannot read it, reloads and tabs keep it) is
test_browser_session_cookie.py."""
from __future__ import annotations

import time

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient

from pluie_core import auth
from pluie_core.auth import ADMIN_COOKIE


@pytest.fixture
def cookies_module(monkeypatch, tmp_path):
    """pages.session_cookie with a server secret of this test's own and the page's navigation recorded
    instead of drawn (hand_over and hand_back run inside a Streamlit page)."""
    for name in ("PLUIE_ADMIN_PASSWORD_HASH", "PLUIE_ADMIN_SESSION_HOURS", "PLUIE_TRUSTED_PROXIES"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "correct horse")
    monkeypatch.setenv("PLUIE_SECRET_KEY", "a secret only this test knows")
    from pages import session_cookie

    # routes() marks this process as serving them: put that back after the test (AppTests later in this
    # process have no routes), and start from no grants
    monkeypatch.setattr(session_cookie, "_installed", False)
    monkeypatch.setattr(session_cookie, "_grants", {})
    visited: list[str] = []
    monkeypatch.setattr(session_cookie, "_navigate", lambda address, current_page=False: visited.append(address))
    session_cookie.visited = visited
    return session_cookie


def client(module, base_url: str = "http://testserver", peer: str = "203.0.113.9") -> TestClient:
    return TestClient(Starlette(routes=module.routes()), base_url=base_url, follow_redirects=False,
                      client=(peer, 50000))


def grant_of(module, token: str) -> str:
    """The grant hand_over put in the address it sends the browser to."""
    module.hand_over(token)
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
        f"/_pluie/session?grant={grant_of(cookies_module, token)}&next=/")
    assert "secure" in [part.strip().lower() for part in set_cookie(secure).split(";")]

    said = {"X-Forwarded-Proto": "https"}
    untrusted = client(cookies_module).get(f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said)
    assert "secure" not in [part.strip().lower() for part in set_cookie(untrusted).split(";")]
    monkeypatch.setenv("PLUIE_TRUSTED_PROXIES", "10.1.2.0/24")
    still = client(cookies_module).get(f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said)
    assert "secure" not in [part.strip().lower() for part in set_cookie(still).split(";")]
    trusted = client(cookies_module, peer="10.1.2.3").get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said)
    assert "secure" in [part.strip().lower() for part in set_cookie(trusted).split(";")]
    # a server listening on "::" sees an IPv4 proxy IPv4-mapped: it is the same address (issue 52)
    mapped = client(cookies_module, peer="::ffff:10.1.2.3").get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}", headers=said)
    assert "secure" in [part.strip().lower() for part in set_cookie(mapped).split(";")]


@pytest.mark.parametrize("asked, sent_to", [
    ("/pairs", "/pairs"),
    ("https://elsewhere.example/", "/"),
    ("//elsewhere.example/path", "/"),
    ("/\\elsewhere.example", "/"),
    ("javascript:alert(1)", "/"),
    ("/ok\r\nSet-Cookie:%20x=1", "/"),
    ("", "/"),
])
def test_the_next_page_is_a_path_of_this_site(cookies_module, asked, sent_to):
    from urllib.parse import quote

    token, _ = auth.issue_admin_session()
    response = client(cookies_module).get(
        f"/_pluie/session?grant={grant_of(cookies_module, token)}&next={quote(asked, safe='')}")
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
    cookies_module.hand_back()
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

    from tests.paths import REPO

    from streamlit import config

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
