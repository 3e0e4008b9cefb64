"""The double-entry ledger in the database: postings written in the same transaction as the state
change they account for, balances, and the consistency check operators run."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, func, insert, literal_column, select

from kassa import randomness
from kassa.domain.ledger import Account, Balances, Posting, replay
from kassa.domain.lifecycle import Stage
from kassa.domain.transactions import SETTLING, TxType
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import endpoints, ledger_entries, orders, transactions

_INSERT_ENTRY = Prepared(
    insert(ledger_entries).values(
        {
            **{
                name: bindparam(name)
                for name in ("merchant_id", "currency", "account", "amount", "order_id", "transaction_id", "posting")
            },
            "created_at_ms": bindparam("now_ms"),
        }
    )
)


def post(conn: Connection, order: Record, transaction_id: int | None, posting: Posting, now_ms: int) -> None:
    if not posting:
        return
    assert sum(delta for _, delta in posting) == 0, "a posting must balance"
    entry = {
        "merchant_id": order["merchant_id"],
        "currency": order["currency"],
        "order_id": order["id"],
        "transaction_id": transaction_id,
        "posting": randomness.uuid4(),
        "now_ms": now_ms,
    }
    _INSERT_ENTRY.execute_many(
        conn, [{**entry, "account": account.value, "amount": delta} for account, delta in posting]
    )


def order_balances(conn: Connection, order_id: int) -> Balances:
    rows = conn.execute(
        select(ledger_entries.c.account, func.sum(ledger_entries.c.amount))
        .where(ledger_entries.c.order_id == order_id)
        .group_by(ledger_entries.c.account)
    ).all()
    return Balances.of({Account(account): int(total) for account, total in rows})


@dataclass(frozen=True, slots=True)
class CurrencyBalance:
    currency: str
    held: int
    captured: int
    settled: int


# A merchant's balance adds up all its entries, without bound on their number. SQLite's SUM of integers
# fails past 64 bits, so the high and low 32 bits of the amounts are summed apart (each sum is far
# from 64 bits) and put together in Python, exactly; the shift is arithmetic on both databases.
_HIGH = func.sum(ledger_entries.c.amount.op(">>")(literal_column("32")))
_LOW = func.sum(ledger_entries.c.amount.op("&")(literal_column("4294967295")))


def merchant_balances(conn: Connection, merchant_id: int) -> list[CurrencyBalance]:
    rows = conn.execute(
        select(ledger_entries.c.currency, ledger_entries.c.account, _HIGH, _LOW)
        .where(ledger_entries.c.merchant_id == merchant_id)
        .group_by(ledger_entries.c.currency, ledger_entries.c.account)
    ).all()
    sums: dict[str, dict[Account, int]] = defaultdict(dict)
    for currency, account, high, low in rows:
        sums[currency][Account(account)] = (int(high) << 32) + int(low)
    return [
        CurrencyBalance(currency, b.held, b.captured, b.settled)
        for currency, b in sorted((c, Balances.of(s)) for c, s in sums.items())
    ]


def check(conn: Connection) -> list[str]:
    """Every problem found: postings that do not balance, and orders whose ledger balances disagree with
    what their approved transactions should have produced."""
    problems = [
        f"posting {posting} does not sum to zero ({total})"
        for posting, total in conn.execute(
            select(ledger_entries.c.posting, func.sum(ledger_entries.c.amount))
            .group_by(ledger_entries.c.posting)
            .having(func.sum(ledger_entries.c.amount) != 0)
        )
    ]
    return problems + _order_problems(conn)


def _order_problems(conn: Connection) -> list[str]:
    approved: dict[int, list[tuple[TxType, int]]] = defaultdict(list)
    for order_id, tx_type, amount in conn.execute(
        select(transactions.c.order_id, transactions.c.tx_type, transactions.c.amount)
        .where(transactions.c.stage == Stage.APPROVED.value)
        .order_by(transactions.c.order_id, transactions.c.updated_at_ms, transactions.c.id)
    ):
        approved[order_id].append((TxType(tx_type), amount))
    multi = {
        order_id: bool(flag)
        for order_id, flag in conn.execute(
            select(orders.c.id, endpoints.c.multi_capture).join(endpoints, endpoints.c.id == orders.c.endpoint_id)
        )
    }
    actual: dict[int, dict[Account, int]] = defaultdict(dict)
    for order_id, account, total in conn.execute(
        select(ledger_entries.c.order_id, ledger_entries.c.account, func.sum(ledger_entries.c.amount)).group_by(
            ledger_entries.c.order_id, ledger_entries.c.account
        )
    ):
        actual[order_id][Account(account)] = int(total)
    problems = []
    for order_id in sorted(set(approved) | set(actual)):
        expected = replay(approved.get(order_id, []), multi_capture=bool(multi.get(order_id)))
        found = Balances.of(actual.get(order_id, {}))
        if found.held != expected.held or found.captured + found.settled != expected.captured + expected.settled:
            problems.append(f"order {order_id}: ledger {found} but its transactions give {expected}")
        if found.captured < 0 or found.held < 0:
            problems.append(f"order {order_id}: negative balance {found}")
    return problems


def unsettled_money_in(conn: Connection, endpoint_id: int | None) -> list[int]:
    """Orders with an approved sale or capture not yet settled."""
    query = (
        select(transactions.c.order_id)
        .where(
            transactions.c.stage == Stage.APPROVED.value,
            transactions.c.tx_type.in_([t.value for t in SETTLING]),
            transactions.c.settled_at_ms.is_(None),
        )
        .distinct()
    )
    if endpoint_id is not None:
        query = query.join(orders, orders.c.id == transactions.c.order_id).where(orders.c.endpoint_id == endpoint_id)
    return list(conn.execute(query).scalars())
