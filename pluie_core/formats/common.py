"""What every pair-file reader shares: the user-facing error and the table a reader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd


class PairFileError(ValueError):
    """A pair file that cannot be read; the message says which row and what is wrong."""


def size_text(n: int) -> str:
    """A byte count as a person reads it: 3.9 KB, 52.0 MB."""
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def listed(items: list[str]) -> str:
    """ "a", "a and b", "a, b and c"."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def places(word: str, numbers, most: int = 10) -> str:
    """Rows (lines, records) named in a sentence: "rows 3, 4 and 2 more"."""
    numbers = [int(n) for n in numbers]
    named = [str(n) for n in numbers[:most]] + ([f"{len(numbers) - most} more"] if len(numbers) > most else [])
    return f"{word.lower()}{'s' if len(numbers) > 1 else ''} {listed(named)}"


@dataclass
class RawTable:
    """A file as read, before its columns are mapped to ours.

    `rows` holds, for each row of `table`, the number a user would look for in their file
    (the line for text tables and JSONL, the record for JSON and XML, the sheet row for
    Excel); `row_word` says which ("Line", "Record", "Row").

    Dataset readers (MRPC, STS-B, ...) already name their columns `source`, `hypothesis`,
    `label`, `external_id`, `annotator:<name>` and fill in what they know of the labels.
    """

    table: pd.DataFrame
    format: str
    rows: np.ndarray
    row_word: str = "Line"
    label_kind: Optional[str] = None  # "binary" | "score" | None (decide from the values)
    label_range: Optional[tuple[float, float]] = None  # the dataset's scale, when known
    annotator_range: Optional[tuple[float, float]] = None
    warnings: list[str] = field(default_factory=list)
    # Generic tables only: strip the apostrophe our CSV export puts before formula-like text.
    spreadsheet_text: bool = False
    # Excel only: (position, column) of the cells holding a formula with no computed value.
    uncomputed: set = field(default_factory=set)

    def where(self, position: int) -> str:
        return f"{self.row_word} {int(self.rows[position])}"
