"""Admin: labelling campaigns and their annotators (personal links, revocation, progress)."""

import streamlit as st

from db import access
from db import campaigns as camp
from db.access import OPEN
from ui.base.page import one_click, user_text
from ui.forms.campaign_form import NEW, done, new_campaign_form, pairs_kept
from ui.forms.campaign_sections import (
    activity_section,
    annotators_section,
    counts_section,
    settings_section,
    training_section,
)
from ui.frame import admin_page

engine = admin_page("table")
st.title("Labelling campaigns")
if access.current_actor() == OPEN:
    st.caption("No account and no admin password exist, so this page is open to anyone who can reach the app.")

campaigns = camp.list_campaigns(engine)
one_click(f"{NEW}create-", "links-create-")  # a double click creates once
if done().get("created"):
    created_name, created_id = done().pop("created")
    st.success(
        f"Campaign “{user_text(created_name)}” created: {pairs_kept(camp.campaign_overview(engine, created_id))}. "
        "Add its annotators below."
    )
with st.expander("New campaign", expanded=not campaigns):
    new_campaign_form(engine)
if not campaigns:
    st.stop()

campaign_by_id = {c.id: c for c in campaigns}
chosen_id = st.selectbox(
    "Campaign",
    list(campaign_by_id),
    format_func=lambda i: campaign_by_id[i].name + ("" if campaign_by_id[i].active else " (closed)"),
)
campaign = campaign_by_id[chosen_id]
if campaign.created_by:
    st.caption(f"Created by {user_text(campaign.created_by)} on {campaign.created_at:%Y-%m-%d %H:%M} UTC.")
counts = camp.campaign_overview(engine, campaign.id)
counts_section(campaign, counts)
st.subheader("Annotators")
annotators_section(engine, campaign)
st.subheader("Training pairs")
training_section(engine, campaign)
st.subheader("Settings and guidelines")
settings_section(engine, campaign, counts)
activity_section(engine, campaign)
