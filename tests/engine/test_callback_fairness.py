"""Callback delivery is fair: a receiver that never answers holds up neither another merchant's callbacks
nor first attempts (CONTRACT §10; docs/callbacks.md, "Delivery policy")."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tests.support.gateway import Gateway, free_port, new_merchant
from tests.support.receiver import Receiver, running, silent_host


def test_callbacks_stuck_on_a_slow_host_do_not_delay_another_merchants_callback(
    gateway_factory: Callable[..., Gateway],
) -> None:
    # Each attempt at the silent host lasts the whole timeout; before, 200 of them filled every slot the
    # dispatcher had and the other merchant's callback queued behind them for the best part of a minute.
    gateway = gateway_factory(KASSA_CALLBACK_TIMEOUT="5")
    stuck, other = new_merchant(gateway, "stuck"), new_merchant(gateway, "other")
    with silent_host() as slow_url, running(Receiver(free_port())) as receiver, ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: stuck.sale(f"slow-{n}", server_callback_url=slow_url), range(200)))
        assert {a.status_code for a in answers} == {200}
        sent = time.monotonic()
        order = other.sale("fast-1", server_callback_url=receiver.url).json()["paynet-order-id"]
        [callback] = receiver.wait_for(1, timeout=10)
    assert callback.query["orderid"] == order
    # Behind even one attempt at the silent host it would have waited its 5 s timeout; 2 s failed once on
    # a loaded machine, with the sale's own processing slowed.
    assert callback.at - sent < 4
