"""Signed outbound webhooks: the verdict JSON, POSTed to every configured URL.

Signed like GitHub signs its own deliveries: `X-Gate-Signature-256: sha256=<hex HMAC-SHA256 of the
raw body>` with `GATE_OUTBOUND_WEBHOOK_SECRET`. A receiver recomputes it over the bytes it got and
compares in constant time. `X-Gate-Delivery` (the notification id) lets a receiver drop a
redelivery: delivery is at least once (a crash between sending and recording can repeat it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from typing import Any

import httpx

from gate.domain.notices import Delivery, StoredDelivery
from gate.notify.retry import RetryPolicy, call

TARGET = "webhook"
SIGNATURE_HEADER = "X-Gate-Signature-256"
EVENT = "verdict"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, signature: str | None) -> bool:
    """Constant-time check of a `sha256=<hex>` signature (also used for GitHub's own webhooks)."""
    return signature is not None and hmac.compare_digest(sign(secret, body), signature)


def encode(body: dict[str, Any]) -> bytes:
    """The exact bytes that are signed and sent."""
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def new_webhook(url: str, body: dict[str, Any], job_id: int | None) -> Delivery:
    return Delivery(job_id=job_id, target=TARGET, url=url, payload={"body": body})


def send_webhook(client: httpx.Client, notification: StoredDelivery, secret: str | None,
                 policy: RetryPolicy) -> None:
    content = encode(notification.payload["body"])
    headers = {
        "Content-Type": "application/json",
        "User-Agent": "flashcore-gate",
        "X-Gate-Event": EVENT,
        "X-Gate-Delivery": str(notification.id),
    }
    if secret:
        headers[SIGNATURE_HEADER] = sign(secret, content)
    call(client, "POST", notification.url, headers=headers, content=content, policy=policy)
