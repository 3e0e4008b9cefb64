"""Ledger sums are exact however many entries they add (SQLite's SUM stops at 64 bits); sandbox and live
money are two ledgers and two balances, which the check keeps apart."""

from __future__ import annotations

from sqlalchemy import Connection, select, update

from kassa.domain.ledger import Account
from kassa.domain.merchants import Mode
from kassa.storage import balances, ledger, merchants
from kassa.storage.database import Database
from kassa.storage.tables import balances as balances_table
from kassa.storage.tables import ledger_entries, orders
from tests.support.databases import TEST_VAULT, nowhere_connection


def _order(conn: Connection, mode: Mode = Mode.SANDBOX, login: str = "big") -> tuple[int, dict[str, object]]:
    merchant = merchants.create_merchant(conn, TEST_VAULT, login, "k" * 32, False, 0)
    spec = merchants.EndpointSpec(merchant.id, "KWD", mode, False, "", None, None, False)
    route = [nowhere_connection(conn, TEST_VAULT)] if mode is Mode.LIVE else []
    endpoint_id = merchants.create_endpoint(conn, spec, 0, route)
    row = {
        "merchant_id": merchant.id, "endpoint_id": endpoint_id, "client_orderid": "o-1", "tx_type": "sale",
        "amount": 10**12, "currency": "KWD", "request_fingerprint": "f", "created_at_ms": 0, "mode": mode.value,
    }  # fmt: skip
    order_id = conn.execute(orders.insert().values(row)).inserted_primary_key[0]
    return merchant.id, {"id": order_id, "merchant_id": merchant.id, "currency": "KWD", "mode": mode.value}


_SETTLED_10 = [(Account.EXTERNAL, -10), (Account.SETTLED, 10)]


def test_merchant_balance_beyond_64_bits_is_summed_exactly(db: Database) -> None:
    def write(conn: Connection) -> int:
        merchant_id, order = _order(conn)
        for _ in range(12):  # 12 * 10^18 > 2^63: more than SQLite's SUM holds
            ledger.post(conn, order, None, [(Account.EXTERNAL, -(10**18)), (Account.CAPTURED, 10**18)], 0)
        return merchant_id

    merchant_id = db.write_sync(write)
    [balance] = db.read_sync(lambda conn: ledger.merchant_balances(conn, merchant_id))
    assert (balance.captured, balance.held, balance.settled) == (12 * 10**18, 0, 0)


def test_an_orders_money_moves_the_balance_of_its_own_mode_alone(db: Database) -> None:
    def write(conn: Connection) -> tuple[int, int]:
        sandbox_merchant, sandbox_order = _order(conn, Mode.SANDBOX, "s")
        live_merchant, live_order = _order(conn, Mode.LIVE, "l")
        ledger.post(conn, sandbox_order, None, _SETTLED_10, 0)
        ledger.post(conn, live_order, None, _SETTLED_10 + _SETTLED_10, 0)
        return sandbox_merchant, live_merchant

    sandbox_merchant, live_merchant = db.write_sync(write)
    assert db.read_sync(lambda conn: balances.of_merchant(conn, sandbox_merchant)) == [
        balances.Balance("KWD", Mode.SANDBOX, 10, 0)
    ]
    assert db.read_sync(lambda conn: balances.of_merchant(conn, live_merchant)) == [
        balances.Balance("KWD", Mode.LIVE, 20, 0)
    ]
    assert _mode_and_balance_problems(db) == []


def test_a_posting_off_the_balance_accounts_leaves_the_balance_row_unwritten(db: Database) -> None:
    """An approved sale moves money to ``captured`` only: it must not write (on PostgreSQL: lock until its
    commit) the one balance row every sale of the merchant would otherwise queue on."""

    def write(conn: Connection) -> int:
        merchant_id, order = _order(conn)
        ledger.post(conn, order, None, _SETTLED_10, 0)
        ledger.post(conn, order, None, [(Account.EXTERNAL, -10), (Account.CAPTURED, 10)], 5)
        return merchant_id

    merchant_id = db.write_sync(write)
    written = select(balances_table.c.available, balances_table.c.updated_at_ms)
    assert db.read_sync(
        lambda conn: conn.execute(written.where(balances_table.c.merchant_id == merchant_id)).all()
    ) == [(10, 0)]
    assert _mode_and_balance_problems(db) == []


def test_an_operators_credit_is_sandbox_money_and_cannot_be_taken_by_a_live_payout(db: Database) -> None:
    def write(conn: Connection) -> bool:
        merchant_id, live_order = _order(conn, Mode.LIVE)
        assert ledger.adjust(conn, merchant_id, "KWD", 10**6, "test money", 0)
        reservation = [(Account.SETTLED, -1), (Account.RESERVED, 1)]
        return ledger.post_if_covered(conn, live_order, 0, reservation, 0)

    assert db.write_sync(write) is False
    assert _mode_and_balance_problems(db) == []


def test_the_check_names_an_entry_in_another_mode_than_its_order(db: Database) -> None:
    def write(conn: Connection) -> int:
        _, order = _order(conn, Mode.SANDBOX)
        ledger.post(conn, order, None, _SETTLED_10, 0)
        conn.execute(update(ledger_entries).where(ledger_entries.c.account == "settled").values(mode="live"))
        return int(str(order["id"]))

    order_id = db.write_sync(write)
    problems = db.read_sync(ledger.check)
    assert any("mixes sandbox and live money" in problem for problem in problems)
    assert any(f"is live money of a sandbox order ({order_id})" in problem for problem in problems)


def _mode_and_balance_problems(db: Database) -> list[str]:
    """What the check finds, but of orders against their transactions (these orders have none)."""
    return [problem for problem in db.read_sync(ledger.check) if not problem.startswith("order ")]
