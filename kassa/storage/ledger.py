"""The double-entry ledger in the database: postings written in the same transaction as the state
change they account for, balances, and the consistency check operators run."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, func, insert, literal_column, select

from kassa import randomness
from kassa.domain.ledger import Account, Balances, Posting, replay
from kassa.domain.lifecycle import Stage
from kassa.domain.merchants import Mode
from kassa.domain.transactions import SETTLING, TxType
from kassa.storage import balances
from kassa.storage.database import one_moment
from kassa.storage.prepared import Prepared, Record
from kassa.storage.tables import balance_adjustments, endpoints, ledger_entries, orders, transactions

_ENTRY_COLUMNS = (
    "merchant_id", "currency", "mode", "account", "amount", "order_id", "transaction_id", "adjustment_id", "posting"
)  # fmt: skip
_INSERT_ENTRY = Prepared(
    insert(ledger_entries).values(
        {**{name: bindparam(name) for name in _ENTRY_COLUMNS}, "created_at_ms": bindparam("now_ms")}
    )
)


def post(conn: Connection, order: Record, transaction_id: int | None, posting: Posting, now_ms: int) -> None:
    """Writes the posting in the order's mode, and moves the merchant's balance of that mode by what it
    puts on the balance's accounts. A posting that puts nothing on them (an approved sale's, to ``captured``)
    leaves the balance's row alone: on PostgreSQL writing it would lock it until the commit, and every sale
    of the merchant would queue on that one row."""
    if posting:
        _insert(conn, order, transaction_id, None, posting, now_ms)
        deltas = _balance_deltas(posting)
        if any(deltas):
            balances.move(conn, _owner(order), *deltas, now_ms)


def post_if_covered(conn: Connection, order: Record, transaction_id: int, posting: Posting, now_ms: int) -> bool:
    """``post``, only if the merchant's available balance of the order's mode covers what the posting takes
    from it (a payout's reservation); whether it was written."""
    if not balances.take(conn, _owner(order), *_balance_deltas(posting), now_ms):
        return False
    _insert(conn, order, transaction_id, None, posting, now_ms)
    return True


def _owner(order: Record) -> balances.Owner:
    return balances.Owner(order["merchant_id"], order["currency"], Mode(order["mode"]))


def adjust(conn: Connection, merchant_id: int, currency: str, amount: int, reason: str, now_ms: int) -> bool:
    """An operator's credit (``amount`` > 0) or debit of the sandbox balance, posted against the outside
    world; a debit beyond the available balance is not written (False). Nobody adjusts a live balance:
    it moves with real money alone."""
    owner = balances.Owner(merchant_id, currency, Mode.SANDBOX)
    if amount < 0 and not balances.take(conn, owner, amount, 0, now_ms):
        return False
    if amount > 0:
        balances.move(conn, owner, amount, 0, now_ms)
    _adjustment(conn, owner, amount, reason, now_ms)
    return True


def credit_back(conn: Connection, order: Record, amount: int, reason: str, now_ms: int) -> int:
    """A credit of the order's merchant balance, in the order's mode (a dispute won gives back what its
    chargeback took); the adjustment's id. Posted against the outside world, not on the order's accounts:
    the order's transactions still say what happened to its money."""
    owner = _owner(order)
    balances.move(conn, owner, amount, 0, now_ms)
    return _adjustment(conn, owner, amount, reason, now_ms)


def _adjustment(conn: Connection, owner: balances.Owner, amount: int, reason: str, now_ms: int) -> int:
    adjustment_id = int(
        conn.execute(
            insert(balance_adjustments)
            .values(
                merchant_id=owner.merchant_id,
                currency=owner.currency,
                amount=amount,
                reason=reason,
                created_at_ms=now_ms,
            )
            .returning(balance_adjustments.c.id)
        ).scalar_one()
    )
    entry_owner = {"merchant_id": owner.merchant_id, "currency": owner.currency, "mode": owner.mode.value, "id": None}
    _insert(conn, entry_owner, None, adjustment_id, [(Account.EXTERNAL, -amount), (Account.SETTLED, amount)], now_ms)
    return adjustment_id


def _balance_deltas(posting: Posting) -> tuple[int, int]:
    """What the posting moves on the available (``settled``) and ``reserved`` accounts."""
    return (
        sum(delta for account, delta in posting if account is Account.SETTLED),
        sum(delta for account, delta in posting if account is Account.RESERVED),
    )


def _insert(
    conn: Connection,
    order: Record,
    transaction_id: int | None,
    adjustment_id: int | None,
    posting: Posting,
    now_ms: int,
) -> None:
    assert sum(delta for _, delta in posting) == 0, "a posting must balance"
    entry = {
        "merchant_id": order["merchant_id"],
        "currency": order["currency"],
        "mode": order["mode"],
        "order_id": order["id"],
        "transaction_id": transaction_id,
        "adjustment_id": adjustment_id,
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


def order_entries(conn: Connection, order_id: int) -> list[Record]:
    """The order's ledger entries, first to last (what an operator reads beside its transactions)."""
    query = select(ledger_entries).where(ledger_entries.c.order_id == order_id).order_by(ledger_entries.c.id)
    return list(conn.execute(query).mappings())


@dataclass(frozen=True, slots=True)
class CurrencyBalance:
    currency: str
    mode: Mode
    held: int
    captured: int
    settled: int
    reserved: int


# A merchant's balance adds up all its entries, without bound on their number. SQLite's SUM of integers
# fails past 64 bits, so the high and low 32 bits of the amounts are summed apart (each sum is far
# from 64 bits) and put together in Python, exactly; the shift is arithmetic on both databases.
_HIGH = func.sum(ledger_entries.c.amount.op(">>")(literal_column("32")))
_LOW = func.sum(ledger_entries.c.amount.op("&")(literal_column("4294967295")))


def merchant_balances(conn: Connection, merchant_id: int) -> list[CurrencyBalance]:
    """The merchant's accounts per currency and mode, sandbox before live."""
    e = ledger_entries.c
    rows = conn.execute(
        select(e.currency, e.mode, e.account, _HIGH, _LOW)
        .where(e.merchant_id == merchant_id)
        .group_by(e.currency, e.mode, e.account)
    ).all()
    sums: dict[tuple[str, Mode], dict[Account, int]] = defaultdict(dict)
    for currency, mode, account, high, low in rows:
        sums[(currency, Mode(mode))][Account(account)] = (int(high) << 32) + int(low)
    shown = []
    for currency, mode in sorted(sums, key=lambda key: (key[0], key[1] is Mode.LIVE)):
        b = Balances.of(sums[(currency, mode)])
        shown.append(CurrencyBalance(currency, mode, b.held, b.captured, b.settled, b.reserved))
    return shown


@dataclass(frozen=True, slots=True)
class Entry:
    """One ledger entry as operators read it; ``reason`` is an operator's adjustment's."""

    id: int
    created_at_ms: int
    currency: str
    mode: str
    account: str
    amount: int
    order_id: int | None
    transaction_id: int | None
    posting: str
    reason: str | None


def merchant_entries(conn: Connection, merchant_id: int, before_id: int | None, limit: int) -> list[Entry]:
    """Up to ``limit`` of the merchant's entries, newest first, below ``before_id`` (keyset paging)."""
    query = (
        select(
            ledger_entries.c.id,
            ledger_entries.c.created_at_ms,
            ledger_entries.c.currency,
            ledger_entries.c.mode,
            ledger_entries.c.account,
            ledger_entries.c.amount,
            ledger_entries.c.order_id,
            ledger_entries.c.transaction_id,
            ledger_entries.c.posting,
            balance_adjustments.c.reason,
        )
        .outerjoin(balance_adjustments, balance_adjustments.c.id == ledger_entries.c.adjustment_id)
        .where(ledger_entries.c.merchant_id == merchant_id)
        .order_by(ledger_entries.c.id.desc())
        .limit(limit)
    )
    if before_id is not None:
        query = query.where(ledger_entries.c.id < before_id)
    return [Entry(**row) for row in conn.execute(query).mappings()]


def check(conn: Connection) -> list[str]:
    """Every problem found: postings that do not balance or mix sandbox and live money, entries in another
    mode than their order's, orders whose ledger balances disagree with what their transactions should
    have produced, and merchants' balances that are not their ledger's sums. Read at one moment: on a live
    gateway, sales recorded while it reads would otherwise show half recorded."""
    one_moment(conn)
    e = ledger_entries.c
    problems = [
        f"posting {posting} does not sum to zero ({total})"
        for posting, total in conn.execute(
            select(e.posting, func.sum(e.amount)).group_by(e.posting).having(func.sum(e.amount) != 0)
        )
    ]
    problems += [
        f"posting {posting} mixes sandbox and live money"
        for (posting,) in conn.execute(select(e.posting).group_by(e.posting).having(func.count(e.mode.distinct()) > 1))
    ]
    problems += [
        f"ledger entry {entry_id} is {mode} money of a {order_mode} order ({order_id})"
        for entry_id, mode, order_id, order_mode in conn.execute(
            select(e.id, e.mode, orders.c.id, orders.c.mode)
            .join(orders, orders.c.id == e.order_id)
            .where(e.mode != orders.c.mode)
        )
    ]
    return problems + _order_problems(conn) + _balance_problems(conn)


def _order_problems(conn: Connection) -> list[str]:
    done: dict[int, list[tuple[TxType, int, Stage]]] = defaultdict(list)
    for order_id, tx_type, amount, stage in conn.execute(
        select(transactions.c.order_id, transactions.c.tx_type, transactions.c.amount, transactions.c.stage).order_by(
            transactions.c.order_id, transactions.c.updated_at_ms, transactions.c.id
        )
    ):
        done[order_id].append((TxType(tx_type), amount, Stage(stage)))
    multi = {
        order_id: bool(flag)
        for order_id, flag in conn.execute(
            select(orders.c.id, endpoints.c.multi_capture).join(endpoints, endpoints.c.id == orders.c.endpoint_id)
        )
    }
    actual: dict[int, dict[Account, int]] = defaultdict(dict)
    for order_id, account, total in conn.execute(
        select(ledger_entries.c.order_id, ledger_entries.c.account, func.sum(ledger_entries.c.amount))
        .where(ledger_entries.c.order_id.is_not(None))
        .group_by(ledger_entries.c.order_id, ledger_entries.c.account)
    ):
        actual[order_id][Account(account)] = int(total)
    problems = []
    for order_id in sorted(set(done) | set(actual)):
        expected = replay(done.get(order_id, []), multi_capture=bool(multi.get(order_id)))
        found = Balances.of(actual.get(order_id, {}))
        if (found.held, found.reserved, found.captured + found.settled) != (
            expected.held,
            expected.reserved,
            expected.captured + expected.settled,
        ):
            problems.append(f"order {order_id}: ledger {found} but its transactions give {expected}")
        if found.captured < 0 or found.held < 0 or found.reserved < 0:
            problems.append(f"order {order_id}: negative balance {found}")
    return problems


def _balance_problems(conn: Connection) -> list[str]:
    """The balances kept per merchant, currency and mode against the sums of their accounts' entries."""
    e = ledger_entries.c
    sums: dict[tuple[int, str, str], dict[str, int]] = defaultdict(dict)
    for merchant_id, currency, mode, account, high, low in conn.execute(
        select(e.merchant_id, e.currency, e.mode, e.account, _HIGH, _LOW)
        .where(e.account.in_([Account.SETTLED.value, Account.RESERVED.value]))
        .group_by(e.merchant_id, e.currency, e.mode, e.account)
    ):
        sums[(merchant_id, currency, mode)][account] = (int(high) << 32) + int(low)
    kept = balances.all_balances(conn)
    problems = []
    for key in sorted(set(sums) | set(kept)):
        entries = sums.get(key, {})
        expected = (entries.get(Account.SETTLED.value, 0), entries.get(Account.RESERVED.value, 0))
        if kept.get(key, (0, 0)) != expected:
            merchant_id, currency, mode = key
            problems.append(
                f"merchant {merchant_id} {currency} {mode}: balance (available, reserved) {kept.get(key, (0, 0))}"
                f" but the ledger's entries give {expected}"
            )
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
