"""API & webhooks: your personal tokens for the HTTP API (/api/v1), everyone's for an owner, and the webhooks
an organiser registers, with each delivery's state (db.api_tokens, db.webhooks; api/ serves the API)."""

import pandas as pd
import streamlit as st

from db import access, api_tokens, webhooks
from db.engine import StoreUnavailable
from lab.roles import NotAllowed, rank
from ui.access import session_cookie
from ui.base.page import user_text
from ui.frame import admin_page

engine = admin_page("table")
st.title("API & webhooks")
actor = access.current_actor()
FAILED = (api_tokens.TokenError, webhooks.WebhookError, NotAllowed, StoreUnavailable)
DONE = "api-access-done"  # what a callback made and must show once (a token, a secret), or its error


def done() -> dict:
    return st.session_state.setdefault(DONE, {"token-batch": 0, "hook-batch": 0})


here = (st.context.url or "").split("?")[0].rstrip("/").removesuffix("/api_access")
st.caption(
    f"Scripts and pipelines reach this app at `{here}/api/v1` with a personal token "
    f"(`Authorization: Bearer <token>`); every route is described at `{here}/api/v1/openapi.json`. "
    "In Python: `from pluie_core.client import Lab; lab = Lab(url, token)` (docs/api.md)."
)
if not session_cookie.routes_installed():
    st.warning(
        "This server was started with `streamlit run app.py`, which serves no API: start it with `make run` "
        "(scripts/serve.py, which serves server.py)."
    )
if not actor.signed_in:
    st.info(
        "Tokens belong to accounts: add one on the Accounts page or with `python -m db accounts add NAME "
        "--role owner`, sign in, and make your token here (or `python -m db accounts token NAME`)."
    )
    st.stop()


def make_token(batch: int) -> None:
    record = done()
    if record["token-batch"] != batch:  # the second click of a double click
        return
    try:
        info, token = api_tokens.create_token(engine, actor.account_id, st.session_state.get(f"token-name-{batch}", ""))
    except FAILED as exc:
        record["error"] = str(exc)
        return
    record["token"] = (info.name, token)
    record["token-batch"] = batch + 1


def revoke(token_id: int) -> None:
    try:
        api_tokens.revoke_token(engine, token_id)
    except FAILED as exc:
        done()["error"] = str(exc)


def token_table(items) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "id": t.id,
                "account": t.account,
                "name": t.name,
                "starts with": t.prefix + "…",
                "made": t.created_at,
                "last used": t.last_used_at,
                "state": "live" if t.live else "revoked",
            }
            for t in items
        ],
        columns=["id", "account", "name", "starts with", "made", "last used", "state"],
    )


record = done()
if record.get("error"):
    st.error(user_text(record.pop("error")))

st.subheader("Your tokens")
st.caption(
    f"A token acts as {user_text(actor.name)} with your role ({actor.role}) at the time of each request: "
    "a viewer's token reads and nothing more. It is shown once; the store keeps only its hash."
)
if "token" in record:  # until its maker says it is copied (a rerun must not lose it)
    name, token = record["token"]
    st.warning(f"Your new token “{user_text(name)}”, shown only once: copy it now.")
    st.code(token, language=None)
    st.button("I have copied it", key="token-copied", on_click=lambda: record.pop("token", None))
batch = record["token-batch"]
with st.form(f"token-form-{batch}", clear_on_submit=False, enter_to_submit=False):
    st.text_input("What it is for", key=f"token-name-{batch}", placeholder="e.g. labelling notebook")
    st.form_submit_button("Make a token", on_click=make_token, args=(batch,))
mine = api_tokens.list_tokens(engine, actor.account_id)
if mine:
    st.dataframe(token_table(mine).drop(columns="account"), hide_index=True, width="stretch")
    live = {t.id: f"{t.name} ({t.prefix}…)" for t in mine if t.live}
    if live:
        chosen = st.selectbox("Token", list(live), format_func=lambda i: user_text(live[i]), key="revoke-mine")
        st.button("Revoke this token", on_click=revoke, args=(chosen,), key="revoke-mine-button")

if actor.role == "owner":
    st.subheader("Everyone's tokens")
    everyone = api_tokens.list_tokens(engine)
    others = [t for t in everyone if t.account_id != actor.account_id]
    if others:
        st.dataframe(token_table(others), hide_index=True, width="stretch")
        live = {t.id: f"{t.account}: {t.name} ({t.prefix}…)" for t in others if t.live}
        if live:
            chosen = st.selectbox("Token", list(live), format_func=lambda i: user_text(live[i]), key="revoke-any")
            st.button("Revoke this token", on_click=revoke, args=(chosen,), key="revoke-any-button")
    else:
        st.caption("No one else has a token.")

if rank(actor.role) < rank("organiser"):
    st.stop()


def add_hook(batch: int) -> None:
    record = done()
    if record["hook-batch"] != batch:
        return
    try:
        info, secret = webhooks.register_webhook(
            engine, st.session_state.get(f"hook-url-{batch}", ""), st.session_state.get(f"hook-events-{batch}", [])
        )
    except FAILED as exc:
        record["error"] = str(exc)
        return
    record["secret"] = (info.url, secret)
    record["hook-batch"] = batch + 1


def remove_hook(webhook_id: int) -> None:
    try:
        webhooks.remove_webhook(engine, webhook_id)
    except FAILED as exc:
        done()["error"] = str(exc)


st.subheader("Webhooks")
st.caption(
    "A URL told of events by a signed POST (X-Pluie-Signature: HMAC-SHA256 of the timestamp and the body, "
    "pluie_core.webhooks.verify). The worker sends them and retries a failure with back-off for a day; a slow "
    "receiver never slows the app or the scoring."
)
if "secret" in record:
    url, secret = record["secret"]
    st.warning(f"Deliveries to {user_text(url)} are signed with this secret, shown only once: copy it now.")
    st.code(secret, language=None)
    st.button("I have copied it", key="secret-copied", on_click=lambda: record.pop("secret", None))
batch = record["hook-batch"]
with st.form(f"hook-form-{batch}", enter_to_submit=False):
    st.text_input("URL", key=f"hook-url-{batch}", placeholder="https://example.org/pluie-events")
    st.multiselect(
        "Events", list(webhooks.EVENTS), format_func=lambda e: f"{e}: {webhooks.EVENTS[e]}", key=f"hook-events-{batch}"
    )
    st.form_submit_button("Add the webhook", on_click=add_hook, args=(batch,))
hooks = webhooks.list_webhooks(engine)
if hooks:
    st.dataframe(
        pd.DataFrame(
            [
                {
                    "id": h.id,
                    "url": h.url,
                    "events": ", ".join(h.events),
                    "added by": h.created_by,
                    "state": "active" if h.active else "removed",
                }
                for h in hooks
            ]
        ),
        hide_index=True,
        width="stretch",
    )
    shown = st.selectbox(
        "Webhook",
        [h.id for h in hooks],
        key="hook-shown",
        format_func=lambda i: user_text(next(h.url for h in hooks if h.id == i)),
    )
    st.dataframe(webhooks.deliveries(engine, shown, limit=50), hide_index=True, width="stretch", placeholder="—")
    if any(h.id == shown and h.active for h in hooks):
        st.button("Remove this webhook", on_click=remove_hook, args=(shown,), key="hook-remove")
