"""Access without a database: personal-link tokens and the admin password.

A token is shown once to the admin and only its sha256 is stored, so a copy of the store
does not let anyone label in somebody else's name. The admin password comes from the
configuration, never from the repository: PLUIE_ADMIN_PASSWORD (plain), or a bcrypt hash in
PLUIE_ADMIN_PASSWORD_HASH or in pluie_lab.toml under `[admin] password_hash`.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import tomllib
from pathlib import Path
from typing import Optional

import bcrypt

CONFIG_FILE = "pluie_lab.toml"


def new_token() -> str:
    """An unguessable personal-link token (192 random bits)."""
    return secrets.token_urlsafe(24)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _configured_hash() -> Optional[str]:
    if os.environ.get("PLUIE_ADMIN_PASSWORD_HASH"):
        return os.environ["PLUIE_ADMIN_PASSWORD_HASH"]
    config = Path(CONFIG_FILE)
    if config.is_file():
        with config.open("rb") as fh:
            return tomllib.load(fh).get("admin", {}).get("password_hash") or None
    return None


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


def hash_admin_password(password: str) -> str:
    """The value to put in PLUIE_ADMIN_PASSWORD_HASH or `[admin] password_hash`."""
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt()).decode("ascii")
