"""Which connector serves an endpoint's transactions: the first enabled connection of the endpoint's route
(CONTRACT §16; its conditions and cascading are routing's), the built-in sandbox when that is the sandbox or
when the endpoint has no route. Routes are cached per process for a few seconds, as endpoints are.

An ISO 8583 connection's link is opened the first time it is needed, and kept: its sockets sign on in the
background; the first request waits for a sign-on up to the connection's response timeout. Links are closed
(signed off) when the process stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time

from kassa.domain.acquirers import Connection, Kind
from kassa.processors.interface import Processor
from kassa.processors.iso8583 import dialect
from kassa.processors.iso8583.connector import DatabaseStans, IsoProcessor
from kassa.processors.iso8583.link import Link, LinkState
from kassa.processors.iso8583.messages import Terminal
from kassa.storage import acquirers as acquirer_store
from kassa.storage.database import Database


class Connectors:
    def __init__(self, db: Database, sandbox: Processor, ttl_seconds: float = 2.0) -> None:
        self._db = db
        self._sandbox = sandbox
        self._ttl = ttl_seconds
        self._routes: dict[int, tuple[float, Processor]] = {}
        self._links: dict[int, IsoProcessor] = {}
        self._opening = asyncio.Lock()

    async def serving(self, endpoint_id: int) -> Processor:
        now = time.monotonic()
        cached = self._routes.get(endpoint_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        route = await self._db.read_point(lambda conn: acquirer_store.route(conn, endpoint_id))
        first = next((connection for connection in route if connection.enabled), None)
        processor = self._sandbox if first is None or first.kind is Kind.SANDBOX else await self._iso(first)
        self._routes[endpoint_id] = (now + self._ttl, processor)
        return processor

    def links(self) -> dict[int, LinkState]:
        """The state of each link this process has opened, by connection id, for operators."""
        return {connection_id: iso.link.state() for connection_id, iso in self._links.items()}

    async def close(self) -> None:
        links, self._links = self._links, {}
        await asyncio.gather(*(iso.link.close() for iso in links.values()), return_exceptions=True)

    async def _iso(self, connection: Connection) -> IsoProcessor:
        async with self._opening:
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
    return IsoProcessor(db, connection.id, link, stans)
