"""What the app remembers for a person: the reviewer's name, a half-typed note, a half-filled New campaign
form, the scope of the pages. A page change drops the value of every widget the new page does not draw, and a
reload starts a new Streamlit session, so neither st.session_state nor the widgets keep them.

Whose memory: a person signed in with an account (db.access.current_actor() has an account id) keeps theirs in
the store (db.kept: per account, so it survives a restart and follows them to another browser); a store used
without accounts keeps it per browser in the server's memory (BrowserMemory: bounded, gone when the app
restarts). Which one is read again at the start of every organiser's run (remember, from ui.frame.admin_page):
a log-out and another sign-in in the same tab read the other person's.

How, the simplest mechanism that holds both:

- the value of every widget a page asked to keep is taken at the start of every organiser's run (so a value
  sent with a page change is caught before the old page's widgets are dropped) and after the page has drawn
  them (save);
- an account's values are read from the store once per session and held in st.session_state; only those
  that changed since they were last written are written (one transaction), so a run where nothing changed
  writes nothing. A value the store cannot keep (not JSON, over db.limits.KEPT_VALUE_LENGTH) lasts the session;
- without an account, each browser gets a random id in a session cookie (``pluie_browser``: no expiry, so it
  ends when the browser is closed; SameSite=Strict), read when a session starts (st.context.cookies), and the
  server keeps the values per browser id;
- text a person is typing has not reached the server yet (Streamlit sends a box's text on Enter or when it
  loses focus), so a script in the page copies the box being typed into a second session cookie
  (``pluie_typing``: that one box, up to about 3,000 characters, with whose memory it belongs to), which the
  next session reads and puts back into that same memory (another account signed in on the browser does
  not get it).

A page calls ``kept(key, default)`` before drawing a widget with that key (and no value=), then ``save()`` once
after its widgets; ``forget(key)`` drops a value once used (a decision taken, a campaign created). A value kept
outside a widget (ui.views.scope) is read with ``recalled(key)`` and kept with ``keep_value(key, value)``.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import threading
import urllib.parse
from collections import OrderedDict
from typing import Any, Callable, Optional

import streamlit as st

from db import access
from db.engine import StoreUnavailable
from db.kept import drop_values, encode, keep_values, kept_values
from ui.base.page import get_engine, page_script

BROWSER_COOKIE = "pluie_browser"
TYPING_COOKIE = "pluie_typing"
TYPING_LIMIT = 3800  # bytes of the cookie's encoded value: browsers refuse a cookie over 4,096
_ID, _KEYS, _TYPED, _FORGET, _HAD_ID = (
    "_pluie_browser_id",
    "_pluie_kept",
    "_pluie_kept_typed",
    "_pluie_kept_forget",
    "_pluie_browser_had",
)
_TYPING = "_pluie_typing_at_start"  # (key, text, owner) of the typing cookie this session began with, until used
_OWNER = "_pluie_kept_owner"  # the account id whose memory this session's runs use; None: the browser's
_ACCOUNT = "_pluie_kept_account"  # {"account", "values", "written"}: the account's memory, read once a session
_OUTSIDE = "_pluie_kept_outside"  # the keys of values kept outside a widget (recalled, keep_value)
_VALID_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
_MISSING = object()
_log = logging.getLogger("pluie_lab.keep")


class BrowserMemory:
    """The values kept per browser id, the least recently used browsers dropped past ``browsers``."""

    def __init__(self, browsers: int = 2000) -> None:
        self._browsers: OrderedDict[str, dict] = OrderedDict()
        self._limit = browsers
        self._lock = threading.Lock()

    def get(self, browser: str, key: str, default=None):
        with self._lock:
            values = self._browsers.get(browser)
            if values is None:
                return default
            self._browsers.move_to_end(browser)
            return values.get(key, default)

    def put(self, browser: str, key: str, value) -> None:
        with self._lock:
            self._browsers.setdefault(browser, {})[key] = value
            self._browsers.move_to_end(browser)
            while len(self._browsers) > self._limit:
                self._browsers.popitem(last=False)

    def drop(self, browser: str, key: str) -> None:
        with self._lock:
            self._browsers.get(browser, {}).pop(key, None)


@st.cache_resource(show_spinner=False)
def memory() -> BrowserMemory:
    return BrowserMemory()


def _cookie(name: str) -> Optional[str]:
    value = st.context.cookies.get(name)
    return value if isinstance(value, str) else None  # AppTest has no browser


def typing_cookie(raw: Optional[str]) -> Optional[tuple[str, str, str]]:
    """(key, text, owner) of the typing cookie as the page's script wrote it, None when absent or not one.
    ``owner`` (owner_tag) names whose memory the box belonged to: "" a browser's (a cookie of two items too)."""
    if not raw:
        return None
    try:
        value = json.loads(urllib.parse.unquote(raw))
    except ValueError:
        return None
    if isinstance(value, list) and len(value) in (2, 3) and all(isinstance(v, str) for v in value):
        return value[0], value[1], value[2] if len(value) == 3 else ""
    return None


def typed_cookie(raw: Optional[str]) -> Optional[tuple[str, str]]:
    """(key, text) of the typing cookie as the page's script wrote it, None when absent or not one."""
    found = typing_cookie(raw)
    return found[:2] if found is not None else None


def _signed_in_account() -> Optional[int]:
    """The account of the person using this session (db.access.current_actor), None without one (a store used
    without accounts); when it cannot be told now (the store out of reach), the last run's."""
    try:
        return access.current_actor().account_id
    except (StoreUnavailable, ValueError):
        return st.session_state.get(_OWNER)


def owner(refresh: bool = False) -> Optional[int]:
    """The account whose memory this session uses, None for the browser's (in the server's memory): told once
    per organiser's run (remember, ``refresh``), the same for the rest of the run and its callbacks."""
    if refresh or _OWNER not in st.session_state:
        st.session_state[_OWNER] = _signed_in_account()
    return st.session_state[_OWNER]


def owner_tag(account: Optional[int]) -> str:
    """Whose memory a typing cookie belongs to: "" a browser's, "a<id>" an account's."""
    return "" if account is None else f"a{account}"


def _account_memory(account: int) -> dict:
    """The account's values as this session holds them: read from the store the first time (for this account).
    A store out of reach gives none, ``unread``: nothing is written over the person's values from it, and the
    next run reads them again (remember)."""
    held = st.session_state.get(_ACCOUNT)
    if held is None or held["account"] != account:
        try:
            values, unread = kept_values(get_engine(), account), False
        except StoreUnavailable as exc:
            _log.warning("the values kept for account %s could not be read: %s", account, exc)
            values, unread = {}, True
        held = {
            "account": account,
            "values": values,
            "written": {key: encode(v) for key, v in values.items()},
            "unread": unread,
        }
        st.session_state[_ACCOUNT] = held
    return held


def _write(account: int, changed: dict) -> None:
    """Write to the store the account's values that changed since they were last written."""
    held = _account_memory(account)
    held["values"].update(changed)
    if held["unread"]:  # the widgets show defaults, not the person's values: keep those in the store
        return
    changed = {
        key: value
        for key, value in changed.items()
        if (text := encode(value)) is not None and held["written"].get(key) != text
    }
    if not changed:
        return
    try:
        held["written"].update(keep_values(get_engine(), account, changed))
    except StoreUnavailable as exc:  # the person's memory is a convenience: the page goes on, and tries next run
        _log.warning("the values kept for account %s could not be written: %s", account, exc)


def browser_id() -> str:
    """This browser's id: from its cookie when the session began with one, else a new one (written
    by save()). The first time in a session, the text being typed when the browser last left a page
    (the typing cookie) is set aside for its box (kept(..., typed=True))."""
    found = st.session_state.get(_ID)
    if found is not None:
        return found
    cookie = _cookie(BROWSER_COOKIE)
    had = cookie is not None and _VALID_ID.fullmatch(cookie) is not None
    found = cookie if had else secrets.token_urlsafe(18)
    st.session_state[_ID], st.session_state[_HAD_ID] = found, had
    st.session_state[_TYPING] = typing_cookie(_cookie(TYPING_COOKIE))
    return found


def _typing_for(key: str, account: Optional[int]) -> Optional[str]:
    """The text of the box ``key`` typed when this browser last left a page, once, if it belonged to this
    memory (``account``'s, or the browser's)."""
    browser_id()  # the first time in a session, it reads the typing cookie
    typing = st.session_state.get(_TYPING)
    if typing is None or typing[0] != key or typing[2] != owner_tag(account):
        return None
    st.session_state[_TYPING] = None
    return typing[1]


def kept(key: str, default: Any = None, *, typed: bool = False, adapt: Optional[Callable[[Any], Any]] = None) -> None:
    """Call before drawing the widget ``key`` (drawn without value=): it shows what this browser last
    had in it, else ``default``. ``typed``: a text box, whose typing is kept before it reaches the
    server. ``adapt``: turns a kept value into one the widget takes now (its options may have
    changed), or returns None to use the default."""
    st.session_state.setdefault(_KEYS, [])
    if key not in st.session_state[_KEYS]:
        st.session_state[_KEYS].append(key)
    if typed:
        st.session_state.setdefault(_TYPED, [])
        if key not in st.session_state[_TYPED]:
            st.session_state[_TYPED].append(key)
    if key in st.session_state:  # the widget's own value, alive in this session
        return
    account = owner()
    typing = _typing_for(key, account) if typed else None  # typed after its last value reached the server
    if account is None:
        browser = browser_id()
        if typing is not None:
            memory().put(browser, key, typing)
        value = memory().get(browser, key, _MISSING)
    else:
        held = _account_memory(account)
        if typing is not None:
            held["values"][key] = typing  # written by the next remember(), as a change
        value = held["values"].get(key, _MISSING)
        if value is _MISSING:  # the default: nothing to write while it stays so
            held["written"].setdefault(key, encode(default))
    if value is not _MISSING and adapt is not None:
        value = adapt(value)
        value = _MISSING if value is None else value
    st.session_state[key] = default if value is _MISSING else value


def remember() -> None:
    """Keep the current value of every widget this session was asked to keep. Called at the start of
    every organiser's run (ui.frame.admin_page), where a value sent with a page change is still
    there (which also tells whose memory this run uses: owner), and by save(). When that is another person's
    than the last run's (a log-out, then another sign-in in the same tab), the values this session holds are
    the last person's: kept for them, then dropped from the session, so that kept() gives the new person theirs
    (a run stopped by the sign-in form leaves the widgets' values in st.session_state). After a run where the
    store could not be read, the values are read again and what the widgets showed (defaults) is dropped."""
    before = st.session_state.get(_OWNER, _MISSING)
    account = owner(refresh=True)
    held = st.session_state.get(_ACCOUNT)
    unread = held is not None and held["unread"]  # the store was out of reach: the widgets showed defaults
    if unread:
        del st.session_state[_ACCOUNT]  # read again by kept()
    if not unread and (before is _MISSING or before == account):
        _remember(account)
        return
    if not unread:
        _remember(before)
    for key in [*st.session_state.get(_KEYS, []), *st.session_state.get(_OUTSIDE, [])]:
        st.session_state.pop(key, None)


def _remember(account: Optional[int]) -> None:
    keys = [key for key in st.session_state.get(_KEYS, []) if key in st.session_state]
    if not keys:
        return
    if account is not None:
        _write(account, {key: st.session_state[key] for key in keys})
        return
    browser, store = browser_id(), memory()
    for key in keys:
        store.put(browser, key, st.session_state[key])


def forget(*keys: str) -> None:
    """Drop what is kept of these widgets (and reset them): a note once its decision is saved, the New
    campaign form once the campaign exists. Callable from a callback; the typing cookie is cleared by
    the next save()."""
    account = owner()
    browser_id()  # the typing cookie read, to be dropped here if it is one of these
    typing = st.session_state.get(_TYPING)
    if typing is not None and typing[0] in keys:
        st.session_state[_TYPING] = None
    if account is None:
        browser, store = browser_id(), memory()
        for key in keys:
            store.drop(browser, key)
    else:
        held = _account_memory(account)
        for key in keys:
            held["values"].pop(key, None)
            held["written"].pop(key, None)
        try:
            drop_values(get_engine(), account, keys)
        except StoreUnavailable as exc:
            _log.warning("the values kept for account %s could not be dropped: %s", account, exc)
    for key in keys:
        st.session_state.pop(key, None)
    st.session_state[_FORGET] = [*st.session_state.get(_FORGET, []), *keys]


def _outside(key: str) -> None:
    st.session_state.setdefault(_OUTSIDE, [])
    if key not in st.session_state[_OUTSIDE]:
        st.session_state[_OUTSIDE].append(key)


def recalled(key: str, default: Any = None) -> Any:
    """A value kept outside a widget (keep_value): this person's (or browser's) last, else ``default``. A page
    that holds it in st.session_state under the same key has it dropped there when another person signs in
    in the same tab (remember)."""
    _outside(key)
    account = owner()
    if account is None:
        return memory().get(browser_id(), key, default)
    return _account_memory(account)["values"].get(key, default)


def keep_value(key: str, value: Any) -> None:
    """Keep a value outside a widget for this person (or browser): written at once, when it changed."""
    _outside(key)
    account = owner()
    if account is None:
        memory().put(browser_id(), key, value)
    else:
        _write(account, {key: value})


def keep_browser() -> None:
    """Give a page that keeps values outside its widgets (ui.views.scope) this browser's id cookie, as
    save() does, where the browser has none yet: the next session (a reload) then finds them. A person signed in
    with an account needs none (their values are the account's)."""
    browser = browser_id()
    if owner() is not None or st.session_state.get(_HAD_ID) or st.session_state.get("_pluie_browser_cookie_sent"):
        return
    st.session_state["_pluie_browser_cookie_sent"] = True
    tail = "'; path=/; SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '')"
    with st.sidebar:
        page_script(
            f"document.cookie = {json.dumps(BROWSER_COOKIE)} + '=' + {json.dumps(browser)} + {tail};",
            "pluie-keep-browser",
        )


def save() -> None:
    """After a page has drawn its kept widgets: remember their values, and give the page the script
    that keeps this browser's id (without an account) and the text being typed in its kept boxes, naming whose
    memory they belong to (a hidden element)."""
    account = owner()
    _remember(account)
    browser = browser_id()
    typed = [k for k in st.session_state.get(_TYPED, []) if k in st.session_state]
    forgotten = st.session_state.pop(_FORGET, [])
    secure = "(location.protocol === 'https:' ? '; Secure' : '')"
    script = (
        "(() => {"
        f" const typed = new Set({json.dumps(typed)}); window.pluieKeepTyped = typed;"
        f" window.pluieKeepOwner = {json.dumps(owner_tag(account))};"  # whose memory: a sign-in changes it
        f" const tail = '; path=/; SameSite=Strict' + {secure};"
        + (
            ""
            if st.session_state.get(_HAD_ID) or account is not None
            else f" document.cookie = {json.dumps(BROWSER_COOKIE)} + '=' + {json.dumps(browser)} + tail;"
        )
        + f" const forgotten = {json.dumps(forgotten)};"
        f" const now = document.cookie.split('; ').find(c => c.startsWith({json.dumps(TYPING_COOKIE + '=')}));"
        " if (now && forgotten.length) { try { const [key] = JSON.parse(decodeURIComponent(now.split('=')[1]));"
        f"   if (forgotten.includes(key)) document.cookie = {json.dumps(TYPING_COOKIE)}"
        " + '=; expires=Thu, 01 Jan 1970 00:00:00 GMT' + tail;"
        " } catch (e) {} }"
        " if (window.pluieKeepListening) return; window.pluieKeepListening = true;"
        " document.addEventListener('input', (event) => {"
        "   const box = event.target.closest && event.target.closest('[class*=\"st-key-\"]');"
        "   if (!box || !('value' in event.target)) return;"
        "   const name = [...box.classList].find(c => c.startsWith('st-key-'));"
        "   const key = name && name.slice(7);"
        "   if (!key || !window.pluieKeepTyped.has(key)) return;"
        "   const value = encodeURIComponent(JSON.stringify([key, event.target.value, window.pluieKeepOwner]));"
        f"  if (value.length > {TYPING_LIMIT}) return;"
        f"  document.cookie = {json.dumps(TYPING_COOKIE)} + '=' + value + tail;"
        " }, true);"
        # A page link clicked straight from a text box: the box sends its text as it loses focus, which
        # starts a run, and a page change that lands during that run bounces back to the page with its
        # widgets emptied (Streamlit issue 9100). The click waits for that run (at most 5 s), then goes:
        # once the run has started and ended (3 quiet ticks), or after 1 s without one starting (the text
        # had not changed); on a loaded machine the run can start later than 3 ticks after the focus left.
        " let left = 0;"
        " document.addEventListener('focusout', (event) => {"
        "   if (event.target.matches && event.target.matches('input, textarea')) left = Date.now(); }, true);"
        " const busy = () => { const app = document.querySelector('[data-testid=\"stApp\"]');"
        "   return app && app.getAttribute('data-test-script-state') !== 'notRunning'; };"
        " document.addEventListener('click', (event) => {"
        "   const link = event.target.closest && event.target.closest('a[data-testid=\"stPageLink-NavLink\"]');"
        "   if (!link || link.dataset.pluieWaited || Date.now() - left > 1500) return;"
        "   event.preventDefault(); event.stopImmediatePropagation();"
        "   const since = Date.now(); let quiet = 0, ran = false;"
        "   const wait = setInterval(() => {"
        "     if (busy()) { ran = true; quiet = 0; } else quiet += 1;"
        "     if (quiet < (ran ? 3 : 20) && Date.now() - since < 5000) return;"
        "     clearInterval(wait); const href = link.getAttribute('href');"
        "     const now = [...document.querySelectorAll('a[data-testid=\"stPageLink-NavLink\"]')]"
        "       .find(a => a.getAttribute('href') === href) || link;"
        "     now.dataset.pluieWaited = '1'; now.click(); delete now.dataset.pluieWaited;"
        "   }, 50);"
        " }, true);"
        "})();" + (f" /* {secrets.token_hex(4)} */" if forgotten else "")
    )  # new text: the script runs again
    with st.sidebar:
        page_script(script, "pluie-keep")
