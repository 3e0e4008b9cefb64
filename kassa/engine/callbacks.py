"""Delivers the callback outbox: HTTP GET with the signed fields, at least once, in order per receiver,
retried on a growing schedule, every attempt logged."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from urllib.parse import quote_plus, urlsplit, urlunsplit

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain.callbacks import retry_delay_ms, signed
from kassa.engine import targets
from kassa.engine.polling import Consumer
from kassa.storage import callbacks as store
from kassa.storage.callbacks import Attempt, Due
from kassa.storage.database import Database
from kassa.vault.keys import Vault, control_key_context

log = logging.getLogger("kassa.callbacks")

_BATCH = 16
_CONNECTIONS = 100
_BODY_READ = 4096


@dataclass(frozen=True, slots=True)
class CallbackConfig:
    timeout_seconds: float
    base_delay_seconds: float
    backoff: float
    max_attempts: int
    poll_interval: float
    lease_seconds: float


_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")


def _quoted(text: str) -> str:
    """``quote_plus``, skipped for the many values it would leave as they are (ids, amounts, statuses):
    a callback has some forty fields and ``urlencode`` cost more than sending it."""
    return text if _UNRESERVED.fullmatch(text) else quote_plus(text)


def with_query(url: str, fields: dict[str, str]) -> str:
    """``url`` with ``fields`` added to its own query (encoded as ``urlencode`` would)."""
    parts = urlsplit(url)
    encoded = "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in fields.items())
    query = "&".join(part for part in (parts.query, encoded) if part)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


class CallbackDispatcher(Consumer):
    """Claims due callbacks from the outbox, and takes over those a worker of this process wrote leased to
    it (``lease``, ``take``): a callback goes out as soon as its status change is committed."""

    def __init__(self, db: Database, vault: Vault, config: CallbackConfig) -> None:
        super().__init__(db, config.poll_interval, "callbacks", config.lease_seconds)
        self.config = config
        self._vault = vault
        self._courier: Courier | None = None
        self._recheck = False  # a claim found nothing while handed callbacks were out: some may wait on them

    async def run(self, stop: asyncio.Event) -> None:
        async with courier(self.config.timeout_seconds) as sender:
            self._courier = sender
            await self.consume(stop, self._claim, partial(self._deliver, sender))

    def take(self, handed: list[Due]) -> None:
        """Delivers callbacks written leased to this dispatcher (``lease``), now committed."""
        sender = self._courier
        if sender is not None:  # else never started: the leases run out and the rows are claimed
            for due in handed:
                self._take(partial(self._deliver_handed, sender, due))

    async def _deliver_handed(self, sender: Courier, due: Due) -> None:
        try:
            await self._deliver(sender, due)
        finally:
            if self._recheck:  # a later callback of the same order and URL may have waited on this one
                self._recheck = False
                self.wake()

    def found_nothing(self) -> None:
        if self.in_hand:
            self._recheck = True

    def _claim(self, conn: Connection) -> list[Due]:
        return store.claim(conn, self.owner, now_ms(), self.lease_ms, _BATCH)

    async def _deliver(self, sender: Courier, due: Due) -> None:
        # The key is opened for this attempt only (a few µs, next to an HTTP request): kept in clear
        # nowhere but in the endpoint cache, which the API needs for every request.
        key = self._vault.decrypt(due.control_key_sealed, control_key_context(due.merchant_id))
        url = with_query(due.url, signed(due.fields, key))
        attempt = await sender.attempt(due.url, url, due.live)
        attempts = due.attempts + 1
        retry_at = None
        if attempts < self.config.max_attempts:
            delay = retry_delay_ms(attempts, self.config.base_delay_seconds, self.config.backoff)
            retry_at = attempt.at_ms + attempt.latency_ms + delay
        await self.db.write(lambda conn: store.record(conn, due, self.owner, attempt, retry_at))
        log.info(
            "callback attempt",
            extra={
                "callback": due.id,
                "order": due.order_id,
                "http_status": attempt.http_status,
                "error": attempt.error,
            },
        )


@dataclass(frozen=True, slots=True)
class Courier:
    """Sends callbacks, one attempt at a time: ``live`` carries live endpoints' callbacks, ``sandbox``
    the others (which may go anywhere: tests deliver to loopback)."""

    sandbox: aiohttp.ClientSession
    live: aiohttp.ClientSession

    async def attempt(self, target: str, url: str, live: bool) -> Attempt:
        """One attempt at ``url``: the receiver's ``target`` with the signed fields added."""
        at_ms = now_ms()
        started = time.perf_counter()
        status, error = None, None
        problem = await targets.refusal(target) if live else None
        if problem:
            error = f"refused: the address {problem}"
        else:
            try:
                status = await _get(self.live if live else self.sandbox, url)
            except TimeoutError:
                error = "timeout"
            except aiohttp.ClientConnectorError as failure:
                error = _connect_error(failure)
            except aiohttp.ClientError as failure:
                error = type(failure).__name__
        return Attempt(url, at_ms, int((time.perf_counter() - started) * 1000), status, error)


def _connect_error(failure: aiohttp.ClientConnectorError) -> str:
    if isinstance(failure.os_error, targets.NotPublic):
        return f"refused: the address {failure.os_error}"
    return "ConnectError"  # not reached: refused, unreachable or unknown host


@asynccontextmanager
async def courier(timeout_seconds: float) -> AsyncIterator[Courier]:
    """Two sessions, not one with a per-request switch: a kept-alive connection or a cached lookup of
    the sandbox's, which may point anywhere, must never serve a live callback."""
    sandbox = _session(timeout_seconds, None)
    live = _session(timeout_seconds, targets.PublicResolver())
    async with sandbox, live:
        yield Courier(sandbox, live)


def _session(timeout_seconds: float, resolver: AbstractResolver | None) -> aiohttp.ClientSession:
    # No cookie jar: one session serves every merchant, and receivers of different merchants may share
    # a host; a cookie one of them set must not travel with another's callbacks.
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=timeout_seconds),
        connector=aiohttp.TCPConnector(limit=_CONNECTIONS, resolver=resolver),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


async def _get(client: aiohttp.ClientSession, url: str) -> int:
    """The receiver's status. The URL goes out exactly as signed (``encoded``: not re-quoted), redirects
    are not followed, and at most a little of the body is read: only the status counts."""
    async with client.get(yarl.URL(url, encoded=True), allow_redirects=False) as response:
        await response.content.read(_BODY_READ)
        return response.status
