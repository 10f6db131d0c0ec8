"""Sign in with the team's identity provider, for real: an OpenID provider (oidc-provider-mock, a real
OIDC server: discovery, authorization form, token endpoint, signed ID tokens) runs on localhost, the
app's secrets point st.login at it, and Chromium clicks "Sign in with …", fills the provider's form and
comes back to the app signed in as the account with that e-mail; an e-mail no account has gets the
sentence, not an account.

The app is the real one (tests/browser.start_app), its secrets file named by STREAMLIT_SECRETS_FILES."""

from __future__ import annotations

from urllib.parse import quote

import httpx
import pytest

from db.access import acting_as
from db.accounts import actor_for, add_account
from tests.browser import ARTIFACTS, start_app, stop_app, wait_for_app

pytestmark = pytest.mark.browser
oidc_provider_mock = pytest.importorskip("oidc_provider_mock")

SECRETS = """
[auth]
redirect_uri = "http://127.0.0.1:{{port}}/oauth2callback"
cookie_secret = "a cookie secret only this test knows, long enough"
provider_name = "Team SSO"
client_id = "pluie-lab"
client_secret = "pluie-lab-secret"
server_metadata_url = "{issuer}/.well-known/openid-configuration"
"""


@pytest.fixture
def oidc_issuer():
    with oidc_provider_mock.run_server_in_thread() as server:
        yield f"http://localhost:{server.server_port}"


def _shown(page, text: str, timeout: float = 30_000) -> None:
    """Wait until the page shows ``text`` (user_text puts invisible word joiners after '@')."""
    page.wait_for_function(
        "t => document.body.innerText.replaceAll('\\u2060', '').includes(t)", arg=text, timeout=timeout
    )


def _sign_in_at_provider(page, app_url: str, email: str) -> None:
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_role("button", name="Sign in with Team SSO").click()
    page.get_by_placeholder("sub").fill(email)  # the provider's own authorization form
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{app_url}/**")
    wait_for_app(page)


def test_sign_in_with_the_provider_maps_the_email_to_an_account(db_url, engine, tmp_path, oidc_issuer, browser):
    owner = add_account(engine, "olive", "owner", password="long enough")
    with acting_as(actor_for(owner)):
        add_account(engine, "sam", "reviewer", email="Sam@Example.org")
    engine.dispose()
    for sub in ("sam@example.org", "eve@example.org"):  # the provider vouches for both e-mails
        response = httpx.put(f"{oidc_issuer}/users/{quote(sub)}", json={"email": sub, "email_verified": True})
        assert response.status_code == 204

    secrets = tmp_path / "secrets.toml"
    secrets.write_text(SECRETS.format(issuer=oidc_issuer))
    server = start_app(db_url, tmp_path / "streamlit.log", extra_env={"STREAMLIT_SECRETS_FILES": str(secrets)})
    page = browser.new_page()
    try:
        _sign_in_at_provider(page, server.url, "sam@example.org")
        _shown(page, "Signed in as sam (reviewer)")
        page.get_by_role("button", name="Log out").click()  # ends the provider's sign-in too (st.logout)
        end = page.get_by_role("button", name="End session")  # the provider asks before it ends its own
        end.wait_for(timeout=30_000)
        end.click()
        page.get_by_role("button", name="Sign in with Team SSO").wait_for(timeout=30_000)
        assert "Signed in as" not in page.inner_text("body")

        other = browser.new_page()  # a browser of its own: no cookie from sam's sign-in
        _sign_in_at_provider(other, server.url, "eve@example.org")
        _shown(
            other,
            "Signed in at Team SSO as eve@example.org, but no account of this team has that e-mail: "
            "ask an owner to add you.",
        )
        assert "Signed in as" not in other.inner_text("body")  # still the sign-in form, for nobody
        other.get_by_role("button", name="Sign in with Team SSO").wait_for(timeout=10_000)
    except Exception:
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "provider-signin-failure.png"), full_page=True)
        for seen in page.context.pages[1:]:
            seen.screenshot(path=str(ARTIFACTS / "provider-signin-failure-other.png"), full_page=True)
        raise
    finally:
        stop_app(server)
