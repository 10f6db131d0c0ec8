"""The organiser's login (issue 14, point 1): a signed, expiring token (lab.auth) that the app keeps
across reloads in a cookie; the page asked for is the page drawn after logging in. The cookie itself, reloads
and new tabs are covered in the real browser (test_browser_organiser_login.py)."""

from __future__ import annotations

import os
import stat

import bcrypt
import pytest
from streamlit.testing.v1 import AppTest

from lab.auth import (
    LOGIN_GUARD,
    LoginGuard,
    admin_session_expiry,
    admin_session_hours,
    end_admin_session,
    issue_admin_session,
    session_secret,
)
from tests.paths import REPO

APP = str(REPO / "app.py")
HOUR = 3600


@pytest.fixture
def config(monkeypatch, tmp_path):
    """No configuration but what a test sets: a fresh working directory and data dir."""
    for name in (
        "PLUIE_ADMIN_PASSWORD",
        "PLUIE_ADMIN_PASSWORD_HASH",
        "PLUIE_ADMIN_SESSION_HOURS",
        "PLUIE_SECRET_KEY",
        "PLUIE_DATA_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "correct horse")
    LOGIN_GUARD.clear()  # wrong passwords of earlier tests count for nothing here
    return tmp_path


def test_a_session_token_is_signed_and_expires(config, monkeypatch):
    token, expires = issue_admin_session(now=1_000_000)
    assert expires == 1_000_000 + 12 * HOUR  # the default lifetime
    assert admin_session_expiry(token, now=1_000_000 + 11.9 * HOUR) == expires
    assert admin_session_expiry(token, now=expires) is None  # expired
    assert admin_session_expiry(token, now=1_000_000 - 13 * HOUR) is None  # a clock further back than a session
    issued, end, nonce, signature = token.split(".")
    for forged in (
        f"{issued}.{int(end) + HOUR}.{nonce}.{signature}",  # a later expiry, same signature
        f"{issued}.{end}.{nonce}.{signature[:-2]}",
        f"{issued}.{end}.é.{signature}",
        f"{issued}.{end}.{nonce}.é{signature[1:]}",
        "",
        "a.b.c.d",
        "x" * 500,
        None,
    ):
        assert admin_session_expiry(forged, now=1_000_000 + 1) is None
    assert token != issue_admin_session(now=1_000_000)[0]  # every login is a new token

    # the secret was made once, kept in the data dir (./data by default), readable by its owner only
    secret_file = config / "data" / "secret_key"
    assert stat.S_IMODE(os.stat(secret_file).st_mode) == 0o600 and session_secret() == secret_file.read_bytes().strip()
    # a changed password, secret or a shorter lifetime ends the sessions already given
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "new password")
    assert admin_session_expiry(token, now=1_000_001) is None
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "correct horse")
    assert admin_session_expiry(token, now=1_000_001) == expires
    monkeypatch.setenv("PLUIE_ADMIN_SESSION_HOURS", "2")
    assert admin_session_expiry(token, now=1_000_000 + 3 * HOUR) is None
    assert admin_session_expiry(token, now=1_000_000 + HOUR) == 1_000_000 + 2 * HOUR
    monkeypatch.setenv("PLUIE_SECRET_KEY", "another secret")
    assert admin_session_expiry(token, now=1_000_001) is None


def test_log_out_ends_that_session_only_and_for_good(config):
    mine, _ = issue_admin_session()
    colleague, _ = issue_admin_session()
    end_admin_session(mine)
    assert admin_session_expiry(mine) is None and admin_session_expiry(colleague) is not None
    assert (config / "data" / "logged_out_sessions").read_text().count("\n") == 1
    end_admin_session("forged.token")  # nothing to end: nothing written
    assert (config / "data" / "logged_out_sessions").read_text().count("\n") == 1


def test_session_length_and_secret_from_the_configuration(config, monkeypatch):
    hashed = bcrypt.hashpw(b"from-toml", bcrypt.gensalt(4)).decode()
    (config / "pluie_lab.toml").write_text(
        f'[admin]\npassword_hash = "{hashed}"\nsession_hours = 0.5\nsecret_key = "kept in the file"\n'
    )
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD")
    assert admin_session_hours() == 0.5 and session_secret() == b"kept in the file"
    token, expires = issue_admin_session(now=0)
    assert expires == 1800 and not (config / "data").exists()
    monkeypatch.setenv("PLUIE_ADMIN_SESSION_HOURS", "24")  # the environment wins
    assert admin_session_hours() == 24
    monkeypatch.setenv("PLUIE_DATA_DIR", str(config / "elsewhere"))
    monkeypatch.setenv("PLUIE_SECRET_KEY", "")
    (config / "pluie_lab.toml").write_text('[admin]\npassword_hash = "x"\n')
    session_secret()
    assert (config / "elsewhere" / "secret_key").is_file()
    for bad in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv("PLUIE_ADMIN_SESSION_HOURS", bad)
        with pytest.raises(ValueError, match="positive number of hours"):
            admin_session_hours()


def test_login_lands_on_the_page_asked_for(config, monkeypatch, db_url, engine):
    """The page asked for draws the login form in its place and, once the password is right, is
    the page drawn (AppTest runs a switched-to page on its own, as a fresh server's first visit
    does; the app's own frame, reloads and log-out are checked in the browser)."""
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_DATA_DIR", str(config))
    monkeypatch.chdir(REPO)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert [t.label for t in at.text_input] == ["Account", "Password"]  # an empty account: the admin password
    assert "A sign-in lasts 12 hours" in at.caption[0].value
    at.switch_page("pages/campaigns.py").run()  # e.g. a shared link to /campaigns
    assert [t.label for t in at.text_input] == ["Account", "Password"] and [t.value for t in at.title] == ["PLUIE Lab"]
    at.text_input[1].input("wrong")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["Wrong account or password."]
    at.text_input[1].input("correct horse")
    at.button[0].click().run()
    assert not at.exception
    assert [t.value for t in at.title] == ["Labelling campaigns"]  # the page asked for, not Datasets
    at.switch_page("pages/thresholds.py").run()  # and the login holds from page to page
    assert "Password" not in [t.label for t in at.text_input] and not at.exception


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def test_wrong_passwords_slow_down_per_client_and_per_account():
    """Issue 23, item 4, with issue 39, item 5: five free wrong passwords per client, then waits that
    double up to 15 minutes; many clients together slow down the failing ones (up to a minute each)
    but never an address that has not failed; the right one clears a client."""
    clock = Clock()
    guard = LoginGuard(free=5, account_free=100, window=3600, longest=900, clock=clock)
    waits = []
    for _ in range(16):
        assert guard.wait("10.0.0.1") == 0  # each try made once the wait is over
        waits.append(guard.failed("10.0.0.1"))
        clock.now += waits[-1]
    assert waits == [0, 0, 0, 0, 0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 900]  # 900 s at most
    clock.now -= 899
    assert guard.wait("10.0.0.1") == 899 and guard.wait("10.0.0.2") == 0  # another client is not
    clock.now += 10_000  # a quiet hour forgets them all
    assert guard.wait("10.0.0.1") == 0

    guard = LoginGuard(free=5, account_free=12, window=900, longest=900, account_longest=60, clock=clock)
    for i in range(12):  # per account: twelve addresses, one wrong password each, are free
        assert guard.failed(f"192.168.0.{i}") == 0
    assert guard.failed("192.168.0.99") == 1 and guard.wait("192.168.0.1") == 1  # failing addresses wait
    assert guard.wait("192.168.0.200") == 0  # a new address is checked at once
    clock.now += 1
    for _ in range(5):
        guard.failed("172.16.0.1")
        clock.now += 600
    guard.succeeded("172.16.0.1")
    assert guard.wait("172.16.0.1") == 0  # the right password clears the client


def test_the_login_form_says_too_many_attempts_and_logs_them(config, monkeypatch, db_url, engine, caplog):
    """30 wrong passwords from one tab were answered at once (issue 23): now the sixth costs a wait,
    the form says so in one sentence, refuses even the right password until then, and logs it."""
    clock = Clock()
    monkeypatch.setattr(LOGIN_GUARD, "clock", clock)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    monkeypatch.setenv("PLUIE_NO_WORKER", "1")
    monkeypatch.setenv("PLUIE_DATA_DIR", str(config))
    monkeypatch.chdir(REPO)
    caplog.set_level("WARNING", logger="pluie_lab.login")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/campaigns.py").run()
    answers = []
    for _ in range(7):
        at.text_input[1].input("guess")
        at.button[0].click().run()
        answers.append([e.value for e in at.error])
    wrong = "Wrong account or password"
    assert answers == [[f"{wrong}."]] * 5 + [
        [f"{wrong}; too many attempts: try again in 1 s."],
        ["Too many attempts: try again in 1 s."],
    ]
    clock.now += 1
    at.text_input[1].input("guess")
    at.button[0].click().run()
    assert [e.value for e in at.error] == [f"{wrong}; too many attempts: try again in 2 s."]
    at.text_input[1].input("correct horse")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["Too many attempts: try again in 2 s."]  # not even checked
    assert [t.label for t in at.text_input] == ["Account", "Password"]
    clock.now += 2
    at.text_input[1].input("correct horse")
    at.button[0].click().run()
    assert not at.error and not at.exception and "Password" not in [t.label for t in at.text_input]
    logged = [r.getMessage() for r in caplog.records if r.name == "pluie_lab.login"]
    assert sum(m.startswith("wrong password for admin from localhost") for m in logged) == 7
    assert sum("refused: too many attempts" in m for m in logged) == 2
