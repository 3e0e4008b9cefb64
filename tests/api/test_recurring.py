"""Recurring payments over HTTP (CONTRACT §13): what a merchant sees of their charges."""

from __future__ import annotations

from tests.support.gateway import Merchant
from tests.support.recurring import subscribe_due_now


def test_status_of_a_recurring_charge_names_its_recurring_payment(clock_merchant: Merchant) -> None:
    [payment_id] = subscribe_due_now(clock_merchant, max_count=1)
    clock_merchant.gateway.advance(0)  # a scheduler tick: the charge is due
    charged = clock_merchant.status(client_orderid="sub0-1").json()
    final = clock_merchant.wait_final(charged["paynet-order-id"])
    assert (final["status"], final["transaction-type"], final["amount"]) == ("approved", "sale", "9.90")
    assert final["recurring-payment-id"] == str(payment_id)
    assert "card-ref-id" not in final  # made on card fields, not on a reference
