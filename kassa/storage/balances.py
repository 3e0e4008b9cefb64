"""Merchants' balances: one row per merchant, currency and mode (sandbox or live) with the sums of that
mode's ledger ``settled`` (available to pay out) and ``reserved`` (kept for payouts in flight) accounts,
moved by the postings on those accounts in their own transactions (``ledger.post``). Sandbox money is
never on a live row: a row's mode is its orders'. Taking from the available balance is one conditional
UPDATE: PostgreSQL's row lock makes concurrent payouts of one merchant, currency and mode wait for each
other and see what the one before took, on every process; SQLite has one writer."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Connection, and_, or_, select, text

from kassa.domain.merchants import Mode
from kassa.storage.prepared import Prepared
from kassa.storage.tables import balances, merchants

_MOVE = Prepared(
    text(
        "INSERT INTO balances (merchant_id, currency, mode, available, reserved, updated_at_ms)"
        " VALUES (:merchant_id, :currency, :mode, :available, :reserved, :now_ms)"
        " ON CONFLICT (merchant_id, currency, mode) DO UPDATE SET available = balances.available + excluded.available,"
        " reserved = balances.reserved + excluded.reserved, updated_at_ms = excluded.updated_at_ms"
    )
)
# No row yet is no money yet: nothing to take.
_TAKE = Prepared(
    text(
        "UPDATE balances SET available = available + :available, reserved = reserved + :reserved,"
        " updated_at_ms = :now_ms WHERE merchant_id = :merchant_id AND currency = :currency AND mode = :mode"
        " AND available + :available >= 0"
    )
)


@dataclass(frozen=True, slots=True)
class Owner:
    """Whose balance: a merchant's in one currency and mode."""

    merchant_id: int
    currency: str
    mode: Mode


@dataclass(frozen=True, slots=True)
class Balance:
    currency: str
    mode: Mode
    available: int
    reserved: int


def move(conn: Connection, owner: Owner, available: int, reserved: int, now_ms: int) -> None:
    """Adds the deltas to the balance, whatever it comes to (a reversal may take it below zero)."""
    _MOVE.execute(conn, _values(owner, available, reserved, now_ms))


def take(conn: Connection, owner: Owner, available: int, reserved: int, now_ms: int) -> bool:
    """Adds the deltas only if the available balance stays at zero or above; whether it did."""
    return bool(_TAKE.execute(conn, _values(owner, available, reserved, now_ms)).rowcount == 1)


def _values(owner: Owner, available: int, reserved: int, now_ms: int) -> dict[str, object]:
    return {
        "merchant_id": owner.merchant_id,
        "currency": owner.currency,
        "mode": owner.mode.value,
        "available": available,
        "reserved": reserved,
        "now_ms": now_ms,
    }


def of_merchant(conn: Connection, merchant_id: int) -> list[Balance]:
    """The merchant's balances, by currency, sandbox before live."""
    rows = conn.execute(
        select(balances.c.currency, balances.c.mode, balances.c.available, balances.c.reserved)
        .where(balances.c.merchant_id == merchant_id)
        .order_by(balances.c.currency, balances.c.mode.desc())
    )
    return [Balance(currency, Mode(mode), available, reserved) for currency, mode, available, reserved in rows]


def all_balances(conn: Connection) -> dict[tuple[int, str, str], tuple[int, int]]:
    """Every row: (merchant id, currency, mode) → (available, reserved)."""
    columns = (balances.c.merchant_id, balances.c.currency, balances.c.mode, balances.c.available, balances.c.reserved)
    return {
        (m, currency, mode): (available, reserved)
        for m, currency, mode, available, reserved in conn.execute(select(*columns))
    }


@dataclass(frozen=True, slots=True)
class MerchantBalance:
    merchant_id: int
    login: str
    currency: str
    mode: Mode
    available: int
    reserved: int


def listing(conn: Connection, after: tuple[int, str, str] | None, limit: int) -> list[MerchantBalance]:
    """Up to ``limit`` balances of every merchant, by merchant id, currency and mode, after the (merchant
    id, currency, mode) ``after`` (keyset paging)."""
    b = balances.c
    query = select(b.merchant_id, merchants.c.login, b.currency, b.mode, b.available, b.reserved).join(
        merchants, merchants.c.id == b.merchant_id
    )
    if after is not None:
        merchant_id, currency, mode = after
        query = query.where(
            or_(
                b.merchant_id > merchant_id,
                and_(b.merchant_id == merchant_id, b.currency > currency),
                and_(b.merchant_id == merchant_id, b.currency == currency, b.mode > mode),
            )
        )
    rows = conn.execute(query.order_by(b.merchant_id, b.currency, b.mode).limit(limit))
    return [MerchantBalance(int(m), login, cur, Mode(mode), int(a), int(r)) for m, login, cur, mode, a, r in rows]
