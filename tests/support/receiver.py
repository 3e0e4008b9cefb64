"""A merchant's callback receiver: a real HTTP server on localhost that records what it gets and can be
told to fail (HTTP 500, a timeout) for its first requests."""

from __future__ import annotations

import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit


@dataclass
class Received:
    at: float
    path: str
    query: dict[str, str]
    cookie: str | None = None  # the request's Cookie header


@dataclass
class Receiver:
    port: int
    script: list[str] = field(default_factory=list)  # per request in turn: "500", "timeout", "slow"; then "ok"
    hang_seconds: float = 2.0
    host: str = "127.0.0.1"  # as callback URLs name it; "localhost" lets a client keep cookies for it
    set_cookie: str | None = None  # a Set-Cookie header for every answer
    received: list[Received] = field(default_factory=list)  # GETs answered 200 (callbacks)
    holding: int = 0  # requests held ("timeout", "slow") and not yet answered
    posted: list[Received] = field(default_factory=list)  # POSTs (final redirects)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/callback"

    def next_behaviour(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else "ok"

    def wait_for(self, count: int, timeout: float = 20) -> list[Received]:
        deadline = time.monotonic() + timeout
        while len(self.received) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return list(self.received)


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            behaviour = receiver.next_behaviour()
            if behaviour not in ("timeout", "slow"):
                self._answer(behaviour)
                return
            with receiver.lock:
                receiver.holding += 1
            try:
                time.sleep(receiver.hang_seconds)  # slow: answers 200 after the wait
                self._answer(behaviour)
            finally:
                with receiver.lock:
                    receiver.holding -= 1

        def _answer(self, behaviour: str) -> None:
            if behaviour not in ("ok", "slow"):
                self.send_response(500)
                self.end_headers()
                return
            parts = urlsplit(self.path)
            with receiver.lock:
                query = dict(parse_qsl(parts.query, keep_blank_values=True))
                receiver.received.append(Received(time.monotonic(), parts.path, query, self.headers.get("cookie")))
            self.send_response(200)
            if receiver.set_cookie:
                self.send_header("set-cookie", receiver.set_cookie)
            self.end_headers()
            self.wfile.write(b"OK")

        def do_POST(self) -> None:
            """The merchant's return page: the final redirect lands here."""
            body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
            parts = urlsplit(self.path)
            with receiver.lock:
                receiver.posted.append(
                    Received(time.monotonic(), parts.path, dict(parse_qsl(body, keep_blank_values=True)))
                )
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(b"<!doctype html><title>Shop</title><h1 id='thanks'>Thank you for your order</h1>")

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    # The gateway sends many callbacks at once; with the default backlog of 5 the kernel drops the rest of
    # the connections and the gateway's retransmissions arrive seconds later.
    request_queue_size = 128

    def handle_error(self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any) -> None:
        """A gateway killed or timed out mid-delivery (the crash test, the timeout tests) leaves the answer
        unsent: the broken connection is what is being tested, not a failure worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextmanager
def running(receiver: Receiver) -> Iterator[Receiver]:
    with serving_on_a_thread(_Server(("127.0.0.1", receiver.port), _handler(receiver))):
        yield receiver


@contextmanager
def serving_on_a_thread(server: ThreadingHTTPServer) -> Iterator[None]:
    """``server`` answering on a thread of its own until the block ends."""
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def silent_host() -> Iterator[str]:
    """A callback URL on a host that takes connections and never answers: every attempt runs into the
    callback timeout. The kernel completes the connections and holds the requests; nobody reads them."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1024)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/slow"
