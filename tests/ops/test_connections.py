"""Connections that never finish a request cannot pin the server: a head not complete within
``KASSA_HEADER_TIMEOUT`` or a body stalled past ``KASSA_BODY_TIMEOUT`` closes its connection, and a head
beyond ``KASSA_MAX_HEADER_BYTES`` is answered 431 and closed, while honest clients are answered as usual.

One gateway on SQLite serves them all: what they exercise is the server's transport, which no database
touches."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator

import pytest

from tests.support.gateway import ESTABLISHED, Gateway, Merchant, new_merchant, sockets_on

HALF_OPEN, STALLED = 500, 50
LIMITS = {"KASSA_HEADER_TIMEOUT": "1", "KASSA_BODY_TIMEOUT": "1", "KASSA_MAX_HEADER_BYTES": "16384"}


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    data_dir = tmp_path_factory.mktemp("connections")
    started = Gateway(f"sqlite:///{data_dir / 'kassa.db'}", data_dir, extra_env=LIMITS).start()
    yield started
    started.stop()


def connect(gateway: Gateway, first_bytes: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", gateway.port))
    sock.sendall(first_bytes)
    return sock


def closed_by_server(sock: socket.socket, deadline: float) -> bytes | None:
    """What the server sent before closing the connection, or None if it is still open at ``deadline``."""
    received = b""
    while True:
        sock.settimeout(max(0.01, deadline - time.monotonic()))
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            return None
        except ConnectionResetError:
            return received
        if not chunk:
            return received
        received += chunk


def honest_status(m: Merchant) -> float:
    """Seconds a signed status request took to be answered (with code 5: there is no such order)."""
    started = time.monotonic()
    answer = m.status(orderid="1", client_orderid="o-1")
    assert answer.json()["error-code"] == "5"
    return time.monotonic() - started


def test_half_open_and_stalled_connections_are_closed_after_their_timeouts_while_honest_clients_are_answered(
    gateway: Gateway,
) -> None:
    shop = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}")
    path = f"/paynet/api/v2/status/{shop.endpoint_id}"
    half_heads = [connect(gateway, f"POST {path} HTTP/1.1\r\nHost: x\r\nX-Half: ".encode()) for _ in range(HALF_OPEN)]
    stalled_head = f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nlogin=".encode()
    stalled = [connect(gateway, stalled_head) for _ in range(STALLED)]
    opened = time.monotonic()
    try:
        assert max(honest_status(shop) for _ in range(5)) < 1
        outcomes = [closed_by_server(sock, opened + 4) for sock in half_heads + stalled]
        closed_at = time.monotonic() - opened
    finally:
        for sock in half_heads + stalled:
            sock.close()
    assert outcomes.count(None) == 0, f"{outcomes.count(None)} of {len(outcomes)} connections still open"
    assert all(sent.startswith(b"HTTP/1.1 408 ") for sent in outcomes[:HALF_OPEN])
    assert closed_at < 3
    assert honest_status(shop) < 1
    assert gateway.process is not None
    assert sockets_on([gateway.process.pid], gateway.port, ESTABLISHED) <= 1  # at most the harness's keep-alive


def test_a_connection_that_sends_nothing_is_closed_after_the_header_timeout(gateway: Gateway) -> None:
    silent = socket.create_connection(("127.0.0.1", gateway.port))
    try:
        assert closed_by_server(silent, time.monotonic() + 3) == b""
    finally:
        silent.close()


def test_a_head_dripped_byte_by_byte_is_cut_off_at_the_header_timeout(gateway: Gateway) -> None:
    sock = connect(gateway, b"GET /paynet/openapi.json HTTP/1.1\r\n")
    started = time.monotonic()
    try:
        while time.monotonic() - started < 3:
            try:
                sock.sendall(b"X-Drip: a\r\n")  # always some progress, never a whole head
            except (BrokenPipeError, ConnectionResetError):
                break
            time.sleep(0.1)
        assert time.monotonic() - started < 2
    finally:
        sock.close()


@pytest.mark.parametrize("chunks", [1, 40])
def test_a_head_beyond_the_size_limit_is_answered_431_and_closed(gateway: Gateway, chunks: int) -> None:
    head = b"GET /paynet/openapi.json HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n"
    sock = socket.create_connection(("127.0.0.1", gateway.port))
    try:
        step = -(-len(head) // chunks)
        for start in range(0, len(head), step):
            try:
                sock.sendall(head[start : start + step])
            except (BrokenPipeError, ConnectionResetError):
                break
        sent = closed_by_server(sock, time.monotonic() + 3)
    finally:
        sock.close()
    assert sent is not None and sent.startswith(b"HTTP/1.1 431 ")


def test_a_head_within_the_size_limit_is_served(gateway: Gateway) -> None:
    sock = connect(gateway, b"GET /paynet/openapi.json HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 15_000 + b"\r\n\r\n")
    try:
        sock.settimeout(5)
        assert sock.recv(12) == b"HTTP/1.1 200"
    finally:
        sock.close()
