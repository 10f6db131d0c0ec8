"""The Correlation page's sections (pages/correlation.py): the reference scale it opens on (one_reference: a
graded reference first), the scatter of one run against the reference with the pairs selected in it, and whether
two runs correlate differently (a paired bootstrap). The figures are pluie_core's, cached by
ui.views.correlation_cache."""

from dataclasses import replace

import pandas as pd
import streamlit as st

from db.analysis import pairs_detail
from pluie_core import analysis_figures
from pluie_core.analysis import scales_sentence
from pluie_core.evaluation.correlation import METHODS, system_means
from pluie_core.stats import StatsError, format_p
from ui import charts
from ui.base.page import get_engine, user_text
from ui.views import store_reads
from ui.views.correlation_cache import correlation_difference, groups, reference_choices
from ui.views.selection import Selection, dataset_names, scale_groups, scale_radio


def fail(error: Exception):
    """The error, said in one sentence, ends the page's run."""
    st.error(user_text(error))
    st.stop()


def one_reference(selection: Selection, kind: str, present=None) -> Selection:
    """The selection narrowed to one choice of reference_choices: a graded reference first where the scope
    has one (gold scores one dataset at a time), the binary 0/1 labels a choice (*Reference scale*); never
    two scales in one figure (the sentence of ui.views.selection.one_scale when the datasets have several).
    Where the scope has no graded reference, one caption says why the page opens on the binary labels."""
    choices = reference_choices(selection, kind, present)
    groups = scale_groups(selection, kind, present)
    if len(groups) > 1:
        st.info(user_text(scales_sentence(groups, dataset_names(selection.choices))))
    binary = [choice for choice in choices if choice.scale.kind == "binary"]
    what = {"gold": ("gold labels", "gold scores"), "raw": ("imported annotator values", "imported annotator values")}
    if binary and kind in what and not any(choice.graded for choice in choices):
        st.caption(
            f"Opens on binary {what[kind][0]} (0/1), so its correlations are point-biserial: no dataset of "
            f"this scope has graded {what[kind][1]} (a score such as STS-B's 0–5 or SICK's 1–5). The mean "
            "level of the labels or a numeric metadata column, above, is graded where the scope has one."
        )
    elif binary and kind in what:
        st.caption(
            f"Opens on graded {what[kind][1]}, one dataset at a time; the binary {what[kind][0]} (0/1) are a "
            "choice under *Reference scale* (point-biserial correlations)."
        )
    if len(choices) < 2:
        return selection
    options = [choice.label for choice in choices]
    shown = scale_radio(
        options,
        format_func=user_text,
        help="Correlations are computed over pairs whose reference shares one scale: graded gold "
        "scores one dataset at a time (or the datasets of one score range, pooled), binary 0/1 "
        "labels as a choice.",
    )
    return replace(selection, dataset_ids=choices[options.index(shown)].dataset_ids)


def scatter(selection: Selection, data: pd.DataFrame, chosen_runs: list, campaign_id) -> None:
    """One run against the reference, a sample drawn (the pairs' sentences and labels on hover); the pairs
    selected in it listed below."""
    shown_run = st.selectbox("Scatter of", chosen_runs, key="correlation_scatter_run")
    points = data[[shown_run, "reference"]].dropna().set_axis(["y", "x"], axis=1)
    drawn = charts.drawn_sample(points, charts.points_drawn(len(points), "correlation_points"))
    texts = store_reads.pairs(selection.url, selection.dataset_ids, True, campaign_id)[["source", "hypothesis"]]
    labelled = store_reads.hover_labels(selection.url, selection.dataset_ids, campaign_id)
    drawn = drawn.join(texts).assign(labels=drawn.index.map(labelled).fillna("none"))
    drawn = drawn.rename_axis("pair_id").reset_index()  # on hover: the pair, its sentences, every label
    picked = charts.draw(
        "scatter",
        drawn,
        {"x": "reference", "y": shown_run, "pair_id": "pair"},
        f"{shown_run} against the reference ({len(drawn):,} of {len(points):,} pairs)",
        key="correlation_scatter",
        select=("box", "lasso"),
    )
    charts.list_pairs(
        charts.selected_pair_ids(picked),
        lambda ids: pairs_detail(get_engine(), ids, campaign_id, annotators=selection.choices.annotators),
        "correlation_scatter",
    )


def compare_runs(
    selection: Selection, data: pd.DataFrame, chosen_runs: list, runs: pd.DataFrame, system_column, n_boot: int
) -> None:
    """Do two runs correlate differently: a paired bootstrap of the chosen coefficient, on the pairs or, with
    ``system_column``, on the systems' means."""
    st.subheader("Do two runs correlate differently?")
    if len(chosen_runs) < 2:
        st.info("Choose two score runs above to compare them.")
        st.stop()
    left, right, how = st.columns(3)
    first = left.selectbox("Run", chosen_runs, index=0, key="correlation_first")
    second = right.selectbox("against", chosen_runs, index=1, key="correlation_second")
    method = how.selectbox("Coefficient", list(METHODS), key="correlation_method")
    # a distance is negated so that both correlations measure agreement with the humans
    oriented = analysis_figures.oriented(data, (first, second), runs)
    try:
        if system_column is None:
            found = correlation_difference(oriented[first], oriented[second], data["reference"], method, n_boot)
        else:
            means = system_means(
                pd.DataFrame(oriented), data["reference"], groups(selection.url, selection.dataset_ids, system_column)
            )
            found = correlation_difference(means[first], means[second], means["reference"], method, n_boot, len(means))
    except StatsError as error:
        fail(error)
    a, b, c = st.columns(3)
    a.metric(f"r {user_text(first)}", f"{found['r_a']:.3f}")
    b.metric(f"r {user_text(second)}", f"{found['r_b']:.3f}")
    c.metric("p (paired bootstrap)", format_p(found["p_value"]))
    st.caption(
        f"Difference {found['difference']:+.3f}, 95% interval [{found['ci_low']:+.3f}, {found['ci_high']:+.3f}], "
        f"on {found['n']:,} {'systems' if system_column else 'pairs'} with both scores and a reference. Distances "
        "are negated first. p is two-sided: twice the share of resamples on the far side of no difference."
    )
