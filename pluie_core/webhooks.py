"""Signing a webhook's deliveries, and checking one on the receiving side.

Each delivery is a POST whose body is JSON ({"id", "event", "at", "data"}) with these headers:

- ``X-Pluie-Event``: the event (run.finished, dataset.published...);
- ``X-Pluie-Delivery``: the delivery's id (the same on every retry: a receiver can drop repeats);
- ``X-Pluie-Timestamp``: when it was sent, in seconds since 1970 (UTC);
- ``X-Pluie-Signature``: ``sha256=`` and the hex HMAC-SHA256, keyed with the webhook's secret, of
  ``"<timestamp>.<body>"``.

A receiver recomputes the HMAC (``verify``) and refuses a timestamp older than a few minutes, so a delivery
caught on the way cannot be replayed later. The scheme is Stripe's and GitHub's, so their receivers' habits apply.
"""

from __future__ import annotations

import hashlib
import hmac
import time
from typing import Mapping, Optional, Union

TOLERANCE_SECONDS = 300


def signature(secret: str, timestamp: str, body: Union[str, bytes]) -> str:
    data = body.encode("utf-8") if isinstance(body, str) else body
    mac = hmac.new(secret.encode("utf-8"), timestamp.encode("ascii") + b"." + data, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def signed_headers(
    secret: str, body: Union[str, bytes], event: str, delivery_id: str, now: Optional[float] = None
) -> dict[str, str]:
    """The headers of one delivery of ``body``, signed with ``secret`` at ``now`` (time.time())."""
    timestamp = str(int(time.time() if now is None else now))
    return {
        "Content-Type": "application/json",
        "User-Agent": "PLUIE-Lab-Webhooks/1",
        "X-Pluie-Event": event,
        "X-Pluie-Delivery": delivery_id,
        "X-Pluie-Timestamp": timestamp,
        "X-Pluie-Signature": signature(secret, timestamp, body),
    }


class WebhookSignatureError(ValueError):
    """A delivery whose signature or timestamp does not hold; the message says which."""


def verify(
    secret: str,
    body: Union[str, bytes],
    headers: Mapping[str, str],
    tolerance: float = TOLERANCE_SECONDS,
    now: Optional[float] = None,
) -> None:
    """Check a delivery as a receiver: its signature made with ``secret`` over this very body, and its timestamp
    within ``tolerance`` seconds of ``now``. Raises WebhookSignatureError, else returns None."""
    lower = {str(k).lower(): v for k, v in headers.items()}
    timestamp, given = lower.get("x-pluie-timestamp"), lower.get("x-pluie-signature")
    if not timestamp or not given:
        raise WebhookSignatureError("The delivery has no X-Pluie-Timestamp or X-Pluie-Signature header.")
    try:
        age = abs((time.time() if now is None else now) - int(timestamp))
    except ValueError:
        raise WebhookSignatureError("The delivery's timestamp is not a number of seconds.") from None
    if age > tolerance:
        raise WebhookSignatureError(f"The delivery was signed {age:.0f} s ago: older than {tolerance:.0f} s, refused.")
    if not hmac.compare_digest(signature(secret, timestamp, body), given):
        raise WebhookSignatureError("The signature does not match this body and secret.")
