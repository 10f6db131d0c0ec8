"""Admin: a campaign as it runs (refreshing by itself) and its quality checks: gold pairs and flags."""
import math

import pandas as pd
import streamlit as st

from db import campaigns as camp
from db import quality as qual
from db.access import NotAllowed
from db.analysis import LABELS_COUNTED
from db.engine import StoreUnavailable
from ui.views import store_reads
from ui.views import scope as scopes
from ui.forms.gold_form import gold_from_dataset_form, gold_table
from ui.frame import admin_page
from ui.base.page import user_text
from pluie_core.agreement import AGREEMENT_RULE
from pluie_core.aggregation import ADAPTIVE_MIN_LABELS, METHOD_NAMES, METHODS
from pluie_core.labels import LEVELS
from pluie_core.quality import (
    CONSENSUS_SURE, DOMINANCE_MARGIN, ENTROPY_MIN, MAX_MIN_GOLD_CHECKS, MIN_ANSWER_LABELS, MIN_KAPPA_LABELS,
    FLAG_COLUMNS, LIVE_COLUMN_GROUPS, MIN_RELIABILITY_LABELS, RATE_MIN_HOURS, consensus_checks, live_columns,
    served_checks_text,
)

engine = admin_page("table")
st.title("Live campaign")
campaigns = camp.list_campaigns(engine)
if not campaigns:
    st.info("No campaign yet: create one under Campaigns.")
    st.stop()
by_id = {c.id: c for c in campaigns}
c1, c3, c2 = st.columns([3, 1, 1])
# the session's scope (ui.views.scope): the campaign chosen on any page, else the one with the latest label
chosen = scopes.pick_campaign(store_reads.store_key(), c1,
                              lambda i: by_id[i].name + ("" if by_id[i].active else " (closed)") if i in by_id else str(i))
if chosen not in by_id:  # created since the scope's list was read
    chosen = campaigns[0].id
method = c3.selectbox("Reliability by", METHODS, format_func=METHOD_NAMES.get, key=f"live-aggregation-{chosen}",
                      index=METHODS.index(camp.campaign_aggregation(by_id[chosen])),
                      help="The estimated chance that each annotator gives the true label (pluie_core.aggregation; "
                           "refitted only when new labels come in). The reliability flag always uses the "
                           "campaign's own method (chosen on Export).")
every = c2.selectbox("Refresh every", [5, 15, 60, None], index=1,
                     format_func=lambda s: "never (manual)" if s is None else f"{s} s")
campaign = camp.get_campaign(engine, chosen)


@st.cache_data(max_entries=16, show_spinner=False)
def reliability(_engine, campaign_id: int, method: str, n_labels: int) -> pd.DataFrame:
    return qual.reliability_fit(_engine, campaign_id, method)  # n_labels: refit when labels come in


@st.cache_data(max_entries=16, show_spinner=False)
def consensus(labels: pd.DataFrame, ordinary, keys: pd.Series) -> pd.DataFrame:
    return consensus_checks(labels, ordinary, keys)  # one fit per state of the labels, not one per refresh


def number(value, digits=2) -> str:
    return "—" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:,.{digits}f}"


@st.fragment(run_every=every)
def live_view(campaign_id: int) -> None:
    # one cached fit of the campaign's method serves its reliability flags and, by default, the column
    data = qual.campaign_live(engine, campaign_id, fit_reliability=lambda m, n: reliability(engine, campaign_id, m, n),
                              consensus=consensus)
    f = data.figures
    # the tiles wrap onto another row where the page is narrow: six columns cut their values at 800 px
    tiles = st.container(horizontal=True, key="live-tiles")
    tiles.metric("Labels", f"{f['labels']:,}", help=f"Labels given in this campaign: {LABELS_COUNTED} "
                 f"({f['gold checks answered']:,} answers to gold checks). The same count on every page.")
    tiles.metric("In the last hour", f"{f['labels in the last hour']:,}", help="Labels given in the last hour, counted alike.")
    tiles.metric("Per hour (since the first)", number(f["labels per hour (since the first)"], 0),
                 help="The labels, counted alike, over the hours since the campaign's first one; “—” until "
                      f"{RATE_MIN_HOURS * 60:.0f} minutes have passed since it (too soon for a rate).")
    tiles.metric("Pairs short of their overlap", f"{f['pairs short of their overlap']:,} / {f['pairs in queue']:,}",
                 help=(f"Queue pairs not yet answered by {campaign.overlap} annotator(s)" if campaign.overlap_max is None
                       else "Queue pairs not yet answered by as many annotators as they want now (adaptive overlap)")
                 + " (served but unanswered pairs count as short) / the pairs in the queue.")
    for name, key in (("α ordinal so far", "ordinal"), ("α binarised so far", "binary")):
        figure = f["agreement"][key]
        tiles.metric(name, number(figure.get("alpha"), 3), help=AGREEMENT_RULE + (
            f" 95% CI [{figure['ci_low']:.3f}, {figure['ci_high']:.3f}] over {figure['n_items']:,} pairs."
            if figure.get("alpha") is not None else f" Not defined yet: {figure.get('why', '')}"))
    if "adaptive" in f:
        a = f["adaptive"]
        st.caption(
            f"Adaptive overlap ({campaign.overlap}–{campaign.overlap_max} annotators per pair, until "
            f"the posterior of a pair's binarised label reaches {campaign.confidence:.0%}): "
            f"{a['given more annotators']:,} pairs were given more than {campaign.overlap}, "
            f"{a['at the maximum']:,} reached {campaign.overlap_max}; the queue wants "
            f"{a['annotators wanted']:,} answers now, against {a['annotators at a fixed maximum']:,} "
            f"at a fixed overlap of {campaign.overlap_max}.")
        model = f["adaptive model"]
        if model["decides"]:
            st.caption(f"“One more annotator” is decided by the campaign's model: Dawid–Skene over the binarised "
                       f"labels, refitted by the worker as answers arrive (last fit {model['fitted at']} UTC, on "
                       f"{model['n_labels']:,} labels); a pair stops once that posterior reaches "
                       f"{campaign.confidence:.0%} and it holds {campaign.overlap} answers other than Don't know.")
        else:
            st.caption("“One more annotator” is decided by the vote share until the campaign's model decides: the worker "
                       f"refits it as answers arrive, and it takes over once the median annotator has "
                       f"{ADAPTIVE_MIN_LABELS} labels in it"
                       + (f" (now {model['median labels per annotator']:g}, on {model['n_labels']:,} labels)."
                          if model["fitted"] else " (not fitted yet: is the worker running?)." if f["labels"]
                          else " (not fitted yet: it is fitted once answers arrive)."))
    flagged = data.annotators[data.annotators["flags"] != ""]
    if len(flagged):
        # names are the annotators' own text: every Markdown character escaped, shown as typed
        st.warning("Flagged: " + "; ".join(f"{user_text(name)} ({why})" for name, why in zip(flagged["annotator"], flagged["flags"])))
    st.caption(f"Median time per pair: {number(data.campaign_median_seconds, 1)} s · gold checks answered: "
               f"{f['gold checks answered']:,} · annotators flagged: {f['annotators flagged']:,}. "
               "κ vs consensus: Cohen's κ on the binarised labels against the others' consensus (Dawid–Skene "
               "anchored by the gold keys, the person left out: unreliable people weigh little), on the pairs where "
               f"that consensus is at least {CONSENSUS_SURE:.0%} sure; κ vs others, against the raw pool, is shown "
               "only. People are listed by the evidence: most flags first, then the lowest gold accuracy. "
               "Each flag says its value, its threshold and what it rests on; “not judged yet”: checks resting "
               f"on too little (fewer than {campaign.min_gold_checks} gold checks answered, "
               f"{MIN_KAPPA_LABELS} sure pairs for κ, {MIN_RELIABILITY_LABELS} labels in the reliability fit, "
               f"{MIN_ANSWER_LABELS} answers for their spread).")
    due = int(data.annotators["gold checks planned"].iloc[0]) if len(data.annotators) else 0
    if due or any(f["gold checks served"]):
        st.caption(f"Gold checks: {due} planned per annotator (the share of a full quota); served so far: "
                   f"{served_checks_text(f['gold checks served'])}. Checks are served within the pairs each "
                   "person gets: one whose queue runs out before the quota gets the share of what they got. "
                   "Progress is each annotator's own counter, checks included; it reads full (e.g. 24 / 24) once "
                   "nothing is left for them.")
    if 0 < due < campaign.min_gold_checks:
        st.caption(f"Each annotator is planned {due} gold check(s), fewer than the {campaign.min_gold_checks} needed "
                   "to judge gold accuracy: raise the share of checks (or add gold pairs), or lower the minimum.")
    table = data.annotators.drop(columns=["labelled"])
    if method != camp.campaign_aggregation(campaign):  # the column by another method than the flags'
        table["reliability"] = reliability(engine, campaign_id, method, f["labels"])["reliability"].reindex(table.index)
    # a group of columns at a time, so that the table fits the page (pluie_core.quality.LIVE_COLUMN_GROUPS); the
    # flags wrap in their cells (Streamlit wraps text in rows taller than 4rem): a flag is read whole, not cut
    group = st.segmented_control("Columns", list(LIVE_COLUMN_GROUPS), default="Flags", key=f"live-columns-{campaign_id}",
                                 help="The annotator and their counter, with one group of the measures at a time.")
    longest = max((len(str(v)) for c in FLAG_COLUMNS for v in table[c]), default=0)
    lines = min(4, max(1, math.ceil(longest / 40))) if group in (None, "Flags") else 1
    st.dataframe(table, hide_index=True, width="stretch", column_order=live_columns(table.columns, group),
                 row_height=max(66, 14 + 21 * lines) if lines > 1 else None, column_config={
        "flags": st.column_config.TextColumn(width=300),
        "not judged yet": st.column_config.TextColumn(width=300, help="Checks resting on too little to flag anyone yet."),
        "last activity": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm:ss"),
        "Don't know rate": st.column_config.NumberColumn(format="percent"),
        "gold accuracy": st.column_config.NumberColumn(format="percent"),
        "gold exact accuracy": st.column_config.NumberColumn(format="percent"),
        "κ vs others": st.column_config.NumberColumn(format="%.3f"),
        "κ vs consensus": st.column_config.NumberColumn(format="%.3f"),
        "consensus labels": st.column_config.NumberColumn(help="Their labels on pairs where the others' consensus "
                                                          "is sure: what κ vs consensus rests on."),
        "answer entropy": st.column_config.NumberColumn(format="%.2f", help="How spread their answers are over "
                                                        "the five (1: evenly, 0: always the same)."),
        "top answer": st.column_config.NumberColumn(format="%d", help="Their most frequent answer (0-4)."),
        "top answer share": st.column_config.NumberColumn(format="percent"),
        "side share": st.column_config.NumberColumn(format="percent", help="Their answers on their more frequent "
                                                    "side of the paraphrase boundary."),
        "consensus side share": st.column_config.NumberColumn(format="percent", help="The share the others' "
                                                              "consensus expects on that side for the same pairs."),
        "reliability": st.column_config.NumberColumn(format="%.2f", help=f"{METHOD_NAMES[method]}: the estimated "
                                                     "chance this annotator gives the true label."),
        "shared labels": st.column_config.NumberColumn(help="Their labels (Don't know aside) on pairs someone "
                                                       "else labelled too: what κ vs others rests on."),
        "labels in fit": st.column_config.NumberColumn(help="Their labels (Don't know aside) in the reliability "
                                                       "fit: what the reliability rests on."),
        "median s per pair": st.column_config.NumberColumn(format="%.1f"),
    }, placeholder="—")


live_view(campaign.id)

st.subheader("Quality checks")
st.caption("Flags: gold accuracy (an answer on the key's side, or an adjacent level the key accepts; Don't know "
           "counts as a miss) under the minimum, once enough checks are answered; κ vs consensus under its "
           f"minimum (on {MIN_KAPPA_LABELS}+ pairs where the others' consensus is sure); answers that barely depend "
           f"on the pair (on {MIN_ANSWER_LABELS}+ answers: one side {DOMINANCE_MARGIN:.0%} or more above the "
           f"consensus' share of the same pairs, or an entropy under {ENTROPY_MIN:g} of its maximum), whatever the "
           "streak; the reliability estimated by the campaign's model "
           f"({METHOD_NAMES[camp.campaign_aggregation(campaign)]}; under majority vote, agreement with the raw "
           f"pool, shown but no flag) under its minimum (on {MIN_RELIABILITY_LABELS}+ labels in the fit); a median "
           "time per pair under the fraction of the campaign's median; the same answer the streak length times in "
           "a row. Gold keys from a graded score come from its clear ends only (see the form below). "
           "Gold checks are mixed into each annotator's pairs (the share of the pairs served after training), "
           "each at most once per person, numbered like the other pairs and not counted in the quota; they are "
           "spread over the pairs each person can actually get, so a queue that runs out early gives fewer. "
           "Gold pairs come from the campaign's own datasets.")


# The settings form is drawn from the store at a revision, kept per campaign in st.session_state with the values
# it was drawn with; a save names that revision, so a form drawn before another organiser's save is refused
# (db.quality.set_quality_settings says what changed) instead of silently undoing it.
def setting_key(campaign_id: int, name: str) -> str:
    return f"quality-{campaign_id}-{name}"


def draw_settings(drawn) -> None:
    """The form's fields, and the revision it saves over, set from the campaign as stored."""
    values = qual.quality_settings(drawn)
    for name, value in values.items():
        st.session_state[setting_key(drawn.id, name)] = value
    st.session_state[f"quality-drawn-{drawn.id}"] = {"revision": drawn.settings_revision, "seen": values}


def save_settings(campaign_id: int) -> None:
    """"Save the quality settings" (a callback: it runs before the form is drawn, so it may redraw it)."""
    drawn = st.session_state[f"quality-drawn-{campaign_id}"]
    values = {name: st.session_state[setting_key(campaign_id, name)] for name in qual.QUALITY_SETTINGS}
    try:
        qual.set_quality_settings(engine, campaign_id, **values, revision=drawn["revision"], seen=drawn["seen"])
        outcome = ("success", "Saved: new pairs served follow the new share; the flags use the new thresholds.")
    except camp.StaleFormError as exc:  # theirs is in the store: the form shows it, to make one's changes again
        outcome = ("error", str(exc))
    except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:  # the form keeps what was typed
        st.session_state[f"quality-outcome-{campaign_id}"] = ("error", str(exc))
        return
    draw_settings(camp.get_campaign(engine, campaign_id))
    st.session_state[f"quality-outcome-{campaign_id}"] = outcome


if f"quality-drawn-{campaign.id}" not in st.session_state or any(
        setting_key(campaign.id, name) not in st.session_state for name in qual.QUALITY_SETTINGS):
    draw_settings(campaign)  # first drawn (or the page left and opened again): from the store
with st.form("quality-settings"):
    s = st.columns(4)
    s[0].number_input("Share of gold checks", 0.0, 0.5, step=0.05, key=setting_key(campaign.id, "gold_rate"))
    s[1].number_input("Minimum gold accuracy", 0.0, 1.0, step=0.05, key=setting_key(campaign.id, "gold_min_accuracy"))
    s[2].number_input("Too fast: under this × the median time", 0.01, 0.99, step=0.05,
                      key=setting_key(campaign.id, "fast_fraction"))
    s[3].number_input("Streak length", 2, qual.MAX_STREAK_LENGTH, step=1, key=setting_key(campaign.id, "streak_length"))
    s = st.columns(4)
    s[0].number_input("Minimum κ vs consensus", -1.0, 1.0, step=0.05, key=setting_key(campaign.id, "kappa_min"),
                      help="Flag an annotator whose κ against the others' consensus is under this, "
                           f"once it rests on {MIN_KAPPA_LABELS} pairs where that consensus is sure.")
    s[1].number_input("Minimum reliability", 0.0, 1.0, step=0.05, key=setting_key(campaign.id, "reliability_min"),
                      help="Flag an annotator whose reliability (the campaign's aggregation "
                           f"method) is under this, once it rests on {MIN_RELIABILITY_LABELS} "
                           "labels in the fit.")
    s[2].number_input("Minimum gold checks to judge", 1, MAX_MIN_GOLD_CHECKS, step=1,
                      key=setting_key(campaign.id, "min_gold_checks"),
                      help="Gold accuracy on fewer answered checks reads “too few checks”, not a flag.")
    st.form_submit_button("Save the quality settings", on_click=save_settings, args=(campaign.id,))
    if outcome := st.session_state.pop(f"quality-outcome-{campaign.id}", None):
        (st.success if outcome[0] == "success" else st.error)(user_text(outcome[1]))

gold_box = st.container()  # filled after the forms below: a pair just marked is counted and listed at once
left, right = st.columns(2)
with left:
    gold_from_dataset_form(engine, campaign)
with right.form("gold-by-id"):
    lines = st.text_area("Or mark pairs by id, one per line: pair id or the file's own id, known level (0-3 or its name)",
                         placeholder="1234, 3\nid:1089874, Very different",
                         help="A number is the pair id (Pairs page) or the file's id; when it is both, write "
                              "pair:1234 or id:1234.")
    if st.form_submit_button("Mark as gold"):
        parts = [[p.strip() for p in line.split(",", 1)] for line in lines.splitlines() if line.strip()]
        try:
            added = qual.add_gold_pairs(engine, campaign.id, pd.DataFrame(
                [p + [""] * (2 - len(p)) for p in parts], columns=["pair", "level"]))
            st.success(f"{added:,} gold pairs marked.")
        except (camp.CampaignError, NotAllowed) as exc:
            st.error(user_text(exc))
gold = qual.gold_pairs(engine, campaign.id)
with gold_box:
    gold_table(gold, campaign.gold_min_accuracy)
if len(gold):
    names = dict(zip(gold["pair_id"], gold["name"]))
    drop = st.multiselect("Stop using as checks", gold["pair_id"].tolist(), format_func=names.get)
    if st.button("Remove", disabled=not drop):
        try:
            qual.remove_gold_pairs(engine, campaign.id, drop)
        except (camp.CampaignError, NotAllowed) as exc:
            st.error(user_text(exc))
        else:
            st.rerun()
st.caption("Levels: " + " · ".join(f"{i} {name}" for i, name in enumerate(LEVELS[:4])))
