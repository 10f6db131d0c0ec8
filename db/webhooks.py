"""Webhooks: URLs told of events, through an outbox the worker's sender empties.

An owner or organiser registers a URL for some of EVENTS; the secret that signs its deliveries is shown once.
An event writes one outbox row per webhook that wants it (``emit``), in the transaction of what happened, so a
rolled-back write sends nothing and a committed one is never forgotten. The sender (``send_due``, run by the
worker in a thread of its own, pluie_core.webhooks for the signature) posts each due row with a short timeout,
outside any transaction, and retries a failure with back-off (RETRY_SECONDS, doubled up to RETRY_MOST) for
GIVE_UP_AFTER (a day); then the row is "failed". A slow or failing receiver only delays its own deliveries:
the app never waits for one, and the worker's scoring runs in another thread.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional
from urllib.parse import urlsplit

import pandas as pd
from sqlalchemy import func, select, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from db import access
from db.engine import read_session, write_session
from db.models import Campaign, CampaignPair, Webhook, WebhookDelivery, utcnow
from pluie_core.webhooks import signed_headers

EVENTS = {
    "run.finished": "a score run has scored every pair it queued",
    "run.failed": "a score run failed",
    "campaign.quota_reached": "every pair of a campaign's queue has the answers its overlap asks",
    "pair.flagged": "an annotator flagged a pair for review",
    "dataset.published": "a dataset folder was published",
}
RETRY_SECONDS = 30.0
RETRY_MOST = 3600.0
GIVE_UP_AFTER = dt.timedelta(days=1)
SEND_TIMEOUT = 10.0  # seconds a receiver has to answer one delivery
CLAIM_SECONDS = 60.0  # a claimed delivery is not taken by another sender before this
MOST_WEBHOOKS = 50


class WebhookError(ValueError):
    """A webhook that cannot be registered or changed as asked; the message is the sentence to show."""


@dataclass(frozen=True)
class WebhookInfo:
    id: int
    url: str
    events: tuple[str, ...]
    created_at: object
    created_by: str
    active: bool


def _info(row: Webhook) -> WebhookInfo:
    return WebhookInfo(
        row.id,
        row.url,
        tuple(e for e in row.events.split(",") if e),
        row.created_at,
        row.created_by,
        row.disabled_at is None,
    )


def check_url(url: str) -> str:
    url = str(url or "").strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise WebhookError("A webhook's URL starts with http:// or https:// and names a host.")
    if len(url) > 2000 or any(ord(c) < 33 for c in url):
        raise WebhookError("A webhook's URL is at most 2,000 characters, without spaces or control characters.")
    return url


def check_events(events: Iterable[str]) -> tuple[str, ...]:
    chosen = tuple(dict.fromkeys(str(e).strip() for e in events if str(e).strip()))
    unknown = [e for e in chosen if e not in EVENTS]
    if unknown or not chosen:
        raise WebhookError(
            f"Choose events among {', '.join(EVENTS)}" + (f" (not {', '.join(unknown)})." if unknown else ".")
        )
    return chosen


def register_webhook(engine: Engine, url: str, events: Iterable[str]) -> tuple[WebhookInfo, str]:
    """A new webhook (an organiser's or owner's act): (its info, the secret that signs its deliveries, shown once)."""
    url, events = check_url(url), check_events(events)
    secret = "whsec_" + secrets.token_urlsafe(32)
    with write_session(engine) as session:
        access.require("organise")
        live = session.scalar(select(func.count()).select_from(Webhook).where(Webhook.disabled_at.is_(None)))
        if live >= MOST_WEBHOOKS:
            raise WebhookError(f"There are {MOST_WEBHOOKS} webhooks already: remove one first.")
        row = Webhook(
            url=url, events=",".join(events), secret=secret, created_at=utcnow(), created_by=access.actor_name()
        )
        session.add(row)
        session.flush()
        access.record(session, "webhook added", "webhook", row.id, f"{url} told of {', '.join(events)}")
        return _info(row), secret


def list_webhooks(engine: Engine) -> list[WebhookInfo]:
    access.require("organise")
    with read_session(engine) as session:
        return [_info(row) for row in session.scalars(select(Webhook).order_by(Webhook.id))]


def remove_webhook(engine: Engine, webhook_id: int) -> WebhookInfo:
    """Stop a webhook: nothing more is sent to it (its pending deliveries are dropped); its history stays."""
    with write_session(engine) as session:
        access.require("organise")
        row = session.get(Webhook, int(webhook_id))
        if row is None:
            raise WebhookError(f"There is no webhook {webhook_id}.")
        if row.disabled_at is None:
            row.disabled_at = utcnow()
            session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.webhook_id == row.id, WebhookDelivery.state == "pending")
                .values(state="dropped", last_error="the webhook was removed")
            )
            access.record(session, "webhook removed", "webhook", row.id, row.url)
        return _info(row)


DELIVERY_COLUMNS = [
    "id",
    "event",
    "state",
    "attempts",
    "created_at",
    "next_at",
    "last_status",
    "last_error",
    "delivered_at",
]


def deliveries(engine: Engine, webhook_id: Optional[int] = None, limit: int = 100) -> pd.DataFrame:
    """The latest deliveries (of one webhook, or all), newest first: event, state, attempts, the receiver's last
    status code or error."""
    access.require("organise")
    query = select(
        WebhookDelivery.id,
        WebhookDelivery.event,
        WebhookDelivery.state,
        WebhookDelivery.attempts,
        WebhookDelivery.created_at,
        WebhookDelivery.next_at,
        WebhookDelivery.last_status,
        WebhookDelivery.last_error,
        WebhookDelivery.delivered_at,
    )
    if webhook_id is not None:
        query = query.where(WebhookDelivery.webhook_id == int(webhook_id))
    with read_session(engine) as session:
        rows = session.execute(query.order_by(WebhookDelivery.id.desc()).limit(int(limit))).all()
    return pd.DataFrame(rows, columns=DELIVERY_COLUMNS)


def emit(session: Session, event: str, data: dict[str, Any], subject: str = "") -> int:
    """Queue ``event`` for every live webhook that wants it, in ``session``'s transaction (sent when it commits,
    never when it rolls back). Returns how many deliveries were queued."""
    if event not in EVENTS:
        raise ValueError(f"Unknown event {event!r}.")
    hooks = session.execute(select(Webhook.id, Webhook.events).where(Webhook.disabled_at.is_(None))).all()
    now = utcnow()
    queued = 0
    for hook_id, events in hooks:
        if event in events.split(","):
            body = json.dumps(
                {"id": str(uuid.uuid4()), "event": event, "at": now.isoformat() + "Z", "data": data},
                ensure_ascii=False,
                default=str,
            )
            session.add(
                WebhookDelivery(
                    webhook_id=hook_id,
                    event=event,
                    subject=subject[:60],
                    body=body,
                    state="pending",
                    created_at=now,
                    next_at=now,
                )
            )
            queued += 1
    return queued


def emit_now(engine: Engine, event: str, data: dict[str, Any], subject: str = "") -> int:
    """emit in a transaction of its own (an event whose act wrote nothing to the store)."""
    with write_session(engine) as session:
        return emit(session, event, data, subject)


def check_campaigns(engine: Engine) -> int:
    """Emit campaign.quota_reached, once per campaign, for the active campaigns whose every queued pair now has
    the answers its overlap asks (db.campaigns.fully_labelled_pairs). Only where a webhook wants the event.
    Returns how many campaigns were found complete."""
    from db.campaigns import fully_labelled_pairs

    with read_session(engine) as session:
        if "campaign.quota_reached" not in _wanted(session):
            return 0
        told = set(
            session.scalars(select(WebhookDelivery.subject).where(WebhookDelivery.event == "campaign.quota_reached"))
        )
        complete = []
        for campaign in session.scalars(select(Campaign).where(Campaign.active.is_(True))):
            if f"campaign:{campaign.id}" in told:
                continue
            queued = session.scalar(
                select(func.count()).select_from(CampaignPair).where(CampaignPair.campaign_id == campaign.id)
            )
            if queued and fully_labelled_pairs(session, campaign) >= queued:
                complete.append((campaign.id, campaign.name, int(queued)))
    for campaign_id, name, queued in complete:
        emit_now(
            engine,
            "campaign.quota_reached",
            {"campaign_id": campaign_id, "name": name, "pairs": queued},
            subject=f"campaign:{campaign_id}",
        )
    return len(complete)


def _wanted(session: Session) -> set[str]:
    return {
        event
        for (events,) in session.execute(select(Webhook.events).where(Webhook.disabled_at.is_(None)))
        for event in events.split(",")
    }


def check_runs(engine: Engine) -> int:
    """Emit run.finished when a run has scored (or failed on) every pair it queued, once per size of its
    queue (pairs imported later make it finish again), and run.failed once per failure; only where a webhook
    wants the event. Returns how many events were queued. The worker's sender calls it between deliveries:
    an event follows the state the store holds, whichever worker wrote it."""
    from db.runs import runs_progress

    with read_session(engine) as session:
        wanted = _wanted(session) & {"run.finished", "run.failed"}
        if not wanted:
            return 0
        told = set(session.scalars(select(WebhookDelivery.subject).where(WebhookDelivery.event.in_(wanted))))
    queued = 0
    for run in runs_progress(engine):
        data = {
            "run_id": run.id,
            "name": run.name,
            "kind": run.kind,
            "model": run.model,
            "total": run.total,
            "done": run.done,
            "failed": run.failed,
        }
        if "run.failed" in wanted and run.status == "failed" and f"run:{run.id}:failed" not in told:
            queued += emit_now(engine, "run.failed", {**data, "error": run.error}, subject=f"run:{run.id}:failed")
        subject = f"run:{run.id}:{run.total}"
        if "run.finished" in wanted and run.total and run.up_to_date and subject not in told:
            queued += emit_now(engine, "run.finished", data, subject=subject)
    return queued


def _claim(engine: Engine, now: dt.datetime, limit: int) -> list[tuple[int, str, str, str, int, dt.datetime]]:
    """Due deliveries, each claimed for CLAIM_SECONDS (its next_at moved on) so that two senders never post it
    twice at once: (id, url, secret, body, attempts, created_at). A read first: a store with nothing due is
    never locked for writing (the worker's sender looks every few seconds)."""
    with read_session(engine) as session:
        if (
            session.scalar(
                select(WebhookDelivery.id)
                .where(WebhookDelivery.state == "pending", WebhookDelivery.next_at <= now)
                .limit(1)
            )
            is None
        ):
            return []
    with write_session(engine) as session:
        rows = session.execute(
            select(
                WebhookDelivery.id,
                Webhook.url,
                Webhook.secret,
                WebhookDelivery.body,
                WebhookDelivery.attempts,
                WebhookDelivery.created_at,
                WebhookDelivery.next_at,
                WebhookDelivery.event,
            )
            .join(Webhook, Webhook.id == WebhookDelivery.webhook_id)
            .where(WebhookDelivery.state == "pending", WebhookDelivery.next_at <= now, Webhook.disabled_at.is_(None))
            .order_by(WebhookDelivery.next_at)
            .limit(limit)
        ).all()
        claimed = []
        for delivery_id, url, secret, body, attempts, created_at, next_at, event in rows:
            taken = session.execute(
                update(WebhookDelivery)
                .where(WebhookDelivery.id == delivery_id, WebhookDelivery.next_at == next_at)
                .values(next_at=now + dt.timedelta(seconds=CLAIM_SECONDS))
            )
            if taken.rowcount == 1:
                claimed.append((delivery_id, url, secret, body, attempts, created_at, event))
    return claimed


def retry_delay(attempts: int) -> float:
    """Seconds before the next try after ``attempts`` failed ones: 30 s, 1 min, 2 min... up to an hour."""
    return min(RETRY_MOST, RETRY_SECONDS * 2 ** max(0, attempts - 1))


def send_due(engine: Engine, post: Callable[..., Any], now: Optional[dt.datetime] = None, limit: int = 20) -> int:
    """Post the due deliveries (``post(url, content=, headers=, timeout=)``: an httpx.Client's post) and record
    each outcome: a 2xx is delivered; anything else, or no answer within SEND_TIMEOUT, is tried again later
    (retry_delay), until a day after the event, then failed. Returns how many were tried."""
    now = now or utcnow()
    tried = 0
    for delivery_id, url, secret, body, attempts, created_at, event in _claim(engine, now, limit):
        status, error = None, ""
        try:
            answer = post(
                url,
                content=body.encode("utf-8"),
                timeout=SEND_TIMEOUT,
                headers=signed_headers(secret, body, event, str(delivery_id)),
            )
            status = int(answer.status_code)
            if not 200 <= status < 300:
                error = f"the receiver answered {status}"
        except Exception as exc:  # no answer, refused, timed out: tried again later
            error = (str(exc) or type(exc).__name__)[:300]
        attempts += 1
        done = utcnow()
        values: dict[str, Any] = {"attempts": attempts, "last_status": status, "last_error": error[:300]}
        if not error:
            values.update(state="delivered", delivered_at=done)
        elif done + dt.timedelta(seconds=retry_delay(attempts)) > created_at + GIVE_UP_AFTER:
            values.update(state="failed")
        else:
            values.update(next_at=done + dt.timedelta(seconds=retry_delay(attempts)))
        with write_session(engine) as session:
            session.execute(update(WebhookDelivery).where(WebhookDelivery.id == delivery_id).values(**values))
        tried += 1
    return tried


def run_sender(
    engine: Engine, stop, every: float = 2.0, post: Optional[Callable[..., Any]] = None, last_turn: bool = False
) -> None:
    """The sender's loop (the worker runs it in a daemon thread): until ``stop`` (a threading.Event) is set,
    queue the events that follow the store's state (check_runs, check_campaigns) and post what is due. A
    failure of the store or a receiver is logged and tried again at the next turn; it never ends the loop.
    ``last_turn``: once ``stop`` is set, one more turn (the worker's way out: what its last claims finished is told)."""
    import logging

    import httpx

    log = logging.getLogger("pluie_lab.webhooks")
    client = None
    if post is None:
        client = httpx.Client(follow_redirects=False)
        post = client.post

    def turn(last: bool) -> None:
        try:
            check_runs(engine)
            check_campaigns(engine)
            while send_due(engine, post) and (last or not stop.is_set()):
                pass
        except Exception:  # the store away, a bug: said in the log, tried again at the next turn
            log.exception(
                "webhook sender: this turn failed; %s",
                "the next start goes on" if last else f"trying again in {every:.0f} s",
            )

    try:
        while not stop.is_set():
            turn(last=False)
            stop.wait(every)
        if last_turn:
            turn(last=True)
    finally:
        if client is not None:
            client.close()
