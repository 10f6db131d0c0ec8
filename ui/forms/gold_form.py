"""The Live campaign page's gold keys from a dataset: the organiser's mapping, the keys it gives shown with
their score and derived level before anything is added, then one button that adds exactly those (once: the
plan is spent by the click, and adding a plan twice adds nothing). The rules are db.quality's
(plan_gold_from_dataset, add_gold_plan) and pluie_core.quality's (gold_keys, balanced_keys)."""

import pandas as pd
import streamlit as st

from db import campaigns as camp
from db import quality as qual
from db.access import NotAllowed
from db.engine import StoreUnavailable
from pluie_core.labels import LEVELS
from pluie_core.quality import KEY_LEVELS, KEY_MARGIN
from pluie_core.visible import visible_text
from ui.base.page import user_text


def _cuts(text: str):
    """The cut points typed ("1.8, 3, 4.2"), or None for the equal bands; a typo is QualityError's to say."""
    text = (text or "").strip()
    if not text:
        return None
    parts = [p.strip() for p in text.replace(";", ",").split(",") if p.strip()]
    try:
        return [float(p) for p in parts]
    except ValueError:
        raise camp.CampaignError(f"The cut points between levels must be three numbers; got “{text[:40]}”.") from None


def gold_from_dataset_form(engine, campaign) -> None:
    """The form, the plan it shows, and the button that adds it."""
    plan_key, said_key = f"gold-plan-{campaign.id}", f"gold-added-{campaign.id}"
    with st.form("gold-from-dataset"):
        datasets = camp.dataset_choices(engine, campaign_id=campaign.id)  # the campaign's own: its checks are its
        dataset = st.selectbox(
            "Take gold pairs from a dataset's gold labels",
            datasets,
            format_func=lambda d: d[1],
            help="One of the campaign's datasets. A binary label gives the side (paraphrase or "
            "not); a graded score gives a key only where it is clear (below).",
        )
        n = st.number_input(
            "How many (0 = every key the rule gives)",
            min_value=0,
            value=20,
            step=1,
            help="Drawn so that the keys on each side of the paraphrase boundary are as even as "
            "the dataset allows: a person who always presses one button then scores 50%.",
        )
        st.caption(
            "Graded scores (e.g. SICK 1–5, STS-B 0–5): the score's band of four gives the level; a key is "
            "taken only at the chosen levels, and only where the score keeps a share of its band's width "
            "from every cut between bands (there careful people disagree)."
        )
        levels = st.multiselect(
            "Levels to take keys from", list(range(4)), default=list(KEY_LEVELS), format_func=lambda v: LEVELS[v]
        )
        g1, g2 = st.columns(2)
        margin = g1.number_input("Keep from each cut (share of a band)", 0.0, 0.49, value=KEY_MARGIN, step=0.05)
        cuts = g2.text_input(
            "Cut points (blank: equal bands)",
            placeholder="e.g. 2, 3, 4",
            help="Three numbers between the levels, e.g. 2, 3, 4 on SICK's 1–5.",
        )
        adjacent = st.checkbox(
            "The key also accepts the adjacent level",
            help="An answer one level from the key's counts as right (Same meaning key: Mostly similar too).",
        )
        if st.form_submit_button("Show the keys these settings give"):  # Enter in a field lands here: no write
            st.session_state.pop(said_key, None)
            try:
                if dataset is None:
                    raise camp.CampaignError("This campaign has no dataset any more to take gold pairs from.")
                st.session_state[plan_key] = qual.plan_gold_from_dataset(
                    engine,
                    campaign.id,
                    dataset[0],
                    int(n),
                    seed=campaign.seed,
                    levels=levels,
                    margin=margin,
                    cuts=_cuts(cuts),
                    accept_adjacent=adjacent,
                )
            except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:
                st.session_state.pop(plan_key, None)
                st.error(user_text(exc))
    plan = st.session_state.get(plan_key)
    if plan is not None:
        st.info(user_text(plan.text()))
        shown = plan.keys[["pair_id", "score", "known answer", "in queue", "source", "hypothesis"]]
        st.dataframe(
            shown.assign(source=shown["source"].map(visible_text), hypothesis=shown["hypothesis"].map(visible_text)),
            hide_index=True,
            placeholder="—",
            height=min(400, 38 + 35 * max(1, len(shown))),
        )
        if st.button(
            f"Add these {len(plan.keys):,} gold pairs",
            type="primary",
            disabled=plan.keys.empty,
            key=f"gold-add-{campaign.id}",
        ):
            st.session_state.pop(plan_key, None)  # spent: a second click has nothing to add
            try:
                st.session_state[said_key] = ("success", qual.add_gold_plan(engine, plan).text())
            except (camp.CampaignError, NotAllowed, StoreUnavailable) as exc:
                st.session_state[said_key] = ("error", str(exc))
            st.rerun()
    if said := st.session_state.get(said_key):
        (st.success if said[0] == "success" else st.error)(user_text(said[1]))


def gold_table(gold: pd.DataFrame, minimum: float) -> None:
    """The campaign's keys, with how each was made and how balanced they are."""
    from pluie_core.quality import balance_text

    st.write(f"**Gold pairs: {len(gold):,}**")
    if len(gold):
        st.caption("Balance: " + balance_text(gold, minimum))
        st.dataframe(
            gold[
                ["pair_id", "dataset", "source", "hypothesis", "known answer", "accepts", "served", "derivation"]
            ].assign(source=gold["source"].map(visible_text), hypothesis=gold["hypothesis"].map(visible_text)),
            hide_index=True,
            placeholder="—",
        )
