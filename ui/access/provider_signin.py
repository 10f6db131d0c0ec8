"""Sign in with the team's identity provider: OpenID Connect through Streamlit's st.login / st.user.

The provider is configured in Streamlit's secrets file (`.streamlit/secrets.toml`, docs/accounts.md):
an ``[auth]`` section with ``redirect_uri`` (ending in /oauth2callback) and ``cookie_secret``, and the
client's ``client_id``, ``client_secret`` and ``server_metadata_url`` either in ``[auth]`` itself or in a
named section ``[auth.<name>]``; an optional ``provider_name`` says how the button names it.

The provider only says who a person is. Their e-mail, when the provider vouches for it (its
``email_verified`` is not false), is matched to the e-mail of an active account an owner added
(db.accounts.add_account(..., email=...)); the account's role is read from the store on every run. The
provider never creates an account or chooses a role.

ui.access.signin calls these: provider_configured, provider_button, provider_account, provider_refusal,
provider_log_out. account_for_claims and providers_in are the same rules without Streamlit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

import streamlit as st

from db.accounts import AccountInfo, account_by_email

__all__ = [
    "Provider",
    "providers_in",
    "configured_providers",
    "provider_configured",
    "provider_button",
    "account_for_claims",
    "provider_account",
    "provider_refusal",
    "provider_log_out",
]

SIGNIN_LOG = logging.getLogger("pluie_lab.signin")
CLIENT_KEYS = ("client_id", "client_secret", "server_metadata_url")
CALLBACK_PATH = "/oauth2callback"  # Streamlit's fixed route for the provider's answer
UNNAMED = "your identity provider"
_REFUSAL = "_pluie_provider_refusal"


@dataclass(frozen=True)
class Provider:
    """One provider of the secrets' [auth] section. ``key``: what st.login is given (None: the
    settings of [auth] itself); ``label``: how the button and the sentences name it."""

    key: Optional[str]
    label: str


def _complete(section: Mapping) -> bool:
    return all(str(section.get(key) or "").strip() for key in CLIENT_KEYS)


def providers_in(auth: object) -> list[Provider]:
    """The usable providers of an [auth] section (a mapping, as read from the secrets file): none
    without a redirect_uri ending in /oauth2callback and a cookie_secret, then [auth] itself when it
    holds the client's three settings, and each [auth.<name>] that does (a name with "_" is one
    Streamlit cannot log in with, so it is left out)."""
    if not isinstance(auth, Mapping):
        return []
    redirect_uri = str(auth.get("redirect_uri") or "")
    if not redirect_uri.endswith(CALLBACK_PATH) or not str(auth.get("cookie_secret") or ""):
        SIGNIN_LOG.warning(
            "the [auth] secrets need a redirect_uri ending in %s and a cookie_secret: no provider sign-in",
            CALLBACK_PATH,
        )
        return []
    found = []
    if _complete(auth):
        found.append(Provider(None, str(auth.get("provider_name") or UNNAMED)))
    for key, section in auth.items():
        if isinstance(section, Mapping) and _complete(section) and "_" not in key:
            found.append(Provider(key, str(section.get("provider_name") or key)))
    return found


def configured_providers() -> list[Provider]:
    """The providers of this app's secrets; none when there is no secrets file, no [auth] section, or
    Authlib (which st.login needs) is not installed."""
    try:
        auth = st.secrets["auth"]
    except (KeyError, FileNotFoundError):  # no secrets file, an unreadable one, or no [auth] in it
        return []
    from ui.base.private_api import authlib_installed

    if not authlib_installed():
        SIGNIN_LOG.warning("[auth] is configured but Authlib is not installed: no provider sign-in")
        return []
    return providers_in(auth)


def provider_configured() -> bool:
    """True when the secrets name a provider people can sign in with."""
    return bool(configured_providers())


def provider_button() -> None:
    """A "Sign in with <provider>" button for each configured provider; a click leaves for the
    provider's sign-in page, which sends the browser back to the app signed in (st.user)."""
    for provider in configured_providers():
        if st.button(f"Sign in with {provider.label}", key=f"provider-signin-{provider.key or 'default'}"):
            st.login(provider.key)


def _label(provider_key: object) -> str:
    for provider in configured_providers():
        if (provider.key or "default") == (provider_key or "default"):
            return provider.label
    return UNNAMED


VERIFIED_TEXT = ("true", "1", "yes")


def _not_verified(value: object) -> bool:
    """The provider does not vouch for the e-mail: an ``email_verified`` claim that is not true. Some send it
    as text or a number: only "true", "1", "yes" (any case) and 1 are true; "no", "0", "", 0 or anything
    else is not. A claim left out (None) is the provider's word that the e-mail is the person's."""
    if value is None:
        return False
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value != 1
    if isinstance(value, str):
        return value.strip().lower() not in VERIFIED_TEXT
    return True


def account_for_claims(engine, claims: Mapping, provider: str = UNNAMED) -> tuple[Optional[AccountInfo], Optional[str]]:
    """The account the provider's claims (st.user's) sign in as, or None and the sentence saying why
    not: no e-mail, an e-mail the provider does not vouch for, no account of the team with it, or a
    disabled account. ``provider``: how the sentences name the provider."""
    email = str(claims.get("email") or "").strip()
    if not email:
        return None, (
            f"Signed in at {provider}, but it did not give your e-mail, so no account of this team "
            "can be found: ask an owner to check the provider's settings."
        )
    if _not_verified(claims.get("email_verified")):
        return None, (
            f"Signed in at {provider} as {email}, but your e-mail is not verified there: verify it "
            "at the provider, then sign in again."
        )
    found = account_by_email(engine, email.lower())
    if found is None:
        return None, (
            f"Signed in at {provider} as {email}, but no account of this team has that e-mail: ask an owner to add you."
        )
    if not found.active:
        return None, (
            f"Signed in at {provider} as {email}, but the account {found.name} is disabled: ask an owner to enable it."
        )
    return found, None


def provider_account(engine) -> Optional[AccountInfo]:
    """The account of the person st.user says is signed in at the provider, None when nobody is or no
    active account has their verified e-mail (provider_refusal then says why)."""
    user = st.user.to_dict()
    if not user.get("is_logged_in"):
        st.session_state.pop(_REFUSAL, None)
        return None
    found, refusal = account_for_claims(engine, user, _label(user.get("provider")))
    if refusal is None:
        st.session_state.pop(_REFUSAL, None)
    else:
        st.session_state[_REFUSAL] = refusal
    return found


def provider_refusal() -> Optional[str]:
    """Why the last provider_account of this session found no account for a person signed in at the
    provider (a sentence quoting their e-mail: show it through ui.base.page.user_text), else None."""
    if not st.user.to_dict().get("is_logged_in"):
        return None
    return st.session_state.get(_REFUSAL)


def provider_log_out() -> None:
    """End the provider sign-in of this browser (Streamlit's identity cookie; the provider's own
    session too when it offers an end_session_endpoint)."""
    st.session_state.pop(_REFUSAL, None)
    st.logout()
