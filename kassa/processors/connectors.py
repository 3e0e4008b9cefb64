"""Which connector serves an endpoint's transactions: its route's enabled connections in order, cascading from
one to the next (``Route``, CONTRACT §16; the conditions a connection may carry are not read yet). A sandbox
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
import ssl
import time

from sqlalchemy import Connection as DbConnection

from kassa.domain.acquirers import Connection, Kind
from kassa.domain.action_codes import ActionCode
from kassa.domain.lifecycle import Stage
from kassa.domain.merchants import Mode
from kassa.processors.interface import Capture, Outcome, Processor, Refund, Request, Reverse
from kassa.processors.iso8583 import dialect
from kassa.processors.iso8583.connector import DatabaseStans, IsoProcessor
from kassa.processors.iso8583.link import Link, LinkState
from kassa.processors.iso8583.messages import Terminal
from kassa.storage import acquirer_messages as messages
from kassa.storage import acquirers as acquirer_store
from kassa.storage.database import Database

UNROUTED_OUTCOME = Outcome(Stage.ERROR, ActionCode.ISSUER_INOPERATIVE, "No acquirer connection serves this endpoint")


class _Unrouted:
    """Serves a live endpoint that has no enabled ISO 8583 connection: nothing is sent anywhere."""

    async def process(self, request: Request) -> Outcome:
        return UNROUTED_OUTCOME

    async def reconcile(self, request: Request) -> Outcome:
        return await self.process(request)


UNROUTED = _Unrouted()


# Outcomes another connection may still change (CONTRACT §16's default cascade list): the acquirer or the
# issuer failed, or declined without a reason a second acquirer would not share.
CASCADE_CODES = frozenset(
    {
        ActionCode.ISSUER_INOPERATIVE,
        ActionCode.SYSTEM_MALFUNCTION,
        ActionCode.ISSUER_TIMED_OUT,
        ActionCode.DO_NOT_HONOUR,
    }
)
MAX_TRIES = 3  # connections tried for one request, at most


def cascades(outcome: Outcome) -> bool:
    return outcome.stage in (Stage.ERROR, Stage.DECLINED) and outcome.error_code in CASCADE_CODES


class Route:
    """An endpoint's connections in order (CONTRACT §16). A first authorization goes to the first; when it
    ends ``error`` or declined with a code of ``CASCADE_CODES``, to the next, at most ``MAX_TRIES`` in all,
    each try a message of the transaction on its connection (``storage.acquirer_messages``). A follow-up
    goes to the connection that answered its authorization; a transaction with a message still outstanding
    (a crash, a reversal) to the connection that has it."""

    def __init__(self, db: Database, connectors: Connectors, tries: list[tuple[int | None, Processor]]) -> None:
        self._db = db
        self._connectors = connectors
        self._tries = tries  # (connection id, its connector); no id for the sandbox, which records no message

    async def process(self, request: Request) -> Outcome:
        if isinstance(request, Capture | Reverse | Refund):
            return await (await self._answering(request.original.serial)).process(request)
        sent = await self._db.read_point(lambda conn: messages.messages_of(conn, request.serial))
        outstanding = next((m for m in reversed(sent) if m["state"] in messages.PENDING), None)
        if outstanding is not None:
            return await (await self._connectors.by_id(outstanding["connection_id"])).process(request)
        tried = {m["connection_id"] for m in sent}
        left = [connector for cid, connector in self._tries if cid is None or cid not in tried]
        outcome = UNROUTED_OUTCOME
        for connector in left[: max(0, MAX_TRIES - len(tried))]:
            # Nothing is outstanding (read above): an ISO 8583 connector need not read the messages again.
            outcome = await (
                connector.send(request) if isinstance(connector, IsoProcessor) else connector.process(request)
            )
            if not cascades(outcome):
                break
        return outcome

    async def reconcile(self, request: Request) -> Outcome:
        last = await self._db.read_point(lambda conn: messages.last_of(conn, request.serial))
        connector = self._tries[0][1] if last is None else await self._connectors.by_id(last["connection_id"])
        return await connector.reconcile(request)

    async def _answering(self, serial: str) -> Processor:
        """The connector that answered the authorization ``serial``: its last message's connection."""
        last = await self._db.read_point(lambda conn: messages.last_of(conn, serial))
        return self._tries[0][1] if last is None else await self._connectors.by_id(last["connection_id"])


class Connectors:
    def __init__(self, db: Database, sandbox: Processor, ttl_seconds: float = 2.0) -> None:
        self._db = db
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
            mode, route = await self._db.read_point(
                lambda conn: (acquirer_store.endpoint_mode(conn, endpoint_id), acquirer_store.route(conn, endpoint_id))
            )
            processor = await self._first(mode, route)
            self._routes[endpoint_id] = (time.monotonic() + self._ttl, processor)
            return processor

    def _cached(self, endpoint_id: int) -> Processor | None:
        found = self._routes.get(endpoint_id)
        return found[1] if found is not None and found[0] > time.monotonic() else None

    async def _first(self, mode: Mode, route: list[Connection]) -> Processor:
        """A live endpoint's enabled ISO 8583 connections, or none (nothing real may be approved by the
        sandbox); a sandbox endpoint's enabled connections, the sandbox if its list is empty or has only it."""
        usable = [c for c in route if c.enabled and (mode is Mode.SANDBOX or c.kind is Kind.ISO8583)]
        if not usable:
            return self._sandbox if mode is Mode.SANDBOX else UNROUTED
        if all(c.kind is Kind.SANDBOX for c in usable):
            return self._sandbox  # nothing to cascade to, and no message to look up: the sandbox's hot path
        tries: list[tuple[int | None, Processor]] = [
            (None, self._sandbox) if c.kind is Kind.SANDBOX else (c.id, await self._iso(c)) for c in usable
        ]
        return Route(self._db, self, tries)

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
            routes = acquirer_store.routes(conn, sorted(using))
            return [
                endpoint_id
                for endpoint_id, route in routes.items()
                if all(c.id in down for c in route if c.enabled and c.kind is Kind.ISO8583)
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
                found = self._links[connection.id] = await _opened(self._db, connection)
            return found


async def _opened(db: Database, connection: Connection) -> IsoProcessor:
    settings = connection.link
    assert settings is not None  # an ISO 8583 connection has its link's settings
    terminal = Terminal(
        settings.acquiring_institution_id, settings.terminal_id, settings.card_acceptor_id, settings.mcc
    )
    stans = DatabaseStans(db, connection.id)
    timeout = settings.response_timeout_ms / 1000
    tls = ssl.create_default_context() if settings.tls else None
    link = Link(
        dialect.load(settings.dialect), settings.host, settings.port, tls, terminal,
        stans=stans, sockets=settings.sockets, response_timeout=timeout,
    )  # fmt: skip
    await link.start()
    with contextlib.suppress(TimeoutError):  # not signed on by then: its requests fail at once (907)
        await asyncio.wait_for(link.until(lambda state: state.signed_on > 0), timeout)
    return IsoProcessor(db, connection.id, connection.name, link, stans)
