"""The API's routes for webhooks and for the caller's own tokens."""

from __future__ import annotations

from fastapi import APIRouter, Query
from pydantic import Field

from api.base import Body, acting, engine
from api.routes import Authenticated, _plain, _records
from db.api_tokens import create_token, list_tokens, revoke_token
from db.webhooks import EVENTS, deliveries, list_webhooks, register_webhook, remove_webhook
from lab.roles import Actor

router = APIRouter()


def _hook(info) -> dict:
    return {
        "id": info.id,
        "url": info.url,
        "events": list(info.events),
        "created_at": _plain(info.created_at),
        "created_by": info.created_by,
        "active": info.active,
    }


class NewWebhook(Body):
    url: str = Field(description="Where to POST each event (http:// or https://)")
    events: list[str] = Field(description="Among: " + ", ".join(EVENTS))


@router.get("/webhooks", tags=["webhooks"], summary="The webhooks and the events each is told of")
def webhooks(actor: Actor = Authenticated) -> list[dict]:
    with acting(actor):
        return [_hook(info) for info in list_webhooks(engine())]


@router.post(
    "/webhooks",
    tags=["webhooks"],
    status_code=201,
    summary="Register a URL for events; the answer holds the secret that signs deliveries, shown once",
)
def new_webhook(body: NewWebhook, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        info, secret = register_webhook(engine(), body.url, body.events)
    return {**_hook(info), "secret": secret}


@router.delete("/webhooks/{webhook_id}", tags=["webhooks"], summary="Stop a webhook (its history stays)")
def delete_webhook(webhook_id: int, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        return _hook(remove_webhook(engine(), webhook_id))


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    tags=["webhooks"],
    summary="A webhook's latest deliveries: state, attempts, the receiver's last answer",
)
def webhook_deliveries(
    webhook_id: int, limit: int = Query(100, ge=1, le=1000), actor: Actor = Authenticated
) -> list[dict]:
    with acting(actor):
        return _records(deliveries(engine(), webhook_id, limit))


def _token(info) -> dict:
    return {
        "id": info.id,
        "name": info.name,
        "prefix": info.prefix,
        "created_at": _plain(info.created_at),
        "last_used_at": _plain(info.last_used_at),
        "revoked_at": _plain(info.revoked_at),
    }


class NewToken(Body):
    name: str = ""


@router.get("/tokens", tags=["accounts"], summary="Your own tokens (never the tokens themselves)")
def tokens(actor: Actor = Authenticated) -> list[dict]:
    with acting(actor):
        return [_token(info) for info in list_tokens(engine(), actor.account_id)]


@router.post("/tokens", tags=["accounts"], status_code=201, summary="A new token for yourself, shown once")
def new_token(body: NewToken, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        info, token = create_token(engine(), actor.account_id, body.name)
    return {**_token(info), "token": token}


@router.delete("/tokens/{token_id}", tags=["accounts"], summary="Revoke one of your tokens (an owner: anyone's)")
def delete_token(token_id: int, actor: Actor = Authenticated) -> dict:
    with acting(actor):
        return _token(revoke_token(engine(), token_id))
