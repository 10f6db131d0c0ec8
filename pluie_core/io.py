"""Reading sentence-pair files into a DataFrame (source, hypothesis, label, ...).

Minimal first version (CSV / TSV / JSONL with source, hypothesis[, label] columns);
the full auto-detecting reader replaces it.
"""
from __future__ import annotations

import pandas as pd


class PairFileError(ValueError):
    """A pair file that cannot be read; the message says which row and what is wrong."""


def load_pairs(path_or_buffer, format: str = "auto") -> pd.DataFrame:
    name = str(getattr(path_or_buffer, "name", path_or_buffer)).lower()
    if format == "auto":
        format = "jsonl" if name.endswith(".jsonl") else "tsv" if name.endswith(".tsv") else "csv"
    if format == "jsonl":
        df = pd.read_json(path_or_buffer, lines=True)
    else:
        df = pd.read_csv(path_or_buffer, sep="\t" if format == "tsv" else ",")
    for col in ("source", "hypothesis"):
        if col not in df.columns:
            raise PairFileError(f"missing column {col!r}")
    if "label" not in df.columns:
        df["label"] = None
    return df
