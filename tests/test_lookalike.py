"""Account names that read the same are one name (issue 56, item 3). "sam", "Sam" and a Cyrillic "ѕam"
(U+0455) were three accounts before; now the second and third are refused with a sentence, and signing in as
"Sam" finds "sam" (lab.lookalike: UTS #39's skeleton over Unicode's confusables.txt)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from db import access, accounts
from db.accounts import AccountError
from db.engine import read_session
from db.models import Account
from lab.lookalike import DATA, name_key, skeleton
from tests.test_accounts import store  # noqa: F401 - a fixture, used by name


def test_skeleton_follows_unicode_confusables():
    # UTS #39's own examples and the issue's: each pair is confusable, so their skeletons are equal
    assert skeleton("ѕam") == skeleton("sam")  # U+0455 CYRILLIC SMALL LETTER DZE
    assert skeleton("раураl") == skeleton("paypal")  # Cyrillic р, а, у
    assert skeleton("rn") == skeleton("m")
    assert skeleton("l") == skeleton("I") == skeleton("1")
    # and names that read differently stay apart
    assert skeleton("sam") != skeleton("sad") and skeleton("mark") != skeleton("marc")


def test_the_data_is_unicodes_file_whole():
    text = DATA.read_text(encoding="utf-8")
    assert "confusables.txt" in text.splitlines()[0] and "Unicode" in text
    rows = [line for line in text.splitlines() if line and not line.startswith("#")]
    assert len(rows) > 6000  # every mapping of version 13.0.0, not a hand-picked few


@pytest.mark.parametrize("other", ["Sam", "SAM", "ѕam", "S\u200bam", " sam ", "Ｓａｍ"])
def test_names_that_read_as_sam_share_a_key(other):
    assert name_key(other) == name_key("sam")


@pytest.mark.parametrize("other", ["sam2", "samuel", "pam", "s am"])
def test_names_that_read_differently_keep_their_own_key(other):
    assert name_key(other) != name_key("sam")


def test_an_account_that_reads_as_another_is_refused_and_the_store_is_unchanged(store):
    with access.acting_as(
        accounts.actor_for(accounts.add_account(store, "olivia", "owner", password="owner-password"))
    ):
        accounts.add_account(store, "sam", "reviewer", password="sam-password")
        with read_session(store) as session:
            before = session.scalars(sa.select(Account.name).order_by(Account.id)).all()
        for other in ("Sam", "ѕam", "SAM"):
            with pytest.raises(AccountError) as refused:
                accounts.add_account(store, other, "viewer")
            assert str(refused.value) == (
                f"An account named “sam” exists already, and “{other}” reads the same "
                "(letter case and look-alike letters aside): choose another name."
            )
        accounts.add_account(store, "samuel", "viewer")  # a different name is welcome
    with read_session(store) as session:
        assert session.scalars(sa.select(Account.name).order_by(Account.id)).all() == [*before, "samuel"]


def test_signing_in_by_a_name_that_reads_the_same_finds_the_account(store):
    with access.acting_as(
        accounts.actor_for(accounts.add_account(store, "olivia", "owner", password="owner-password"))
    ):
        sam = accounts.add_account(store, "sam", "reviewer", password="sam-password")
    for typed in ("sam", "Sam", "ѕam"):
        assert accounts.account_by_name(store, typed).id == sam.id
        assert accounts.check_password(store, typed, "sam-password").id == sam.id
    assert accounts.check_password(store, "Sam", "wrong-password") is None
    assert accounts.account_by_name(store, "pam") is None


def test_two_such_accounts_from_before_folding_each_sign_in_by_their_own_name(store):
    with access.acting_as(
        accounts.actor_for(accounts.add_account(store, "olivia", "owner", password="owner-password"))
    ):
        sam = accounts.add_account(store, "sam", "reviewer", password="sam-password")
    # a store from before names were folded: "Sam" written past the check
    with store.begin() as connection:
        connection.execute(sa.insert(Account).values(name="Sam", role="viewer", created_at=sa.func.now()))
    assert accounts.account_by_name(store, "sam").id == sam.id
    assert accounts.account_by_name(store, "Sam").name == "Sam"
    assert accounts.account_by_name(store, "SAM") is None  # two read the same and neither is the name: no guess
