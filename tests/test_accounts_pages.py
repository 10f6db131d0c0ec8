"""The Accounts page and the invitation page through the app (AppTest), signed in for real
(issue 39, helper C): on the Accounts page an owner adds a person and sees the invitation link once, changes a
role, is refused demoting the last owner; the invitation page (?invite=<token>) sets the password with a real
invitation and gives a bad link its sentence."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from db import access, accounts
from lab.roles import OPEN
from tests.test_signin import APP, app_env  # noqa: F401 - app_env: a fixture, used by name


def accounts_page(engine) -> AppTest:
    """The Accounts page, signed in through the app's own form as olga, the store's owner."""
    accounts.add_account(engine, "olga", "owner", password="olga's password")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/accounts.py").run()
    at.text_input[0].input("olga")
    at.text_input[1].input("olga's password")
    at.button[0].click().run()
    assert not at.exception and at.title[0].value == "Accounts", [t.value for t in at.title]
    return at


def test_adding_a_person_shows_their_invitation_link_once(app_env):
    at = accounts_page(app_env)
    at.text_input(key="add-name-0").input("sam")
    at.selectbox(key="add-role-0").set_value("reviewer")
    at.text_input(key="add-email-0").input("Sam@Example.org")
    at.button[0].click().run()  # the form's submit button
    assert not at.exception and not at.error
    link = at.code[0].value
    assert link.startswith("/?invite=")
    assert "shown only once" in at.warning[0].value
    sam = accounts.invitation_account(app_env, link.removeprefix("/?invite="))
    assert (sam.name, sam.role, sam.email, sam.created_by) == ("sam", "reviewer", "sam@example.org", "olga")
    names = at.dataframe[0].value["name"].tolist()
    assert names == ["olga", "sam"]
    at.run()
    assert at.code[0].value == link  # until they say it is copied
    at.button(key="link-copied").click().run()
    assert not at.code and not at.warning
    at.run()
    assert not at.code  # never again
    assert at.text_input(key="add-name-1").value == ""  # the form is empty for the next person


def test_a_refused_addition_is_one_sentence_and_keeps_the_form(app_env):
    at = accounts_page(app_env)
    at.text_input(key="add-name-0").input("olga")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["An account with this name exists already."]
    assert not at.code and len(accounts.list_accounts(app_env)) == 1


def test_changing_a_role_and_the_last_owner_refusal(app_env):
    at = accounts_page(app_env)
    # the app ran in this process and installed its writer (db.access): the test's own change is the operator's
    with access.acting_as(OPEN):
        sam = accounts.add_account(app_env, "sam", "viewer", password="sam's password")
    olga = accounts.account_by_name(app_env, "olga")
    at.run()
    at.selectbox(key="chosen-account").select_index(1)  # sam (the accounts by name)
    at.run()
    at.selectbox(key=f"role-{sam.id}").set_value("organiser")
    at.button(key=f"set-role-{sam.id}").click().run()
    assert not at.exception and not at.error
    assert [s.value for s in at.success] == ["The role of sam is now organiser; their sessions ended."]
    assert accounts.account(app_env, sam.id).role == "organiser"

    at.selectbox(key="chosen-account").select_index(0)  # olga, the only owner
    at.run()
    at.selectbox(key=f"role-{olga.id}").set_value("viewer")
    at.button(key=f"set-role-{olga.id}").click().run()
    assert [e.value for e in at.error] == ["olga is the only owner: make someone else an owner first."]
    assert accounts.account(app_env, olga.id).role == "owner"
    at.button(key=f"disable-{olga.id}").click().run()
    assert [e.value for e in at.error] == ["olga is the only owner: make someone else an owner first."]
    assert accounts.account(app_env, olga.id).active


def invitation(token: str) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["invite"] = token
    return at.run()


def test_the_invitation_page_sets_the_password(app_env):
    olga = accounts.add_account(app_env, "olga", "owner", password="olga's password")
    with access.acting_as(accounts.actor_for(olga)):
        sam = accounts.add_account(app_env, "sam", "reviewer")
        token = accounts.invite(app_env, sam.id)
    at = invitation(token)
    assert not at.exception and not at.error
    assert "sam" in at.markdown[0].value and "reviewer" in at.markdown[0].value
    assert [t.label for t in at.text_input] == ["Password", "The same password again"]
    at.text_input[0].input("sam's new password")
    at.text_input[1].input("sam's other password")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["The two passwords differ: type the same one twice."]
    assert accounts.invitation_account(app_env, token) is not None
    at.text_input[0].input("short")
    at.text_input[1].input("short")
    at.button[0].click().run()
    assert [e.value for e in at.error] == ["A password needs at least 8 characters."]
    at.text_input[0].input("sam's new password")
    at.text_input[1].input("sam's new password")
    at.button[0].click().run()
    assert not at.exception and not at.error
    assert [s.value for s in at.success] == ["Your password is set: sign in as sam."]
    assert accounts.check_password(app_env, "sam", "sam's new password").id == sam.id
    again = invitation(token)  # the link worked once
    assert [e.value for e in again.error] == [
        "This invitation link is not valid (it was used, replaced by a newer one, or has expired): ask an owner "
        "for a new one."
    ]
    assert not again.text_input


def test_a_bad_invitation_link_says_so(app_env):
    accounts.add_account(app_env, "olga", "owner", password="olga's password")
    at = invitation("not-a-token")
    assert not at.exception
    assert [e.value for e in at.error] == [
        "This invitation link is not valid (it was used, replaced by a newer one, or has expired): ask an owner "
        "for a new one."
    ]
    assert not at.text_input  # no sign-in form either
