"""Sign-in with the team's identity provider (ui.access.provider_signin), without a browser: which [auth]
secrets make a provider, and which account the provider's claims sign in as. The browser flow against
a real OpenID provider is tests/test_browser_provider_signin.py."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from db import init_db
from db.access import acting_as
from db.accounts import actor_for, add_account, disable_account
from ui.access.provider_signin import Provider, account_for_claims, providers_in

SHARED = {"redirect_uri": "http://localhost:8501/oauth2callback", "cookie_secret": "a long random secret for tests"}
CLIENT = {
    "client_id": "pluie",
    "client_secret": "s3cret",
    "server_metadata_url": "http://localhost:9400/.well-known/openid-configuration",
}


def test_providers_in_reads_the_default_and_named_sections():
    assert providers_in({**SHARED, **CLIENT}) == [Provider(None, "your identity provider")]
    assert providers_in({**SHARED, **CLIENT, "provider_name": "Team SSO"}) == [Provider(None, "Team SSO")]
    assert providers_in({**SHARED, "okta": CLIENT, "google": {**CLIENT, "provider_name": "Google"}}) == [
        Provider("okta", "okta"),
        Provider("google", "Google"),
    ]


@pytest.mark.parametrize(
    "auth",
    [
        None,
        "text",
        {},
        dict(CLIENT),  # no secrets, or no [auth] section, or no shared settings
        {**SHARED, "client_id": "pluie"},  # the client's settings incomplete
        {**CLIENT, "redirect_uri": SHARED["redirect_uri"]},  # no cookie_secret
        {**CLIENT, **SHARED, "redirect_uri": "http://localhost:8501/"},  # Streamlit answers on /oauth2callback only
        {**SHARED, "my_idp": CLIENT},  # st.login refuses a name with "_"
        {**SHARED, "client_kwargs": {"prompt": "login"}},  # a mapping that is no provider
    ],
)
def test_providers_in_refuses_what_st_login_cannot_use(auth):
    assert providers_in(auth) == []


SCRIPT = """
import streamlit as st
from db import init_db
from ui.access.provider_signin import provider_account, provider_button, provider_configured, provider_refusal

st.write(f"configured: {provider_configured()}")
provider_button()
found = provider_account(init_db(st.session_state["url"]))
st.write(f"account: {found.name if found else None}")
st.write(f"refusal: {provider_refusal()}")
"""


def _app(url: str, secrets: dict | None = None, user: dict | None = None) -> AppTest:
    app = AppTest.from_string(SCRIPT, default_timeout=30)
    app.session_state["url"] = url
    if secrets is not None:
        app.secrets = secrets
    if user is not None:
        app.user = user
    return app.run()


def _texts(app: AppTest) -> list[str]:
    return [element.value for element in app.markdown]


def test_without_secrets_no_provider_and_nobody_signed_in(sqlite_url):
    app = _app(sqlite_url, user={})
    assert not app.exception
    assert _texts(app) == ["configured: False", "account: None", "refusal: None"]
    assert not app.button


def test_the_provider_button_and_the_account_of_a_verified_email(store_url):
    engine = init_db(store_url)
    owner = add_account(engine, "olive", "owner", password="long enough")
    with acting_as(actor_for(owner)):
        add_account(engine, "sam", "reviewer", email="Sam@Example.org")
    secrets = {"auth": {**SHARED, **CLIENT, "provider_name": "Team SSO"}}
    app = _app(
        store_url,
        secrets,
        user={
            "is_logged_in": True,
            "provider": "default",
            "email": "SAM@example.org",
            "email_verified": True,
            "name": "Sam",
        },
    )
    assert not app.exception
    assert [button.label for button in app.button] == ["Sign in with Team SSO"]
    assert _texts(app) == ["configured: True", "account: sam", "refusal: None"]
    # signed in at the provider with an e-mail no account has: no account, and the sentence
    app.user = {"is_logged_in": True, "provider": "default", "email": "eve@example.org", "email_verified": True}
    app.run()
    assert _texts(app)[1:] == [
        "account: None",
        "refusal: Signed in at Team SSO as eve@example.org, but no account "
        "of this team has that e-mail: ask an owner to add you.",
    ]


def test_which_claims_sign_in_as_an_account(store_url):
    engine = init_db(store_url)
    owner = add_account(engine, "olive", "owner", password="long enough")
    with acting_as(actor_for(owner)):
        sam = add_account(engine, "sam", "reviewer", email="sam@example.org")
        gone = add_account(engine, "gone", "viewer", email="gone@example.org")
        disable_account(engine, gone.id)

    def account(**claims):
        found, refusal = account_for_claims(engine, claims, "Okta")
        assert (found is None) != (refusal is None)
        return found.name if found else refusal

    assert account(email="sam@example.org", email_verified=True) == "sam"
    assert account(email=" Sam@EXAMPLE.org ") == "sam"  # no email_verified claim: the provider's word is the e-mail
    assert (
        account(email="sam@example.org", email_verified=False)
        == account(email="sam@example.org", email_verified="false")
        == (
            "Signed in at Okta as sam@example.org, but your e-mail is not verified there: verify it at the provider, "
            "then sign in again."
        )
    )
    # the claim's truth read properly (issue 56): "no", "0", 0, "" and the like are not verified
    for untrue in ("no", "No", "0", 0, "", "unverified", [True]):
        assert account(email="sam@example.org", email_verified=untrue).startswith(
            "Signed in at Okta as sam@example.org, but your e-mail is not verified"
        ), untrue
    for true in ("true", "TRUE", " yes ", "1", 1):
        assert account(email="sam@example.org", email_verified=true) == "sam", true
    assert account(email="eve@example.org", email_verified=True) == (
        "Signed in at Okta as eve@example.org, but no account of this team has that e-mail: ask an owner to add you."
    )
    assert account(email="gone@example.org") == (
        "Signed in at Okta as gone@example.org, but the account gone is disabled: ask an owner to enable it."
    )
    assert account(name="Sam", sub="123") == (
        "Signed in at Okta, but it did not give your e-mail, so no account of this team can be found: ask an owner "
        "to check the provider's settings."
    )
    # the provider chooses nothing: the account's role is the store's
    assert account_for_claims(engine, {"email": "sam@example.org", "role": "owner"})[0].role == sam.role == "reviewer"
