"""What every pair-file reader shares: the user-facing error and the table a reader returns."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd


class PairFileError(ValueError):
    """A pair file that cannot be read; the message says which row and what is wrong."""


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

    def where(self, position: int) -> str:
        return f"{self.row_word} {int(self.rows[position])}"

