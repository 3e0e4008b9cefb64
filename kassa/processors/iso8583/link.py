"""The connection to one acquirer host (CONTRACT §15): a few sockets, each signed on before it carries a
financial message, kept alive by echoes and reopened with backoff when it fails; answers matched to their
requests by MTI class, STAN and terminal id, on any socket of the link.

``exchange`` sends one message and waits for its answer up to the response timeout: None means no answer
came (the caller reverses), ``NotSignedOn`` that nothing was sent (the caller answers 907). A late answer
changes nothing: it is logged and dropped. Messages are logged only as the dialect masks them.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Protocol

from kassa.clock import now_ms
from kassa.processors.iso8583 import dialect as iso
from kassa.processors.iso8583 import framing
from kassa.processors.iso8583.dialect import Dialect, Fields, Kind, MessageError
from kassa.processors.iso8583.messages import Terminal, network

log = logging.getLogger("kassa.processors.iso8583.link")

_APPROVED = "00"
_REMEMBERED = 4096  # requests timed out whose answers are told apart as late rather than unexpected

# What matches an answer to its request: the answer's MTI, field 11 and field 41.
_Key = tuple[str, str | None, str | None]


class NotSignedOn(Exception):
    """No socket of the link is signed on: the message was not sent."""


class StanSource(Protocol):
    """Where STANs come from: unique per terminal id among messages not yet answered, across processes."""

    async def next(self) -> str:
        """The next STAN, 6 digits."""


class CountingStans:
    """STANs from a counter in memory, 000001 to 999999 and round again: one process's alone."""

    def __init__(self, first: int = 1) -> None:
        self._next = first

    async def next(self) -> str:
        stan, self._next = self._next, self._next % 999_999 + 1
        return f"{stan:06d}"


@dataclass(frozen=True, slots=True)
class LinkState:
    """What an operator sees of a link."""

    sockets: int  # configured
    open: int
    signed_on: int
    in_flight: int  # messages sent and not answered yet, network messages included
    sign_ons: int  # since the link started: more than the sockets means reconnections
    last_error: str | None  # which socket and why, never a message's content
    last_error_at_ms: int | None  # on ``kassa.clock``, as operators' readers compare it
    last_sign_on: datetime | None


class _Broken(Exception):
    """A socket that must be closed and opened again."""


class _Socket:
    def __init__(self, number: int) -> None:
        self.number = number
        self.writer: asyncio.StreamWriter | None = None
        self.signed_on = False
        self.sign_ons = 0
        self.last_traffic = 0.0

    @property
    def ready(self) -> bool:
        return self.signed_on and self.writer is not None and not self.writer.is_closing()

    def close(self) -> None:
        self.signed_on = False
        if self.writer is not None:
            self.writer.transport.abort()
            self.writer = None


class Link:
    def __init__(
        self,
        dialect: Dialect,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None,
        terminal: Terminal,
        *,
        stans: StanSource,
        sockets: int = 1,
        response_timeout: float = 20.0,
        echo_interval: float = 60.0,
        backoff: tuple[float, float] = (1.0, 60.0),
    ) -> None:
        if sockets < 1:
            raise ValueError("a link has at least one socket")
        self.dialect = dialect
        self.terminal = terminal
        self._address = (host, port)
        self._tls = ssl_context
        self._stans = stans
        self._timeout = response_timeout
        self._echo_interval = echo_interval
        self._backoff = backoff
        self._sockets = [_Socket(number) for number in range(sockets)]
        self._tasks: list[asyncio.Task[None]] = []
        self._waiting: dict[_Key, asyncio.Future[Fields | None]] = {}
        self._timed_out: OrderedDict[_Key, None] = OrderedDict()
        self._turn = 0
        self._closing = False
        self._last_error: tuple[str, int] | None = None  # the text and when, epoch ms
        self._last_sign_on: datetime | None = None
        self._change = asyncio.Event()
        self._watching = 0  # callers of ``until``: without any, a change wakes nobody

    async def start(self) -> None:
        """Opens every socket in the background: each signs on as soon as it connects."""
        self._tasks = [asyncio.create_task(self._keep(socket)) for socket in self._sockets]

    async def close(self) -> None:
        """Signs off the sockets signed on, closes them; a request still waiting gets no answer (None)."""
        if self._closing:
            return
        self._closing = True
        ready = [socket for socket in self._sockets if socket.ready]
        await asyncio.gather(*(self._sign_off(socket) for socket in ready), return_exceptions=True)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        for future in self._waiting.values():
            if not future.done():
                future.set_result(None)

    async def __aenter__(self) -> Link:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.close()

    async def exchange(self, fields: Mapping[str, str]) -> Fields | None:
        """Sends ``fields`` on a signed-on socket and returns the answer, or None when none came within the
        response timeout. Raises ``NotSignedOn``, having sent nothing, when no socket is signed on."""
        data = iso.encode(self.dialect, fields)
        ready = [socket for socket in self._sockets if socket.ready]
        if self._closing or not ready:
            raise NotSignedOn("no socket of the link is signed on")
        self._turn += 1
        return await self._ask(ready[self._turn % len(ready)], data, fields)

    def state(self) -> LinkState:
        return LinkState(
            sockets=len(self._sockets),
            open=sum(socket.writer is not None for socket in self._sockets),
            signed_on=sum(socket.ready for socket in self._sockets),
            in_flight=len(self._waiting),
            sign_ons=sum(socket.sign_ons for socket in self._sockets),
            last_error=None if self._last_error is None else self._last_error[0],
            last_error_at_ms=None if self._last_error is None else self._last_error[1],
            last_sign_on=self._last_sign_on,
        )

    async def until(self, condition: Callable[[LinkState], bool]) -> LinkState:
        """Waits for a state that meets ``condition`` (a socket signed on, say) and returns it."""
        self._watching += 1
        try:
            while not condition(state := self.state()):
                await self._change.wait()
            return state
        finally:
            self._watching -= 1

    def _changed(self) -> None:
        if self._watching:  # two a message otherwise: an event made and set for nobody
            self._change.set()
            self._change = asyncio.Event()

    async def _keep(self, socket: _Socket) -> None:
        """Keeps ``socket`` open and signed on, opening it again after each failure: 1 s later, twice as
        long after each failure in a row, at most the backoff's ceiling."""
        first, ceiling = self._backoff
        delay = first
        while True:
            sign_ons = socket.sign_ons
            try:
                await self._session(socket)
            except (OSError, TimeoutError, framing.FramingError, _Broken) as problem:
                self._failed(socket, str(problem) or type(problem).__name__)  # a timeout's text is empty
            except Exception as problem:  # a fault of ours: the socket is opened again all the same
                log.exception("acquirer link %s:%d socket %d failed", *self._address, socket.number)
                self._failed(socket, type(problem).__name__)  # its text might quote what it was handling
            if socket.sign_ons != sign_ons:  # it had signed on: a new failure, not one more in a row
                delay = first
            await asyncio.sleep(delay)
            delay = min(delay * 2, ceiling)

    async def _session(self, socket: _Socket) -> None:
        """One connection of ``socket``, until it fails: reading answers on one side, signing on and echoing
        on the other."""
        host, port = self._address
        async with asyncio.timeout(self._timeout):
            reader, writer = await asyncio.open_connection(host, port, ssl=self._tls)
        socket.writer, socket.last_traffic = writer, asyncio.get_running_loop().time()
        self._changed()
        reading = asyncio.create_task(self._read(socket, reader))
        keeping = asyncio.create_task(self._keep_alive(socket))
        try:
            done, _ = await asyncio.wait((reading, keeping), return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                task.result()
            raise _Broken("the host closed the connection")
        finally:
            socket.close()
            self._changed()
            for task in (reading, keeping):
                task.cancel()
            await asyncio.gather(reading, keeping, return_exceptions=True)

    async def _keep_alive(self, socket: _Socket) -> None:
        """Signs ``socket`` on, then echoes after each ``echo_interval`` without traffic on it."""
        answer = await self._ask_network(socket, Kind.SIGN_ON)
        if answer is None:
            raise _Broken("sign-on unanswered within the response timeout")
        if answer.get("39") != _APPROVED:
            raise _Broken(f"sign-on refused with response code {answer.get('39')}")
        socket.signed_on = True
        socket.sign_ons += 1
        self._last_sign_on = datetime.now(UTC)
        self._changed()
        log.info("acquirer link %s:%d socket %d signed on", *self._address, socket.number)
        loop = asyncio.get_running_loop()
        while True:
            idle = socket.last_traffic + self._echo_interval - loop.time()
            if idle > 0:
                await asyncio.sleep(idle)
            elif await self._ask_network(socket, Kind.ECHO) is None:
                raise _Broken("echo unanswered within the response timeout")

    async def _sign_off(self, socket: _Socket) -> None:
        socket.signed_on = False
        await self._ask_network(socket, Kind.SIGN_OFF)

    async def _ask_network(self, socket: _Socket, kind: Kind) -> Fields | None:
        fields = network(self.dialect, kind, self.terminal, await self._stans.next(), datetime.now(UTC))
        return await self._ask(socket, iso.encode(self.dialect, fields), fields)

    async def _ask(self, socket: _Socket, data: bytes, fields: Mapping[str, str]) -> Fields | None:
        """Sends ``data``, the encoded ``fields``, on ``socket`` and waits for the answer on any socket."""
        # Matched as the host reads them: padded as the answer echoes them.
        key = (iso.answer_mti(fields["t"]), self._as_sent("11", fields), self._as_sent("41", fields))
        if key in self._waiting:
            raise MessageError(f"a message of STAN {key[1]} is in flight already")
        if socket.writer is None:
            raise _Broken("the socket closed")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Fields | None] = loop.create_future()
        self._waiting[key] = future
        self._changed()
        # A timer rather than ``asyncio.timeout``: a third of the cost, on every message.
        expiry = loop.call_later(self._timeout, self._expired, key, future)
        try:
            try:
                if framing.write_nowait(socket.writer, data):  # the peer reads slower than we write: wait
                    async with asyncio.timeout(self._timeout):
                        await socket.writer.drain()
            except ConnectionError as problem:  # it may have gone out all the same: its answer is awaited
                log.info("acquirer link socket %d: sending failed: %s", socket.number, problem)
            except TimeoutError:
                self._expired(key, future)
            socket.last_traffic = loop.time()
            if log.isEnabledFor(logging.DEBUG):  # masking costs more than the rest of a send
                sent = iso.padded(self.dialect, fields)
                log.debug("acquirer link: sent", extra={"fields": iso.masked(self.dialect, sent)})
            return await future
        finally:
            expiry.cancel()
            del self._waiting[key]
            self._changed()

    def _expired(self, key: _Key, future: asyncio.Future[Fields | None]) -> None:
        """No answer came within the response timeout: None, and a late one is told apart."""
        if future.done():
            return
        future.set_result(None)
        self._timed_out[key] = None
        if len(self._timed_out) > _REMEMBERED:
            self._timed_out.popitem(last=False)

    def _as_sent(self, name: str, fields: Mapping[str, str]) -> str | None:
        value = fields.get(name)
        return None if value is None else iso.padded_value(self.dialect, name, value)

    async def _read(self, socket: _Socket, reader: asyncio.StreamReader) -> None:
        """Hands each answer arriving on ``socket`` to its request's waiter; returns when the host closes."""
        loop = asyncio.get_running_loop()
        while (data := await framing.read_message(reader)) is not None:
            socket.last_traffic = loop.time()
            try:
                fields = iso.decode(self.dialect, data)
            except MessageError as problem:
                log.warning("acquirer link socket %d: an undecodable message skipped: %s", socket.number, problem)
                continue
            self._answered(fields)

    def _answered(self, fields: Fields) -> None:
        key = (fields["t"], fields.get("11"), fields.get("41"))
        future = self._waiting.get(key)
        if future is not None and not future.done():
            if log.isEnabledFor(logging.DEBUG):
                log.debug("acquirer link: received", extra={"fields": iso.masked(self.dialect, fields)})
            future.set_result(fields)
        elif key in self._timed_out:
            log.info("acquirer link: a late answer ignored", extra={"fields": iso.masked(self.dialect, fields)})
        else:
            log.warning(
                "acquirer link: an answer to no request ignored", extra={"fields": iso.masked(self.dialect, fields)}
            )

    def _failed(self, socket: _Socket, problem: str) -> None:
        host, port = self._address
        self._last_error = (f"socket {socket.number}: {problem}", now_ms())
        self._changed()
        log.warning("acquirer link %s:%d socket %d closed: %s", host, port, socket.number, problem)
