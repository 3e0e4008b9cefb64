"""Orders and money: ``kassa order``, ``kassa settle``, ``kassa ledger``."""

from __future__ import annotations

from typing import Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.core import settlement
from kassa.domain import money
from kassa.domain.lifecycle import Stage, Status, status_of
from kassa.domain.order_view import OrderView, TransactionView
from kassa.ops.cli.common import emit, json_option, read, write
from kassa.storage import authentications as authentication_store
from kassa.storage import ledger as ledger_store
from kassa.storage import merchants as merchant_store
from kassa.storage import orders as order_store
from kassa.storage import risk as risk_store


@click.group()
def order() -> None:
    """Orders and their transactions."""


def _amount_text(minor: int, currency: str) -> str:
    return money.format_amount(minor, money.currency(currency))


@order.command("show")
@click.argument("order_id", type=int)
@json_option
def order_show(order_id: int, as_json: bool) -> None:
    """One order with every transaction (card data masked)."""

    def query(conn: Connection) -> tuple[OrderView | None, dict[int, Any], int | None]:
        view = order_store.view_by_id(conn, order_id)
        if view is None:
            return None, {}, None
        authentications = {tx.id: authentication_store.of_transaction(conn, tx.id) for tx in view.transactions}
        return view, authentications, risk_store.filtered_by(conn, order_id)

    view, authentications, filtered_by = read(query)
    if view is None:
        raise click.ClickException(f"no order {order_id}")
    o, card, destination = view.head, view.card, view.destination
    transactions = [_transaction_dict(tx, authentications.get(tx.id)) for tx in view.transactions]
    data: dict[str, Any] = {
        "id": o.id,
        "client_orderid": o.client_orderid,
        "endpoint_id": o.endpoint_id,
        "amount": _amount_text(o.amount, o.currency),
        "currency": o.currency,
        "card": card.masked if card else None,
        "destination": {"type": destination.kind, "account": destination.masked} if destination else None,
        "transactions": transactions,
        "filtered_by_rule": filtered_by,
    }
    lines = [f"order {o.id} ({o.client_orderid}) {data['amount']} {o.currency} card {data['card']}"]
    if filtered_by is not None:
        lines.append(f"  filtered by risk rule {filtered_by} (kassa rule show {filtered_by})")
    lines += [
        f"  {t['serial_number']}  {t['order_stage']:<24} {t['amount']} {t['error_code'] or ''}" for t in transactions
    ]
    emit(as_json, data, lines)


_THREE_DS_FIELDS = (
    "version", "path", "server_trans_id", "acs_trans_id", "ds_trans_id", "comp_ind", "trans_status", "eci",
    "authentication_value",
)  # fmt: skip


def _transaction_dict(tx: TransactionView, authentication: Any = None) -> dict[str, Any]:
    """A transaction for operators; with the EMV 3-D Secure data of its authentication, if any."""
    three_ds = {name: authentication[name] for name in _THREE_DS_FIELDS} if authentication else None
    return {
        "three_ds": three_ds,
        "serial_number": tx.serial_number,
        "type": tx.tx_type.value,
        "status": tx.status.value,
        "order_stage": tx.order_stage,
        "amount": _amount_text(tx.amount, tx.currency),
        "error_code": tx.error_code,
        "error_message": tx.error_message,
        "approval_code": tx.approval_code,
    }


@order.command("list")
@click.option("--merchant", "login", default=None)
@click.option("--status", type=click.Choice([s.value for s in Status]), default=None)
@click.option("--limit", type=int, default=50)
@json_option
def order_list(login: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """Orders, newest first, with the status of their latest transaction."""

    def query(conn: Connection) -> list[Any]:
        merchant_id = merchant_store.merchant_id(conn, login) if login else None
        return order_store.list_orders(conn, merchant_id, status, limit)

    rows = read(query)
    data = [
        {
            "id": r["id"],
            "client_orderid": r["client_orderid"],
            "endpoint_id": r["endpoint_id"],
            "type": r["tx_type"],
            "status": status_of(Stage(r["stage"])).value,
            "amount": _amount_text(r["amount"], r["currency"]),
            "currency": r["currency"],
        }
        for r in rows
    ]
    emit(
        as_json,
        data,
        [f"{d['id']}\t{d['client_orderid']}\t{d['type']}\t{d['status']}\t{d['amount']} {d['currency']}" for d in data],
    )


@click.command()
@click.option("--endpoint", "endpoint_id", type=int, default=None, help="Only this endpoint's orders.")
@json_option
def settle(endpoint_id: int | None, as_json: bool) -> None:
    """Settle approved sales and captures now (the scheduler does it at the daily cut-off)."""
    count = write(lambda conn: settlement.settle(conn, now_ms(), endpoint_id))
    emit(as_json, {"settled_orders": count}, [f"{count} orders settled"])


@click.group()
def ledger() -> None:
    """The double-entry ledger."""


@ledger.command("balance")
@click.option("--merchant", "login", required=True)
@json_option
def ledger_balance(login: str, as_json: bool) -> None:
    """Held, captured-unsettled, settled (available to pay out) and reserved (payouts in flight) per currency
    and mode."""

    def query(conn: Connection) -> list[ledger_store.CurrencyBalance]:
        return ledger_store.merchant_balances(conn, merchant_store.merchant_id(conn, login))

    rows = read(query)
    data = [
        {
            "currency": b.currency,
            "mode": b.mode.value,
            "held": _amount_text(b.held, b.currency),
            "captured_unsettled": _amount_text(b.captured, b.currency),
            "settled": _amount_text(b.settled, b.currency),
            "reserved": _amount_text(b.reserved, b.currency),
        }
        for b in rows
    ]
    lines = ["currency  mode  held  captured-unsettled  settled  reserved-for-payouts"]
    columns = ("currency", "mode", "held", "captured_unsettled", "settled", "reserved")
    lines += ["  ".join(str(d[c]) for c in columns) for d in data]
    emit(as_json, data, lines)


@ledger.command("check")
@json_option
def ledger_check(as_json: bool) -> None:
    """Verify that postings balance and that every order's amounts agree with its transactions."""
    problems = read(ledger_store.check)
    emit(as_json, {"ok": not problems, "problems": problems}, problems or ["ledger is consistent"])
    if problems:
        raise SystemExit(1)


COMMANDS = (order, settle, ledger)
