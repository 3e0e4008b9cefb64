"""The console's order search: orders across merchants by any of their ids, merchant, endpoint, card, date,
amount, type and status, newest first, a page at a time by keyset (never OFFSET).

What is indexed, so that a search reads the page's rows and a bounded number more, on 10 million orders:

- order id: the primary key; ``client_orderid``: ``ix_orders_client_orderid``.
- last four: ``ix_cards_last_four`` gives the cards ending so, ``ix_orders_card`` their orders; the date
  range and the other filters then apply to those orders (about one in 10,000 of all cards).
- merchant (and endpoint, which names its merchant) with or without dates: ``ix_orders_merchant_created``.
- dates alone: ``ix_orders_created``.

Not indexed, filtered on the orders the indexed conditions (or the walk newest first) give: BIN (six
digits share millions of cards: the walk meets the common ones soon), amount, the order's type, and its
status, which is the stage of its latest transaction (one lookup along ``ix_transactions_order`` per
order considered). A search by those alone walks the orders newest first until the page is full.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, and_, exists, func, or_, select

from kassa.domain.lifecycle import stages_of_status
from kassa.domain.money import CURRENCIES
from kassa.storage.prepared import Record
from kassa.storage.tables import cards, endpoints, merchants, orders, transactions

PAGE_SIZE = 50


@dataclass(frozen=True, slots=True)
class Search:
    """The filters of one search; None: any. Dates are epoch milliseconds, ``until_ms`` excluded;
    amounts are in major units (10.42), compared in each order's own currency."""

    order_id: int | None = None
    client_orderid: str | None = None
    merchant_login: str | None = None
    endpoint_id: int | None = None
    status: str | None = None
    tx_type: str | None = None
    from_ms: int | None = None
    until_ms: int | None = None
    bin: str | None = None
    last_four: str | None = None
    min_amount: Decimal | None = None
    max_amount: Decimal | None = None


@dataclass(frozen=True, slots=True)
class Found:
    """An order as the search lists it: its card masked by the caller from ``bin`` and ``last_four``."""

    id: int
    merchant_login: str
    endpoint_id: int
    client_orderid: str
    tx_type: str  # the order's (sale, preauth, ...)
    amount: int
    currency: str
    created_at_ms: int
    latest_type: str  # the type of its latest transaction (capture, reversal, ...)
    stage: str  # its stage: the order's status (``lifecycle.status_of``)
    bin: str | None
    last_four: str | None
    brand: str | None


def search(conn: Connection, wanted: Search, before_id: int | None = None, limit: int = PAGE_SIZE) -> list[Found]:
    """Up to ``limit`` orders matching ``wanted``, newest first (by creation time, then id), older than
    the order ``before_id`` when given."""
    conditions = _conditions(conn, wanted)
    if conditions is None:
        return []
    if before_id is not None:
        created = conn.execute(select(orders.c.created_at_ms).where(orders.c.id == before_id)).scalar()
        if created is None:
            return []
        # The range on created_at_ms keeps to the index; the id decides among orders of the same millisecond.
        conditions += [
            orders.c.created_at_ms <= created,
            or_(orders.c.created_at_ms < created, orders.c.id < before_id),
        ]
    query: Select[Any] = (
        select(orders.c.id).where(*conditions).order_by(orders.c.created_at_ms.desc(), orders.c.id.desc()).limit(limit)
    )
    ids = list(conn.execute(query).scalars())
    return details(conn, ids)


def _conditions(conn: Connection, wanted: Search) -> list[ColumnElement[bool]] | None:
    """The WHERE of a search; None when it can match nothing (an unknown merchant)."""
    o = orders.c
    found: list[ColumnElement[bool]] = []
    if wanted.order_id is not None:
        found.append(o.id == wanted.order_id)
    if wanted.client_orderid is not None:
        found.append(o.client_orderid == wanted.client_orderid)
    if wanted.merchant_login is not None:
        merchant_id = conn.execute(select(merchants.c.id).where(merchants.c.login == wanted.merchant_login)).scalar()
        if merchant_id is None:
            return None
        found.append(o.merchant_id == merchant_id)
    if wanted.endpoint_id is not None:
        # The endpoint's merchant too: the orders are then read along ix_orders_merchant_created.
        owner = select(endpoints.c.merchant_id).where(endpoints.c.id == wanted.endpoint_id).scalar_subquery()
        found += [o.endpoint_id == wanted.endpoint_id, o.merchant_id == owner]
    if wanted.from_ms is not None:
        found.append(o.created_at_ms >= wanted.from_ms)
    if wanted.until_ms is not None:
        found.append(o.created_at_ms < wanted.until_ms)
    if wanted.last_four is not None:
        found.append(o.card_id.in_(select(cards.c.id).where(cards.c.last_four == wanted.last_four)))
    if wanted.bin is not None:
        found.append(exists().where(cards.c.id == o.card_id, cards.c.bin == wanted.bin))
    if wanted.tx_type is not None:
        found.append(o.tx_type == wanted.tx_type)
    found += _amount_conditions(wanted.min_amount, wanted.max_amount)
    if wanted.status is not None:
        latest = select(transactions.c.stage).where(transactions.c.order_id == o.id)
        stage = latest.order_by(transactions.c.id.desc()).limit(1).scalar_subquery()
        found.append(stage.in_(stages_of_status(wanted.status)))
    return found


def _amount_conditions(low: Decimal | None, high: Decimal | None) -> list[ColumnElement[bool]]:
    """Amounts in major units, compared in minor units per currency exponent (JPY 0, USD 2, KWD 3)."""
    if low is None and high is None:
        return []
    by_exponent: dict[int, list[str]] = {}
    for code, cur in CURRENCIES.items():
        by_exponent.setdefault(cur.exponent, []).append(code)
    groups = []
    for exponent, codes in sorted(by_exponent.items()):
        scale = Decimal(10) ** exponent
        within: list[ColumnElement[bool]] = [orders.c.currency.in_(codes)]
        if low is not None:
            within.append(orders.c.amount >= int((low * scale).to_integral_value(rounding="ROUND_CEILING")))
        if high is not None:
            within.append(orders.c.amount <= int((high * scale).to_integral_value(rounding="ROUND_FLOOR")))
        groups.append(and_(*within))
    return [or_(*groups)]


def details(conn: Connection, ids: Sequence[int]) -> list[Found]:
    """The listed columns of the page's orders, with their card, merchant and latest transaction."""
    if not ids:
        return []
    latest = (
        select(func.max(transactions.c.id).label("tx_id"))
        .where(transactions.c.order_id.in_(ids))
        .group_by(transactions.c.order_id)
        .subquery()
    )
    query = (
        select(
            orders.c.id,
            merchants.c.login,
            orders.c.endpoint_id,
            orders.c.client_orderid,
            orders.c.tx_type,
            orders.c.amount,
            orders.c.currency,
            orders.c.created_at_ms,
            transactions.c.tx_type.label("latest_type"),
            transactions.c.stage,
            cards.c.bin,
            cards.c.last_four,
            cards.c.brand,
        )
        .select_from(
            orders.join(merchants, merchants.c.id == orders.c.merchant_id)
            .join(transactions, transactions.c.order_id == orders.c.id)
            .join(latest, latest.c.tx_id == transactions.c.id)
            .outerjoin(cards, cards.c.id == orders.c.card_id)
        )
        .where(orders.c.id.in_(ids))
    )
    rows: dict[int, Record] = {row["id"]: row for row in conn.execute(query).mappings()}
    return [_found(rows[order_id]) for order_id in ids if order_id in rows]


def _found(row: Record) -> Found:
    return Found(
        row["id"],
        row["login"],
        row["endpoint_id"],
        row["client_orderid"],
        row["tx_type"],
        row["amount"],
        row["currency"],
        row["created_at_ms"],
        row["latest_type"],
        row["stage"],
        row["bin"],
        row["last_four"],
        row["brand"],
    )


def order_row(conn: Connection, order_id: int) -> Record | None:
    """Every column of the order (the detail page picks what it shows), or None."""
    return conn.execute(select(orders).where(orders.c.id == order_id)).mappings().first()


def merchant_login(conn: Connection, merchant_id: int) -> str:
    return str(conn.execute(select(merchants.c.login).where(merchants.c.id == merchant_id)).scalar_one())
