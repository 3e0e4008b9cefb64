"""Limits on what one connection may hold of the server: uvicorn's httptools protocol, which waits for
ever for a request head (and has no limit on its size) and for a body that stalls, with three guards.

- A request's head must be complete within ``header_timeout`` seconds of the connection (for its first
  request) or of its first byte (for the next ones on a kept-alive connection); else the connection is
  answered 408 (when it sent anything) and closed. A head dripped a byte at a time gains nothing.
- Its body must be complete within ``body_timeout`` seconds of the head; else the connection is closed
  (the application reading the body sees the client gone).
- A head larger than ``max_header_bytes`` is answered 431 and closed, before it reaches the application.

Between requests uvicorn's own keep-alive timeout applies; while the application works on a request no
timer runs. A request that arrives in one read (nearly all) arms no timer at all but the connection's.
"""

from __future__ import annotations

import asyncio
import enum
from dataclasses import dataclass
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    header_timeout: float
    body_timeout: float
    max_header_bytes: int


class _Reading(enum.Enum):
    HEAD = enum.auto()  # waiting for (the rest of) a request head
    BODY = enum.auto()  # the head is in, its body is not
    DONE = enum.auto()  # the request is in; the application has it


def guarded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """The protocol class to give uvicorn (``http=``), bound to ``limits``."""
    return type("GuardedHttpToolsProtocol", (GuardedHttpToolsProtocol,), {"limits": limits})


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    limits: ClassVar[ConnectionLimits]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reading = _Reading.HEAD
        self._head_bytes = 0
        self._timer: asyncio.TimerHandle | None = None
        self._refused = False
        self._last_request = False  # the server is stopping: close once this request is answered

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.limits.header_timeout, self._head_timed_out)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._reading is not _Reading.BODY:
            # Read before parsing: this may hold the end of the previous request's body (then the count
            # is high by that much, which only a pipelining client with a large body could notice).
            self._head_bytes += len(data)
        super().data_received(data)
        if self._refused or self.transport.is_closing():
            return
        if self._reading is _Reading.HEAD and self._head_bytes > self.limits.max_header_bytes:
            self._refuse(431, "Request Header Fields Too Large")
        elif self._timer is None and self._reading is _Reading.HEAD:
            self._arm(self.limits.header_timeout, self._head_timed_out)  # the next request has begun
        elif self._timer is None and self._reading is _Reading.BODY:
            self._arm(self.limits.body_timeout, self._body_timed_out)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading = _Reading.HEAD

    def on_headers_complete(self) -> None:
        self._disarm()
        self._reading = _Reading.BODY
        if self._head_size() > self.limits.max_header_bytes:
            self._refuse(431, "Request Header Fields Too Large")
            return
        super().on_headers_complete()
        if self._last_request and self.cycle is not None:
            self.cycle.keep_alive = False

    def shutdown(self) -> None:
        """The server is stopping. uvicorn closes every connection with no request in progress, which
        drops one accepted a moment before the listener closed and whose request has not arrived whole
        yet: its client sent it to a listening server and gets no answer. Such a request is answered
        (with ``Connection: close``) like one in progress; the head timeout bounds the wait for it. An
        idle kept-alive connection that has begun no request is closed, as HTTP lets a server do."""
        no_request_yet = self.cycle is None
        request_begun = self.cycle is not None and self.cycle.response_complete and self._head_bytes > 0
        if no_request_yet or request_begun:
            self._last_request = True
            return
        super().shutdown()

    def on_body(self, body: bytes) -> None:
        if not self._refused:
            super().on_body(body)

    def on_message_complete(self) -> None:
        self._disarm()
        self._reading = _Reading.DONE
        self._head_bytes = 0
        if not self._refused:
            super().on_message_complete()

    def _head_size(self) -> int:
        """The head as received, near enough: request line, and each header with its ': ' and CRLF."""
        return len(self.url) + 14 + sum(len(name) + len(value) + 4 for name, value in self.headers)

    def _head_timed_out(self) -> None:
        self._timer = None
        if self._head_bytes:
            self._refuse(408, "Request Timeout")
        else:
            self.transport.close()  # nothing asked: nothing to answer

    def _body_timed_out(self) -> None:
        self._timer = None
        self.transport.close()

    def _refuse(self, status: int, reason: str) -> None:
        """Answers the unfinished request itself (the application never saw it) and closes; only closes
        while an earlier request's answer is still to come on this connection (pipelining), which an
        answer of ours would cut into."""
        self._refused = True
        self._disarm()
        if self.cycle is None or self.cycle.response_complete:
            body = f"{reason}\n".encode()
            head = f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
            head += f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
            self.transport.write(head.encode() + body)
        self.transport.close()

    def _arm(self, seconds: float, expired: Any) -> None:
        self._disarm()
        self._timer = self.loop.call_later(seconds, expired)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
