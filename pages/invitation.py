"""The page an invitation link (?invite=<token>) opens: the new account sets its password (db.accounts).
No sign-in here: the link is the proof, checked again in the write (accept_invitation)."""

import streamlit as st

from db import accounts
from db.engine import StoreUnavailable
from lab.roles import ROLE_HELP, with_article
from ui.base.page import user_text
from ui.frame import annotator_page

engine = annotator_page()
SET = "invitation-set"  # the name whose password this session set: the link no longer works after that
app_root = (st.context.url or "").split("?")[0] or "/"

if st.session_state.get(SET):
    st.title("PLUIE Lab")
    st.success(f"Your password is set: sign in as {user_text(st.session_state[SET])}.")
    st.link_button("Sign in", app_root, type="primary")
    st.stop()

info = accounts.invitation_account(engine, str(st.query_params.get("invite", "")))
st.title("PLUIE Lab")
if info is None:
    st.error(
        "This invitation link is not valid (it was used, replaced by a newer one, or has expired): ask an "
        "owner for a new one."
    )
    st.stop()

st.markdown(
    f"This invitation is for the account **{user_text(info.name)}**, {with_article(info.role)} "
    f"({ROLE_HELP[info.role]}). Choose its password."
)
with st.form("set-password"):
    password = st.text_input(
        "Password", type="password", help=f"At least {accounts.MIN_PASSWORD} characters; a long sentence is fine."
    )
    again = st.text_input("The same password again", type="password")
    if st.form_submit_button("Set my password", type="primary"):
        if password != again:
            st.error("The two passwords differ: type the same one twice.")
        else:
            try:
                made = accounts.accept_invitation(engine, str(st.query_params.get("invite", "")), password)
            except (accounts.AccountError, StoreUnavailable) as exc:
                st.error(user_text(exc))
            else:
                st.session_state[SET] = made.name
                st.rerun()
