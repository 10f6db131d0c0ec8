"""Webhooks: events written to an outbox in the transaction of what happened, posted signed to a real HTTP receiver
(a server on a local port), retried with back-off, given up after a day, and never waited for by the writer."""

from __future__ import annotations

import datetime as dt
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest
from sqlalchemy import select, update

from db import access, webhooks
from db.annotators import create_annotator
from db.campaigns import create_campaign
from db.engine import write_session
from db.models import WebhookDelivery, utcnow
from db.publish import publish_dataset
from db.runs import create_run
from db.serving import record_label, serve_next
from lab.roles import OPEN, Actor, NotAllowed
from pluie_core.webhooks import WebhookSignatureError, verify
from tests.annotation_fixtures import make_dataset, numbered_pairs


class Receiver:
    """An HTTP server on a free local port that keeps every POST (headers, body) and answers ``status``; while
    ``hold`` is clear, it keeps each request waiting (a slow receiver)."""

    def __init__(self, status: int = 200):
        self.status, self.got = status, []
        self.hold = threading.Event()
        self.hold.set()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.got.append((dict(self.headers), body))
                receiver.hold.wait(30)
                self.send_response(receiver.status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/events"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.hold.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    made = Receiver()
    yield made
    made.close()


def rows(engine):
    with engine.connect() as connection:
        return connection.execute(select(WebhookDelivery.__table__).order_by(WebhookDelivery.id)).mappings().all()


def register(engine, url, events):
    with access.acting_as(OPEN):
        return webhooks.register_webhook(engine, url, events)


def test_a_publish_is_posted_signed_once_and_recorded(engine, receiver, tmp_path):
    info, secret = register(engine, receiver.url, ["dataset.published"])
    assert secret.startswith("whsec_") and info.events == ("dataset.published",)
    dataset_id, _ = make_dataset(engine, "to publish", numbered_pairs(4))
    with access.acting_as(OPEN):
        publish_dataset(engine, tmp_path / "folder", [dataset_id], licence="cc-by-4.0")
    [queued] = rows(engine)
    assert queued["state"] == "pending" and queued["event"] == "dataset.published"

    with httpx.Client() as client:
        assert webhooks.send_due(engine, client.post) == 1
        assert webhooks.send_due(engine, client.post) == 0  # delivered: never posted twice
    [(headers, body)] = receiver.got
    verify(secret, body, headers)  # the receiver's own check holds
    event = json.loads(body)
    assert event["event"] == "dataset.published" and event["data"]["pairs"] == 4
    assert event["data"]["datasets"] == [{"id": dataset_id, "name": "to publish"}]
    assert headers["X-Pluie-Delivery"] == str(queued["id"])
    with pytest.raises(WebhookSignatureError, match="does not match"):
        verify(secret, body.replace(b"4", b"5"), headers)  # a body changed on the way
    with pytest.raises(WebhookSignatureError, match="older than"):
        verify(secret, body, headers, now=int(headers["X-Pluie-Timestamp"]) + 3600)  # a replay an hour later
    [sent] = rows(engine)
    assert sent["state"] == "delivered" and sent["attempts"] == 1 and sent["last_status"] == 200


def test_a_failing_receiver_is_retried_with_back_off_then_given_up_after_a_day(engine):
    failing = Receiver(status=500)
    try:
        register(engine, failing.url, ["dataset.published"])
        with write_session(engine) as session:
            webhooks.emit(session, "dataset.published", {"pairs": 1})
        with httpx.Client() as client:
            assert webhooks.send_due(engine, client.post) == 1
            [once] = rows(engine)
            assert once["state"] == "pending" and once["attempts"] == 1 and once["last_status"] == 500
            assert once["last_error"] == "the receiver answered 500"
            wait = (once["next_at"] - utcnow()).total_seconds()
            assert 25 < wait <= webhooks.RETRY_SECONDS  # tried again in 30 s, not at once
            assert webhooks.send_due(engine, client.post) == 0
            assert [webhooks.retry_delay(n) for n in (1, 2, 3, 9)] == [30, 60, 120, 3600]

            # a day after the event, the next failure gives up
            with write_session(engine) as session:
                session.execute(
                    update(WebhookDelivery).values(
                        next_at=utcnow(), created_at=utcnow() - dt.timedelta(hours=23, minutes=59)
                    )
                )
            assert webhooks.send_due(engine, client.post) == 1
        [last] = rows(engine)
        assert last["state"] == "failed" and last["attempts"] == 2
    finally:
        failing.close()


def test_an_unreachable_receiver_is_a_recorded_error_not_a_crash(engine):
    register(engine, "http://127.0.0.1:9/nobody-listens", ["dataset.published"])
    webhooks.emit_now(engine, "dataset.published", {"pairs": 1})
    with httpx.Client() as client:
        assert webhooks.send_due(engine, client.post) == 1
    [row] = rows(engine)
    assert row["state"] == "pending" and row["last_status"] is None and row["last_error"]


def test_an_event_of_a_write_rolled_back_is_never_sent(engine, receiver):
    register(engine, receiver.url, ["dataset.published"])
    with pytest.raises(RuntimeError), write_session(engine) as session:
        webhooks.emit(session, "dataset.published", {"pairs": 1})
        raise RuntimeError("the write fails after the event")
    assert rows(engine) == []


def test_a_flag_is_told_once_and_a_slow_receiver_never_holds_the_annotator(engine, receiver):
    register(engine, receiver.url, ["pair.flagged"])
    dataset_id, _ = make_dataset(engine, "flags", numbered_pairs(6))
    with access.acting_as(OPEN):
        campaign_id = create_campaign(engine, "flag round", [dataset_id], quota=3, n_training=0)
        annotator_id, token = create_annotator(engine, campaign_id, "fay")
    receiver.hold.clear()  # the receiver keeps every request waiting
    stop = threading.Event()
    sender = threading.Thread(target=webhooks.run_sender, args=(engine, stop, 0.1), daemon=True)
    sender.start()
    try:
        served = serve_next(engine, annotator_id)
        record_label(engine, annotator_id, served.position, 1, 3.0, token=token, flagged=True, comment="odd pair")
        for _ in range(100):  # the sender has posted it, and the receiver holds it
            if receiver.got:
                break
            threading.Event().wait(0.05)
        assert len(receiver.got) == 1
        # the annotator goes on while the receiver still holds the first delivery
        record_label(engine, annotator_id, served.position, 2, 1.0, replacing=1, token=token, flagged=True)
        second = serve_next(engine, annotator_id)
        record_label(engine, annotator_id, second.position, 0, 2.0, token=token)
        assert len(receiver.got) == 1 and not receiver.hold.is_set()
    finally:
        receiver.hold.set()
        stop.set()
        sender.join(timeout=30)
    flagged = [row for row in rows(engine) if row["event"] == "pair.flagged"]
    assert len(flagged) == 1  # the change through "back" kept the flag: nothing new to tell
    data = json.loads(flagged[0]["body"])["data"]
    assert data == {"pair_id": served.pair_id, "campaign_id": campaign_id, "annotator": "fay", "comment": "odd pair"}


def test_a_run_that_finishes_and_a_campaign_that_fills_are_told_once(engine, receiver):
    register(engine, receiver.url, ["run.finished", "campaign.quota_reached"])
    dataset_id, pair_ids = make_dataset(engine, "states", numbered_pairs(2))
    with access.acting_as(OPEN):
        run_id = create_run(engine, name="lev", kind="baseline", model="levenshtein", dataset_ids=[dataset_id])
        campaign_id = create_campaign(engine, "fill", [dataset_id], quota=2, n_training=0, overlap=1)
        annotator_id, token = create_annotator(engine, campaign_id, "gus")
    assert webhooks.check_runs(engine) == 0 and webhooks.check_campaigns(engine) == 0
    from db.models import Score, WorkItem

    with write_session(engine) as session:  # the worker's writes, as it makes them: scores in, queue emptied
        for pair_id in pair_ids:
            session.add(Score(run_id=run_id, pair_id=pair_id, value=0.5))
        session.execute(update(WorkItem).where(WorkItem.run_id == run_id).values(status="done"))
    assert webhooks.check_runs(engine) == 1 and webhooks.check_runs(engine) == 0
    for level in (3, 0):
        served = serve_next(engine, annotator_id)
        record_label(engine, annotator_id, served.position, level, 2.0, token=token)
    assert webhooks.check_campaigns(engine) == 1 and webhooks.check_campaigns(engine) == 0
    events = {row["event"]: json.loads(row["body"])["data"] for row in rows(engine)}
    assert events["run.finished"]["run_id"] == run_id and events["run.finished"]["done"] == 2
    assert events["campaign.quota_reached"] == {"campaign_id": campaign_id, "name": "fill", "pairs": 2}


def test_webhooks_are_an_organisers_and_urls_and_events_are_checked(engine):
    with access.acting_as(Actor("vic", "reviewer", 7)), pytest.raises(NotAllowed):
        webhooks.register_webhook(engine, "https://example.org/x", ["run.finished"])
    for url, events, said in (
        ("ftp://example.org", ["run.finished"], "http:// or https://"),
        ("https://example.org/x", ["run.done"], "not run.done"),
        ("https://example.org/x", [], "Choose events"),
    ):
        with access.acting_as(OPEN), pytest.raises(webhooks.WebhookError, match=said):
            webhooks.register_webhook(engine, url, events)
    info, _ = register(engine, "https://example.org/x", ["run.finished"])
    webhooks.emit_now(engine, "run.finished", {"run_id": 1})
    with access.acting_as(OPEN):
        assert not webhooks.remove_webhook(engine, info.id).active
    assert [row["state"] for row in rows(engine)] == ["dropped"]  # nothing more is sent to it


def test_the_worker_process_scores_a_run_and_posts_its_run_finished(engine, db_url, receiver, tmp_path):
    """worker.py as a person starts it: its sender thread posts run.finished, signed, once the run is scored
    (--exit-when-idle: the last turn on the way out tells what the last claim finished)."""
    import subprocess
    import sys
    from pathlib import Path

    info, secret = register(engine, receiver.url, ["run.finished"])
    dataset_id, pair_ids = make_dataset(engine, "states", numbered_pairs(3))
    with access.acting_as(OPEN):
        run_id = create_run(engine, name="lev", kind="baseline", model="levenshtein", dataset_ids=[dataset_id])
    repo = Path(__file__).resolve().parent.parent
    log = tmp_path / "worker.log"
    done = subprocess.run(
        [
            sys.executable,
            str(repo / "worker.py"),
            "--db",
            db_url,
            "--no-default-runs",
            "--poll-seconds",
            "0.2",
            "--webhook-seconds",
            "0.5",
            "--exit-when-idle",
        ],
        cwd=repo,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        timeout=120,
    )
    assert done.returncode == 0, log.read_text()
    [(headers, body)] = receiver.got
    verify(secret, body, headers)
    sent = json.loads(body)
    assert (
        sent["event"] == "run.finished"
        and {k.lower(): v for k, v in headers.items()}["x-pluie-event"] == "run.finished"
    )
    assert sent["data"]["run_id"] == run_id and sent["data"]["done"] == 3 and sent["data"]["total"] == 3
    [row] = rows(engine)
    assert row["state"] == "delivered" and row["attempts"] == 1 and row["last_status"] == 200
