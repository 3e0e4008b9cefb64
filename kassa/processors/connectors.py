"""Which connector serves an endpoint's transactions: its route's enabled connections whose conditions a payment
matches, in order, cascading from one to the next (``Route``, CONTRACT §16, ``domain.routing``). A sandbox
endpoint with no route is served by the built-in sandbox; a live endpoint only by ISO 8583 connections, and
with none its payments end ``error`` 907 with nothing sent. Routes are cached per process for a few seconds,
as endpoints are.

An ISO 8583 connection's link is opened the first time it is needed, and kept: its sockets sign on in the
background; the first request waits for a sign-on up to the connection's response timeout. Links are closed
(signed off) when the process stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from dataclasses import dataclass

from sqlalchemy import Connection as DbConnection

from kassa import crashpoints
from kassa.domain.acquirers import Connection, Kind
from kassa.domain.action_codes import ActionCode
from kassa.domain.cards import brand_of
from kassa.domain.destinations import CardNumber
from kassa.domain.lifecycle import Stage
from kassa.domain.merchants import Mode
from kassa.domain.routing import MAX_TRIES, Conditions, Payment, Routing
from kassa.domain.routing import Kind as PaymentKind
from kassa.processors.interface import (
    Authorize,
    Capture,
    Card,
    Credit,
    Outcome,
    Processor,
    Refund,
    Request,
    Reverse,
    Transfer,
    Verify,
)
from kassa.processors.iso8583 import dialect
from kassa.processors.iso8583.connector import DatabaseStans, IsoProcessor
from kassa.processors.iso8583.link import Link, LinkState
from kassa.processors.iso8583.messages import Terminal
from kassa.processors.iso8583.tls import client_context
from kassa.storage import acquirer_messages as messages
from kassa.storage import acquirers as acquirer_store
from kassa.storage.database import Database
from kassa.vault.keys import Vault

_log = logging.getLogger("kassa.acquirer")

UNROUTED_OUTCOME = Outcome(Stage.ERROR, ActionCode.ISSUER_INOPERATIVE, "No acquirer connection serves this endpoint")
UNMATCHED_OUTCOME = Outcome(
    Stage.ERROR,
    ActionCode.ISSUER_INOPERATIVE,
    "No acquirer connection of this endpoint takes this card, currency, amount or kind of payment",
)


class _Unrouted:
    """Serves a live endpoint that has no enabled ISO 8583 connection: nothing is sent anywhere."""

    async def process(self, request: Request, *, first: bool = False) -> Outcome:
        return UNROUTED_OUTCOME

    async def reconcile(self, request: Request) -> Outcome:
        return await self.process(request)


UNROUTED = _Unrouted()


def payment_of(request: Authorize | Verify | Transfer | Credit) -> Payment:
    """What routing's conditions read of a first authorization: the card it charges, or the card a payout
    credits (none for a payout to a bank account, a wallet or a phone)."""
    pan: str | None
    if isinstance(request, Credit):
        match request.destination:
            case Card(pan=pan) | CardNumber(number=pan):
                pass
            case _:
                pan = None
        kind = PaymentKind.PAYOUT
    else:
        pan, kind = request.card.pan, PaymentKind.PAYMENT
    return Payment(kind, pan, None if pan is None else brand_of(pan), request.currency, request.amount)


@dataclass(frozen=True, slots=True)
class _Try:
    connection_id: int | None  # None for the sandbox, which records no message
    connector: Processor
    conditions: Conditions


class Route:
    """An endpoint's connections in order (CONTRACT §16). A first authorization goes to the first whose
    conditions it matches; when that ends ``error`` or declined with a code of the endpoint's cascade list, to
    the next that matches, at most ``MAX_TRIES`` in all, each try a message of the transaction on its
    connection (``storage.acquirer_messages``). A follow-up goes to the connection that answered its
    authorization; a transaction with a message still outstanding (a crash, a reversal) to the connection
    that has it."""

    def __init__(self, db: Database, connectors: Connectors, tries: list[_Try], cascade: frozenset[str]) -> None:
        self._db = db
        self._connectors = connectors
        self._tries = tries
        self._cascade = cascade

    async def process(self, request: Request, *, first: bool = False) -> Outcome:
        if isinstance(request, Capture | Reverse | Refund):
            return await (await self._answering(request.original.serial)).process(request, first=first)
        every = [] if first else await self._db.read_point(lambda conn: messages.messages_of(conn, request.serial))
        sent = [m for m in every if messages.of_try(m, request.amount)]  # an enumerating rebill's: of this amount
        outstanding = next((m for m in reversed(sent) if m["state"] in messages.PENDING), None)
        if outstanding is not None:
            return await (await self._connectors.by_id(outstanding["connection_id"])).process(request)
        ended: Outcome | None = None
        if sent and sent[-1]["state"] != messages.State.UNSENT:
            # The last try ended (answered, reversed) but the job stopped before its outcome was recorded: that
            # outcome stands, unless it is one to cascade on and a connection is left to try. Never sent again
            # as new, never to another acquirer after an approval.
            ended = await (await self._connectors.by_id(sent[-1]["connection_id"])).reconcile(request)
            if not self._cascades(ended):
                return ended
        payment = payment_of(request)
        matching = [t for t in self._tries if t.conditions.match(payment)]
        if not matching:
            return UNMATCHED_OUTCOME if ended is None else ended
        tried = {m["connection_id"] for m in sent}
        left = [t.connector for t in matching if t.connection_id is None or t.connection_id not in tried]
        outcome = UNROUTED_OUTCOME if ended is None else ended  # recorded by the loop before the next try
        for connector in left[: max(0, MAX_TRIES - len(tried))]:
            await self._recorded(outcome)  # the try before, cascaded on
            # Nothing is outstanding (read above): an ISO 8583 connector need not read the messages again.
            outcome = await (
                connector.send(request) if isinstance(connector, IsoProcessor) else connector.process(request)
            )
            if not self._cascades(outcome):
                break
        return outcome

    def _cascades(self, outcome: Outcome) -> bool:
        return outcome.stage in (Stage.ERROR, Stage.DECLINED) and outcome.error_code in self._cascade

    async def _recorded(self, outcome: Outcome) -> None:
        """Writes what a try left unrecorded of its answer before the next try goes out: a restart must find
        the try ended, not outstanding (its outcome, cascaded on, is not the transaction's to record)."""
        if outcome.unrecorded is not None:
            await self._db.write(outcome.unrecorded)
            crashpoints.reached(crashpoints.TRY_CASCADED_ON)

    async def reconcile(self, request: Request) -> Outcome:
        return await (await self._answering(request.serial)).reconcile(request)

    async def _answering(self, serial: str) -> Processor:
        """The connector of the transaction ``serial``'s last message (for a follow-up, the one that answered
        its authorization)."""
        last = await self._db.read_point(lambda conn: messages.last_of(conn, serial))
        return self._tries[0].connector if last is None else await self._connectors.by_id(last["connection_id"])


class Connectors:
    def __init__(self, db: Database, vault: Vault, sandbox: Processor, ttl_seconds: float = 2.0) -> None:
        self._db = db
        self._vault = vault
        self._sandbox = sandbox
        self._ttl = ttl_seconds
        self._routes: dict[int, tuple[float, Processor]] = {}
        self._links: dict[int, IsoProcessor] = {}
        self._opening: dict[int, asyncio.Lock] = {}
        self._reading: dict[int, asyncio.Lock] = {}

    async def serving(self, endpoint_id: int) -> Processor:
        cached = self._cached(endpoint_id)
        if cached is not None:
            return cached
        # One read per endpoint and expiry, not one per job in hand (a worker's 32 would miss at once); per
        # endpoint, so that a link opening to a host that is down holds up its own endpoint's jobs alone.
        async with self._reading.setdefault(endpoint_id, asyncio.Lock()):
            cached = self._cached(endpoint_id)
            if cached is not None:
                return cached
            routing = await self._db.read_point(lambda conn: acquirer_store.routing(conn, endpoint_id))
            processor = await self._planned(routing)
            self._routes[endpoint_id] = (time.monotonic() + self._ttl, processor)
            return processor

    def _cached(self, endpoint_id: int) -> Processor | None:
        found = self._routes.get(endpoint_id)
        return found[1] if found is not None and found[0] > time.monotonic() else None

    async def _planned(self, routing: Routing) -> Processor:
        """The connectors of the connections that may serve the endpoint (``Routing.serving``); with none, the
        sandbox for a sandbox endpoint and nothing for a live one."""
        stops = routing.serving()
        if not stops:
            return self._sandbox if routing.mode is Mode.SANDBOX else UNROUTED
        if len(stops) == 1 and stops[0].connection.kind is Kind.SANDBOX and not stops[0].conditions:
            return self._sandbox  # nothing to choose or cascade to, no message to look up: the sandbox's hot path
        tries = [
            _Try(None, self._sandbox, stop.conditions)
            if stop.connection.kind is Kind.SANDBOX
            else _Try(stop.connection.id, await self._iso(stop.connection), stop.conditions)
            for stop in stops
        ]
        return Route(self._db, self, tries, routing.cascade_codes)

    async def by_id(self, connection_id: int) -> Processor:
        """The connector of a connection a message of a transaction went to, whatever the route is now."""
        found = self._links.get(connection_id)
        if found is not None:
            return found
        connection = await self._db.read_point(lambda conn: acquirer_store.by_id(conn, connection_id))
        return await self._iso(connection)

    def links(self) -> dict[str, LinkState]:
        """The state of each link this process has opened, by connection name, for operators."""
        return {iso.name: iso.link.state() for iso in self._links.values()}

    def states(self) -> dict[int, LinkState]:
        """The same by connection id, for the views this process reports (``engine.link_reports``)."""
        return {iso.connection_id: iso.link.state() for iso in self._links.values()}

    async def stranded(self) -> list[int]:
        """The live endpoints none of whose ISO 8583 connections has a socket signed on, among the links this
        process opened: their payments end ``error`` 907 (for readiness, ``/readyz``)."""
        down = {iso.connection_id for iso in self._links.values() if iso.link.state().signed_on == 0}
        if not down:
            return []

        def read(conn: DbConnection) -> list[int]:
            using = {e for c in down for e, mode in acquirer_store.endpoints_using(conn, c) if mode is Mode.LIVE}
            routings = acquirer_store.routings(conn, sorted(using))
            return [
                endpoint_id
                for endpoint_id, routing in routings.items()
                if all(stop.connection.id in down for stop in routing.serving())
            ]

        return await self._db.read(read)

    async def close(self) -> None:
        links, self._links = self._links, {}
        await asyncio.gather(*(iso.link.close() for iso in links.values()), return_exceptions=True)

    async def _iso(self, connection: Connection) -> IsoProcessor:
        found = self._links.get(connection.id)
        if found is not None:
            return found
        # Opened once, by whichever request came first; a link waiting for its sign-on holds up only the
        # requests for that connection.
        async with self._opening.setdefault(connection.id, asyncio.Lock()):
            found = self._links.get(connection.id)
            if found is None:
                found = self._links[connection.id] = await _opened(self._db, self._vault, connection)
            return found


async def _opened(db: Database, vault: Vault, connection: Connection) -> IsoProcessor:
    settings = connection.link
    assert settings is not None  # an ISO 8583 connection has its link's settings
    terminal = Terminal(
        settings.acquiring_institution_id, settings.terminal_id, settings.card_acceptor_id, settings.mcc
    )
    stans = DatabaseStans(db, connection.id)
    timeout = settings.response_timeout_ms / 1000
    tls = None
    if settings.tls:
        secret = await db.read(lambda conn: acquirer_store.secret_of(conn, vault, connection.id))
        try:
            tls = client_context(secret)
        except ssl.SSLError as problem:  # checked when set: a secret sealed by an older Kassa, say
            _log.error("connection %s: its secret is no usable client certificate: %s", connection.name, problem)
            tls = client_context(None)
    link = Link(
        dialect.load(settings.dialect), settings.host, settings.port, tls, terminal,
        stans=stans, sockets=settings.sockets, response_timeout=timeout,
    )  # fmt: skip
    await link.start()
    with contextlib.suppress(TimeoutError):  # not signed on by then: its requests fail at once (907)
        await asyncio.wait_for(link.until(lambda state: state.signed_on > 0), timeout)
    return IsoProcessor(db, connection.id, connection.name, link, stans)
