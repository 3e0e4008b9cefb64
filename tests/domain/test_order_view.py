"""The read model of an order (``domain.order_view``) on plain rows: no HTTP, no database."""

from __future__ import annotations

from typing import Any

from kassa.domain.callbacks import callback_fields
from kassa.domain.lifecycle import Stage, Status
from kassa.domain.order_view import OrderView, pays_to
from kassa.domain.transactions import TxType

ORDER = {
    "id": 7, "endpoint_id": 3, "client_orderid": "o-7", "tx_type": "preauth", "amount": 10_000, "currency": "EUR",
    "email": "a@example.com", "card_ref_id": None, "recurring_payment_id": None, "merchant_data": "cart 12",
}  # fmt: skip
CARD = {"bin": "411111", "last_four": "1111", "brand": "visa", "exp_month": 3, "exp_year": 2030, "holder_name": "A B"}


def tx(serial: str, tx_type: str, stage: str, amount: int, **more: Any) -> dict[str, Any]:
    row = {
        "id": len(serial), "serial_number": serial, "tx_type": tx_type, "stage": stage, "amount": amount,
        "currency": "EUR", "approval_code": None, "processor_rrn": None, "processor_tx_id": None,
        "error_code": None, "error_message": None, "created_at_ms": 1, "updated_at_ms": 2, "settled_at_ms": None,
    }  # fmt: skip
    return {**row, **more}


def view(*transactions: dict[str, Any], card: dict[str, Any] | None = CARD) -> OrderView:
    return OrderView.of(ORDER, transactions, card, None)


def test_an_orders_status_is_its_latest_transactions() -> None:
    order = view(tx("a", "preauth", "approved", 10_000), tx("bb", "capture", "3d_validated", 6_000))
    assert order.status is Status.PROCESSING
    assert order.transaction("a") is order.transactions[0]
    assert order.transaction("zz") is None


def test_captured_and_refunded_amounts_are_in_minor_units() -> None:
    order = view(
        tx("a", "preauth", "approved", 10_000),
        tx("bb", "capture", "approved", 6_000),
        tx("ccc", "reversal", "approved", 1_000),
    )
    assert (order.state().captured, order.state().refunded) == (6_000, 1_000)


def test_a_card_shows_bin_and_last_four_only() -> None:
    assert view(tx("a", "sale", "approved", 100)).pays_to == ("card", "411111******1111")
    assert view(tx("a", "sale", "processing", 100), card=None).pays_to == ("none", "not given yet")
    assert pays_to(None, None) == ("none", "not given yet")


def test_a_callback_reports_its_transaction_not_the_latest() -> None:
    order = view(tx("a", "preauth", "approved", 10_000, approval_code="A1"), tx("bb", "void", "processing", 10_000))
    fields = callback_fields(order=order.head, tx=order.transactions[0], card=order.card, descriptor="SHOP")
    assert fields["status"] == "approved"
    assert fields["type"] == "preauth"
    assert (fields["amount"], fields["approval-code"], fields["merchantdata"]) == ("100.00", "A1", "cart 12")
    assert (fields["bin"], fields["last-four-digits"], fields["card-type"]) == ("411111", "1111", "visa")
    assert order.transactions[1].stage is Stage.PROCESSING and order.head.tx_type is TxType.PREAUTH
