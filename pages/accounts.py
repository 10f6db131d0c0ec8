"""Owner: the people who sign in — their roles, invitation links (shown once), sessions (db.accounts)."""

import streamlit as st

from db import accounts
from db.access import NotAllowed
from db.engine import StoreUnavailable
from lab.roles import ROLE_HELP, ROLES
from pluie_core.visible import visible_text
from ui.base.page import user_text
from ui.frame import admin_page

engine = admin_page("table")
st.title("Accounts")
st.caption(
    "Who signs in to this app and what their role lets them do. Annotators are not accounts: they keep "
    "their personal links (Campaigns)."
)

# What the callbacks record once their write is made: a plain dict (see pages/campaigns.py's DONE), so a
# double click never writes twice nor loses the invitation link, which is shown only once.
DONE = "accounts-done"
FAILED = (accounts.AccountError, NotAllowed, StoreUnavailable)


def done() -> dict:
    return st.session_state.setdefault(DONE, {"add-batch": 0})


def invitation_link(token: str) -> str:
    # st.context.url is this page's address; the link opens the app's root with the token
    here = (st.context.url or "").split("?")[0].rstrip("/")
    return f"{here.removesuffix('/accounts')}/?invite={token}"


def role_label(role: str) -> str:
    return f"{role}: {ROLE_HELP[role]}"


def signs_in(info: accounts.AccountInfo) -> str:
    ways = (
        (["password"] if info.has_password else [])
        + (["invitation waiting"] if info.invite_expires_at else [])
        + (["provider"] if info.email else [])
    )
    return ", ".join(ways) or "not yet"


def add_person(batch: int) -> None:
    """ "Add" (a callback): the account and its invitation link, once per filling of the form."""
    record = done()
    if record["add-batch"] != batch:  # the second click of a double click
        return
    name, role = st.session_state.get(f"add-name-{batch}"), st.session_state.get(f"add-role-{batch}")
    email = st.session_state.get(f"add-email-{batch}")
    link = invitation_link("")  # the page's address, read before the write
    try:
        info = accounts.add_account(engine, name, role or "", email=email)
        token = accounts.invite(engine, info.id)
    except FAILED as exc:
        record["error"] = str(exc)
        return
    record["link"] = (info.name, link + token)
    record["add-batch"] = batch + 1


def change(account_id: int, action: str) -> None:
    """A per-account button (a callback): its change, and a sentence saying it is done."""
    record = done()
    try:
        if action == "role":
            info = accounts.set_role(engine, account_id, st.session_state.get(f"role-{account_id}") or "")
            record["message"] = f"The role of {info.name} is now {info.role}; their sessions ended."
        elif action == "invite":
            info, token = accounts.account(engine, account_id), accounts.invite(engine, account_id)
            record["link"] = (info.name, invitation_link(token))
        elif action == "end":
            accounts.end_sessions(engine, account_id)
            record["message"] = f"Every session of {accounts.account(engine, account_id).name} ended."
        elif action == "disable":
            record["message"] = f"{accounts.disable_account(engine, account_id).name} cannot sign in any more."
        elif action == "enable":
            record["message"] = f"{accounts.enable_account(engine, account_id).name} can sign in again."
    except FAILED as exc:
        record["error"] = str(exc)


people = accounts.list_accounts(engine)
if done().get("error"):
    st.error(user_text(done().pop("error")))
if done().get("message"):
    st.success(user_text(done().pop("message")))
if done().get("link"):
    name, link = done()["link"]
    st.warning(
        f"Copy the invitation link of {user_text(name)} now: it is shown only once (the store keeps only a "
        f"hash). It works once, for {accounts.INVITE_HOURS:g} hours, and sets their password."
    )
    st.code(link, language=None)
    if st.button("I have copied it", key="link-copied"):
        done().pop("link")
        st.rerun()

if people:
    st.dataframe(
        [
            {
                "name": visible_text(p.name),
                "e-mail": visible_text(p.email or ""),
                "role": p.role,
                "signs in with": signs_in(p),
                "created by": visible_text(p.created_by),
                "created": p.created_at,
                "disabled": p.disabled_at,
            }
            for p in people
        ],
        hide_index=True,
        width="stretch",
        placeholder="—",
        column_config={
            "created": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
            "disabled": st.column_config.DatetimeColumn(format="YYYY-MM-DD HH:mm"),
        },
    )
else:
    st.caption(
        "No account yet: this app is open to anyone who can reach it. The first account you add here "
        "should be an owner (you)."
    )

st.subheader("Add a person")
batch = done()["add-batch"]
with st.form(f"add-account-{batch}"):
    st.text_input("Name (what they sign in with)", key=f"add-name-{batch}")
    st.selectbox("Role", ROLES, format_func=role_label, key=f"add-role-{batch}")
    st.text_input("E-mail (optional: for signing in with the team's identity provider)", key=f"add-email-{batch}")
    st.form_submit_button("Add and make an invitation link", type="primary", on_click=add_person, args=(batch,))

if people:
    st.subheader("Change an account")
    chosen = st.selectbox(
        "Account", people, format_func=lambda p: visible_text(f"{p.name} ({p.role})"), key="chosen-account"
    )
    if chosen is not None:
        role_col, button_col = st.columns([3, 1], vertical_alignment="bottom")
        role_col.selectbox(
            "Role", ROLES, index=ROLES.index(chosen.role), format_func=role_label, key=f"role-{chosen.id}"
        )
        button_col.button("Change role", key=f"set-role-{chosen.id}", on_click=change, args=(chosen.id, "role"))
        c1, c2, c3 = st.columns(3)
        c1.button(
            "New invitation link",
            key=f"invite-{chosen.id}",
            on_click=change,
            args=(chosen.id, "invite"),
            help="A link where they set a new password; it replaces the last one.",
        )
        c2.button(
            "End their sessions",
            key=f"end-{chosen.id}",
            on_click=change,
            args=(chosen.id, "end"),
            help="Signs them out on every browser.",
        )
        if chosen.active:
            c3.button(
                "Disable",
                key=f"disable-{chosen.id}",
                on_click=change,
                args=(chosen.id, "disable"),
                help="They cannot sign in any more; what they did keeps their name.",
            )
        else:
            c3.button("Enable", key=f"enable-{chosen.id}", on_click=change, args=(chosen.id, "enable"))
