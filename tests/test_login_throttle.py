"""Throttling of the organiser's login that no one can bypass or jam (issue 39, item 5).

Against the running server (the counts are the server's), a forged X-Forwarded-For shares the real
address's count, the header counts behind a configured proxy, and many failures do not keep the right
password out; a clock stepped back keeps waits and sessions as they were; a password over bcrypt's
72 bytes can be hashed and is accepted."""

from __future__ import annotations

import ipaddress
import time

import pytest

from db import init_db
from lab.auth import (
    LoginGuard,
    admin_session_expiry,
    check_admin_password,
    client_address,
    hash_admin_password,
    issue_admin_session,
    trusted_proxies,
    try_admin_password,
)
from tests.browser import start_app, stop_app, wait_for_app

PASSWORD = "correct horse"
HOUR = 3600


class Clock:
    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self):
        return self.now


def login_lines(server) -> list[str]:
    """What the server logged about log-ins (logger pluie_lab.login): one line per attempt."""
    return [
        line
        for line in server.log.read_text(errors="replace").splitlines()
        if "wrong password for" in line or "refused: too many attempts" in line
    ]


def attempt(server, page, password: str) -> str:
    """Send this password through the login form; the server's line about it."""
    before = len(login_lines(server))
    page.get_by_label("Password", exact=True).fill(password)
    page.get_by_role("button", name="Sign in").click()
    deadline = time.monotonic() + 30
    while len(login_lines(server)) == before:
        assert time.monotonic() < deadline, "the server logged nothing about the attempt"
        time.sleep(0.05)
    wait_for_app(page)
    return login_lines(server)[before]


def open_login(server, page, forwarded: str) -> None:
    page.set_extra_http_headers({"X-Forwarded-For": forwarded})
    page.goto(f"{server.url}/campaigns")
    page.get_by_label("Password", exact=True).wait_for(timeout=30_000)


def start(tmp_path, migrated_copy, name: str, **env):
    """The app with an admin password, listening on every interface as `make run` with a password does
    (Streamlit binds "::"): the browser, on 127.0.0.1, reaches it as the IPv4-mapped ::ffff:127.0.0.1."""
    directory = tmp_path / name
    directory.mkdir()
    db_url = migrated_copy(f"sqlite:///{directory / 'store.db'}")
    init_db(db_url).dispose()
    return start_app(
        db_url,
        directory / "streamlit.log",
        address=None,
        extra_env={
            "PLUIE_ADMIN_PASSWORD": PASSWORD,
            "PLUIE_DATA_DIR": str(directory),
            "PLUIE_TRUSTED_PROXIES": "",
            **env,
        },
    )


@pytest.mark.browser
def test_forged_headers_share_a_count_and_many_failures_do_not_lock_anyone_out(tmp_path, browser, migrated_copy):
    # no proxy configured: every browser here is this machine, whatever X-Forwarded-For it sends
    # (before, each forged address had 5 free tries of its own)
    server = start(tmp_path, migrated_copy, "direct")
    try:
        page = browser.new_context().new_page()
        lines = []
        for i in range(7):
            open_login(server, page, f"198.51.100.{i + 1}")
            lines.append(attempt(server, page, f"guess {i}"))
        assert all("from localhost" in line for line in lines), lines
        assert all(line.endswith("next try in 0 s") for line in lines[:5]), lines
        assert not any(line.endswith("next try in 0 s") for line in lines[5:]), lines  # the sixth waits
    finally:
        stop_app(server)

    # behind a configured proxy (here: this machine, written as its IPv4 address while its connections
    # arrive IPv4-mapped: issue 52), the forwarded address counts
    server = start(tmp_path, migrated_copy, "proxied", PLUIE_TRUSTED_PROXIES="127.0.0.1")
    try:
        context = browser.new_context()
        page = context.new_page()
        open_login(server, page, "203.0.113.1")
        lines = [attempt(server, page, "guess") for _ in range(6)]
        assert all("from 203.0.113.1 " in line for line in lines), lines
        assert lines[4].endswith("next try in 0 s") and lines[5].endswith("next try in 1 s"), lines
        # a guesser from many addresses: 60 tries in all, more than the old overall cap of 50 ...
        for i in range(2, 13):
            open_login(server, page, f"203.0.113.{i}")
            first = attempt(server, page, "guess")
            assert f"from 203.0.113.{i} " in first and "wrong password for admin" in first, first
            for _ in range(4):
                attempt(server, page, "guess")
        assert sum("wrong password for admin" in line for line in login_lines(server)) > 20  # past the account's free
        # ... and the right password from an address that has not been failing logs in at once; the proxy
        # says the browser came over HTTPS, so the sign-in cookie the server sets is Secure
        page.set_extra_http_headers({"X-Forwarded-For": "198.51.100.200", "X-Forwarded-Proto": "https"})
        page.goto(f"{server.url}/campaigns")
        page.get_by_label("Password", exact=True).fill(PASSWORD)
        # the signed-in page sends the browser to the cookie's route once its run has drawn (ui.access.session_cookie)
        with page.expect_response(lambda response: "/_pluie/session" in response.url, timeout=60_000) as sent:
            page.get_by_role("button", name="Sign in").click()
        cookies = [h["value"] for h in sent.value.headers_array() if h["name"].lower() == "set-cookie"]
        assert len(cookies) == 1 and "secure" in [part.strip().lower() for part in cookies[0].split(";")], cookies
        page.get_by_role("heading", name="Labelling campaigns").wait_for(timeout=30_000)
        # the form goes once the run that logged in ends (a stale element may linger during that run)
        page.get_by_label("Password", exact=True).wait_for(state="detached", timeout=30_000)
        context.close()
    finally:
        stop_app(server)


def test_the_address_counted_believes_the_header_behind_a_named_proxy_only(monkeypatch, tmp_path):
    proxy = [ipaddress.ip_network("10.0.0.0/8")]
    assert client_address(None, None, []) == "localhost"
    assert client_address(None, "203.0.113.9", []) == "localhost"
    # Streamlit's server has already put the header's address in place of this machine's
    assert client_address("203.0.113.9", "203.0.113.9", []) == "localhost"
    assert client_address("192.0.2.7", "203.0.113.9", []) == "192.0.2.7"  # not a proxy: its own address
    assert client_address("10.1.2.3", "203.0.113.9", proxy) == "203.0.113.9"
    assert client_address("10.1.2.3", "198.51.100.1, 203.0.113.9:4321, 10.4.4.4", proxy) == "203.0.113.9"
    assert client_address("10.1.2.3", None, proxy) == "10.1.2.3"
    # addresses compare as addresses (issue 52): an IPv4 client seen by a server listening on "::" is
    # IPv4-mapped, a proxy may be named either way, and this machine is this machine however written
    assert client_address("::ffff:10.1.2.3", "203.0.113.9", proxy) == "203.0.113.9"
    assert client_address("::ffff:127.0.0.1", "203.0.113.9", [ipaddress.ip_network("127.0.0.1/32")]) == "203.0.113.9"
    assert client_address("127.0.0.1", "203.0.113.9", [ipaddress.ip_network("::ffff:127.0.0.1/128")]) == "203.0.113.9"
    assert client_address("::ffff:127.0.0.1", "203.0.113.9", []) == "localhost"
    assert client_address("::ffff:192.0.2.7", None, []) == "192.0.2.7"
    assert client_address("::ffff:10.1.2.3", "::ffff:203.0.113.9, 10.4.4.4", proxy) == "203.0.113.9"
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLUIE_TRUSTED_PROXIES", raising=False)
    assert trusted_proxies() == []
    (tmp_path / "pluie_lab.toml").write_text('[login]\ntrusted_proxies = ["127.0.0.1", "10.0.0.0/8"]\n')
    assert trusted_proxies() == [ipaddress.ip_network("127.0.0.1/32"), ipaddress.ip_network("10.0.0.0/8")]
    monkeypatch.setenv("PLUIE_TRUSTED_PROXIES", "::ffff:10.0.0.0/104, ::1")
    assert trusted_proxies() == [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("::1/128")]
    monkeypatch.setenv("PLUIE_TRUSTED_PROXIES", "proxy.example")
    with pytest.raises(ValueError, match="trusted proxies must be IP addresses or networks"):
        trusted_proxies()


def test_many_failures_slow_the_guessers_not_the_right_password():
    clock = Clock()
    guard = LoginGuard(free=5, account_free=20, window=900, longest=900, account_longest=60, clock=clock)
    for i in range(60):  # 60 addresses, one wrong password each
        assert guard.wait(f"10.0.{i}.1") == 0
        guard.failed(f"10.0.{i}.1")
    assert guard.wait("10.0.0.1") == 60  # a failing address waits for the account (1 s, 2 s ... up to 60 s)
    assert guard.wait("192.0.2.1") == 0  # an address that has not failed is checked at once


def test_a_clock_stepped_back_keeps_waits_and_sessions(monkeypatch, tmp_path):
    clock = Clock(1_000_000.0)
    guard = LoginGuard(free=1, clock=clock)
    guard.failed("10.0.0.1")
    assert guard.failed("10.0.0.1") == 1
    clock.now -= HOUR  # the system clock stepped back an hour
    assert guard.wait("10.0.0.1") == 1  # not an hour and a second
    clock.now += 1
    assert guard.wait("10.0.0.1") == 0

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", PASSWORD)
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))
    for name in ("PLUIE_ADMIN_SESSION_HOURS", "PLUIE_SECRET_KEY", "PLUIE_ADMIN_PASSWORD_HASH"):
        monkeypatch.delenv(name, raising=False)
    token, expires = issue_admin_session(now=1_000_000)
    assert admin_session_expiry(token, now=1_000_000 - 120) == expires  # two minutes back: still logged in
    assert admin_session_expiry(token, now=1_000_000 - 11 * HOUR) == expires
    assert admin_session_expiry(token, now=1_000_000 - 13 * HOUR) is None  # further back than a session


def test_a_password_over_72_bytes_is_hashed_and_accepted(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    long = "correct horse battery staple, " * 3 + "é" * 5  # 100 bytes
    assert len(long.encode("utf-8")) == 100
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD_HASH", hash_admin_password(long))
    assert check_admin_password(long)
    assert not check_admin_password(long[:-1]) and not check_admin_password(long[:72])  # every byte counts
    assert try_admin_password(long, "10.0.0.1", LoginGuard()) is None
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD_HASH", hash_admin_password("short one"))  # as bcrypt always did
    assert check_admin_password("short one") and not check_admin_password("short one!")
