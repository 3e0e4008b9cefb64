"""``kassa serve --processes 2``: two server processes share the port, both answer requests, their job
workers finish the sales, and SIGTERM to the parent stops them all."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable

import httpx

from tests.support.gateway import ESTABLISHED, JSON_ACCEPT, TLS, Gateway, children_of, new_merchant, sockets_on

CONNECTIONS = 24


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_two_processes_serve_one_port(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory("--processes", "2")
    assert gateway.process is not None
    children = children_of(gateway.process.pid)
    assert len(children) == 2
    merchant = new_merchant(gateway, f"procs-{uuid.uuid4().hex[:8]}")
    clients = [httpx.Client(timeout=30, verify=TLS) for _ in range(CONNECTIONS)]
    try:
        orderids = []
        for n, client in enumerate(clients):
            fields = merchant.sale_fields(f"procs-{n}")
            answer = client.post(f"{gateway.base}/api/v2/sale/{merchant.endpoint_id}", data=fields, headers=JSON_ACCEPT)
            assert answer.status_code == 200, answer.text
            orderids.append(answer.json()["paynet-order-id"])
        per_child = [sockets_on([child], gateway.port, ESTABLISHED) for child in children]
    finally:
        for client in clients:
            client.close()
    # At least ours: the harness may still hold a keep-alive connection of its own readiness check.
    assert sum(per_child) >= CONNECTIONS
    assert all(per_child), f"connections per process: {per_child}"
    assert {merchant.wait_final(orderid)["status"] for orderid in orderids} == {"approved"}

    gateway.stop()
    deadline = time.monotonic() + 10
    while any(alive(child) for child in children) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(child) for child in children)
    assert gateway.process.returncode == 0
