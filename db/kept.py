"""What a signed-in person's pages keep for them, per account: the last value of each widget a page asked to
keep (the reviewer's name, a half-typed note, a half-filled New campaign form), as JSON (db.models.KeptValue).

ui.access.keep reads an account's values once per session and writes the ones that changed; a store used
without accounts keeps them in the server's memory per browser instead. This is the person's own memory, so
there is no role check (a viewer keeps their own too) and no line in the activity log, and what cannot be kept
is left out without a word: a value that is not JSON (only text, numbers, booleans, None, lists and dicts of
them are), a key over ``KEPT_KEY_LENGTH`` characters, a value over ``KEPT_VALUE_LENGTH`` characters of JSON.
An account keeps at most ``KEPT_KEYS`` values: past it, the least recently written go. Its values go with it
(ON DELETE CASCADE).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Iterable, Mapping, Optional

from sqlalchemy import delete, func, select
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError

from db.engine import read_session, write_session
from db.limits import KEPT_KEY_LENGTH, KEPT_KEYS, KEPT_VALUE_LENGTH
from db.models import KeptValue, utcnow

__all__ = ["encode", "kept_values", "keep_values", "drop_values"]

_log = logging.getLogger("pluie_lab.kept")


def _usable_key(key) -> bool:
    return isinstance(key, str) and 0 < len(key) <= KEPT_KEY_LENGTH and "\x00" not in key


def encode(value: Any) -> Optional[str]:
    """``value`` as the store keeps it (JSON; a tuple reads back as a list), or None when it cannot be kept:
    not JSON (a date, an object, NaN), over KEPT_VALUE_LENGTH characters, or text that is not valid Unicode
    (a lone surrogate)."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        text.encode("utf-8")
    except (TypeError, ValueError):  # UnicodeEncodeError is a ValueError
        return None
    return text if len(text) <= KEPT_VALUE_LENGTH else None


def kept_values(engine: Engine, account_id: int) -> dict[str, Any]:
    """Every value the account keeps, by key (a row that does not read as JSON is left out)."""
    with read_session(engine) as session:
        rows = session.execute(select(KeptValue.key, KeptValue.value).where(KeptValue.account_id == account_id))
        found = {}
        for key, text in rows:
            try:
                found[key] = json.loads(text)
            except ValueError:
                continue
        return found


def keep_values(engine: Engine, account_id: int, values: Mapping[str, Any]) -> dict[str, str]:
    """Keep ``values`` (key -> value) for the account, in one transaction: a key it keeps already is updated
    when its value changed, a new one added; what cannot be kept (see the module) is left out. Returns what the
    store now holds of them, key -> JSON (to compare the next values with). An account that no longer exists
    keeps nothing ({})."""
    wanted = {}
    for key, value in values.items():
        text = encode(value) if _usable_key(key) else None
        if text is not None:
            wanted[key] = text
    if not wanted:
        return {}
    # select, then update or insert: the same on SQLite and PostgreSQL. Two sessions of one account adding the
    # same key at once (two tabs): one insert loses on the unique key, and its second try finds the row.
    for attempt in range(2):
        try:
            _write(engine, account_id, wanted)
            return wanted
        except IntegrityError:
            if attempt:
                _log.info("kept values of account %s not written: the account no longer exists", account_id)
    return {}


def _write(engine: Engine, account_id: int, wanted: dict[str, str]) -> None:
    now = utcnow()
    with write_session(engine) as session:
        held = {
            row.key: row
            for row in session.scalars(
                select(KeptValue).where(KeptValue.account_id == account_id, KeptValue.key.in_(list(wanted)))
            )
        }
        for key, text in wanted.items():
            row = held.get(key)
            if row is None:
                session.add(KeptValue(account_id=account_id, key=key, value=text, updated_at=now))
            elif row.value != text:
                row.value, row.updated_at = text, now
        session.flush()
        count = session.scalar(select(func.count()).select_from(KeptValue).where(KeptValue.account_id == account_id))
        if count > KEPT_KEYS:  # the least recently written go
            old = session.scalars(
                select(KeptValue.id)
                .where(KeptValue.account_id == account_id)
                .order_by(KeptValue.updated_at.desc(), KeptValue.id.desc())
                .offset(KEPT_KEYS)
            ).all()
            session.execute(delete(KeptValue).where(KeptValue.id.in_(old)))


def drop_values(engine: Engine, account_id: int, keys: Iterable[str]) -> None:
    """Forget these keys of the account (a note once its decision is saved, a form once used)."""
    keys = [key for key in keys if _usable_key(key)]
    if not keys:
        return
    with write_session(engine) as session:
        session.execute(delete(KeptValue).where(KeptValue.account_id == account_id, KeptValue.key.in_(keys)))
