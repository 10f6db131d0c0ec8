"""The Live campaign page's quality settings form (pages/live_campaign.py): the share of gold checks and the
flags' thresholds, saved over the revision the form was drawn at. The rules are db.quality's
(quality_settings, set_quality_settings)."""

import streamlit as st

from db import campaigns as camp
from db import quality as qual
from db.access import NotAllowed
from db.engine import StoreUnavailable
from pluie_core.quality import MAX_MIN_GOLD_CHECKS, MIN_KAPPA_LABELS, MIN_RELIABILITY_LABELS
from ui.base.page import user_text


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


def save_settings(engine, campaign_id: int) -> None:
    """ "Save the quality settings" (a callback: it runs before the form is drawn, so it may redraw it)."""
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


def quality_settings_form(engine, campaign) -> None:
    """The form, drawn from the store the first time (or the page left and opened again)."""
    if f"quality-drawn-{campaign.id}" not in st.session_state or any(
        setting_key(campaign.id, name) not in st.session_state for name in qual.QUALITY_SETTINGS
    ):
        draw_settings(campaign)  # first drawn (or the page left and opened again): from the store
    with st.form("quality-settings"):
        s = st.columns(4)
        s[0].number_input("Share of gold checks", 0.0, 0.5, step=0.05, key=setting_key(campaign.id, "gold_rate"))
        s[1].number_input(
            "Minimum gold accuracy", 0.0, 1.0, step=0.05, key=setting_key(campaign.id, "gold_min_accuracy")
        )
        s[2].number_input(
            "Too fast: under this × the median time",
            0.01,
            0.99,
            step=0.05,
            key=setting_key(campaign.id, "fast_fraction"),
        )
        s[3].number_input(
            "Streak length", 2, qual.MAX_STREAK_LENGTH, step=1, key=setting_key(campaign.id, "streak_length")
        )
        s = st.columns(4)
        s[0].number_input(
            "Minimum κ vs consensus",
            -1.0,
            1.0,
            step=0.05,
            key=setting_key(campaign.id, "kappa_min"),
            help="Flag an annotator whose κ against the others' consensus is under this, "
            f"once it rests on {MIN_KAPPA_LABELS} pairs where that consensus is sure.",
        )
        s[1].number_input(
            "Minimum reliability",
            0.0,
            1.0,
            step=0.05,
            key=setting_key(campaign.id, "reliability_min"),
            help="Flag an annotator whose reliability (the campaign's aggregation "
            f"method) is under this, once it rests on {MIN_RELIABILITY_LABELS} "
            "labels in the fit.",
        )
        s[2].number_input(
            "Minimum gold checks to judge",
            1,
            MAX_MIN_GOLD_CHECKS,
            step=1,
            key=setting_key(campaign.id, "min_gold_checks"),
            help="Gold accuracy on fewer answered checks reads “too few checks”, not a flag.",
        )
        st.form_submit_button("Save the quality settings", on_click=save_settings, args=(engine, campaign.id))
        if outcome := st.session_state.pop(f"quality-outcome-{campaign.id}", None):
            (st.success if outcome[0] == "success" else st.error)(user_text(outcome[1]))
