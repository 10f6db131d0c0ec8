"""db.accounts on SQLite and PostgreSQL (issue 39, helper C): adding people, names and e-mails, roles,
passwords (over bcrypt's 72 bytes too), invitations (shown once, used once, expiring), sessions ended by
every change, the last owner kept, sign-in checks, the admin password's owner, and the owner-only changes
refused to other roles with the store left as it was."""

from __future__ import annotations

import datetime as dt
import hashlib

import bcrypt
import pytest
import sqlalchemy as sa

from db import access, accounts, init_db
from db.accounts import AccountError
from db.engine import read_session, write_session
from db.models import Account, Activity, Base
from lab.roles import NOBODY, Actor, NotAllowed, with_article

LONG = "correct horse battery staple " * 4  # 116 bytes: past bcrypt's 72


@pytest.fixture
def store(store_url, monkeypatch):
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    engine = init_db(store_url)
    yield engine
    engine.dispose()


def store_rows(engine) -> dict:
    with read_session(engine) as session:
        return {
            table.name: sorted(map(tuple, session.execute(sa.select(table)).all()), key=repr)
            for table in Base.metadata.sorted_tables
        }


def owner(engine, name="olivia"):
    """The store's first account (free), an owner with a password, and its Actor."""
    info = accounts.add_account(engine, name, "owner", password="owner-password")
    return info, accounts.actor_for(info)


def test_the_first_account_is_free_then_only_an_owner_adds(store):
    assert not accounts.accounts_in_force(store)
    with access.acting_as(NOBODY):  # whoever holds the store makes its first account
        first = accounts.add_account(store, "olivia", "owner", password="owner-password")
    assert accounts.accounts_in_force(store) and first.role == "owner" and first.has_password
    before = store_rows(store)
    for actor in (NOBODY, Actor("vic", "viewer", 98), Actor("olga", "organiser", 99)):
        with access.acting_as(actor), pytest.raises(NotAllowed) as refused:
            accounts.add_account(store, "sam", "viewer")
        assert str(refused.value) in (
            "Sign in to manage accounts.",
            f"{actor.name} is {with_article(actor.role)}: only an owner or above can manage accounts.",
        )
    assert store_rows(store) == before
    with access.acting_as(accounts.actor_for(first)):
        sam = accounts.add_account(store, "sam", "viewer")
    assert sam.created_by == "olivia" and not sam.has_password and sam.invite_expires_at is None
    with read_session(store) as session:
        assert session.scalar(sa.select(Activity.actor).where(Activity.subject_id == sam.id)) == "olivia"


def test_names_cleaned_and_unique_emails_lowered_and_unique(store):
    owner(store)
    sam = accounts.add_account(store, "  Zoe\u0308\u200b  ", "viewer", email="  Zoe@Example.ORG ")
    assert sam.name == "Zoë" and sam.email == "zoe@example.org"
    assert accounts.account_by_name(store, "Zo\u00eb").id == sam.id
    assert accounts.account_by_email(store, "ZOE@example.org").id == sam.id
    before = store_rows(store)
    for name, email, sentence in [
        ("Zoë", None, "An account with this name exists already."),
        ("Zoe two", "ZOE@EXAMPLE.ORG", "An account with this e-mail exists already."),
        ("", None, "The account name is empty; give it a name."),
        ("bell\x07", None, "The account name contains a control character (U+0007); names are plain text on one line."),
        ("x" * 201, None, "The account name has 201 characters; the limit is 200."),
        ("pat", "not-an-address", "'not-an-address' is not an e-mail address."),
        ("pat", "pat\x00@example.org", "'pat\\x00@example.org' is not an e-mail address."),
    ]:
        with pytest.raises(AccountError) as refused:
            accounts.add_account(store, name, "viewer", email=email)
        assert str(refused.value) == sentence
    assert store_rows(store) == before


def test_roles_are_checked_with_a_sentence(store):
    _, boss = owner(store)
    sam = accounts.add_account(store, "sam", "Reviewer")
    assert sam.role == "reviewer"
    before = store_rows(store)
    with pytest.raises(
        AccountError, match=r"^'boss' is not a role; the roles are viewer, reviewer, organiser, owner\.$"
    ):
        accounts.add_account(store, "pat", "boss")
    with pytest.raises(AccountError, match="is not a role"):
        accounts.set_role(store, sam.id, "admin")
    assert store_rows(store) == before


def test_passwords_need_eight_characters_and_long_ones_work(store):
    olivia, _ = owner(store)
    before = store_rows(store)
    with pytest.raises(AccountError, match=r"^A password needs at least 8 characters\.$"):
        accounts.add_account(store, "sam", "viewer", password="short")
    with pytest.raises(AccountError, match=r"^A password needs at least 8 characters\.$"):
        accounts.set_password(store, olivia.id, "1234567")
    assert store_rows(store) == before
    sam = accounts.add_account(store, "sam", "viewer", password=LONG)
    assert accounts.check_password(store, "sam", LONG).id == sam.id
    assert accounts.check_password(store, "sam", LONG[:72]) is None  # every byte counts, not bcrypt's first 72
    assert accounts.check_password(store, "sam", LONG + "x") is None
    accounts.set_password(store, sam.id, "é" * 50)  # 100 bytes
    assert accounts.check_password(store, "sam", "é" * 50).id == sam.id
    assert accounts.check_password(store, "sam", LONG) is None


def test_an_invitation_is_shown_once_works_once_and_is_replaced(store):
    owner(store)
    sam = accounts.add_account(store, "sam", "reviewer")
    token = accounts.invite(store, sam.id)
    with read_session(store) as session:
        row = session.get(Account, sam.id)
        assert row.invite_hash == hashlib.sha256(token.encode()).hexdigest()
        assert token not in repr(store_rows(store))  # only its sha256 is kept
    assert accounts.invitation_account(store, token).id == sam.id
    assert accounts.account(store, sam.id).invite_expires_at is not None
    newer = accounts.invite(store, sam.id)
    assert newer != token and accounts.invitation_account(store, token) is None  # replaced
    before = store_rows(store)
    with pytest.raises(
        AccountError, match=r"^This invitation link is not valid any more: ask an owner for a new one\.$"
    ):
        accounts.accept_invitation(store, token, "a good password")
    with pytest.raises(AccountError, match="at least 8 characters"):
        accounts.accept_invitation(store, newer, "short")
    assert store_rows(store) == before
    with access.acting_as(NOBODY):  # the person opening the link is not signed in
        done = accounts.accept_invitation(store, newer, "a good password")
    assert done.has_password and done.invite_expires_at is None and done.session_epoch == sam.session_epoch + 1
    assert accounts.check_password(store, "sam", "a good password").id == sam.id
    assert accounts.invitation_account(store, newer) is None
    with pytest.raises(AccountError, match="not valid any more"):
        accounts.accept_invitation(store, newer, "another password")  # works once
    assert accounts.check_password(store, "sam", "a good password") is not None


def test_an_invitation_expires(store):
    owner(store)
    sam = accounts.add_account(store, "sam", "viewer")
    token = accounts.invite(store, sam.id, hours=1)
    with write_session(store) as session:
        session.get(Account, sam.id).invite_expires_at = dt.datetime.now(dt.timezone.utc).replace(
            tzinfo=None
        ) - dt.timedelta(seconds=1)
    assert accounts.invitation_account(store, token) is None
    with pytest.raises(AccountError, match="not valid any more"):
        accounts.accept_invitation(store, token, "a good password")
    assert accounts.check_password(store, "sam", "a good password") is None


def test_no_invitation_for_an_unknown_or_disabled_account(store):
    owner(store)
    sam = accounts.add_account(store, "sam", "viewer")
    accounts.disable_account(store, sam.id)
    before = store_rows(store)
    with pytest.raises(AccountError, match=r"^There is no account 999\.$"):
        accounts.invite(store, 999)
    with pytest.raises(AccountError, match=r"^sam is disabled: enable the account first\.$"):
        accounts.invite(store, sam.id)
    assert store_rows(store) == before


def test_every_change_ends_the_sessions(store):
    olivia, _ = owner(store)
    sam = accounts.add_account(store, "sam", "viewer", password="a good password")
    epochs = [sam.session_epoch]
    fingerprints = {accounts.password_fingerprint(store, sam.id)}
    for change in (
        lambda: accounts.set_password(store, sam.id, "another password"),
        lambda: accounts.set_role(store, sam.id, "reviewer"),
        lambda: accounts.end_sessions(store, sam.id),
        lambda: accounts.disable_account(store, sam.id),
    ):
        change()
        epochs.append(accounts.account(store, sam.id).session_epoch)
        fingerprints.add(accounts.password_fingerprint(store, sam.id))
    assert epochs == sorted(set(epochs)) and len(epochs) == 5
    assert accounts.password_fingerprint(store, sam.id) is None  # disabled: no session at all
    with read_session(store) as session:
        actions = list(
            session.scalars(sa.select(Activity.action).where(Activity.subject_id == sam.id).order_by(Activity.id))
        )
    assert actions == ["account added", "password changed", "role changed", "sessions ended", "account disabled"]


def test_the_last_active_owner_stays(store):
    olivia, _ = owner(store)
    before = store_rows(store)
    sentence = r"^olivia is the only owner: make someone else an owner first\.$"
    with pytest.raises(AccountError, match=sentence):
        accounts.set_role(store, olivia.id, "organiser")
    with pytest.raises(AccountError, match=sentence):
        accounts.disable_account(store, olivia.id)
    assert store_rows(store) == before
    otto = accounts.add_account(store, "otto", "owner")
    accounts.disable_account(store, otto.id)  # a disabled owner does not count
    with pytest.raises(AccountError, match=sentence):
        accounts.set_role(store, olivia.id, "viewer")
    accounts.enable_account(store, otto.id)
    assert accounts.set_role(store, olivia.id, "viewer").role == "viewer"
    with pytest.raises(AccountError, match=r"^otto is the only owner"):
        accounts.disable_account(store, otto.id)


def test_check_password(store):
    owner(store)
    sam = accounts.add_account(store, "sam", "viewer", password="a good password")
    invited = accounts.add_account(store, "ivy", "viewer")  # no password yet
    assert accounts.check_password(store, "sam", "a good password").id == sam.id
    assert accounts.check_password(store, " sam\u200b", "a good password").id == sam.id  # the name as kept
    assert accounts.check_password(store, "sam", "a bad password") is None
    assert accounts.check_password(store, "nobody", "a good password") is None
    assert accounts.check_password(store, "ivy", "") is None and invited.id
    assert accounts.check_password(store, "", "a good password") is None
    accounts.disable_account(store, sam.id)
    assert accounts.check_password(store, "sam", "a good password") is None
    accounts.enable_account(store, sam.id)
    assert accounts.check_password(store, "sam", "a good password").id == sam.id


@pytest.mark.parametrize("how", ["plain", "hash"])
def test_the_admin_password_becomes_the_owner_admin(store, monkeypatch, how):
    assert accounts.ensure_owner_from_admin_password(store) is None  # nothing configured
    assert not accounts.accounts_in_force(store)
    if how == "plain":
        monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", LONG)
    else:  # docs/operations.md's one-liner, given a password of up to 72 bytes
        monkeypatch.setenv("PLUIE_ADMIN_PASSWORD_HASH", bcrypt.hashpw(b"the team password", bcrypt.gensalt()).decode())
    password = LONG if how == "plain" else "the team password"
    made = accounts.ensure_owner_from_admin_password(store)
    assert made.name == "admin" and made.role == "owner"
    assert accounts.check_password(store, "admin", password).id == made.id
    assert accounts.check_password(store, "admin", "something else") is None
    before = store_rows(store)
    assert accounts.ensure_owner_from_admin_password(store) is None  # accounts exist: nothing
    assert store_rows(store) == before


def test_no_admin_owner_when_the_store_has_accounts(store, monkeypatch):
    owner(store)
    monkeypatch.setenv("PLUIE_ADMIN_PASSWORD", "the team password")
    before = store_rows(store)
    assert accounts.ensure_owner_from_admin_password(store) is None
    assert store_rows(store) == before and accounts.account_by_name(store, "admin") is None


@pytest.mark.parametrize("role", ["viewer", "reviewer", "organiser"])
def test_only_an_owner_changes_accounts(store, role):
    olivia, _ = owner(store)
    sam = accounts.add_account(store, "sam", role, password="a good password")
    other = accounts.add_account(store, "tom", "viewer")
    actor = accounts.actor_for(sam)
    before = store_rows(store)
    sentence = f"sam is {with_article(role)}: only an owner or above can manage accounts."  # "an organiser" (issue 56)
    for change in (
        lambda: accounts.add_account(store, "new", "viewer"),
        lambda: accounts.invite(store, other.id),
        lambda: accounts.set_role(store, other.id, "owner"),
        lambda: accounts.set_role(store, sam.id, "owner"),  # not even one's own role
        lambda: accounts.set_password(store, other.id, "a new password"),
        lambda: accounts.disable_account(store, other.id),
        lambda: accounts.enable_account(store, other.id),
        lambda: accounts.end_sessions(store, olivia.id),
    ):
        with access.acting_as(actor), pytest.raises(NotAllowed) as refused:
            change()
        assert str(refused.value) == sentence
    assert store_rows(store) == before
    with access.acting_as(actor):  # one's own password and sessions: allowed
        accounts.set_password(store, sam.id, "my own password")
        accounts.end_sessions(store, sam.id)
    assert accounts.check_password(store, "sam", "my own password") is not None


# ---- the command line: python -m db accounts ... ----


def cli(monkeypatch, capsys, url, *args, stdin=""):
    import io

    from db.cli import main

    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["accounts", *args, "--db", url])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_line_adds_the_first_owner_through_python_m_db(store_url, tmp_path):
    import os
    import subprocess
    import sys

    from tests.paths import REPO

    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUIE_ADMIN")} | {"PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "db",
            "accounts",
            "add",
            "Olivia",
            "--role",
            "owner",
            "--password-stdin",
            "--db",
            store_url,
        ],
        input=LONG + "\n",
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == "added Olivia as owner\n"
    engine = init_db(store_url)
    try:
        olivia = accounts.check_password(engine, "Olivia", LONG)
        assert olivia is not None and olivia.role == "owner" and olivia.created_by == "command line"
        with read_session(engine) as session:
            assert session.scalar(sa.select(Activity.actor)) == "command line"
    finally:
        engine.dispose()


def test_the_command_line_manages_accounts(store, store_url, monkeypatch, capsys):
    assert (
        cli(
            monkeypatch,
            capsys,
            store_url,
            "add",
            "olivia",
            "--role",
            "owner",
            "--password-stdin",
            stdin="owner-password\n",
        )[0]
        == 0
    )
    code, out, err = cli(
        monkeypatch, capsys, store_url, "add", "sam", "--role", "Reviewer", "--email", "Sam@Example.org"
    )
    assert code == 0 and out == "" and "added sam as reviewer" in err
    code, out, err = cli(monkeypatch, capsys, store_url, "invite", "sam")
    assert code == 0 and out.startswith("/?invite=") and "shown only this once" in err
    token = out.strip().removeprefix("/?invite=")
    assert accounts.invitation_account(store, token).name == "sam"
    sam = accounts.account_by_name(store, "sam")
    assert sam.created_by == "command line" and sam.email == "sam@example.org"

    epoch = sam.session_epoch
    assert cli(monkeypatch, capsys, store_url, "role", "sam", "organiser")[0] == 0
    assert cli(monkeypatch, capsys, store_url, "password", "sam", stdin="sam's password\n")[0] == 0
    assert accounts.check_password(store, "sam", "sam's password").role == "organiser"
    assert cli(monkeypatch, capsys, store_url, "end-sessions", "sam")[0] == 0
    assert cli(monkeypatch, capsys, store_url, "disable", "sam")[0] == 0
    assert accounts.check_password(store, "sam", "sam's password") is None
    assert accounts.account(store, sam.id).session_epoch == epoch + 4
    code, out, _ = cli(monkeypatch, capsys, store_url, "list")
    assert code == 0
    assert out.splitlines() == [
        "olivia\t-\towner\tpassword\tcommand line\tactive",
        "sam\tsam@example.org\torganiser\tpassword, invitation waiting, provider "
        "(sam@example.org)\tcommand line\tdisabled",
    ]
    assert cli(monkeypatch, capsys, store_url, "enable", "sam")[0] == 0
    assert accounts.check_password(store, "sam", "sam's password") is not None
    with read_session(store) as session:
        assert set(session.scalars(sa.select(Activity.actor))) == {"command line"}


def test_command_line_mistakes_are_one_sentence_and_change_nothing(store, store_url, monkeypatch, capsys, tmp_path):
    owner(store)
    accounts.add_account(store, "sam", "viewer")
    before = store_rows(store)
    for args, stdin, sentence in [
        (
            ("add", "pat", "--role", "boss"),
            "",
            "'boss' is not a role; the roles are viewer, reviewer, organiser, owner.",
        ),
        (("add", "sam", "--role", "viewer"), "", "An account with this name exists already."),
        (("add", "pat", "--role", "viewer", "--password-stdin"), "short\n", "A password needs at least 8 characters."),
        (("add", "pat", "--role", "viewer", "--password-stdin"), "", "No password on stdin; nothing was changed."),
        (("role", "olivia", "viewer"), "", "olivia is the only owner: make someone else an owner first."),
        (("disable", "olivia"), "", "olivia is the only owner: make someone else an owner first."),
        (("role", "nobody", "viewer"), "", "No account 'nobody' in the store (its accounts: olivia, sam)."),
        (("password", "sam"), "short\n", "A password needs at least 8 characters."),
    ]:
        code, out, err = cli(monkeypatch, capsys, store_url, *args, stdin=stdin)
        assert (code, out, err) == (1, "", f"error: {sentence}\n"), args
    assert store_rows(store) == before
    missing = tmp_path / "nowhere" / "store.db"
    code, _, err = cli(monkeypatch, capsys, f"sqlite:///{missing}", "list")
    assert code == 1 and err == f"error: There is no store at {missing}: give its URL with --db (or PLUIE_DB_URL).\n"
    assert not missing.exists()


def test_passwords_are_hashed_at_the_configured_bcrypt_cost_and_old_hashes_keep_working(monkeypatch):
    """The suite hashes at cost 4 (tests/conftest.py); a deployment at bcrypt's 12 unless PLUIE_BCRYPT_ROUNDS
    says otherwise; a hash keeps its own cost, so a change of setting leaves every password working."""
    import bcrypt

    from lab.auth import bcrypt_hash, bcrypt_rounds

    monkeypatch.delenv("PLUIE_BCRYPT_ROUNDS")
    assert bcrypt_rounds() == 12
    made_at_12 = bcrypt_hash("correct horse battery")
    assert made_at_12.startswith("$2b$12$")
    monkeypatch.setenv("PLUIE_BCRYPT_ROUNDS", "10")
    made_at_10 = bcrypt_hash("correct horse battery")
    assert made_at_10.startswith("$2b$10$")
    for made in (made_at_12, made_at_10):
        assert bcrypt.checkpw(b"correct horse battery", made.encode())
        assert not bcrypt.checkpw(b"correct horse", made.encode())
    for wrong in ("3", "32", "twelve", "1e1"):
        monkeypatch.setenv("PLUIE_BCRYPT_ROUNDS", wrong)
        with pytest.raises(ValueError, match="PLUIE_BCRYPT_ROUNDS must be a whole number from 4 to 31"):
            bcrypt_hash("correct horse battery")


def test_a_refusal_and_the_command_line_say_an_organiser_not_a_organiser(store, store_url, capsys):
    """Issue 56, item 10: "a organiser" on the page and the command line."""
    from db.cli import main as db_main

    assert [with_article(r) for r in ("viewer", "reviewer", "organiser", "owner")] == [
        "a viewer",
        "a reviewer",
        "an organiser",
        "an owner",
    ]
    owner(store)  # past the first account, only an owner adds one
    with access.acting_as(Actor("olga", "organiser", 99)), pytest.raises(NotAllowed) as refused:
        accounts.add_account(store, "sam", "viewer")
    assert str(refused.value) == "olga is an organiser: only an owner or above can manage accounts."
    url = store_url
    assert db_main(["accounts", "add", "--db", url, "tom", "--role", "viewer"]) == 0
    assert db_main(["accounts", "role", "--db", url, "tom", "organiser"]) == 0
    assert "tom is now an organiser" in capsys.readouterr().err
