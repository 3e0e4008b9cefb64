"""SIGTERM stops a gateway gracefully: no new connections, requests in flight answered and their writes
kept, jobs in flight finished or handed back at once (not left leased), all within KASSA_SHUTDOWN_GRACE."""

from __future__ import annotations

import dataclasses
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from urllib.parse import urlencode

import httpx
import pytest

from tests.support.databases import run_sql
from tests.support.gateway import TLS, Gateway, new_merchant


def wait_until(condition: Callable[[], bool], timeout: float = 15) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "not within the timeout"
        time.sleep(0.05)


def stopping(gateway: Gateway) -> bool:
    try:
        return httpx.get(f"{gateway.ops}/readyz", timeout=5, verify=TLS).json()["status"] == "stopping"
    except httpx.TransportError:
        return False


def refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def read_one_answer(conn: socket.socket) -> str:
    """One HTTP/1.1 answer with a Content-Length, the connection kept open."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += conn.recv(65536)
    head, _, content = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.lower().split(b"\r\n") if line.startswith(b"content-length:")
    )
    while len(content) < length:
        content += conn.recv(65536)
    return (head + b"\r\n\r\n" + content).decode()


def read_answer(conn: socket.socket) -> str:
    """One HTTP/1.1 answer, whole (the server closes the connection after it: it is stopping)."""
    received = b""
    while chunk := conn.recv(65536):
        received += chunk
    return received.decode()


def test_sigterm_answers_the_request_in_flight_keeps_its_order_and_takes_no_new_connection(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, f"term-{uuid.uuid4().hex[:8]}")
    client_orderid = f"term-{uuid.uuid4().hex[:8]}"
    body = urlencode(merchant.sale_fields(client_orderid)).encode()
    path = f"/paynet/api/v2/sale/{merchant.endpoint_id}"
    head = (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/vnd.pay+json\r\n"
        f"Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", gateway.port), timeout=30) as conn:
        # A first request answered on the connection: the server has accepted it. One still in the
        # listener's backlog when SIGTERM closes the listener is reset by the kernel: it never was in flight.
        conn.sendall(b"GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_one_answer(conn).startswith("HTTP/1.1 404")
        conn.sendall(head + body[:10])
        assert gateway.process is not None
        gateway.process.send_signal(signal.SIGTERM)
        wait_until(lambda: stopping(gateway))
        wait_until(lambda: refused(gateway.port))
        conn.sendall(body[10:])
        answer = read_answer(conn)
    assert answer.startswith("HTTP/1.1 200"), answer
    assert "paynet-order-id" in answer
    gateway.process.wait(30)
    assert gateway.process.returncode in (0, -signal.SIGTERM)

    gateway.start()
    status = merchant.status(client_orderid=client_orderid)
    assert status.status_code == 200 and status.json()["merchant-order-id"] == client_orderid, status.text


def test_sigterm_hands_back_a_job_cut_off_by_the_grace_period_for_another_process_to_run_at_once(
    gateway_factory: Callable[..., Gateway],
) -> None:
    # An acquirer that takes ten minutes, a one-second grace, a five-minute lease: only a handed-back
    # job runs again before the lease would have run out.
    slow = gateway_factory(KASSA_SANDBOX_LATENCY_MS="600000", KASSA_SHUTDOWN_GRACE="1", KASSA_JOB_LEASE_SECONDS="300")
    merchant = new_merchant(slow, f"handback-{uuid.uuid4().hex[:8]}")
    sale = merchant.sale(f"hb-{uuid.uuid4().hex[:8]}")
    assert sale.status_code == 200
    leased = "SELECT count(*) FROM jobs WHERE lease_owner IS NOT NULL"
    wait_until(lambda: run_sql(slow.database_url, leased)[0][0] == 1)

    assert slow.process is not None
    slow.process.send_signal(signal.SIGTERM)
    try:
        slow.process.wait(15)  # the grace, then shutting down: far less than the lease
    except subprocess.TimeoutExpired:
        pytest.fail("the gateway did not stop within its grace period")
    assert run_sql(slow.database_url, leased)[0][0] == 0
    assert "handed back leased work" in slow.log_text()

    prompt = gateway_factory()  # a prompt acquirer on the same database
    same_merchant = dataclasses.replace(merchant, gateway=prompt)
    assert same_merchant.wait_final(sale.json()["paynet-order-id"])["status"] == "approved"
