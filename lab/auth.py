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

With accounts (db.accounts), a session token names its account ("a<id>.<issued>.<expires>.<nonce>.<sig>")
and is signed with the server's secret and the account's fingerprint (its password hash, role and session
epoch, db.accounts.password_fingerprint), so a changed password or role, a disabled account or "end
sessions" ends it at once. The fingerprint comes from the store, which this module cannot read: the app
registers where to find it (set_fingerprint_source, ui.access.signin) or a caller passes ``fingerprint_of``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
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

from lab.places import data_dir

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


def configured_hash() -> Optional[str]:
    """The admin password's bcrypt hash as configured (PLUIE_ADMIN_PASSWORD_HASH, else pluie_lab.toml's
    [admin] password_hash), None when there is none."""
    if os.environ.get("PLUIE_ADMIN_PASSWORD_HASH"):
        return os.environ["PLUIE_ADMIN_PASSWORD_HASH"]
    return _admin_config().get("password_hash") or None


def admin_password_configured() -> bool:
    return bool(os.environ.get("PLUIE_ADMIN_PASSWORD")) or configured_hash() is not None


DEFAULT_BCRYPT_ROUNDS = 12  # bcrypt's own default: about 0.25 s a hash on one core


def bcrypt_rounds() -> int:
    """The cost of the password hashes made from now on: PLUIE_BCRYPT_ROUNDS (4 to 31, bcrypt's range; each
    one more doubles the time), else 12. A hash keeps the cost it was made with, so changing this leaves
    every stored password working. Below 10 is for tests only (the suite runs at 4: a password is still
    really hashed and checked, in a millisecond instead of a quarter of a second)."""
    raw = os.environ.get("PLUIE_BCRYPT_ROUNDS", "").strip()
    if not raw:
        return DEFAULT_BCRYPT_ROUNDS
    try:
        rounds = int(raw)
    except ValueError:
        rounds = 0
    if not 4 <= rounds <= 31:
        raise ValueError(f"PLUIE_BCRYPT_ROUNDS must be a whole number from 4 to 31, not {raw[:20]!r}.")
    return rounds


def bcrypt_hash(password: str) -> str:
    """bcrypt's hash of ``password`` (any length: bcrypt_input) at the configured cost (bcrypt_rounds)."""
    return bcrypt.hashpw(bcrypt_input(password), bcrypt.gensalt(bcrypt_rounds())).decode("ascii")


def bcrypt_input(password: str) -> bytes:
    """What bcrypt is given for this password. bcrypt reads at most 72 bytes (and the bcrypt package
    refuses more), so a longer password is first hashed with SHA-256 and given as its 44-character
    base64 text: every byte of it counts, and the hashes of passwords of up to 72 bytes are those
    bcrypt always made (hashes already configured keep working)."""
    raw = password.encode("utf-8")
    if len(raw) <= 72:
        return raw
    return base64.b64encode(hashlib.sha256(raw).digest())


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
        return bcrypt.checkpw(bcrypt_input(password), configured_hash().encode("utf-8"))
    except ValueError:  # a malformed hash in the configuration matches nothing
        return False


# ---------------------------------------------------------------- password guessing

login_log = logging.getLogger("pluie_lab.login")


class LoginGuard:
    """Slows down repeated wrong admin passwords, per address and per account, without locking out
    the people who know the password.

    Per address (the client's IP address, see client_address): `free` wrong passwords within `window`
    seconds cost nothing; after each further one that address waits before its next try, twice as
    long each time (1 s, 2 s, 4 s ...) up to `longest` (15 minutes). Per account (the account being
    guessed; today the one admin): after `account_free` wrong passwords within the window, from all
    addresses together, an address that has itself failed within the window also waits for the
    account, twice as long after each further failure (1 s, 2 s ...) up to `account_longest`, so that
    guessing from many addresses is slowed down too. An address with no recent failure is never made
    to wait: its password is checked at once, so no guesser can lock the team out. A try while waiting
    is refused without checking the password. The right password clears that address's failures.

    The counts live in the server's memory (a restart forgets them), on a clock that only goes forward
    (a clock stepped back does not lengthen a wait); every failure and refusal is logged (logger
    `pluie_lab.login`)."""

    def __init__(
        self,
        free: int = 5,
        account_free: int = 20,
        window: float = 900.0,
        longest: float = 900.0,
        account_longest: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.free, self.account_free, self.window, self.longest = free, account_free, window, longest
        self.account_longest, self.clock = account_longest, clock
        self._lock = threading.Lock()
        self._clients: dict[str, deque] = {}
        self._accounts: dict[str, deque] = {}
        self._last_reading: Optional[float] = None
        self._stepped_back = 0.0

    def clear(self) -> None:
        with self._lock:
            self._clients.clear()
            self._accounts.clear()

    def _now(self) -> float:
        """The clock, made to only go forward: a step back is added back, so waits go on from there."""
        reading = self.clock()
        if self._last_reading is not None and reading < self._last_reading:
            self._stepped_back += self._last_reading - reading
        self._last_reading = reading
        return reading + self._stepped_back

    def _forget_old(self, times: deque, now: float) -> deque:
        while times and times[0] <= now - self.window:
            times.popleft()
        return times

    @staticmethod
    def _until(times: deque, free: int, longest: float) -> float:
        if len(times) <= free:
            return 0.0
        return times[-1] + min(2.0 ** (len(times) - free - 1), longest)

    def _wait(self, client: str, account: str, now: float) -> int:
        mine = self._forget_old(self._clients.get(client, deque()), now)
        until = self._until(mine, self.free, self.longest)
        if mine:  # only an address that has failed lately waits for the account
            tries = self._forget_old(self._accounts.get(account, deque()), now)
            until = max(until, self._until(tries, self.account_free, self.account_longest))
        return max(0, math.ceil(until - now))

    def wait(self, client: str, account: str = "admin") -> int:
        """Whole seconds this client must wait before its next try (0: it may try now)."""
        with self._lock:
            return self._wait(client, account, self._now())

    def failed(self, client: str, account: str = "admin") -> int:
        """Count a wrong password from this client; the seconds it must now wait."""
        with self._lock:
            now = self._now()
            if len(self._clients) > 10_000:  # forged or many addresses: forget those quiet for a window
                for quiet in [c for c, times in self._clients.items() if not self._forget_old(times, now)]:
                    del self._clients[quiet]
            self._clients.setdefault(client, deque()).append(now)
            self._accounts.setdefault(account, deque()).append(now)
            waiting = self._wait(client, account, now)
            from_there, in_all = len(self._clients[client]), len(self._accounts[account])
        login_log.warning(
            "wrong password for %s from %s (%d from there, %d for the account, in the last %d s); next try in %d s",
            account,
            client,
            from_there,
            in_all,
            self.window,
            waiting,
        )
        return waiting

    def refused(self, client: str, waiting: int, account: str = "admin") -> None:
        login_log.warning("login for %s from %s refused: too many attempts, %d s to wait", account, client, waiting)

    def succeeded(self, client: str) -> None:
        with self._lock:
            self._clients.pop(client, None)


LOGIN_GUARD = LoginGuard()  # one per server process: every session's log-in goes through it


def trusted_proxies() -> list:
    """The reverse proxies whose X-Forwarded-For is believed: PLUIE_TRUSTED_PROXIES (addresses or
    networks, separated by commas), else `[login] trusted_proxies` in pluie_lab.toml; none by default.
    An IPv4 address written IPv4-mapped (::ffff:127.0.0.1) is read as the IPv4 address it maps."""
    raw = os.environ.get("PLUIE_TRUSTED_PROXIES")
    if raw is None:
        config = Path(CONFIG_FILE)
        if config.is_file():
            with config.open("rb") as fh:
                raw = tomllib.load(fh).get("login", {}).get("trusted_proxies", [])
        else:
            raw = []
    entries = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else [raw]
    networks = []
    for entry in entries:
        text = str(entry).strip()
        if not text:
            continue
        try:
            networks.append(_unmapped_network(ipaddress.ip_network(text, strict=False)))
        except ValueError:
            raise ValueError(
                f"The trusted proxies must be IP addresses or networks, not {text[:60]!r} "
                "(PLUIE_TRUSTED_PROXIES or [login] trusted_proxies in pluie_lab.toml)."
            ) from None
    return networks


def _unmapped_network(network):
    """An IPv6 network inside ::ffff:0:0/96 (IPv4-mapped addresses) as the IPv4 network it maps."""
    mapped = ipaddress.ip_network("::ffff:0:0/96")
    if network.version == 6 and network.prefixlen >= 96 and network.subnet_of(mapped):
        return ipaddress.ip_network((network.network_address.ipv4_mapped, network.prefixlen - 96))
    return network


def _forwarded_host(entry: str) -> str:
    """The address in one X-Forwarded-For entry ("1.2.3.4", "1.2.3.4:5678", "[::1]:80", "::1")."""
    entry = entry.strip()
    if entry.startswith("[") and "]" in entry:
        return entry[1 : entry.index("]")]
    if entry.count(":") == 1:
        return entry.split(":")[0]
    return entry


def _address(text: Optional[str]) -> "ipaddress.IPv4Address | ipaddress.IPv6Address | None":
    """``text`` as an IP address, None when it is none. An IPv4-mapped IPv6 address (::ffff:127.0.0.1, how a
    server listening on every interface, "::", sees an IPv4 client) is the IPv4 address it maps, and an
    IPv6 scope ("fe80::1%eth0") is dropped, so that an address compares as the address it is, not as text."""
    if not text:
        return None
    try:
        address = ipaddress.ip_address(text.split("%", 1)[0] if ":" in text else text)
    except ValueError:
        return None
    if address.version == 6 and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_trusted_proxy(peer: Optional[str], proxies: Optional[list] = None) -> bool:
    """Whether the connection's address ``peer`` is one of the trusted proxies (trusted_proxies(), or
    ``proxies``), compared as addresses: ::ffff:127.0.0.1 is 127.0.0.1, 10.1.2.3 is in 10.0.0.0/8."""
    address = _address(peer)
    if address is None:
        return False
    proxies = trusted_proxies() if proxies is None else proxies
    return any(address in _unmapped_network(network) for network in proxies)


def client_address(peer: Optional[str], forwarded: Optional[str], proxies: Optional[list] = None) -> str:
    """The address a login attempt is counted against. ``peer``: the connection's address as the server
    reports it (None: this machine); ``forwarded``: the X-Forwarded-For header, if any.

    The header is believed only when the peer is one of the configured trusted proxies (trusted_proxies):
    then the address is the last one it names that is not itself a trusted proxy. Otherwise it is the peer.
    Streamlit's server already replaces the address of a connection from this machine by the header's, so
    a peer that is one of the header's addresses is taken to be this machine: a client cannot pick its own
    count by forging the header."""
    proxies = trusted_proxies() if proxies is None else proxies
    named = [_forwarded_host(entry) for entry in (forwarded or "").split(",") if entry.strip()]
    named_addresses = {_address(host) for host in named} - {None}
    if peer is None or peer in named or _address(peer) in named_addresses:
        peer = "127.0.0.1"

    if named and is_trusted_proxy(peer, proxies):
        client = next((host for host in reversed(named) if not is_trusted_proxy(host, proxies)), named[0])
    else:
        client = peer
    address = _address(client)
    if address is None:
        return client[:100]  # not an address (a proxy's own text): still one count of its own
    return "localhost" if address.is_loopback else str(address)


def try_password(
    check: Callable[[], bool], client: str, account: str, guard: LoginGuard = LOGIN_GUARD, wrong: str = "Wrong password"
) -> Optional[str]:
    """None when ``check()`` says the password is right and this client may try now; else the sentence to
    show: the password is wrong (``wrong``), or there were too many attempts and how long to wait. While
    the client must wait, ``check`` is not called."""
    waiting = guard.wait(client, account)
    if waiting:
        guard.refused(client, waiting, account)
        return f"Too many attempts: try again in {waiting} s."
    if check():
        guard.succeeded(client)
        return None
    waiting = guard.failed(client, account)
    return f"{wrong}; too many attempts: try again in {waiting} s." if waiting else f"{wrong}."


def try_admin_password(
    password: str, client: str, guard: LoginGuard = LOGIN_GUARD, account: str = "admin"
) -> Optional[str]:
    """try_password for the configured admin password."""
    return try_password(lambda: check_admin_password(password), client, account, guard)


def hash_admin_password(password: str) -> str:
    """The value to put in PLUIE_ADMIN_PASSWORD_HASH or `[admin] password_hash` (a password of any
    length: one over bcrypt's 72 bytes is pre-hashed, see bcrypt_input)."""
    return bcrypt_hash(password)


# ---------------------------------------------------------------- organiser sessions


def admin_session_hours() -> float:
    """How long a login lasts: PLUIE_ADMIN_SESSION_HOURS, else `[admin] session_hours`, else 12."""
    raw = os.environ.get("PLUIE_ADMIN_SESSION_HOURS") or _admin_config().get("session_hours", DEFAULT_SESSION_HOURS)
    try:
        hours = float(raw)
    except (TypeError, ValueError):
        hours = float("nan")
    if not hours > 0 or hours == float("inf"):
        raise ValueError(
            f"The organisers' session length must be a positive number of hours, not {raw!r} "
            "(PLUIE_ADMIN_SESSION_HOURS or [admin] session_hours in pluie_lab.toml)."
        )
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
    password = os.environ.get("PLUIE_ADMIN_PASSWORD") or configured_hash() or ""
    context = b"pluie-admin-session\0" + password.encode("utf-8")
    return hmac.new(session_secret(), context, hashlib.sha256).digest()


def _account_key(fingerprint: str) -> bytes:
    return hmac.new(session_secret(), b"pluie-account-session\0" + fingerprint.encode("utf-8"), hashlib.sha256).digest()


def _signature(payload: str, key: Optional[bytes] = None) -> str:
    digest = hmac.new(key or _session_key(), payload.encode("utf-8"), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


FingerprintSource = Callable[[int], Optional[str]]
_FINGERPRINTS: Optional[FingerprintSource] = None


def set_fingerprint_source(source: Optional[FingerprintSource]) -> None:
    """Where admin_session_expiry finds an account's fingerprint (account id -> text, None when the account
    cannot sign in) when its caller gives none: the app registers the store's (ui.access.signin)."""
    global _FINGERPRINTS
    _FINGERPRINTS = source


def issue_admin_session(
    now: Optional[float] = None, account_id: Optional[int] = None, fingerprint: Optional[str] = None
) -> tuple[str, float]:
    """A new session: (token, expiry as a Unix time). The token is safe in a cookie. With ``account_id``
    (and that account's ``fingerprint``) the token is the account's; without, the admin password's."""
    issued = int(time.time() if now is None else now)
    expires = issued + int(admin_session_hours() * 3600)
    payload = f"{issued}.{expires}.{secrets.token_urlsafe(12)}"
    if account_id is None:
        return f"{payload}.{_signature(payload)}", float(expires)
    if fingerprint is None:
        raise ValueError("An account's session needs the account's fingerprint.")
    payload = f"a{int(account_id)}.{payload}"
    return f"{payload}.{_signature(payload, _account_key(fingerprint))}", float(expires)


def session_account(token: Optional[str]) -> Optional[int]:
    """The account id a session token names (not checked: admin_session_expiry checks), None for a token
    of the admin password or not a token."""
    parts = (token or "").split(".")
    if len(parts) != 5 or not parts[0].startswith("a") or not (parts[0][1:].isascii() and parts[0][1:].isdigit()):
        return None
    return int(parts[0][1:])


def admin_session_expiry(
    token: Optional[str], now: Optional[float] = None, fingerprint_of: Optional[FingerprintSource] = None
) -> Optional[float]:
    """When this session ends (Unix time), or None when the token is not a valid, unexpired one signed by
    this server under its current secret and lifetime and, for an account's token, the account's current
    fingerprint (``fingerprint_of``, else the registered source), for the admin password's, the password."""
    if not token or len(token) > 200:
        return None
    parts = token.split(".")
    account_id = session_account(token)
    if account_id is not None:
        source = fingerprint_of or _FINGERPRINTS
        fingerprint = source(account_id) if source is not None else None
        if fingerprint is None:  # no such active account, or nowhere to ask
            return None
        key, parts = _account_key(fingerprint), parts[1:]
    else:
        key = None
    try:
        issued_text, expires_text, nonce, signature = parts
        issued, expires = int(issued_text), int(expires_text)
    except ValueError:
        return None
    expected = _signature(token.rsplit(".", 1)[0], key)
    if not hmac.compare_digest(signature.encode("utf-8"), expected.encode("utf-8")):
        return None
    now = time.time() if now is None else now
    lifetime = admin_session_hours() * 3600
    end = min(expires, issued + lifetime)  # a shortened lifetime applies at once
    # issued "in the future": the server's clock was stepped back since. Only this server can sign, so
    # the session holds, unless the step is longer than a whole session (then nothing it says is sure)
    if not issued - lifetime <= now < end or signature in _logged_out():
        return None
    return float(end)


def _logged_out_file() -> Path:
    return _data_dir() / "logged_out_sessions"


def _logged_out() -> set[str]:
    path = _logged_out_file()
    if not path.is_file():
        return set()
    return {line.split()[1] for line in path.read_text().splitlines() if len(line.split()) == 2}


def end_admin_session(token: Optional[str], fingerprint_of: Optional[FingerprintSource] = None) -> None:
    """Log out: this token is refused from now on, even where a copy of it survives (a cookie
    not yet deleted, another tab). Kept in <data dir>/logged_out_sessions until it expires anyway."""
    end = admin_session_expiry(token, fingerprint_of=fingerprint_of)
    if end is None:
        return
    path = _logged_out_file()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:  # one short line: appends of concurrent log-outs do not mix
        fh.write(f"{int(end)} {token.rsplit('.', 1)[1]}\n")
    if path.stat().st_size > 64_000:  # forget the sessions that have expired by now
        now = time.time()
        lines = [
            line
            for line in path.read_text().splitlines()
            if len(parts := line.split()) == 2 and parts[0].isdigit() and int(parts[0]) > now
        ]
        fresh = path.with_suffix(".tmp")
        fresh.write_text("".join(f"{line}\n" for line in lines))
        os.replace(fresh, path)
