"""Issue 57, item 3, the store's half: what a signed-in person's pages keep for them, per account (db.kept,
migration 0018), on SQLite and on PostgreSQL. The pages' half (a restart, another account) is in
tests/test_kept_per_account.py."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import delete, func, select

from db import access, accounts, init_db, kept
from db.engine import read_session, write_session
from db.models import Account, Activity, KeptValue
from lab.roles import OPEN


@pytest.fixture
def store(store_url, monkeypatch):
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD", raising=False)
    monkeypatch.delenv("PLUIE_ADMIN_PASSWORD_HASH", raising=False)
    engine = init_db(store_url)
    yield engine
    engine.dispose()


def rows(engine, account_id: int) -> dict:
    """key -> (row id, JSON, updated_at) of the account's kept values, as stored."""
    with read_session(engine) as session:
        return {
            r.key: (r.id, r.value, r.updated_at)
            for r in session.scalars(select(KeptValue).where(KeptValue.account_id == account_id))
        }


def test_an_accounts_values_come_back_as_kept_and_only_a_changed_one_is_written(store, monkeypatch):
    sam = accounts.add_account(store, "sam", "owner", password="sam's password")
    values = {
        "reviewer": "Lena",
        "note-3": "two of three say same",
        "new-campaign-datasets": [(1, "demo", 20)],
        "new-campaign-quota": 7,
        "new-campaign-adaptive": True,
        "new-campaign-gold-min": None,
        "new-campaign-confidence": 0.8,
        "pluie_scope": {"campaign": 2, "datasets": None},
        "accent": "café ✓",
    }
    assert kept.kept_values(store, sam.id) == {}
    written = kept.keep_values(store, sam.id, values)
    assert set(written) == set(values) and written["new-campaign-datasets"] == '[[1,"demo",20]]'
    assert kept.kept_values(store, sam.id) == {
        **values,
        "new-campaign-datasets": [[1, "demo", 20]],
    }  # a tuple reads as a list

    before = rows(store, sam.id)
    later = dt.datetime(2031, 1, 1)
    monkeypatch.setattr(kept, "utcnow", lambda: later)
    kept.keep_values(store, sam.id, {"reviewer": "Lena", "note-3": "two of three say same meaning", "quota": 8})
    after = rows(store, sam.id)
    assert after["reviewer"] == before["reviewer"]  # the same value: not written again
    assert after["note-3"][0] == before["note-3"][0] and after["note-3"][1:] == (
        '"two of three say same meaning"',
        later,
    )
    assert after["quota"][1:] == ("8", later)
    assert kept.kept_values(store, sam.id)["note-3"] == "two of three say same meaning"

    kept.drop_values(store, sam.id, ["note-3", "quota", "never-kept"])
    assert set(kept.kept_values(store, sam.id)) == set(values) - {"note-3"}


def test_what_cannot_be_kept_is_left_out_without_an_error(store):
    from db.limits import KEPT_KEY_LENGTH, KEPT_VALUE_LENGTH

    sam = accounts.add_account(store, "sam", "owner", password="sam's password")
    refused = {
        "a-date": dt.date(2026, 12, 7),
        "nan": float("nan"),
        "k" * (KEPT_KEY_LENGTH + 1): "long key",
        "nul\x00key": "x",
        "huge": "x" * KEPT_VALUE_LENGTH,
        "surrogate": "a\ud800b",
        "object": object(),
    }
    assert kept.keep_values(store, sam.id, {**refused, "fits": "x" * (KEPT_VALUE_LENGTH - 2)}) == {
        "fits": '"' + "x" * (KEPT_VALUE_LENGTH - 2) + '"'
    }
    assert set(kept.kept_values(store, sam.id)) == {"fits"}
    assert kept.keep_values(store, sam.id, refused) == {}
    assert kept.keep_values(store, 9999, {"reviewer": "Lena"}) == {}  # no such account: nothing kept, no error
    assert kept.kept_values(store, 9999) == {}


def test_each_account_has_its_own_and_they_go_with_the_account(store):
    sam = accounts.add_account(store, "sam", "owner", password="sam's password")
    vic = accounts.add_account(store, "vic", "viewer", password="vic's password")
    # the person's own memory: no role check (a viewer keeps theirs) and no line in the activity log, whoever
    # the process says writes; nothing installed at all does not stop it either
    with access.acting_as(accounts.actor_for(vic)):
        kept.keep_values(store, vic.id, {"reviewer": "Vic", "pluie_scope": {"campaign": None, "datasets": [1]}})
    access.install(None)
    kept.keep_values(store, sam.id, {"reviewer": "Sam"})
    access.install_actor(OPEN)
    assert kept.kept_values(store, sam.id) == {"reviewer": "Sam"}
    assert kept.kept_values(store, vic.id) == {"reviewer": "Vic", "pluie_scope": {"campaign": None, "datasets": [1]}}
    kept.drop_values(store, sam.id, ["reviewer", "pluie_scope"])
    assert kept.kept_values(store, sam.id) == {} and kept.kept_values(store, vic.id)["reviewer"] == "Vic"
    with read_session(store) as session:
        assert not session.scalar(select(func.count()).select_from(Activity).where(Activity.action.like("%kept%")))
        logged = session.scalar(select(func.count()).select_from(Activity))
    kept.keep_values(store, sam.id, {"reviewer": "Sam again"})
    with read_session(store) as session:
        assert session.scalar(select(func.count()).select_from(Activity)) == logged
    with write_session(store) as session:  # accounts are disabled, not deleted, by the app: the rows go all the same
        session.execute(delete(Account).where(Account.id == vic.id))
    assert kept.kept_values(store, vic.id) == {} and rows(store, vic.id) == {}
    assert kept.kept_values(store, sam.id) == {"reviewer": "Sam again"}


def test_an_account_keeps_the_most_recently_written_values_past_its_bound(store, monkeypatch):
    sam = accounts.add_account(store, "sam", "owner", password="sam's password")
    monkeypatch.setattr(kept, "KEPT_KEYS", 3)
    for day in range(1, 6):
        monkeypatch.setattr(kept, "utcnow", lambda day=day: dt.datetime(2030, 1, day))
        kept.keep_values(store, sam.id, {f"note-{day}": f"draft {day}"})
    monkeypatch.setattr(kept, "utcnow", lambda: dt.datetime(2030, 2, 1))
    kept.keep_values(store, sam.id, {"note-3": "draft 3, again"})  # written last: kept
    monkeypatch.setattr(kept, "utcnow", lambda: dt.datetime(2030, 2, 2))
    kept.keep_values(store, sam.id, {"note-6": "draft 6"})
    assert kept.kept_values(store, sam.id) == {"note-3": "draft 3, again", "note-5": "draft 5", "note-6": "draft 6"}


def test_the_migrations_make_the_schema_of_the_models(store):
    """Migration 0018 and db.models.KeptValue say the same (and so does every other table): Alembic's
    autogenerate finds nothing to add, drop or change on a store brought to the newest revision."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    from db.models import Base

    assert "kept_values" in Base.metadata.tables
    with store.connect() as connection:
        differences = compare_metadata(
            MigrationContext.configure(connection, opts={"compare_type": True}), Base.metadata
        )
    assert differences == []
