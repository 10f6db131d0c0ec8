"""Signing in: who is using the app, and the form that asks.

A store with accounts (db.accounts), or with an admin password configured (which becomes the owner
account "admin" on the first start: ui.base.page.get_engine), asks every visitor to sign in with an
account's name and password; an empty name is "admin", so a one-password setup signs in with the password
alone. Guessing is slowed per address and per account (lab.auth.LoginGuard). A sign-in is a signed,
expiring session token naming the account (lab.auth), signed with the account's fingerprint, so a
changed password or role, a disabled account or "end sessions" ends it at once. The session holds it and,
when the server has the cookie routes (server.py, ui.access.session_cookie), an HttpOnly cookie carries it
across reloads and tabs; without them (plain `streamlit run app.py`, AppTest) it lasts this browser tab.
A person may also sign in with the team's identity provider (ui.access.provider_signin), when configured.
A store with neither accounts nor an admin password is open, as before: no sign-in at all (OPEN).

install_access says who the app's writes are done for (db.access.install): the role every write checks.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import logging
import time
from types import ModuleType
from typing import Optional

import streamlit as st

from db import access, accounts
from db.engine import StoreUnavailable
from lab import auth
from lab.roles import NOBODY, OPEN, Actor, can_open
from ui.base import private_api
from ui.base.menu import TITLES
from ui.base.page import get_engine, user_text

ADMIN_TOKEN = "_pluie_admin_token"  # the session token this browser session holds
LOGGED_OUT = "_pluie_logged_out"  # logged out here: the cookie this session started with no longer counts
COOKIE_ACTION = "_pluie_cookie_action"  # what the browser's cookie is still to be told: ("over", token) / ("back", _)
SIGNED_IN_AS = "_pluie_signed_in_as"  # (account id, role, end) of the sign-in this session holds: to say why it ended
SIGNED_OUT_WHY = "_pluie_signed_out_why"  # the sentence the sign-in form shows: why this browser's sign-in ended
DISABLED = "This account is disabled: ask an owner to enable it."

_log = logging.getLogger("pluie_lab.login")


@functools.cache
def _optional(name: str) -> Optional[ModuleType]:
    """Another helper's module when it is there (ui.access.session_cookie, ui.access.provider_signin), else None."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if exc.name != name:
            _log.warning("%s cannot be imported: %s", name, exc)
        return None


def _cookies() -> Optional[ModuleType]:
    """ui.access.session_cookie when the server has its routes (server.py), else None."""
    module = _optional("ui.access.session_cookie")
    return module if module is not None and module.routes_installed() else None


def _provider() -> Optional[ModuleType]:
    module = _optional("ui.access.provider_signin")
    return module if module is not None and module.provider_configured() else None


def _fingerprints(engine):
    return functools.partial(accounts.password_fingerprint, engine)


def sign_in_needed(engine) -> bool:
    """Whether visitors must sign in: the store has an active account, or an admin password is configured."""
    return auth.admin_password_configured() or accounts.accounts_in_force(engine)


def _browser_token() -> Optional[str]:
    """The session token the browser sent with this session's start (the HttpOnly cookie)."""
    module = _optional("ui.access.session_cookie")
    if module is None:
        return None
    token = module.cookie_token()
    return token if isinstance(token, str) else None


def _password_account(engine) -> Optional[accounts.AccountInfo]:
    """The account this session is signed in as with a password (its token, or the browser's cookie)."""
    token = st.session_state.get(ADMIN_TOKEN)
    if token is None and not st.session_state.get(LOGGED_OUT):
        token = _browser_token()
    account_id = auth.session_account(token)
    end = auth.admin_session_expiry(token, fingerprint_of=_fingerprints(engine)) if account_id is not None else None
    if end is None:
        if token is not None:  # a sign-in that no longer counts: say why on the sign-in form
            st.session_state[SIGNED_OUT_WHY] = _why_signed_out(engine, st.session_state.pop(SIGNED_IN_AS, None))
        st.session_state.pop(ADMIN_TOKEN, None)
        return None
    st.session_state[ADMIN_TOKEN] = token
    info = accounts.account(engine, account_id)
    if info is not None:
        st.session_state[SIGNED_IN_AS] = (info.id, info.role, end)
    return info


def _why_signed_out(engine, held: Optional[tuple]) -> str:
    """Why the sign-in this session held (``held``: its account id, role and end) ended; without one (a
    cookie from before this session) a sentence that names no account, since anyone can send a cookie."""
    if held is None:
        return (
            "Your sign-in on this browser has ended (a changed role or password, a disabled account, or an "
            "owner ended it): sign in again."
        )
    account_id, role, end = held
    info = accounts.account(engine, account_id)
    if info is None or not info.active:
        return "An owner has disabled your account, which signed you out: ask an owner to enable it."
    if info.role != role:
        return f"An owner changed your role from {role} to {info.role}, which signed you out: sign in again."
    if end <= time.time():
        return f"Your sign-in ended after {auth.admin_session_hours():g} hours: sign in again."
    return (
        "Your sign-in was ended (a log-out in another tab, a new password, or an owner ended your sessions): "
        "sign in again."
    )


def _provider_account(engine) -> Optional[accounts.AccountInfo]:
    if st.session_state.get(LOGGED_OUT):  # logged out here: the provider's cookie ends with its own log-out
        return None
    provider = _provider()
    return provider.provider_account(engine) if provider is not None else None


def signed_in_actor() -> Actor:
    """Whoever uses this Streamlit session: the signed-in account (its role as stored now), NOBODY when
    sign-in is needed and nobody is signed in, OPEN on a store without accounts or admin password."""
    engine = get_engine()
    if not sign_in_needed(engine):
        return OPEN
    info = _password_account(engine) or _provider_account(engine)
    return accounts.actor_for(info) if info is not None and info.active else NOBODY


def current_actor_or_none() -> Optional[Actor]:
    """The actor of the Streamlit session running this thread (callbacks included), None outside a Streamlit
    script run (a thread of the server's own, a test's). A Streamlit without get_script_run_ctx
    (ui.base.private_api.script_run_ctx) cannot tell: every thread is then taken for a script run, so a write
    off one is checked as the session's (refused, where accounts are in force)."""
    get_script_run_ctx = private_api.script_run_ctx()
    if get_script_run_ctx is not None and get_script_run_ctx(suppress_warning=True) is None:
        return None
    return signed_in_actor()


def app_writer() -> Actor:
    """Who the app's writes are done for (db.access's source once install_access has run): the signed-in person
    of the session running this thread; on a thread without a session, NOBODY while sign-in is needed (accounts,
    or an admin password: a write nobody answers for is refused) and OPEN on a store used without accounts."""
    actor = current_actor_or_none()
    if actor is not None:
        return actor
    return NOBODY if sign_in_needed(get_engine()) else OPEN


def install_access() -> None:
    """Say who the app's writes are done for (db.access.install: app_writer), and where lab.auth finds an
    account's password fingerprint in this server process (the cookie routes use it). Called by app.py at every
    run and by every page's first line (ui.frame): never by importing a module, so no import order decides
    whether the store's permission check is in force. Installing again is the same."""
    if access.installed() is not app_writer:
        access.install(app_writer)
        auth.set_fingerprint_source(_fingerprint)


def _fingerprint(account_id: int):
    return accounts.password_fingerprint(get_engine(), account_id)


def session_end() -> Optional[dt.datetime]:
    """When this session's password sign-in ends (UTC), None without one."""
    end = auth.admin_session_expiry(st.session_state.get(ADMIN_TOKEN), fingerprint_of=_fingerprints(get_engine()))
    return dt.datetime.fromtimestamp(end, dt.timezone.utc) if end is not None else None


def _client() -> str:
    peer = st.context.ip_address  # None from the server's own machine (and not a str under AppTest)
    forwarded = ", ".join(st.context.headers.get_all("X-Forwarded-For")) if st.context.headers else ""
    return auth.client_address(peer if isinstance(peer, str) and peer else None, forwarded)


def log_in(password: str, name: str = "") -> Optional[str]:
    """Sign this browser in as account ``name`` ("" is "admin"); None when done, else the sentence to show
    (a wrong name or password, or too many attempts: lab.auth.LoginGuard slows guessing down)."""
    engine = get_engine()
    name = (name or "").strip() or accounts.OWNER_FROM_ADMIN
    try:
        client = _client()
    except ValueError as exc:  # trusted proxies that are not addresses
        return str(exc)
    # the guard counts per account it knows, by its own name ("Sam" and "sam" are one account, one count);
    # unknown names share one count (so they cannot fill memory)
    known = accounts.account_by_name(engine, name)
    counted = known.name if known is not None else "(an unknown account)"
    found: list[Optional[accounts.AccountInfo]] = []

    def right() -> bool:
        found.append(accounts.password_matches(engine, name, password or ""))
        return found[-1] is not None and found[-1].active

    refused = auth.try_password(right, client, counted, wrong="Wrong account or password")
    if refused:  # a disabled account is told so, only with its right password (counted as a failure all the same)
        return DISABLED if found and found[-1] is not None else refused
    info = found[-1]
    token = auth.issue_admin_session(account_id=info.id, fingerprint=accounts.password_fingerprint(engine, info.id))[0]
    st.session_state[ADMIN_TOKEN] = token
    st.session_state.pop(LOGGED_OUT, None)
    st.session_state.pop(SIGNED_OUT_WHY, None)
    st.session_state[COOKIE_ACTION] = ("over", token)
    return None


def log_out() -> None:
    """Sign this browser out (a button's callback): the token is refused from now on, cookie or not."""
    engine = get_engine()
    by_provider = _provider_account(engine) is not None  # before LOGGED_OUT, which hides the provider's sign-in
    auth.end_admin_session(st.session_state.pop(ADMIN_TOKEN, None), fingerprint_of=_fingerprints(engine))
    st.session_state.pop(SIGNED_IN_AS, None)
    st.session_state[LOGGED_OUT] = True
    st.session_state[COOKIE_ACTION] = ("back", by_provider)


def keep_login_cookie() -> None:
    """Tell the browser's cookie what happened in this session: after a sign-in the server sets it
    (ui.access.session_cookie.hand_over), after a log-out it clears it (hand_back), and a provider's sign-in
    ends with its own log-out. Without the cookie routes, nothing to tell: the sign-in lasts this tab."""
    action = st.session_state.pop(COOKIE_ACTION, None)
    if action is None:
        return
    kind, detail = action
    if kind == "back" and detail and _provider() is not None:
        _provider().provider_log_out()  # a provider's sign-in has no cookie of ours to clear
        return
    cookies = _cookies()
    if cookies is None:
        return
    if kind == "over":
        cookies.hand_over(detail, cookies.browser_nonce())
    else:
        cookies.hand_back(cookies.browser_nonce())


def require_signin() -> Actor:
    """The actor of this session, or, when sign-in is needed and nobody is signed in, the sign-in form
    drawn in place of the page asked for (which is the page drawn once signed in) and a stop."""
    try:
        hours = auth.admin_session_hours()
        actor = signed_in_actor()
    except ValueError as exc:  # a session length or secret file that cannot be used
        st.error(user_text(exc))
        st.stop()
    except StoreUnavailable as exc:  # the store cannot be reached: its one sentence, as on every page
        st.error(str(exc))
        st.stop()
    if actor != NOBODY:
        _say_sign_in_kept(actor)
        return actor
    keep_login_cookie()  # a log-out's cookie is cleared from here
    st.title("PLUIE Lab")
    if st.session_state.get(SIGNED_OUT_WHY):
        st.warning(st.session_state[SIGNED_OUT_WHY])
    with st.form("sign-in"):
        name = st.text_input(
            "Account",
            placeholder=accounts.OWNER_FROM_ADMIN,
            help="Your account's name; leave it empty to sign in as admin.",
        )
        password = st.text_input("Password", type="password")
        if st.form_submit_button("Sign in", type="primary"):
            try:
                refused = log_in(password, name)
            except StoreUnavailable as exc:
                refused = str(exc)
            if refused is None:
                st.rerun()
            st.error(refused)
    provider = _provider()
    if provider is not None:
        provider.provider_button()
        refusal = getattr(provider, "provider_refusal", lambda: None)()
        if refusal:
            st.error(user_text(refusal))
    if _cookies() is not None:
        st.caption(f"A sign-in lasts {hours:g} hours on this browser, reloads and new tabs included.")
    else:
        st.caption(
            f"A sign-in lasts {hours:g} hours, in this browser tab only: a reload or a new tab asks again "
            "(make run keeps it across reloads)."
        )
    st.stop()


def _say_sign_in_kept(actor: Actor) -> None:
    """The cookie's route came back with ?pluie_signin=kept (ui.access.session_cookie.KEPT_PARAM): a sign-in in
    another tab of this browser, already signed in as another account, was not used. Said once."""
    cookies = _cookies()
    if cookies is None or st.query_params.get(cookies.KEPT_PARAM) != "kept":
        return
    del st.query_params[cookies.KEPT_PARAM]
    st.warning(
        f"This browser is already signed in as {user_text(actor.name or 'admin')}, so the other sign-in "
        "was not used: log out first to sign in as another account."
    )


def refuse_page(actor: Actor, page: str) -> None:
    """When ``actor``'s role may not open the page ``page`` (a key of MENU), say so and stop."""
    if page in TITLES and not can_open(actor, page):
        st.error(f"Your role ({actor.role}) cannot open {TITLES[page]}: ask an owner.")
        st.stop()
