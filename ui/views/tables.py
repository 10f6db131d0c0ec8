"""The analysis pages' tables: a CSV download of a table, a file name from a title, a figure ± its spread."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from pluie_core.export_format import to_csv_bytes

SMALL_DOWNLOAD_ROWS = 1_000  # tables up to this size get their CSV with the page (download_csv)


def download_csv(frame: pd.DataFrame, file_name: str, label: str = "Download CSV", index: bool = False) -> None:
    """A CSV of the table (texts that a spreadsheet would run as formulas are marked, as in the export)."""
    data = frame.reset_index() if index else frame
    # a large table is encoded when the button is clicked (a callable): 100,000 rows took a second on every
    # run of the page; a small one with the page, as its file then outlives a rerun that races the click
    # (a deferred call goes with the run that made it; see pages/export.py)
    contents = to_csv_bytes(data) if len(data) <= SMALL_DOWNLOAD_ROWS else (lambda: to_csv_bytes(data))
    st.download_button(
        label, contents, file_name, "text/csv", key=f"csv_{file_name}", on_click="ignore"
    )  # a download reruns nothing


def file_stem(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_").lower() or "table"


def plus_minus(centre: pd.Series, spread: pd.Series) -> pd.Series:
    """ "0.812 ± 0.031" per row; "—" where a figure is undefined, so no NaN reaches the page."""

    def fmt(values: pd.Series) -> pd.Series:
        return values.map(lambda v: "—" if pd.isna(v) else f"{v:.3f}")

    return fmt(centre) + " ± " + fmt(spread)
