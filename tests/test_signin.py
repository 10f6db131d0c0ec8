"""Signing in with an account (issue 39, items 1 and 6): ui.access.signin, the role of each page (app.py,
lab.roles.PAGE_ROLES), the actor every write checks (db.access's resolver), and a store from before
accounts keeping its admin password (now the owner "admin") and every label."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select
from streamlit.testing.v1 import AppTest

from db import access, accounts, annotators, init_db, serving
from db import campaigns as camp
from db.engine import read_session
from db.models import Account, Annotator, Label
from lab.auth import LOGIN_GUARD, admin_session_expiry, issue_admin_session
from lab.roles import NOBODY, OPEN, PAGE_ROLES, Actor
from tests.annotation_fixtures import make_dataset, numbered_pairs
from tests.paths import REPO

APP = str(REPO / "app.py")
READING = [
    "Datasets",
    "Pairs",
    "Agreement",
    "Thresholds",
    "Distributions",
    "Disagreements",
    "Scorecard",
    "Correlation",
    "Preferences",
    "API & webhooks",
]


@pytest.fixture
def app_env(app_store, monkeypatch, tmp_path):
    """The app on this test's SQLite store, with no admin password and a data dir of its own."""
    for name in ("PLUIE_ADMIN_SESSION_HOURS", "PLUIE_SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))
    monkeypatch.chdir(REPO)
    LOGIN_GUARD.clear()
    return app_store


def start(page: str = "pages/home.py") -> AppTest:
    # switched to at once: under AppTest a widget of the very first run is not the same widget on the next
    at = AppTest.from_file(APP, default_timeout=30).run()
    return at.switch_page(page).run()


def labels(at) -> list[str]:
    return [t.label for t in at.text_input]


def menu(at) -> list[str]:
    return [link.label for link in at.sidebar.get("page_link")]


def sign_in(at, name: str, password: str) -> AppTest:
    at.text_input[0].input(name)
    at.text_input[1].input(password)
    return at.button[0].click().run()


def test_an_account_signs_in_with_its_name_and_password(app_env):
    accounts.add_account(app_env, "olga", "owner", password="olga's password")
    accounts.add_account(app_env, "sam", "reviewer", password="sam's password")
    at = start()
    assert labels(at) == ["Account", "Password"] and not menu(at)
    assert "in this browser tab only" in at.caption[0].value  # no cookie routes under AppTest
    sign_in(at, "sam", "olga's password")
    assert [e.value for e in at.error] == ["Wrong account or password."] and labels(at) == ["Account", "Password"]
    sign_in(at, "nobody", "sam's password")
    assert [e.value for e in at.error] == ["Wrong account or password."]
    sign_in(at, "sam", "sam's password")
    assert not at.exception and not at.error and labels(at) == []
    assert "Signed in as sam (reviewer)" in [c.value for c in at.sidebar.caption]
    assert menu(at) == ["Datasets", "Pairs", "Review", *READING[2:]]
    at.sidebar.button(key="log-out").click().run()
    assert labels(at) == ["Account", "Password"] and not menu(at)


def test_a_viewer_sees_the_reading_pages_and_is_refused_the_others_by_address(app_env):
    accounts.add_account(app_env, "olga", "owner", password="olga's password")
    accounts.add_account(app_env, "vic", "viewer", password="vic's password")
    at = sign_in(start(), "vic", "vic's password")
    assert menu(at) == READING
    at.switch_page("pages/import_pairs.py").run()
    assert [e.value for e in at.error] == ["Your role (viewer) cannot open Import: ask an owner."]
    assert not at.get("file_uploader") and not at.exception
    at.switch_page("pages/thresholds.py").run()
    assert not at.error and not at.exception
    # signing in at /import_pairs: the run goes through the app's frame (its menu drawn), refused there
    at = sign_in(start("pages/import_pairs.py"), "vic", "vic's password")
    assert [e.value for e in at.error] == ["Your role (viewer) cannot open Import: ask an owner."]
    assert menu(at) == READING and not at.get("file_uploader") and not at.exception


def test_a_changed_role_or_password_ends_a_session_at_once(app_env):
    olga = accounts.add_account(app_env, "olga", "owner", password="olga's password")
    sam = accounts.add_account(app_env, "sam", "organiser", password="sam's password")
    at = sign_in(start(), "sam", "sam's password")
    assert "Import" in menu(at)
    # the app ran in this process: it installed its writer (db.access), so this thread, no session's, writes for
    # nobody while accounts exist; the test's own changes are the store's operator's
    with access.acting_as(OPEN):
        accounts.set_role(app_env, sam.id, "viewer")
    at.run()
    assert labels(at) == ["Account", "Password"]  # signed out: the token was signed with the old role
    sign_in(at, "sam", "sam's password")
    assert "Import" not in menu(at) and "Signed in as sam (viewer)" in [c.value for c in at.sidebar.caption]
    with access.acting_as(OPEN):
        accounts.set_password(app_env, sam.id, "a new password")
    assert labels(at.run()) == ["Account", "Password"]
    sign_in(at, "sam", "a new password")
    with access.acting_as(accounts.actor_for(olga)):
        accounts.disable_account(app_env, sam.id)
    assert labels(at.run()) == ["Account", "Password"]


def test_an_account_token_is_signed_with_the_account(store_url, monkeypatch, tmp_path):
    monkeypatch.setenv("PLUIE_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("PLUIE_SECRET_KEY", raising=False)
    engine = init_db(store_url)
    try:
        sam = accounts.add_account(engine, "sam", "organiser", password="sam's password")
        ida = accounts.add_account(engine, "ida", "organiser", password="ida's password")

        def fingerprint(account_id):
            return accounts.password_fingerprint(engine, account_id)

        token, expires = issue_admin_session(account_id=sam.id, fingerprint=fingerprint(sam.id))
        assert admin_session_expiry(token, fingerprint_of=fingerprint) == expires
        forged = token.replace(f"a{sam.id}.", f"a{ida.id}.", 1)  # another account's id, the same signature
        assert admin_session_expiry(forged, fingerprint_of=fingerprint) is None
        for change in (
            lambda: accounts.set_role(engine, sam.id, "viewer"),
            lambda: accounts.set_password(engine, sam.id, "another password"),
            lambda: accounts.end_sessions(engine, sam.id),
            lambda: accounts.disable_account(engine, sam.id),
        ):
            token, _ = issue_admin_session(account_id=sam.id, fingerprint=fingerprint(sam.id) or "none")
            assert admin_session_expiry(token, fingerprint_of=fingerprint) is not None
            change()
            assert admin_session_expiry(token, fingerprint_of=fingerprint) is None
    finally:
        engine.dispose()


def test_the_admin_password_becomes_the_owner_admin_and_keeps_every_label(app_env, monkeypatch):
    dataset_id, _ = make_dataset(app_env, "d", numbered_pairs(6))
    campaign_id = camp.create_campaign(app_env, "c", [dataset_id], quota=6, n_training=0)
    annotator_id, token = annotators.create_annotator(app_env, campaign_id, "ann")
    while (item := serving.serve_next(app_env, annotator_id)) is not None:
        serving.record_label(app_env, annotator_id, item.position, 1, 0.5)

    def counts():
        with read_session(app_env) as session:
            return {
                model.__name__: session.scalar(select(func.count()).select_from(model))
                for model in (Label, Annotator, Account)
            }

    before = counts()
    assert before["Label"] == 6 and before["Account"] == 0
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "correct horse")
    at = start()
    assert labels(at) == ["Account", "Password"]
    assert counts() == {**before, "Account": 1}
    admin = accounts.account_by_name(app_env, "admin")
    assert admin.role == "owner" and accounts.check_password(app_env, "admin", "correct horse") == admin
    sign_in(at, "", "correct horse")  # an empty account is "admin": the password alone, as before
    assert not at.exception and "Signed in as admin (owner)" in [c.value for c in at.sidebar.caption]
    assert "Accounts" in menu(at)
    # the annotator's link needs no sign-in
    link = AppTest.from_file(APP, default_timeout=30)
    link.query_params["token"] = token
    link.run()
    assert not link.exception and labels(link) != ["Account", "Password"]
    assert counts() == {**before, "Account": 1}


def test_no_sign_in_on_a_store_without_accounts(app_env):
    at = AppTest.from_file(APP, default_timeout=30).run()  # the app's first run: its frame, with the menu
    assert labels(at) == [] and not at.exception
    assert menu(at)[:4] == ["Datasets", "Pairs", "Import", "Export"] and "Accounts" in menu(at)
    assert any(c.value.startswith("No admin password is configured") for c in at.sidebar.caption)


def test_an_invitation_link_opens_its_page_without_sign_in(app_env):
    olga = accounts.add_account(app_env, "olga", "owner", password="olga's password")
    sam = accounts.add_account(app_env, "sam", "reviewer")
    with access.acting_as(accounts.actor_for(olga)):
        token = accounts.invite(app_env, sam.id)
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["invite"] = token
    at.run()
    assert not at.exception and labels(at) == ["Password", "The same password again"] and not menu(at)
    at.text_input[0].input("sam's password")
    at.text_input[1].input("sam's password")
    at.button[0].click().run()
    assert accounts.check_password(app_env, "sam", "sam's password") is not None


RESOLVER_PAGE = """
import streamlit as st
from db import access
from ui.access.signin import install_access

install_access()  # as app.py does at its start

def remember():
    st.session_state["in_callback"] = access.current_actor()

st.button("go", on_click=remember)
st.session_state["in_run"] = access.current_actor()
"""


def test_the_resolver_gives_the_actor_of_the_session(app_env):
    import ui.access.signin

    ui.access.signin.install_access()
    assert ui.access.signin.current_actor_or_none() is None and access.current_actor() == OPEN  # no script run
    page = AppTest.from_string(RESOLVER_PAGE, default_timeout=30).run()
    page.button[0].click().run()
    assert page.session_state["in_run"] == OPEN and page.session_state["in_callback"] == OPEN

    sam = accounts.add_account(app_env, "sam", "reviewer", password="sam's password")
    page.button[0].click().run()
    assert page.session_state["in_run"] == NOBODY and page.session_state["in_callback"] == NOBODY

    at = sign_in(start(), "sam", "sam's password")
    page = AppTest.from_string(RESOLVER_PAGE, default_timeout=30)
    page.session_state[ui.access.signin.ADMIN_TOKEN] = at.session_state[ui.access.signin.ADMIN_TOKEN]
    page.run()
    page.button[0].click().run()
    assert page.session_state["in_run"] == Actor("sam", "reviewer", sam.id)
    assert page.session_state["in_callback"] == Actor("sam", "reviewer", sam.id)
    # this thread is no Streamlit session: while accounts exist, a write from it is done for nobody
    assert access.current_actor() == NOBODY


def test_every_page_the_app_routes_has_a_role():
    from ui.base.menu import MENU

    routed = {key for entries in MENU.values() for key, _, _ in entries}
    assert routed == set(PAGE_ROLES) and "MENU.items()" in Path(APP).read_text()
    assert all((REPO / "pages" / f"{key}.py").is_file() for key in routed)


def test_make_run_listens_on_the_network_once_the_store_has_an_account(monkeypatch, tmp_path, db_url, engine):
    import importlib.util

    spec = importlib.util.spec_from_file_location("serve", REPO / "scripts" / "serve.py")
    serve = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve)
    monkeypatch.chdir(tmp_path)  # no .streamlit/config.toml naming an address here
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("PLUIE_ADMIN_PASSWORD", "PLUIE_ADMIN_PASSWORD_HASH", "STREAMLIT_SERVER_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PLUIE_DB_URL", db_url)
    assert serve.listening_options([])[0] == ["--server.address", "localhost"]  # a store without accounts
    accounts.add_account(engine, "olga", "owner", password="olga's password")
    assert serve.listening_options([]) == ([], None)  # every visitor signs in
    monkeypatch.setenv("PLUIE_DB_URL", f"sqlite:///{tmp_path / 'none.db'}")
    assert serve.listening_options([])[0] == ["--server.address", "localhost"]
    assert not (tmp_path / "none.db").exists()


def signed_in_on(engine, page: str, title: str, name: str, role: str, timeout: float = 30) -> AppTest:
    """``page`` (a path under pages/) through the app (AppTest), signed in for real as a new account ``name``
    with ``role`` (password "<name>'s password"); asserts the page drew ``title``."""
    from db import accounts
    from db.access import acting_as
    from lab.roles import OPEN

    with acting_as(OPEN):
        accounts.add_account(engine, name, role, password=f"{name}'s password")
    at = AppTest.from_file(APP, default_timeout=timeout).run()
    at.switch_page(page).run()
    at.text_input[0].input(name)
    at.text_input[1].input(f"{name}'s password")
    at.button[0].click().run()
    assert not at.exception and at.title[0].value == title, [t.value for t in at.title]
    return at
