"""Delivers the callback outbox: HTTP GET with the signed fields, at least once, in order per receiver,
retried on a growing schedule, every attempt logged."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial

import aiohttp
import yarl
from aiohttp.abc import AbstractResolver
from sqlalchemy import Connection

from kassa import metrics
from kassa.clock import now_ms
from kassa.domain.callbacks import EXCERPT_CHARS, RetrySchedule, response_excerpt, signed, unreachable
from kassa.engine import targets
from kassa.engine.callback_urls import Unsendable, request_url, with_query
from kassa.engine.polling import Consumer
from kassa.storage import callbacks as store
from kassa.storage.callbacks import Attempt, CallbackLease, DeliveryLimits, Due
from kassa.storage.database import Database
from kassa.vault.keys import Vault, control_key_context

log = logging.getLogger("kassa.callbacks")

_BODY_READ = 4096


@dataclass(frozen=True, slots=True)
class CallbackConfig:
    timeout_seconds: float
    base_delay_seconds: float
    backoff: float
    max_attempts: int
    poll_interval: float
    lease_seconds: float
    concurrency: int  # callbacks in flight in this process, at most
    limits: DeliveryLimits  # in flight per destination and per merchant, across processes
    idle_claim_interval: float = 5.0  # the longest an idle dispatcher goes without a claim

    @property
    def schedule(self) -> RetrySchedule:
        return RetrySchedule(self.base_delay_seconds, self.backoff, self.max_attempts)


class CallbackDispatcher(Consumer):
    """Sends callbacks as room frees up: claims due ones (``store.claim``) and takes over those a worker of
    this process wrote leased to it (``lease``, ``take``), so a callback goes out as soon as its status
    change is committed. Each runs on its own; no more than ``concurrency`` at once, and no more per
    destination or per merchant than ``limits`` allow: a receiver that never answers holds its own slots,
    not other receivers' callbacks."""

    def __init__(self, db: Database, vault: Vault, config: CallbackConfig) -> None:
        intervals = (config.poll_interval, config.idle_claim_interval)
        super().__init__(db, intervals, "callbacks", config.lease_seconds, config.concurrency)
        self.config = config
        self._vault = vault
        self._courier: Courier | None = None
        self._recheck = False  # a claim found nothing while handed callbacks were out: some may wait on them
        self._flying: Counter[Hashable] = Counter()  # this process's callbacks in flight, by destination and merchant

    async def run(self, stop: asyncio.Event) -> None:
        async with courier(self.config.timeout_seconds, self.config.concurrency) as sender:
            self._courier = sender
            await self.consume_as_room_frees(stop, self._claim, partial(self._deliver, sender, claimed=True))

    def lease(self) -> CallbackLease | None:
        given = super().lease()
        return None if given is None else CallbackLease(given.owner, given.until_ms, self.config.limits)

    def take(self, handed: list[Due]) -> None:
        """Delivers callbacks written leased to this dispatcher (``lease``), now committed."""
        sender = self._courier
        if sender is not None:  # else never started: the leases run out and the rows are claimed
            for due in handed:
                self._take(partial(self._deliver, sender, due, claimed=False))

    def found_nothing(self) -> None:
        if self.in_hand:
            self._recheck = True

    def hand_back(self, conn: Connection) -> int:
        return store.release(conn, self.owner)

    def next_due(self, conn: Connection) -> int | None:
        return store.next_due(conn)

    def _claim(self, conn: Connection, room: int) -> list[Due]:
        return store.claim(conn, self.owner, now_ms(), self.lease_ms, room, self.config.limits)

    async def _deliver(self, sender: Courier, due: Due, *, claimed: bool) -> None:
        keys = (("destination", due.destination), ("merchant", due.merchant_id))
        self._flying.update(keys)
        retried = True  # unless told otherwise: a claim sees what the attempt left
        try:
            retried = await self._attempt(sender, due)
        finally:
            limited = self._limited(due) or self.in_hand >= self.capacity
            self._flying.subtract(keys)
            for key in keys:
                if self._flying[key] <= 0:
                    del self._flying[key]
            if claimed or limited or retried or self._recheck:
                # Room freed where a claim may have left callbacks behind, or a later callback of the same
                # order and URL may have waited on this one, or a retry was queued whose due time the
                # sleeping loop does not know: look now rather than at the next poll.
                self._recheck = False
                self.wake()

    def _limited(self, due: Due) -> bool:
        limits = self.config.limits
        return (
            self._flying["destination", due.destination] >= limits.per_destination
            or self._flying["merchant", due.merchant_id] >= limits.per_merchant
        )

    async def _attempt(self, sender: Courier, due: Due) -> bool:
        """One attempt, recorded; whether it queued a retry."""
        # The key is opened for this attempt only (a few µs, next to an HTTP request): kept in clear
        # nowhere but in the endpoint cache, which the API needs for every request.
        key = self._vault.decrypt(due.control_key_sealed, control_key_context(due.merchant_id))
        attempt = await sender.attempt(due.url, signed(due.fields, key), due.live)
        schedule, ended_ms = self.config.schedule, attempt.at_ms + attempt.latency_ms
        retry_at = None if attempt.delivered else schedule.retry_at_ms(due.attempts + 1, ended_ms)
        outage = partial(
            schedule.outage_after,
            reached=not unreachable(attempt.http_status, attempt.error),
            started_ms=attempt.at_ms,
            ended_ms=ended_ms,
        )
        if await self.db.write(lambda conn: store.record(conn, due, self.owner, attempt, retry_at, outage=outage)):
            metrics.callback_attempt(
                delivered=attempt.delivered, retried=retry_at is not None, seconds=attempt.latency_ms / 1000
            )
        log.info(
            "callback attempt",
            extra={
                "callback": due.id,
                "order": due.order_id,
                "http_status": attempt.http_status,
                "error": attempt.error,
            },
        )
        return retry_at is not None


@dataclass(frozen=True, slots=True)
class Courier:
    """Sends callbacks, one attempt at a time: ``live`` carries live endpoints' callbacks, ``sandbox``
    the others (which may go anywhere: tests deliver to loopback)."""

    sandbox: aiohttp.ClientSession
    live: aiohttp.ClientSession

    async def attempt(self, target: str, fields: dict[str, str], live: bool) -> Attempt:
        """One attempt at the receiver's ``target`` with the signed ``fields`` added. Whatever goes wrong
        is the attempt's outcome, recorded with a short reason: none leaves the callback pending."""
        at_ms = now_ms()
        started = time.perf_counter()
        sent, status, error, excerpt = target, None, None, None
        try:
            url = request_url(target, fields)
            sent = str(url)
            status, excerpt = await self._send(url, live)
        except Unsendable as unsendable:
            sent, error = _as_recorded(target, fields), f"unsendable URL: {unsendable}"
        except targets.NotPublic as refused:
            error = f"refused: the address {refused}"
        except TimeoutError:
            error = "timeout"
        except aiohttp.ClientConnectorError as failure:
            error = _connect_error(failure)
        except aiohttp.ClientError as failure:
            error = type(failure).__name__
        except Exception as failure:  # any failure is an attempt; its text may quote the URL: not logged
            log.warning("callback attempt failed unexpectedly", extra={"error": type(failure).__name__})
            error = f"failed: {type(failure).__name__}"
        return Attempt(sent, at_ms, int((time.perf_counter() - started) * 1000), status, error, excerpt)

    async def _send(self, url: yarl.URL, live: bool) -> tuple[int, str]:
        if live and (problem := await targets.refusal_of(url.raw_host or "", url.port)):
            raise targets.NotPublic(problem)
        return await _get(self.live if live else self.sandbox, url)


def _as_recorded(target: str, fields: dict[str, str]) -> str:
    """An unsendable attempt's URL as the log shows it: with the fields when they can be added at all."""
    try:
        return with_query(target, fields)
    except ValueError:
        return target


def _connect_error(failure: aiohttp.ClientConnectorError) -> str:
    if isinstance(failure.os_error, targets.NotPublic):
        return f"refused: the address {failure.os_error}"
    return "ConnectError"  # not reached: refused, unreachable or unknown host


@asynccontextmanager
async def courier(timeout_seconds: float, connections: int) -> AsyncIterator[Courier]:
    """Two sessions, not one with a per-request switch: a kept-alive connection or a cached lookup of
    the sandbox's, which may point anywhere, must never serve a live callback. Each may open as many
    connections as the dispatcher sends callbacks at once: none waits for a connection inside its timeout."""
    sandbox = _session(timeout_seconds, connections, None)
    live = _session(timeout_seconds, connections, targets.PublicResolver())
    async with sandbox, live:
        yield Courier(sandbox, live)


def _session(timeout_seconds: float, connections: int, resolver: AbstractResolver | None) -> aiohttp.ClientSession:
    # No cookie jar: one session serves every merchant, and receivers of different merchants may share
    # a host; a cookie one of them set must not travel with another's callbacks.
    return aiohttp.ClientSession(
        timeout=aiohttp.ClientTimeout(total=timeout_seconds),
        connector=aiohttp.TCPConnector(limit=connections, resolver=resolver),
        cookie_jar=aiohttp.DummyCookieJar(),
    )


async def _get(client: aiohttp.ClientSession, url: yarl.URL) -> tuple[int, str]:
    """The receiver's status and the start of its answer for operators (``response_excerpt``). The URL
    goes out exactly as built (``request_url``), redirects are not followed, and at most a little of the
    body is read: only the status counts."""
    async with client.get(url, allow_redirects=False) as response:
        body = await response.content.read(_BODY_READ)
        # Up to 4 bytes a character in UTF-8: enough bytes for the excerpt even before spaces fold.
        return response.status, response_excerpt(body[: EXCERPT_CHARS * 4])
