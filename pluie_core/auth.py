"""Access without a database: personal-link tokens and the admin password.

A token is shown once to the admin and only its sha256 is stored, so a copy of the store
does not let anyone label in somebody else's name. The admin password comes from the
configuration, never from the repository: PLUIE_ADMIN_PASSWORD (plain), or a bcrypt hash in
PLUIE_ADMIN_PASSWORD_HASH or in pluie_lab.toml under `[admin] password_hash`.

An organiser who logs in gets a signed, expiring session token, which the app keeps in a cookie so
that reloads and new tabs stay logged in: HMAC-SHA256 over its issue and expiry times with a key
derived from the server's secret and the configured password, so it cannot be forged, stops at its
expiry, and stops at once when the password, the secret or the lifetime is changed (shortened).
Lifetime: PLUIE_ADMIN_SESSION_HOURS or `[admin] session_hours` (default 12 hours). Secret:
PLUIE_SECRET_KEY or `[admin] secret_key`, else a random one generated once and kept in
<data dir>/secret_key (data dir: PLUIE_DATA_DIR, default ./data). Logging out ends that token
for good on this server (<data dir>/logged_out_sessions), not only in the browser that had it.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import math
import os
import secrets
import threading
import time
import tomllib
from collections import deque
from pathlib import Path
from typing import Callable, Optional

import bcrypt

from pluie_core.places import data_dir

CONFIG_FILE = "pluie_lab.toml"
ADMIN_COOKIE = "pluie_admin"  # the name of the cookie that carries an organiser's session token
DEFAULT_SESSION_HOURS = 12.0


def new_token() -> str:
    """An unguessable personal-link token (192 random bits)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _admin_config() -> dict:
    config = Path(CONFIG_FILE)
    if config.is_file():
        with config.open("rb") as fh:
            return tomllib.load(fh).get("admin", {})
    return {}


def _configured_hash() -> Optional[str]:
    if os.environ.get("PLUIE_ADMIN_PASSWORD_HASH"):
        return os.environ["PLUIE_ADMIN_PASSWORD_HASH"]
    return _admin_config().get("password_hash") or None


def admin_password_configured() -> bool:
    return bool(os.environ.get("PLUIE_ADMIN_PASSWORD")) or _configured_hash() is not None


def check_admin_password(password: str) -> bool:
    """True when the password matches the configured one. With none configured there is
    nothing to check against, and the admin pages are open (the app says so)."""
    if not admin_password_configured():
        return True
    if not password:
        return False
    plain = os.environ.get("PLUIE_ADMIN_PASSWORD")
    if plain:
        return hmac.compare_digest(password.encode("utf-8"), plain.encode("utf-8"))
    try:
        return bcrypt.checkpw(password.encode("utf-8"), _configured_hash().encode("utf-8"))
    except ValueError:  # a malformed hash in the configuration matches nothing
        return False


# ---------------------------------------------------------------- password guessing

login_log = logging.getLogger("pluie_lab.login")


class LoginGuard:
    """Slows down, then locks out, repeated wrong admin passwords, per client and overall.

    A client (its IP address; every browser on the server's own machine is one client) has
    `free` wrong passwords within `window` seconds that cost nothing; after each further one it
    must wait before the next try, twice as long each time (1 s, 2 s, 4 s ...) up to `longest`
    (15 minutes: a lockout). Overall, every client together has `overall_free` wrong passwords
    within the window, after which everyone waits the same way, so that guessing from many
    addresses is slowed down too. A try while waiting is refused without checking the password.
    The right password clears that client's failures. The counts live in the server's memory (a
    restart forgets them); every failure and refusal is logged (logger `pluie_lab.login`)."""

    def __init__(self, free: int = 5, overall_free: int = 50, window: float = 900.0, longest: float = 900.0,
                 clock: Callable[[], float] = time.monotonic):
        self.free, self.overall_free, self.window, self.longest, self.clock = free, overall_free, window, longest, clock
        self._lock = threading.Lock()
        self._clients: dict[str, deque] = {}
        self._everyone: deque = deque()

    def clear(self) -> None:
        with self._lock:
            self._clients.clear()
            self._everyone.clear()

    def _forget_old(self, times: deque, now: float) -> deque:
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    def _until(self, times: deque, free: int) -> float:
        if len(times) <= free:
            return 0.0
        return times[-1] + min(2.0 ** (len(times) - free - 1), self.longest)

    def wait(self, client: str) -> int:
        """Whole seconds this client must wait before its next try (0: it may try now)."""
        with self._lock:
            now = self.clock()
            mine = self._forget_old(self._clients.get(client, deque()), now)
            everyone = self._forget_old(self._everyone, now)
            return max(0, math.ceil(max(self._until(mine, self.free), self._until(everyone, self.overall_free)) - now))

    def failed(self, client: str) -> int:
        """Count a wrong password from this client; the seconds it must now wait."""
        with self._lock:
            now = self.clock()
            self._clients.setdefault(client, deque()).append(now)
            self._everyone.append(now)
        waiting = self.wait(client)
        login_log.warning("wrong admin password from %s (%d from there, %d in all, in the last %d s); next try "
                          "in %d s", client, len(self._clients[client]), len(self._everyone), self.window, waiting)
        return waiting

    def refused(self, client: str, waiting: int) -> None:
        login_log.warning("admin login from %s refused: too many attempts, %d s to wait", client, waiting)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)


LOGIN_GUARD = LoginGuard()  # one per server process: every session's log-in goes through it


def try_admin_password(password: str, client: str, guard: LoginGuard = LOGIN_GUARD) -> Optional[str]:
    """None when the password is right and this client may try now; else the sentence to show:
    the password is wrong, or there were too many attempts and how long to wait."""
    waiting = guard.wait(client)
    if waiting:
        guard.refused(client, waiting)
        return f"Too many attempts: try again in {waiting} s."
    if check_admin_password(password):
        guard.succeeded(client)
        return None
    waiting = guard.failed(client)
    return f"Wrong password; too many attempts: try again in {waiting} s." if waiting else "Wrong password."


def hash_admin_password(password: str) -> str:
    """The value to put in PLUIE_ADMIN_PASSWORD_HASH or `[admin] password_hash`."""
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt()).decode("ascii")


# ---------------------------------------------------------------- organiser sessions

def admin_session_hours() -> float:
    """How long a login lasts: PLUIE_ADMIN_SESSION_HOURS, else `[admin] session_hours`, else 12."""
    raw = os.environ.get("PLUIE_ADMIN_SESSION_HOURS") or _admin_config().get("session_hours",
                                                                              DEFAULT_SESSION_HOURS)
    try:
        hours = float(raw)
    except (TypeError, ValueError):
        hours = float("nan")
    if not hours > 0 or hours == float("inf"):
        raise ValueError(f"The organisers' session length must be a positive number of hours, not {raw!r} "
                         "(PLUIE_ADMIN_SESSION_HOURS or [admin] session_hours in pluie_lab.toml).")
    return hours


def _data_dir() -> Path:
    return data_dir()


def session_secret() -> bytes:
    """The server's signing secret: PLUIE_SECRET_KEY, else `[admin] secret_key`, else the random
    one kept in <data dir>/secret_key (made on first use, readable by its owner only)."""
    configured = os.environ.get("PLUIE_SECRET_KEY") or _admin_config().get("secret_key")
    if configured:
        return str(configured).encode("utf-8")
    path = _data_dir() / "secret_key"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process made it first: use theirs
            pass
        else:
            with os.fdopen(fd, "w") as fh:
                fh.write(secrets.token_urlsafe(48))
    for _ in range(50):  # the file may have been created an instant ago and still be empty
        secret = path.read_text().strip()
        if secret:
            return secret.encode("utf-8")
        time.sleep(0.01)
    raise ValueError(f"The secret file {path} is empty: delete it and a new one will be made.")


def _session_key() -> bytes:
    # the configured password is part of the key: changing it ends every session
    password = os.environ.get("PLUIE_ADMIN_PASSWORD") or _configured_hash() or ""
    context = b"pluie-admin-session\0" + password.encode("utf-8")
    return hmac.new(session_secret(), context, hashlib.sha256).digest()


def _signature(payload: str) -> str:
    digest = hmac.new(_session_key(), payload.encode("utf-8"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def issue_admin_session(now: Optional[float] = None) -> tuple[str, float]:
    """A new organiser session: (token, expiry as a Unix time). The token is safe in a cookie."""
    issued = int(time.time() if now is None else now)
    expires = issued + int(admin_session_hours() * 3600)
    payload = f"{issued}.{expires}.{secrets.token_urlsafe(12)}"
    return f"{payload}.{_signature(payload)}", float(expires)


def admin_session_expiry(token: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """When this organiser session ends (Unix time), or None when the token is not a valid,
    unexpired one signed by this server under its current password, secret and lifetime."""
    if not token or len(token) > 200:
        return None
    try:
        issued_text, expires_text, nonce, signature = token.split(".")
        issued, expires = int(issued_text), int(expires_text)
    except ValueError:
        return None
    expected = _signature(f"{issued_text}.{expires_text}.{nonce}")
    if not hmac.compare_digest(signature.encode("utf-8"), expected.encode("utf-8")):
        return None
    now = time.time() if now is None else now
    end = min(expires, issued + admin_session_hours() * 3600)  # a shortened lifetime applies at once
    if not issued - 60 <= now < end or signature in _logged_out():
        return None
    return float(end)


def _logged_out_file() -> Path:
    return _data_dir() / "logged_out_sessions"


def _logged_out() -> set[str]:
    path = _logged_out_file()
    if not path.is_file():
        return set()
    return {line.split()[1] for line in path.read_text().splitlines() if len(line.split()) == 2}


def end_admin_session(token: Optional[str]) -> None:
    """Log out: this token is refused from now on, even where a copy of it survives (a cookie
    not yet deleted, another tab). Kept in <data dir>/logged_out_sessions until it expires anyway."""
    end = admin_session_expiry(token)
    if end is None:
        return
    path = _logged_out_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:  # one short line: appends of concurrent log-outs do not mix
        fh.write(f"{int(end)} {token.rsplit('.', 1)[1]}\n")
    if path.stat().st_size > 64_000:  # forget the sessions that have expired by now
        now = time.time()
        lines = [line for line in path.read_text().splitlines()
                 if len(parts := line.split()) == 2 and parts[0].isdigit() and int(parts[0]) > now]
        fresh = path.with_suffix(".tmp")
        fresh.write_text("".join(f"{line}\n" for line in lines))
        os.replace(fresh, path)
