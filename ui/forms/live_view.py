"""The Live campaign page's live view (pages/live_campaign.py): a campaign's figures, flags and annotators' table
as the labels come in, drawn in a fragment the page refreshes by itself. The rules are db.quality's
(campaign_live, reliability_fit) and pluie_core.quality's."""

import math

import pandas as pd
import streamlit as st

from db import campaigns as camp
from db import quality as qual
from db.analysis import LABELS_COUNTED
from pluie_core.aggregation import ADAPTIVE_MIN_LABELS, METHOD_NAMES
from pluie_core.agreement import AGREEMENT_RULE
from pluie_core.quality import (
    CONSENSUS_SURE,
    FLAG_COLUMNS,
    LIVE_COLUMN_GROUPS,
    MIN_ANSWER_LABELS,
    MIN_KAPPA_LABELS,
    MIN_RELIABILITY_LABELS,
    RATE_MIN_HOURS,
    consensus_checks,
    live_columns,
    served_checks_text,
)
from ui.base.page import user_text


@st.cache_data(max_entries=16, show_spinner=False)
def reliability(_engine, campaign_id: int, method: str, n_labels: int) -> pd.DataFrame:
    return qual.reliability_fit(_engine, campaign_id, method)  # n_labels: refit when labels come in


@st.cache_data(max_entries=16, show_spinner=False)
def consensus(labels: pd.DataFrame, ordinary, keys: pd.Series) -> pd.DataFrame:
    return consensus_checks(labels, ordinary, keys)  # one fit per state of the labels, not one per refresh


def number(value, digits=2) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:,.{digits}f}"


def live_view(engine, campaign, method: str) -> None:
    """The view the page draws in its fragment (st.fragment(run_every=...)(live_view)): method is the reliability
    column's, the flags' being the campaign's own."""
    campaign_id = campaign.id
    # one cached fit of the campaign's method serves its reliability flags and, by default, the column
    data = qual.campaign_live(
        engine, campaign_id, fit_reliability=lambda m, n: reliability(engine, campaign_id, m, n), consensus=consensus
    )
    f = data.figures
    # the tiles wrap onto another row where the page is narrow: six columns cut their values at 800 px
    tiles = st.container(horizontal=True, key="live-tiles")
    tiles.metric(
        "Labels",
        f"{f['labels']:,}",
        help=f"Labels given in this campaign: {LABELS_COUNTED} "
        f"({f['gold checks answered']:,} answers to gold checks). The same count on every page.",
    )
    tiles.metric(
        "In the last hour", f"{f['labels in the last hour']:,}", help="Labels given in the last hour, counted alike."
    )
    tiles.metric(
        "Per hour (since the first)",
        number(f["labels per hour (since the first)"], 0),
        help="The labels, counted alike, over the hours since the campaign's first one; “—” until "
        f"{RATE_MIN_HOURS * 60:.0f} minutes have passed since it (too soon for a rate).",
    )
    tiles.metric(
        "Pairs short of their overlap",
        f"{f['pairs short of their overlap']:,} / {f['pairs in queue']:,}",
        help=(
            f"Queue pairs not yet answered by {campaign.overlap} annotator(s)"
            if campaign.overlap_max is None
            else "Queue pairs not yet answered by as many annotators as they want now (adaptive overlap)"
        )
        + " (served but unanswered pairs count as short) / the pairs in the queue.",
    )
    for name, key in (("α ordinal so far", "ordinal"), ("α binarised so far", "binary")):
        figure = f["agreement"][key]
        tiles.metric(
            name,
            number(figure.get("alpha"), 3),
            help=AGREEMENT_RULE
            + (
                f" 95% CI [{figure['ci_low']:.3f}, {figure['ci_high']:.3f}] over {figure['n_items']:,} pairs."
                if figure.get("alpha") is not None
                else f" Not defined yet: {figure.get('why', '')}"
            ),
        )
    if "adaptive" in f:
        a = f["adaptive"]
        st.caption(
            f"Adaptive overlap ({campaign.overlap}–{campaign.overlap_max} annotators per pair, until "
            f"the posterior of a pair's binarised label reaches {campaign.confidence:.0%}): "
            f"{a['given more annotators']:,} pairs were given more than {campaign.overlap}, "
            f"{a['at the maximum']:,} reached {campaign.overlap_max}; the queue wants "
            f"{a['annotators wanted']:,} answers now, against {a['annotators at a fixed maximum']:,} "
            f"at a fixed overlap of {campaign.overlap_max}."
        )
        model = f["adaptive model"]
        if model["decides"]:
            st.caption(
                f"“One more annotator” is decided by the campaign's model: Dawid–Skene over the binarised "
                f"labels, refitted by the worker as answers arrive (last fit {model['fitted at']} UTC, on "
                f"{model['n_labels']:,} labels); a pair stops once that posterior reaches "
                f"{campaign.confidence:.0%} and it holds {campaign.overlap} answers other than Don't know."
            )
        else:
            st.caption(
                "“One more annotator” is decided by the vote share until the campaign's model decides: the worker "
                f"refits it as answers arrive, and it takes over once the median annotator has "
                f"{ADAPTIVE_MIN_LABELS} labels in it"
                + (
                    f" (now {model['median labels per annotator']:g}, on {model['n_labels']:,} labels)."
                    if model["fitted"]
                    else " (not fitted yet: is the worker running?)."
                    if f["labels"]
                    else " (not fitted yet: it is fitted once answers arrive)."
                )
            )
    flagged = data.annotators[data.annotators["flags"] != ""]
    if len(flagged):
        # names are the annotators' own text: every Markdown character escaped, shown as typed
        st.warning(
            "Flagged: "
            + "; ".join(f"{user_text(name)} ({why})" for name, why in zip(flagged["annotator"], flagged["flags"]))
        )
    st.caption(
        f"Median time per pair: {number(data.campaign_median_seconds, 1)} s · gold checks answered: "
        f"{f['gold checks answered']:,} · annotators flagged: {f['annotators flagged']:,}. "
        "κ vs consensus: Cohen's κ on the binarised labels against the others' consensus (Dawid–Skene "
        "anchored by the gold keys, the person left out: unreliable people weigh little), on the pairs where "
        f"that consensus is at least {CONSENSUS_SURE:.0%} sure; κ vs others, against the raw pool, is shown "
        "only. People are listed by the evidence: most flags first, then the lowest gold accuracy. "
        "Each flag says its value, its threshold and what it rests on; “not judged yet”: checks resting "
        f"on too little (fewer than {campaign.min_gold_checks} gold checks answered, "
        f"{MIN_KAPPA_LABELS} sure pairs for κ, {MIN_RELIABILITY_LABELS} labels in the reliability fit, "
        f"{MIN_ANSWER_LABELS} answers for their spread)."
    )
    due = int(data.annotators["gold checks planned"].iloc[0]) if len(data.annotators) else 0
    if due or any(f["gold checks served"]):
        st.caption(
            f"Gold checks: {due} planned per annotator (the share of a full quota); served so far: "
            f"{served_checks_text(f['gold checks served'])}. Checks are served within the pairs each "
            "person gets: one whose queue runs out before the quota gets the share of what they got. "
            "Progress is each annotator's own counter, checks included; it reads full (e.g. 24 / 24) once "
            "nothing is left for them."
        )
    if 0 < due < campaign.min_gold_checks:
        st.caption(
            f"Each annotator is planned {due} gold check(s), fewer than the {campaign.min_gold_checks} needed "
            "to judge gold accuracy: raise the share of checks (or add gold pairs), or lower the minimum."
        )
    table = data.annotators.drop(columns=["labelled"])
    if method != camp.campaign_aggregation(campaign):  # the column by another method than the flags'
        table["reliability"] = reliability(engine, campaign_id, method, f["labels"])["reliability"].reindex(table.index)
    # a group of columns at a time, so that the table fits the page (pluie_core.quality.LIVE_COLUMN_GROUPS); the
    # flags wrap in their cells (Streamlit wraps text in rows taller than 4rem): a flag is read whole, not cut
    group = st.segmented_control(
        "Columns",
        list(LIVE_COLUMN_GROUPS),
        default="Flags",
        key=f"live-columns-{campaign_id}",
        help="The annotator and their counter, with one group of the measures at a time.",
    )
    longest = max((len(str(v)) for c in FLAG_COLUMNS for v in table[c]), default=0)
    lines = min(4, max(1, math.ceil(longest / 40))) if group in (None, "Flags") else 1
    st.dataframe(
        table,
        hide_index=True,
        width="stretch",
        column_order=live_columns(table.columns, group),
        row_height=max(66, 14 + 21 * lines) if lines > 1 else None,
        column_config={
            "flags": st.column_config.TextColumn(width=300),
            "not judged yet": st.column_config.TextColumn(
                width=300, help="Checks resting on too little to flag anyone yet."
            ),
            "last activity": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss"),
            "Don't know rate": st.column_config.NumberColumn(format="percent"),
            "gold accuracy": st.column_config.NumberColumn(format="percent"),
            "gold exact accuracy": st.column_config.NumberColumn(format="percent"),
            "κ vs others": st.column_config.NumberColumn(format="%.3f"),
            "κ vs consensus": st.column_config.NumberColumn(format="%.3f"),
            "consensus labels": st.column_config.NumberColumn(
                help="Their labels on pairs where the others' consensus is sure: what κ vs consensus rests on."
            ),
            "answer entropy": st.column_config.NumberColumn(
                format="%.2f", help="How spread their answers are over the five (1: evenly, 0: always the same)."
            ),
            "top answer": st.column_config.NumberColumn(format="%d", help="Their most frequent answer (0-4)."),
            "top answer share": st.column_config.NumberColumn(format="percent"),
            "side share": st.column_config.NumberColumn(
                format="percent", help="Their answers on their more frequent side of the paraphrase boundary."
            ),
            "consensus side share": st.column_config.NumberColumn(
                format="percent", help="The share the others' consensus expects on that side for the same pairs."
            ),
            "reliability": st.column_config.NumberColumn(
                format="%.2f", help=f"{METHOD_NAMES[method]}: the estimated chance this annotator gives the true label."
            ),
            "shared labels": st.column_config.NumberColumn(
                help="Their labels (Don't know aside) on pairs someone else labelled too: what κ vs others rests on."
            ),
            "labels in fit": st.column_config.NumberColumn(
                help="Their labels (Don't know aside) in the reliability fit: what the reliability rests on."
            ),
            "median s per pair": st.column_config.NumberColumn(format="%.1f"),
        },
        placeholder="—",
    )
