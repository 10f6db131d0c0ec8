"""What the app remembers for a browser while its session lasts: the reviewer's name, a half-typed
note, a half-filled New campaign form. A page change drops the value of every widget the new page
does not draw, and a reload starts a new Streamlit session, so neither st.session_state nor the
widgets keep them.

How, the simplest mechanism that holds both:

- each browser gets a random id in a session cookie (``pluie_browser``: no expiry, so it ends when
  the browser is closed; SameSite=Strict), read when a session starts (st.context.cookies);
- the server keeps, per browser id, the last value of every widget a page asked to keep (BrowserMemory,
  in the server's memory: bounded, gone when the app restarts), taken at the start of every
  organiser's run (so a value sent with a page change is caught before the old page's widgets are
  dropped) and after the page has drawn them;
- text a person is typing has not reached the server yet (Streamlit sends a box's text on Enter or
  when it loses focus), so a script in the page copies the box being typed into a second session
  cookie (``pluie_typing``: that one box, up to about 3,000 characters), which the next session reads
  and puts back.

A page calls ``kept(key, default)`` before drawing a widget with that key (and no value=), then
``save()`` once after its widgets; ``forget(key)`` drops a value once used (a decision taken, a
campaign created). Once people sign in with accounts, the memory can be keyed by the person instead.
"""
from __future__ import annotations

import json
import re
import secrets
import threading
import urllib.parse
from collections import OrderedDict
from typing import Any, Callable, Optional

import streamlit as st

from ui.base.page import page_script

BROWSER_COOKIE = "pluie_browser"
TYPING_COOKIE = "pluie_typing"
TYPING_LIMIT = 3800  # bytes of the cookie's encoded value: browsers refuse a cookie over 4,096
_ID, _KEYS, _TYPED, _FORGET, _HAD_ID = "_pluie_browser_id", "_pluie_kept", "_pluie_kept_typed", "_pluie_kept_forget", "_pluie_browser_had"
_TYPING = "_pluie_typing_at_start"  # (key, text) of the typing cookie this session began with, until used
_VALID_ID = re.compile(r"[A-Za-z0-9_-]{16,64}")
_MISSING = object()


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


def typed_cookie(raw: Optional[str]) -> Optional[tuple[str, str]]:
    """(key, text) of the typing cookie as the page's script wrote it, None when absent or not one."""
    if not raw:
        return None
    try:
        value = json.loads(urllib.parse.unquote(raw))
    except ValueError:
        return None
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value[0], value[1]
    return None


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
    st.session_state[_TYPING] = typed_cookie(_cookie(TYPING_COOKIE))
    return found


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
    browser = browser_id()
    typing = st.session_state.get(_TYPING)
    if typed and typing is not None and typing[0] == key:  # typed after its last value reached the server
        memory().put(browser, key, typing[1])
        st.session_state[_TYPING] = None
    value = memory().get(browser, key, _MISSING)
    if value is not _MISSING and adapt is not None:
        value = adapt(value)
        value = _MISSING if value is None else value
    st.session_state[key] = default if value is _MISSING else value


def remember() -> None:
    """Keep the current value of every widget this session was asked to keep. Called at the start of
    every organiser's run (ui.frame.admin_page), where a value sent with a page change is still
    there, and by save()."""
    keys = st.session_state.get(_KEYS)
    if not keys:
        return
    browser, store = browser_id(), memory()
    for key in keys:
        if key in st.session_state:
            store.put(browser, key, st.session_state[key])


def forget(*keys: str) -> None:
    """Drop what is kept of these widgets (and reset them): a note once its decision is saved, the New
    campaign form once the campaign exists. Callable from a callback; the typing cookie is cleared by
    the next save()."""
    browser, store = browser_id(), memory()
    typing = st.session_state.get(_TYPING)
    if typing is not None and typing[0] in keys:
        st.session_state[_TYPING] = None
    for key in keys:
        store.drop(browser, key)
        st.session_state.pop(key, None)
    st.session_state[_FORGET] = [*st.session_state.get(_FORGET, []), *keys]


def keep_browser() -> None:
    """Give a page that keeps values outside its widgets (ui.views.scope) this browser's id cookie, as
    save() does, where the browser has none yet: the next session (a reload) then finds them."""
    browser = browser_id()
    if st.session_state.get(_HAD_ID) or st.session_state.get("_pluie_browser_cookie_sent"):
        return
    st.session_state["_pluie_browser_cookie_sent"] = True
    tail = "'; path=/; SameSite=Strict' + (location.protocol === 'https:' ? '; Secure' : '')"
    with st.sidebar:
        page_script(f"document.cookie = {json.dumps(BROWSER_COOKIE)} + '=' + {json.dumps(browser)} + {tail};",
                    "pluie-keep-browser")


def save() -> None:
    """After a page has drawn its kept widgets: remember their values, and give the page the script
    that keeps this browser's id and the text being typed in its kept boxes (a hidden element)."""
    remember()
    browser = browser_id()
    typed = [k for k in st.session_state.get(_TYPED, []) if k in st.session_state]
    forgotten = st.session_state.pop(_FORGET, [])
    secure = "(location.protocol === 'https:' ? '; Secure' : '')"
    script = (
        "(() => {"
        f" const typed = new Set({json.dumps(typed)}); window.pluieKeepTyped = typed;"
        f" const tail = '; path=/; SameSite=Strict' + {secure};"
        + ("" if st.session_state.get(_HAD_ID) else
           f" document.cookie = {json.dumps(BROWSER_COOKIE)} + '=' + {json.dumps(browser)} + tail;")
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
        "   const value = encodeURIComponent(JSON.stringify([key, event.target.value]));"
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
        "})();"
        + (f" /* {secrets.token_hex(4)} */" if forgotten else ""))  # new text: the script runs again
    with st.sidebar:
        page_script(script, "pluie-keep")
