"""What an attempt keeps of the receiver's answer for operators: the start of its body, printable text
only, from a real HTTP server on loopback."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kassa.domain.callbacks import EXCERPT_CHARS, response_excerpt
from kassa.engine.callbacks import courier
from kassa.storage.callbacks import Attempt


@contextmanager
def answering(status: int, body: bytes) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(status)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/cb"
    finally:
        server.shutdown()
        server.server_close()


def _attempt(url: str) -> Attempt:
    async def attempt() -> Attempt:
        async with courier(timeout_seconds=5, connections=2) as sender:
            return await sender.attempt(url, {"status": "approved"}, live=False)

    return asyncio.run(attempt())


def test_attempt_keeps_the_first_200_characters_of_the_answer() -> None:
    with answering(200, b"OK " + b"x" * 5000) as url:
        attempt = _attempt(url)
    assert attempt.http_status == 200
    assert attempt.response_excerpt == ("OK " + "x" * 5000)[:EXCERPT_CHARS]


def test_attempt_answered_500_keeps_its_text_without_control_characters_or_bad_bytes() -> None:
    with answering(500, b"Internal\r\n\terror\x00\x1b[31m \xff\xfe done") as url:
        attempt = _attempt(url)
    assert (attempt.http_status, attempt.delivered) == (500, False)
    assert attempt.response_excerpt == "Internal error[31m \ufffd\ufffd done"


def test_excerpt_of_text_in_any_language_is_kept_and_cut_by_characters() -> None:
    assert response_excerpt("Принято ✓".encode()) == "Принято ✓"
    assert len(response_excerpt("ж".encode() * 1000)) == EXCERPT_CHARS
    assert response_excerpt(b"") == ""
