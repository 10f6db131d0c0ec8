"""The lengths the store holds, checked in the write path before anything is written: PostgreSQL
refuses a longer text in a VARCHAR column (StringDataRightTruncation) where SQLite would keep it
whole, so both stores answer alike, with one sentence."""

from __future__ import annotations

from typing import Optional

# names and ids a person types or imports: datasets, campaigns, annotators, runs, reviewers, pair ids
NAME_LENGTH = 200

# what a signed-in person's pages keep for them (db.kept): a widget's key, its value as JSON, and how many
# values an account keeps (the least recently written go past it). A value over its bound is not kept, never
# an error on the page: the person's own memory is a convenience, not a record.
KEPT_KEY_LENGTH = 200
KEPT_VALUE_LENGTH = 65_536  # characters of JSON: a long half-typed note or guidelines draft, not a file
KEPT_KEYS = 300


def check_length(what: str, value: Optional[str], error: type[Exception], limit: int = NAME_LENGTH) -> None:
    """Raise `error` with a sentence when `value` is longer than `limit` characters; `what` starts
    the sentence ("The dataset name", "Pair 3: the pair id")."""
    if value is not None and len(value) > limit:
        raise error(f"{what} has {len(value):,} characters; the limit is {limit:,}.")


# the largest whole number an INTEGER column holds on every store (PostgreSQL's int4; SQLite holds more)
INT_MAX = 2**31 - 1


def check_whole(what: str, value, error: type[Exception], low: int = 0, high: int = INT_MAX) -> int:
    """`value` as an int within [low, high], or `error` with a sentence that gives the bounds: a number
    past what a column holds is refused here, the same on every store, never by the driver."""
    try:
        number = int(value)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{what} must be a whole number; got {str(value)[:40]!r}.") from None
    if number != value and not (isinstance(value, str) and str(number) == value.strip()):
        raise error(f"{what} must be a whole number; got {str(value)[:40]!r}.")
    if not low <= number <= high:
        raise error(f"{what} must be between {low:,} and {high:,}; got {str(value)[:40]}.")
    return number


def invisible(char: str) -> bool:
    """A character that changes nothing a person sees, or changes it unseen: format characters (zero-width
    spaces and joiners, bidi controls, the BOM, the soft hyphen) and the other default-ignorable ones."""
    import unicodedata

    return (
        unicodedata.category(char) == "Cf" or char in "\u034f\u115f\u1160\u3164\uffa0" or "\ufe00" <= char <= "\ufe0f"
    )


def clean_name(what: str, value: Optional[str], error: type[Exception], limit: int = NAME_LENGTH) -> str:
    """A name a person types or imports (dataset, campaign, annotator, run, reviewer) as the store keeps it,
    or `error` with a sentence: Unicode NFC (the same letters typed two ways are one name), invisible
    characters removed (no "s\\u200bam" beside "sam"), spaces around it dropped; refused when empty, longer
    than `limit` or holding a control character (NUL, escape sequences, BEL: names end up in logs and on
    the command line). `what` starts the sentence ("The annotator name")."""
    import unicodedata

    text = unicodedata.normalize("NFC", str(value or ""))
    text = "".join(c for c in text if not invisible(c)).strip()
    if not text:
        raise error(f"{what} is empty; give it a name.")
    for char in text:
        if unicodedata.category(char) == "Cc" or char in "\u2028\u2029":
            raise error(f"{what} contains a control character (U+{ord(char):04X}); names are plain text on one line.")
    check_length(what, text, error, limit)
    return text
