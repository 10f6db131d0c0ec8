"""The Thresholds page's (pages/thresholds.py) cached figures, its mixed balanced draw, and its first view, read
ahead."""

from __future__ import annotations

import warnings
from typing import Optional

import pandas as pd
import streamlit as st

from pluie_core import analysis as core
from pluie_core import analysis_figures as figures
from pluie_core.stats import StatsWarning, mixed_balanced_draw
from ui.views.read_ahead import Start, Step
from ui.views.store_reads import CACHE_ENTRIES, CACHE_SECONDS, pairs, reference_labels, scores


@st.cache_data(
    ttl=CACHE_SECONDS,
    max_entries=CACHE_ENTRIES,
    show_spinner="Computing the curve, the best threshold, ROC AUC and each dataset's best threshold…",
)
def threshold_figures(
    url: str,
    dataset_ids: tuple[int, ...],
    run_id: int,
    kind: str,
    annotator: Optional[str],
    gold_cut: float,
    higher: bool,
    natural: Optional[float],
    campaign_id: Optional[int] = None,
):
    """The Thresholds page's figures of one run against one reference (core.Reference's kind,
    annotator and gold_cut; pluie_core.analysis_figures.threshold_figures): the curve, the best threshold,
    ROC AUC and, over several datasets, each one's best threshold, ROC AUC and accuracy at the ``natural``
    threshold (None when the run has none); per_dataset is None for one dataset. Three seconds at
    1,000,000 pairs: cached on the store's state and the choices, and the default (first run, gold labels)
    is read ahead. Streamlit keys it on the arguments as passed: callers pass all nine (``campaign_id``:
    that campaign's pairs and labels only)."""
    values = scores(url, (run_id,), dataset_ids).iloc[:, 0]
    data = pairs(url, dataset_ids, False, campaign_id)[["dataset"]].assign(
        score=values, reference=reference_labels(url, dataset_ids, kind, annotator, gold_cut, campaign_id)
    )
    return figures.threshold_figures(data, higher, natural)


@st.cache_data(ttl=CACHE_SECONDS, max_entries=CACHE_ENTRIES, show_spinner="Drawing the balanced samples…")
def balanced_draw(
    draw: pd.DataFrame, runs: list, n_draws: int, seed: int, per_class: int, given: dict, higher: dict
) -> pd.DataFrame:
    """mixed_balanced_draw, cached on the values (0.3 s a run at 1,000,000 pairs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StatsWarning)  # its note is shown by the page, under the draw's figures
        return mixed_balanced_draw(
            draw,
            runs,
            label_col="reference",
            n_draws=n_draws,
            seed=seed,
            per_class=per_class,
            thresholds=given or None,
            higher_is_positive=higher,
        )


def first_view(start: Start) -> list[Step]:
    """The pairs of the first gold scale, their gold reference (the sidebars' default, cut at 0.5), and the
    first run's scores and figures against it."""
    url, gold_ids, campaign, first = start.url, start.gold_ids, start.campaign_id, start.first_run
    found = [
        Step(50, lambda: pairs(url, gold_ids, False, campaign)),
        Step(50, lambda: reference_labels(url, gold_ids, "gold", None, 0.5, campaign)),
    ]
    if first is not None:
        found += [
            Step(50, lambda: scores(url, (int(first["id"]),), gold_ids)),  # the first run (most pages)
            Step(
                50,
                lambda: threshold_figures(
                    url,
                    gold_ids,
                    int(first["id"]),
                    "gold",
                    None,
                    0.5,
                    bool(first["higher_is_similar"]),
                    core.natural_threshold(first["kind"]),
                    campaign,
                ),
            ),
        ]
    return found
