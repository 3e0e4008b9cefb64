"""Recurring payments: ``kassa recurring``."""

from __future__ import annotations

from typing import Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.core import recurring
from kassa.domain import money
from kassa.domain.lifecycle import Stage, status_of
from kassa.domain.recurring import Status
from kassa.ops.cli.common import emit, iso_time, json_option, read, write
from kassa.storage import merchants as merchant_store
from kassa.storage import recurring as recurring_store
from kassa.storage.prepared import Record


@click.group("recurring")
def recurring_group() -> None:
    """Recurring payments (subscriptions) and their charges."""


@recurring_group.command("list")
@click.option("--merchant", "login", default=None)
@click.option("--limit", type=int, default=50)
@json_option
def recurring_list(login: str | None, limit: int, as_json: bool) -> None:
    """Recurring payments, newest first."""

    def query(conn: Connection) -> list[Record]:
        merchant_id = merchant_store.merchant_id(conn, login) if login else None
        return recurring_store.listing(conn, merchant_id, limit)

    data = [_payment_dict(p) for p in read(query)]
    emit(as_json, data, [_payment_line(d) for d in data])


@recurring_group.command("show")
@click.argument("payment_id", type=int)
@json_option
def recurring_show(payment_id: int, as_json: bool) -> None:
    """One recurring payment with every try of every charge, its order and that order's status."""

    def query(conn: Connection) -> tuple[Record | None, list[Record]]:
        return recurring_store.payment(conn, payment_id), recurring_store.charges_of(conn, payment_id)

    payment, charges = read(query)
    if payment is None:
        raise click.ClickException(f"no recurring payment {payment_id}")
    data = {**_payment_dict(payment), "charges": [_charge_dict(c) for c in charges]}
    lines = [_payment_line(data)]
    lines += [
        f"  charge {c['number']} try {c['try']}  due {c['due']}  order {c['order_id']} ({c['client_orderid']})"
        f"  {c['order_status'] or '-'}  {c['state']}"
        for c in data["charges"]
    ]
    emit(as_json, data, lines)


@recurring_group.command("cancel")
@click.argument("payment_id", type=int)
@json_option
def recurring_cancel(payment_id: int, as_json: bool) -> None:
    """Stop a recurring payment: no charge or retry after this. A payment that ended already is left as it is."""
    payment = write(lambda conn: recurring.cancel(conn, payment_id, now_ms()))
    if payment is None:
        raise click.ClickException(f"no recurring payment {payment_id}")
    data = _payment_dict(payment)
    said = "cancelled" if data["status"] == Status.CANCELLED else f"already {data['status']}: nothing to cancel"
    emit(as_json, data, [f"recurring payment {payment_id} {said}"])


def _payment_dict(p: Record) -> dict[str, Any]:
    amount = p["amount"]
    return {
        "id": p["id"],
        "merchant_id": p["merchant_id"],
        "endpoint_id": p["endpoint_id"],
        "client_orderid": p["client_orderid"],
        "status": p["status"],
        "amount": money.format_amount(amount, money.currency(p["currency"])) if amount is not None else None,
        "currency": p["currency"],
        "card_ref_id": p["card_ref_id"],
        "schedule": _schedule_dict(p),
        "charges_made": p["charges_made"],
        "charges_approved": p["charges_approved"],
        "charges_declined": p["charges_declined"],
        "next_charge_at": iso_time(p["next_charge_at_ms"]),
        "created_at": iso_time(p["created_at_ms"]),
    }


def _schedule_dict(p: Record) -> dict[str, Any] | None:
    if p["period"] is None:
        return None
    names = ("period", "interval", "start_date", "finish_date", "max_count")
    return {name: p[name] for name in names}


def _payment_line(d: dict[str, Any]) -> str:
    schedule = d["schedule"]
    every = f"every {schedule['interval']} {schedule['period']}" if schedule else "no schedule"
    money_text = f"{d['amount']} {d['currency']}" if d["amount"] is not None else "-"
    return (
        f"{d['id']}\t{d['client_orderid'] or '-'}\t{d['status']}\t{money_text}\t{every}\t"
        f"{d['charges_made']} charges, next {d['next_charge_at'] or '-'}"
    )


def _charge_dict(c: Record) -> dict[str, Any]:
    return {
        "number": c["number"],
        "try": c["try_number"],
        "due": iso_time(c["due_at_ms"]),
        "order_id": c["order_id"],
        "client_orderid": c["client_orderid"],
        "order_status": status_of(Stage(c["stage"])).value if c["stage"] else None,
        "state": c["state"],
        "retry_at": iso_time(c["retry_at_ms"]),
    }


COMMANDS = (recurring_group,)
