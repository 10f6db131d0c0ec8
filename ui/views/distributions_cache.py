"""The Distributions page's (pages/distributions.py) first view, read ahead: its reads are the shared
ones (ui.views.store_reads)."""

from __future__ import annotations

from ui.views.read_ahead import Start, Step
from ui.views.store_reads import edit_distances, hover_labels


def first_view(start: Start) -> list[Step]:
    """The edit distances of the pairs of the first gold scale (the sidebar's default reference), then what
    the scatter's hover says of their labels (Correlation's scatter too: 0.4 s at 300,000 labels)."""
    return [
        Step(70, lambda: edit_distances(start.url, start.gold_ids)),
        Step(75, lambda: hover_labels(start.url, start.gold_ids, start.campaign_id)),
    ]
