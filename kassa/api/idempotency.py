"""The ``Idempotency-Key`` header (CONTRACT §7, Stripe semantics): within 24 hours, a repeat with the
same key and body gets the first answer byte for byte; with another body, code 4. A concurrent repeat
waits for the first to finish instead of running twice.

The same store keeps the answers of follow-ups within their endpoint's replay window, under keys made
from their signed values (``replay_key``), in a part of the key space that headers may not use."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Awaitable, Callable
from functools import partial

from kassa.api.errors import ApiError, Code, field_error
from kassa.api.rendering import Answer
from kassa.runtime import Services
from kassa.storage import idempotency as store

_WAIT_SECONDS = 30.0
_POLL_SECONDS = 0.02
_REPLAY_PREFIX = "replay-window:"


def request_hash(path: str, body: bytes) -> str:
    return hashlib.sha256(path.encode() + b"\n" + body).hexdigest()


def header_key(text: str) -> str:
    """The Idempotency-Key a merchant sent, refused if it could stand for a replay window's key."""
    if text.startswith(_REPLAY_PREFIX):
        raise field_error("Idempotency-Key", f"may not start with {_REPLAY_PREFIX} (reserved)")
    return text


def replay_key(operation: str, signed_digest: str) -> str:
    """The key of a follow-up's answer within the replay window: per operation, since one body may be a
    valid capture, return and void at once, and merchants legitimately send all three."""
    return f"{_REPLAY_PREFIX}{operation}:{signed_digest}"


async def run_once(
    services: Services,
    merchant_id: int,
    key: str,
    digest: str,
    produce: Callable[[], Awaitable[Answer]],
    *,
    ttl_ms: int = store.TTL_MS,
) -> Answer:
    if not 1 <= len(key) <= 255:
        raise field_error("Idempotency-Key", "must be 1 to 255 characters")
    db = services.db
    deadline = time.monotonic() + _WAIT_SECONDS
    while True:
        claim = await db.write(
            partial(store.claim, merchant_id=merchant_id, key=key, request_hash=digest, ttl_ms=ttl_ms)
        )
        if claim.conflict:
            raise ApiError(Code.DUPLICATE, "Idempotency-Key was already used with a different request")
        if claim.answer is not None:
            return _replay(claim.answer)
        if claim.fresh:
            break
        if time.monotonic() > deadline:
            raise ApiError(Code.DUPLICATE, "a request with this Idempotency-Key is still running", http_status=409)
        await asyncio.sleep(_POLL_SECONDS)
    try:
        response = await produce()
    except BaseException:
        await db.write(lambda conn: store.release(conn, merchant_id, key))
        raise
    stored = store.StoredAnswer(response.status_code, response.content_type, response.body)
    await db.write(lambda conn: store.complete(conn, merchant_id, key, stored))
    return response


def _replay(answer: store.StoredAnswer) -> Answer:
    return Answer(answer.status_code, answer.body, answer.content_type)
