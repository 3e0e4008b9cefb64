"""The acquirer host simulator run on a thread of its own, for tests whose gateway runs in another process:
its switches are set from the test's thread (attributes read by the host's loop as each message comes).
And a connection to it, with its link as operators read it."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from kassa.sandbox.acquirer_host import AcquirerHost
from tests.support.gateway import Gateway, Merchant

JOB_LEASE = 30  # KASSA_JOB_LEASE_SECONDS's default


@contextmanager
def host_on_a_thread(**switches: object) -> Iterator[AcquirerHost]:
    host = AcquirerHost(**switches)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()

    async def serve() -> None:
        await host.start()
        started.set()
        await stop.wait()
        await host.close()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert started.wait(10), "the acquirer host did not start"
    try:
        yield host
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()


def create_connection(gateway: Gateway, port: int, *options: str, response_timeout: str = "0.5") -> str:
    """An ISO 8583 connection to the host on ``port`` of this machine, with ``options`` of `kassa acquirer
    create` besides; its name."""
    name = f"acq-{uuid.uuid4().hex[:10]}"
    gateway.cli(
        "acquirer", "create", "--name", name, "--host", "127.0.0.1", "--port", str(port),
        "--acquiring-institution-id", "123456", "--terminal-id", "TERM0001", "--card-acceptor-id", "SHOP00000000001",
        "--mcc", "5999", "--response-timeout", response_timeout, *options,
    )  # fmt: skip
    return name


def iso_connection(merchant: Merchant, host: AcquirerHost) -> str:
    """An ISO 8583 connection to ``host`` (a response timeout of 0.5 s), the merchant's endpoint routed to
    it; its name."""
    name = create_connection(merchant.gateway, host.port)
    merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), name)
    return name


def link_until(gateway: Gateway, name: str, condition: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The connection's link as ``kassa acquirer show`` gives it, once it meets ``condition``: the processes
    that opened it report every few seconds."""
    deadline = time.monotonic() + 20
    while not condition(link := gateway.cli("acquirer", "show", "--name", name)["link"]):
        assert time.monotonic() < deadline, f"the link stayed {link}"
        time.sleep(0.2)
    found: dict[str, Any] = link
    return found


def restarted_past_the_lease(gateway_factory: Callable[..., Gateway], merchant: Merchant) -> Gateway:
    """A gateway started again on the database of one that died, the merchant's calls sent to it, its clock moved
    past the jobs' lease: what the dead one held is taken up."""
    restarted = gateway_factory(KASSA_TEST_CLOCK="1")
    merchant.gateway = restarted
    restarted.advance(JOB_LEASE)
    return restarted
