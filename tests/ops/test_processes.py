"""``kassa serve --processes 2``: two server processes share the port, both answer requests, their job
workers finish the sales, and SIGTERM to the parent stops them all."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.gateway import JSON_ACCEPT, Gateway, new_merchant

CONNECTIONS = 24


def children_of(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


def established_on(pid: int, port: int) -> int:
    """Established TCP connections on local ``port`` whose socket process ``pid`` holds."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local_port = int(fields[1].rsplit(":", 1)[1], 16)
        if local_port == port and fields[3] == "01" and fields[9] in inodes:
            count += 1
    return count


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
    clients = [httpx.Client(timeout=30) for _ in range(CONNECTIONS)]
    try:
        orderids = []
        for n, client in enumerate(clients):
            fields = merchant.sale_fields(f"procs-{n}")
            answer = client.post(f"{gateway.base}/api/v2/sale/{merchant.endpoint_id}", data=fields, headers=JSON_ACCEPT)
            assert answer.status_code == 200, answer.text
            orderids.append(answer.json()["paynet-order-id"])
        per_child = [established_on(child, gateway.port) for child in children]
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
