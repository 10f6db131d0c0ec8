"""The lengths the store holds, checked in the write path before anything is written: PostgreSQL
refuses a longer text in a VARCHAR column (StringDataRightTruncation) where SQLite would keep it
whole, so both stores answer alike, with one sentence."""
from __future__ import annotations

from typing import Optional

# names and ids a person types or imports: datasets, campaigns, annotators, runs, reviewers, pair ids
NAME_LENGTH = 200


def check_length(what: str, value: Optional[str], error: type[Exception], limit: int = NAME_LENGTH) -> None:
    """Raise `error` with a sentence when `value` is longer than `limit` characters; `what` starts
    the sentence ("The dataset name", "Pair 3: the pair id")."""
    if value is not None and len(value) > limit:
        raise error(f"{what} has {len(value):,} characters; the limit is {limit:,}.")
