"""Merchants' balances: one row per merchant and currency with the sums of the ledger's ``settled``
(available to pay out) and ``reserved`` (kept for payouts in flight) accounts, moved by the postings on
those accounts in their own transactions (``ledger.post``). Taking from the available balance is one
conditional UPDATE: PostgreSQL's row lock makes concurrent payouts of one merchant and currency wait for
each other and see what the one before took, on every process; SQLite has one writer."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, and_, or_, select, text

from kassa.storage.prepared import Prepared
from kassa.storage.tables import balances, merchants

_MOVE = Prepared(
    text(
        "INSERT INTO balances (merchant_id, currency, available, reserved, updated_at_ms)"
        " VALUES (:merchant_id, :currency, :available, :reserved, :now_ms)"
        " ON CONFLICT (merchant_id, currency) DO UPDATE SET available = balances.available + excluded.available,"
        " reserved = balances.reserved + excluded.reserved, updated_at_ms = excluded.updated_at_ms"
    )
)
# No row yet is no money yet: nothing to take.
_TAKE = Prepared(
    text(
        "UPDATE balances SET available = available + :available, reserved = reserved + :reserved,"
        " updated_at_ms = :now_ms WHERE merchant_id = :merchant_id AND currency = :currency"
        " AND available + :available >= 0"
    )
)


@dataclass(frozen=True, slots=True)
class Balance:
    currency: str
    available: int
    reserved: int


def move(conn: Connection, merchant_id: int, currency: str, available: int, reserved: int, now_ms: int) -> None:
    """Adds the deltas to the balance, whatever it comes to (a reversal may take it below zero)."""
    _MOVE.execute(conn, _values(merchant_id, currency, available, reserved, now_ms))


def take(conn: Connection, merchant_id: int, currency: str, available: int, reserved: int, now_ms: int) -> bool:
    """Adds the deltas only if the available balance stays at zero or above; whether it did."""
    return bool(_TAKE.execute(conn, _values(merchant_id, currency, available, reserved, now_ms)).rowcount == 1)


def _values(merchant_id: int, currency: str, available: int, reserved: int, now_ms: int) -> dict[str, object]:
    return {
        "merchant_id": merchant_id,
        "currency": currency,
        "available": available,
        "reserved": reserved,
        "now_ms": now_ms,
    }


def of_merchant(conn: Connection, merchant_id: int) -> list[Balance]:
    rows = conn.execute(
        select(balances.c.currency, balances.c.available, balances.c.reserved)
        .where(balances.c.merchant_id == merchant_id)
        .order_by(balances.c.currency)
    )
    return [Balance(currency, available, reserved) for currency, available, reserved in rows]


def all_balances(conn: Connection) -> dict[tuple[int, str], tuple[int, int]]:
    """Every row: (merchant id, currency) → (available, reserved)."""
    rows = conn.execute(select(balances.c.merchant_id, balances.c.currency, balances.c.available, balances.c.reserved))
    return {(merchant_id, currency): (available, reserved) for merchant_id, currency, available, reserved in rows}


@dataclass(frozen=True, slots=True)
class MerchantBalance:
    merchant_id: int
    login: str
    currency: str
    available: int
    reserved: int


def listing(conn: Connection, after: tuple[int, str] | None, limit: int) -> list[MerchantBalance]:
    """Up to ``limit`` balances of every merchant, by merchant id then currency, after the (merchant id,
    currency) ``after`` (keyset paging)."""
    query = select(
        balances.c.merchant_id, merchants.c.login, balances.c.currency, balances.c.available, balances.c.reserved
    ).join(merchants, merchants.c.id == balances.c.merchant_id)
    if after is not None:
        merchant_id, currency = after
        query = query.where(
            or_(
                balances.c.merchant_id > merchant_id,
                and_(balances.c.merchant_id == merchant_id, balances.c.currency > currency),
            )
        )
    rows = conn.execute(query.order_by(balances.c.merchant_id, balances.c.currency).limit(limit))
    return [MerchantBalance(int(m), login, cur, int(a), int(r)) for m, login, cur, a, r in rows]
