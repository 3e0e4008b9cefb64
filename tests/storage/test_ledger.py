"""Ledger sums are exact however many entries they add (SQLite's SUM stops at 64 bits); sandbox and live
money are two ledgers and two balances, which the check keeps apart."""

from __future__ import annotations

from sqlalchemy import Connection, event, select, update

from kassa.domain.ledger import Account, Balances, posting
from kassa.domain.lifecycle import Stage
from kassa.domain.merchants import Mode
from kassa.domain.transactions import TxType, rule
from kassa.storage import balances, ledger, merchants
from kassa.storage.database import Database
from kassa.storage.tables import balances as balances_table
from kassa.storage.tables import endpoints, ledger_entries, orders, transactions
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


def test_the_check_reads_one_moment_while_sales_are_recorded_between_its_statements(db: Database) -> None:
    # After each statement of the check, one more approved sale is recorded whole (its order, transaction and
    # postings in one commit) by another connection. A check whose statements each read the database of their
    # own moment sees a transaction without its postings, or postings without their transaction: on a live
    # gateway, problems that are not there.
    merchant_id, _ = db.write_sync(_order)
    endpoint_id = db.read_sync(
        lambda conn: conn.scalar(select(endpoints.c.id).where(endpoints.c.merchant_id == merchant_id))
    )
    recorded: list[int] = []

    def sale(conn: Connection) -> None:
        row = {
            "merchant_id": merchant_id, "endpoint_id": endpoint_id,
            "client_orderid": f"moving-{len(recorded)}", "tx_type": "sale", "amount": 10, "currency": "KWD",
            "request_fingerprint": "f", "created_at_ms": 0, "mode": Mode.SANDBOX.value,
        }  # fmt: skip
        order_id = conn.execute(orders.insert().values(row)).inserted_primary_key[0]
        tx = {
            "order_id": order_id, "serial_number": f"moving-{len(recorded)}", "tx_type": "sale",
            "stage": Stage.APPROVED.value, "amount": 10, "currency": "KWD", "created_at_ms": 0, "updated_at_ms": 0,
        }  # fmt: skip
        tx_id = conn.execute(transactions.insert().values(tx)).inserted_primary_key[0]
        order = {"id": order_id, "merchant_id": merchant_id, "currency": "KWD", "mode": Mode.SANDBOX.value}
        for effect in (rule(TxType.SALE).on_opened, rule(TxType.SALE).on_approved):
            ledger.post(conn, order, tx_id, posting(effect, 10, Balances.of({}), multi_capture=False), 0)
        recorded.append(order_id)

    def one_more(*_: object) -> None:
        if len(recorded) < 10:
            db.write_sync(sale)

    def checked(conn: Connection) -> list[str]:
        event.listen(conn, "after_cursor_execute", one_more)
        return ledger.check(conn)

    assert db.read_sync(checked) == []
    assert len(recorded) > 3  # sales were recorded while it read
    assert db.read_sync(ledger.check) == []  # and each was whole
