"""``kassa serve --processes 2`` restarted process by process (SIGHUP) under a steady load of sales: every
request answered 200 at the client, every accepted sale final and called back, none charged twice, and the
ledger balanced: the crash test's checks, with graceful restarts instead of kills."""

from __future__ import annotations

import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from tests.crash.crashtest import Load, verify
from tests.ops.test_processes import alive
from tests.support.gateway import Gateway, children_of, free_port, new_merchant
from tests.support.receiver import Receiver, running


@dataclass
class CountingLoad(Load):
    """The crash test's load, with every request that did not get a 200 counted as a failure."""

    failures: list[str] = field(default_factory=list)

    def _client(self) -> None:
        while not self.stop.is_set():
            client_orderid = f"roll-{uuid.uuid4().hex[:12]}"
            try:
                answer = self.merchant.sale(client_orderid, server_callback_url=self.callback_url)
            except httpx.TransportError as failure:
                with self.lock:
                    self.failures.append(f"{client_orderid}: {type(failure).__name__}")
                continue
            with self.lock:
                if answer.status_code == 200:
                    self.accepted[client_orderid] = answer.json()["paynet-order-id"]
                else:
                    self.failures.append(f"{client_orderid}: HTTP {answer.status_code} {answer.text[:120]}")


def load_reaches(load: Load, accepted: int) -> None:
    deadline = time.monotonic() + 60
    while len(load.accepted) < accepted:
        assert time.monotonic() < deadline, f"only {len(load.accepted)} sales accepted"
        time.sleep(0.05)


def restarted(gateway: Gateway, before: list[int]) -> list[int]:
    """SIGHUP to the parent; returns the new children once both old ones are gone."""
    assert gateway.process is not None
    gateway.process.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        now = children_of(gateway.process.pid)
        if len(now) == 2 and not set(now) & set(before) and not any(alive(pid) for pid in before):
            return now
        time.sleep(0.05)
    raise AssertionError(f"children {before} were not replaced: {children_of(gateway.process.pid)}")


def test_a_rolling_restart_under_load_fails_no_request_and_loses_or_doubles_nothing(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory("--processes", "2", KASSA_ADDRESS_RATE="0", KASSA_CALLBACK_BASE_DELAY="0.5")
    assert gateway.process is not None
    merchant = new_merchant(gateway, f"roll-{uuid.uuid4().hex[:8]}")
    with running(Receiver(free_port())) as receiver:
        load = CountingLoad(merchant, receiver.url)
        clients = load.run(6)
        children = children_of(gateway.process.pid)
        for round_ in range(1, 4):
            load_reaches(load, 20 * round_)
            children = restarted(gateway, children)
        load_reaches(load, 80)
        load.stop.set()
        for client in clients:
            client.join(30)
        assert not load.failures, load.failures[:5]
        assert verify(gateway, merchant, load, receiver) == []
