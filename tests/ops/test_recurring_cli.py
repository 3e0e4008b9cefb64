"""``kassa recurring``: operators list recurring payments, see each try of each charge with its order, and
cancel them."""

from __future__ import annotations

import time
from collections.abc import Callable

from tests.ops.test_cli import readable_failure
from tests.support.gateway import Gateway, new_merchant
from tests.support.recurring import subscribe_due_now


def test_list_show_and_cancel_a_recurring_payment_with_its_charges(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_SCHEDULER_INTERVAL="0.05")
    merchant = new_merchant(gateway, "subscriber")
    [payment_id] = subscribe_due_now(merchant)
    deadline = time.monotonic() + 30
    while (shown := gateway.cli("recurring", "show", str(payment_id)))["charges_approved"] != 1:
        assert time.monotonic() < deadline, shown
        time.sleep(0.05)
    [charge] = shown["charges"]
    assert (charge["number"], charge["try"], charge["client_orderid"], charge["order_status"], charge["state"]) == (
        1, 0, "sub0-1", "approved", "approved",
    )  # fmt: skip
    assert gateway.cli("order", "show", str(charge["order_id"]))["client_orderid"] == "sub0-1"
    assert (shown["status"], shown["amount"], shown["schedule"]["period"], shown["charges_made"]) == (
        "active", "9.90", "day", 1,
    )  # fmt: skip

    [listed] = gateway.cli("recurring", "list", "--merchant", merchant.login)
    assert (listed["id"], listed["client_orderid"], listed["next_charge_at"]) == (
        payment_id,
        "sub0",
        shown["next_charge_at"],
    )

    cancelled = gateway.cli("recurring", "cancel", str(payment_id))
    assert (cancelled["status"], cancelled["next_charge_at"]) == ("cancelled", None)
    assert gateway.cli("recurring", "cancel", str(payment_id)) == cancelled  # idempotent


def test_show_and_cancel_of_an_unknown_recurring_payment_fail_readably(shared_gateway: Gateway) -> None:
    assert "no recurring payment 999999" in readable_failure(shared_gateway, "recurring", "show", "999999")
    assert "no recurring payment 999999" in readable_failure(shared_gateway, "recurring", "cancel", "999999")
