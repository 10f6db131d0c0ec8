"""Why a person cannot sign in or was signed out (issue 56, item 8): a disabled account with its right
password is told it is disabled (a wrong password still reads "Wrong account or password", so a guesser learns
nothing more), and a session ended by a changed role, a new password or a disabled account says which, on the
sign-in form, instead of showing the form without a word."""

from __future__ import annotations

from db import access, accounts
from tests.test_signin import app_env, labels, sign_in, start  # noqa: F401 (the app on this test's store)
from ui.access.signin import DISABLED


def warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_a_disabled_account_is_told_so_only_with_its_right_password(app_env):
    olga = accounts.add_account(app_env, "olga", "owner", password="olga's password")
    dan = accounts.add_account(app_env, "dan", "viewer", password="dan's password")
    with access.acting_as(accounts.actor_for(olga)):
        accounts.disable_account(app_env, dan.id)
    at = sign_in(start(), "dan", "not dan's password")
    assert [e.value for e in at.error] == ["Wrong account or password."]
    sign_in(at, "dan", "dan's password")
    assert [e.value for e in at.error] == [DISABLED] == ["This account is disabled: ask an owner to enable it."]
    assert labels(at) == ["Account", "Password"]  # not signed in
    assert accounts.check_password(app_env, "dan", "dan's password") is None  # still no sign-in for it


def test_a_session_ended_by_an_owner_says_why(app_env):
    olga = accounts.add_account(app_env, "olga", "owner", password="olga's password")
    sam = accounts.add_account(app_env, "sam", "viewer", password="sam's password")
    at = sign_in(start(), "sam", "sam's password")
    assert labels(at) == [] and not warnings(at)
    with access.acting_as(accounts.actor_for(olga)):
        accounts.set_role(app_env, sam.id, "organiser")  # promoted
    at.run()
    assert labels(at) == ["Account", "Password"]
    assert warnings(at) == ["An owner changed your role from viewer to organiser, which signed you out: sign in again."]
    sign_in(at, "sam", "sam's password")
    assert (
        labels(at) == []
        and not warnings(at)
        and "Signed in as sam (organiser)" in [c.value for c in at.sidebar.caption]
    )

    with access.acting_as(accounts.actor_for(olga)):
        accounts.end_sessions(app_env, sam.id)
    at.run()
    assert warnings(at) == [
        "Your sign-in was ended (a log-out in another tab, a new password, or an owner ended your "
        "sessions): sign in again."
    ]
    sign_in(at, "sam", "sam's password")
    with access.acting_as(accounts.actor_for(olga)):
        accounts.disable_account(app_env, sam.id)
    at.run()
    assert warnings(at) == ["An owner has disabled your account, which signed you out: ask an owner to enable it."]
