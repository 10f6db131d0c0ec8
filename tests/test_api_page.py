"""The API & webhooks page through the app (AppTest), signed in for real: a token shown once that then opens the
API, revoked from the page; a viewer sees no webhooks; an organiser registers one (its secret shown once), a bad
URL is a sentence and stores nothing; a store without accounts says how to get a token."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from db import accounts, api_tokens, webhooks
from db.access import acting_as
from lab.roles import OPEN
from tests.test_signin import APP, app_env, signed_in_on  # noqa: F401 - app_env: a fixture, used by name


def signed_in(engine, name: str, role: str) -> AppTest:
    return signed_in_on(engine, "pages/api_access.py", "API & webhooks", name, role)


def test_a_viewer_makes_a_token_shown_once_then_revokes_it(app_env):
    at = signed_in(app_env, "vera", "viewer")
    assert [s.value for s in at.subheader] == ["Your tokens"]  # no webhooks for a viewer
    at.text_input(key="token-name-0").input("my notebook")
    at.button[0].click().run()  # the form's submit button
    assert not at.exception and not at.error
    token = at.code[0].value
    assert token.startswith("pluie_") and "shown only once" in at.warning[-1].value
    vera = accounts.account_by_name(app_env, "vera")
    assert api_tokens.token_account(app_env, token) == (vera.id, "vera", "viewer")
    at.run()
    assert at.code[0].value == token  # until she says it is copied
    at.button(key="token-copied").click().run()
    assert not at.code
    table = at.dataframe[0].value
    assert table["name"].tolist() == ["my notebook"] and table["starts with"][0] == token[:10] + "…"
    assert token not in table.to_string()
    at.button(key="revoke-mine-button").click().run()
    assert api_tokens.token_account(app_env, token) is None
    assert at.dataframe[0].value["state"].tolist() == ["revoked"]


def test_an_organiser_registers_a_webhook_and_a_bad_url_is_a_sentence(app_env):
    at = signed_in(app_env, "otto", "organiser")
    assert [s.value for s in at.subheader] == ["Your tokens", "Webhooks"]
    at.text_input(key="hook-url-0").input("ftp://example.org/hook")
    at.multiselect(key="hook-events-0").select("run.finished")
    at.button[1].click().run()
    assert [e.value.replace("\u2060", "") for e in at.error] == [
        "A webhook's URL starts with http:// or https:// and names a host."
    ]
    with acting_as(OPEN):
        assert webhooks.list_webhooks(app_env) == []
    at.text_input(key="hook-url-0").input("https://example.org/hook")
    at.button[1].click().run()
    assert not at.error and at.code[0].value.startswith("whsec_")
    with acting_as(OPEN):
        [hook] = webhooks.list_webhooks(app_env)
    assert (hook.url, hook.events, hook.created_by) == ("https://example.org/hook", ("run.finished",), "otto")
    at.button(key="secret-copied").click().run()
    assert not at.code
    at.button(key="hook-remove").click().run()
    with acting_as(OPEN):
        assert not webhooks.list_webhooks(app_env)[0].active


def test_a_store_without_accounts_says_how_to_get_a_token(app_env):
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page("pages/api_access.py").run()
    assert not at.exception
    assert any("Tokens belong to accounts" in i.value for i in at.info)
