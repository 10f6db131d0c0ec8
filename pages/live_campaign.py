"""Admin: a campaign as it runs (refreshing by itself) and its quality checks: gold pairs and flags."""

import pandas as pd
import streamlit as st

from db import campaigns as camp
from db import quality as qual
from db.access import NotAllowed
from pluie_core.aggregation import METHOD_NAMES, METHODS
from pluie_core.labels import LEVELS
from pluie_core.quality import (
    DOMINANCE_MARGIN,
    ENTROPY_MIN,
    MIN_ANSWER_LABELS,
    MIN_KAPPA_LABELS,
    MIN_RELIABILITY_LABELS,
)
from ui.base.page import user_text
from ui.forms.gold_form import gold_from_dataset_form, gold_table
from ui.forms.live_view import live_view
from ui.forms.quality_settings import quality_settings_form
from ui.frame import admin_page
from ui.views import scope as scopes
from ui.views import store_reads

engine = admin_page("table")
st.title("Live campaign")
campaigns = camp.list_campaigns(engine)
if not campaigns:
    st.info("No campaign yet: create one under Campaigns.")
    st.stop()
by_id = {c.id: c for c in campaigns}
c1, c3, c2 = st.columns([3, 1, 1])
# the session's scope (ui.views.scope): the campaign chosen on any page, else the one with the latest label
chosen = scopes.pick_campaign(
    store_reads.store_key(),
    c1,
    lambda i: by_id[i].name + ("" if by_id[i].active else " (closed)") if i in by_id else str(i),
)
if chosen not in by_id:  # created since the scope's list was read
    chosen = campaigns[0].id
method = c3.selectbox(
    "Reliability by",
    METHODS,
    format_func=METHOD_NAMES.get,
    key=f"live-aggregation-{chosen}",
    index=METHODS.index(camp.campaign_aggregation(by_id[chosen])),
    help="The estimated chance that each annotator gives the true label (pluie_core.aggregation; "
    "refitted only when new labels come in). The reliability flag always uses the "
    "campaign's own method (chosen on Export).",
)
every = c2.selectbox(
    "Refresh every", [5, 15, 60, None], index=1, format_func=lambda s: "never (manual)" if s is None else f"{s} s"
)
campaign = camp.get_campaign(engine, chosen)
st.fragment(run_every=every)(live_view)(engine, campaign, method)

st.subheader("Quality checks")
st.caption(
    "Flags: gold accuracy (an answer on the key's side, or an adjacent level the key accepts; Don't know "
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
    "Gold pairs come from the campaign's own datasets."
)
quality_settings_form(engine, campaign)

gold_box = st.container()  # filled after the forms below: a pair just marked is counted and listed at once
left, right = st.columns(2)
with left:
    gold_from_dataset_form(engine, campaign)
with right.form("gold-by-id"):
    lines = st.text_area(
        "Or mark pairs by id, one per line: pair id or the file's own id, known level (0-3 or its name)",
        placeholder="1234, 3\nid:1089874, Very different",
        help="A number is the pair id (Pairs page) or the file's id; when it is both, write pair:1234 or id:1234.",
    )
    if st.form_submit_button("Mark as gold"):
        parts = [[p.strip() for p in line.split(",", 1)] for line in lines.splitlines() if line.strip()]
        try:
            added = qual.add_gold_pairs(
                engine, campaign.id, pd.DataFrame([p + [""] * (2 - len(p)) for p in parts], columns=["pair", "level"])
            )
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
