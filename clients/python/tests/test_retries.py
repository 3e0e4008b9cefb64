"""Retries against a real HTTP server that fails on purpose: only reads, or writes carrying an
Idempotency-Key, are tried again, and only after a 5xx, a 429 or a network failure."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from kassa_client import Kassa, ServerError, ValidationError

STATUS = {"type": "status-response", "serial-number": "s-1", "status": "approved", "paynet-order-id": "5",
          "amount": "1.00"}  # fmt: skip
REFUSAL = {"type": "validation-error", "serial-number": "s-2", "error-code": "1",
           "error-message": "amount must be a decimal", "merchant-order-id": "o"}  # fmt: skip


class Flaky:
    """Answers ``failures`` times with ``failure`` (an HTTP status), then with ``answer``."""

    def __init__(self, failures: int, failure: int = 503, answer: tuple[int, dict[str, str]] = (200, STATUS)):
        """``failure`` 0: the connection is closed without an answer (a network failure)."""
        self.failures, self.failure, self.answer = failures, failure, answer
        self.requests: list[dict[str, str]] = []

    def handler(self) -> type[BaseHTTPRequestHandler]:
        flaky = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                flaky.requests.append(dict(self.headers))
                if len(flaky.requests) <= flaky.failures and not flaky.failure:
                    self.close_connection = True
                    self.connection.close()
                    return
                if len(flaky.requests) <= flaky.failures:
                    status, body = flaky.failure, b"<html>busy</html>"
                    kind = "text/plain"
                else:
                    status, body = flaky.answer[0], json.dumps(flaky.answer[1]).encode()
                    kind = "application/vnd.pay+json; charset=utf-8"
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(body)))
                if status == 429:
                    self.send_header("retry-after", "0")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *_args: object) -> None:
                pass

        return Handler


Serve = Callable[[Flaky], Kassa]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[ThreadingHTTPServer] = []

    def start(flaky: Flaky) -> Kassa:
        server = ThreadingHTTPServer(("127.0.0.1", 0), flaky.handler())
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        base = f"http://127.0.0.1:{server.server_address[1]}/paynet"
        return Kassa(base, endpoint_id=1, login="shop", control_key="k", backoff=0.01, max_retries=2)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_status_is_retried_after_server_errors(serve: Serve) -> None:
    flaky = Flaky(2)
    assert serve(flaky).status(orderid="5").status == "approved"
    assert len(flaky.requests) == 3


def test_a_sale_without_an_idempotency_key_is_not_retried(serve: Serve) -> None:
    flaky = Flaky(1)
    with pytest.raises(ServerError) as failed:
        serve(flaky).sale(client_orderid="o", amount="1", currency="USD")
    assert (failed.value.http_status, len(flaky.requests)) == (503, 1)


def test_a_sale_with_an_idempotency_key_is_retried_with_the_same_key(serve: Serve) -> None:
    flaky = Flaky(1, answer=(200, {**STATUS, "type": "async-response"}))
    serve(flaky).sale(client_orderid="o", amount="1", currency="USD", idempotency_key="key-1")
    assert [r.get("Idempotency-Key") for r in flaky.requests] == ["key-1", "key-1"]


def test_rate_limits_are_retried_then_raised(serve: Serve) -> None:
    flaky = Flaky(5, failure=429)
    with pytest.raises(ServerError):
        serve(flaky).status(orderid="5")
    assert len(flaky.requests) == 3


def test_a_validation_error_is_never_retried_and_names_its_field(serve: Serve) -> None:
    flaky = Flaky(0, answer=(400, REFUSAL))
    with pytest.raises(ValidationError) as refused:
        serve(flaky).status(orderid="5")
    error = refused.value
    assert (error.code, error.field, error.serial_number, error.merchant_order_id) == ("1", "amount", "s-2", "o")
    assert len(flaky.requests) == 1


def test_a_dropped_connection_is_retried_for_a_read_and_raised_for_a_sale(serve: Serve) -> None:
    flaky = Flaky(1, failure=0)
    assert serve(flaky).status(orderid="5").status == "approved"
    assert len(flaky.requests) == 2
    dropped = Flaky(1, failure=0)
    with pytest.raises(httpx.TransportError):
        serve(dropped).sale(client_orderid="o", amount="1", currency="USD")
    assert len(dropped.requests) == 1
