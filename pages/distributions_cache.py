"""The Distributions page's (pages/distributions.py) first view, read ahead: its reads are the shared
ones (pages.store_reads)."""
from __future__ import annotations

from pages.read_ahead import Start, Step
from pages.store_reads import edit_distances


def first_view(start: Start) -> list[Step]:
    """The edit distances of the pairs of the first gold scale (the sidebar's default reference)."""
    return [Step(70, lambda: edit_distances(start.url, start.gold_ids))]
