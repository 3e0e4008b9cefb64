"""An idle gateway claims nothing while nothing can be due, and misses no work: what another process
queues wakes it (PostgreSQL: a notification; SQLite: its -wal file changed), and what falls due later is
claimed at its due time. Each gateway here claims at most every ten minutes without a reason
(``KASSA_IDLE_CLAIM_INTERVAL``), so work done promptly was found by a signal or a due time, not that net."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tests.engine.test_callbacks import BASE_DELAY, wait_attempts
from tests.ops.test_probes import scrape, value
from tests.support.gateway import KASSA, Gateway, free_port, new_merchant
from tests.support.receiver import Receiver, running

NO_NET = {"KASSA_IDLE_CLAIM_INTERVAL": "600"}
POLL = 0.02  # seconds: KASSA_POLL_INTERVAL of the idle gateway


def _claims(gateway: Gateway) -> float:
    samples = scrape(gateway)
    return sum(value(samples, "kassa_queue_claims_total", consumer=kind) for kind in ("worker", "callbacks"))


def test_an_idle_gateway_makes_no_claim_over_many_poll_intervals(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_POLL_INTERVAL=str(POLL), KASSA_SCHEDULER_INTERVAL="3600", **NO_NET)
    merchant = new_merchant(gateway, "idle")
    assert merchant.wait_final(merchant.sale("idle-1").json()["paynet-order-id"])["status"] == "approved"
    time.sleep(50 * POLL)  # the sale's last writes are seen and claimed after: then nothing is due
    before = _claims(gateway)
    assert before > 0  # the workers and the dispatcher claimed as they started, and after the sale
    time.sleep(50 * POLL)  # idleness takes time to show: fifty poll intervals of it
    assert _claims(gateway) == before
    assert merchant.wait_final(merchant.sale("idle-2").json()["paynet-order-id"])["status"] == "approved"


@contextmanager
def _worker_process(api: Gateway) -> Iterator[None]:
    log = (api.data_dir / "worker.log").open("wb")  # read when the test fails
    worker = subprocess.Popen([KASSA, "worker", "--workers", "1"], env={**api.env, **NO_NET}, stderr=log)
    try:
        yield
    finally:
        worker.terminate()
        worker.wait(10)


def test_a_sale_accepted_by_an_api_only_process_is_processed_by_an_idle_worker_process(
    gateway_factory: Callable[..., Gateway],
) -> None:
    api = gateway_factory("--workers", "0")
    merchant = new_merchant(api, "api-only")
    with _worker_process(api):
        for n in range(3):  # the worker has gone idle after each: the next sale wakes it
            order = merchant.sale(f"apionly-{n}").json()["paynet-order-id"]
            assert merchant.wait_final(order, timeout=20)["status"] == "approved"


def test_a_callback_redelivered_from_the_command_line_goes_out_from_an_idle_gateway(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(**NO_NET)
    merchant = new_merchant(gateway, "redeliver")
    with running(Receiver(free_port())) as receiver:
        merchant.sale("idle-rd", server_callback_url=receiver.url)
        order = receiver.wait_for(1)[0].query["orderid"]
        assert gateway.cli("callbacks", "redeliver", "--order", order) == {"requeued": 1}
        assert len(receiver.wait_for(2)) == 2


def test_a_callback_retry_is_attempted_once_the_clock_passes_its_due_time(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(KASSA_TEST_CLOCK="1", **NO_NET)
    merchant = new_merchant(gateway, "retry")
    with running(Receiver(free_port(), script=["500"])) as receiver:
        order = merchant.sale("idle-retry", server_callback_url=receiver.url).json()["paynet-order-id"]
        wait_attempts(gateway, order, 1)
        # The test clock runs on with real time: 10 s short of the retry, so that a loaded machine's
        # seconds between the attempt and this check do not make it due.
        gateway.advance(BASE_DELAY - 10)
        assert receiver.wait_for(1, timeout=0.5) == []
        gateway.advance(10)
        assert len(receiver.wait_for(1)) == 1
