"""Small helpers for the sentences the app writes: a count with its noun in the right number, and
a text of several paragraphs on one line (a table cell shows no line breaks)."""

from __future__ import annotations

from typing import Optional

__all__ = ["counted", "one_line"]


def counted(n: int, noun: str, plural: Optional[str] = None) -> str:
    """``n`` with thousands separators and its noun: 1 pair, 2 pairs, 1,000 pairs (``plural``
    when it is not the noun + "s": 1 was kept, ...)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def one_line(text: Optional[str], separator: str = " · ") -> str:
    """The text's non-empty lines joined by ``separator``: a description and the note an import
    added under it, read in one table cell, stay apart."""
    return separator.join(line.strip() for line in (text or "").splitlines() if line.strip())
