"""Chargebacks recorded on orders and their disputes closed, on both backends: the transaction, its ledger
posting and callbacks, the limit of what is left under concurrency, and one credit for a dispute won."""

from __future__ import annotations

import datetime
from concurrent.futures import ThreadPoolExecutor

import orjson
import pytest
from sqlalchemy import Connection, select

from kassa.core import chargebacks, outcomes, settlement
from kassa.core.opening import open_order
from kassa.domain.chargebacks import Reported
from kassa.domain.lifecycle import Stage
from kassa.domain.merchants import Mode
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import balances as balance_store
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage.database import Database
from kassa.storage.tables import audit_log, callbacks, transactions
from tests.support.databases import shop_endpoint

TODAY = "2026-11-20"


def _settled_sale(db: Database, amount: int = 1042) -> tuple[int, int]:
    """A sale approved and settled, with both callback URLs; the merchant's and the order's ids."""
    merchant_id, endpoint_id = db.write_sync(shop_endpoint)
    card = order_store.NewCard(b"ciphertext", "f" * 64, "411111", "1111", "VISA", 12, 2030, "Jane Doe")
    new = order_store.NewOrder(
        merchant_id, endpoint_id, "o-1", TxType.SALE, amount, "USD", "a@example.com", "", "{}", None,
        "http://shop.example/server", "http://shop.example/notify", None, "fingerprint", "s-1", 1, card=card,
    )  # fmt: skip
    started = db.write_sync(lambda conn: open_order(conn, new))
    approved = Outcome(Stage.APPROVED, approval_code="123456", processor_rrn="000000000042")
    db.write_sync(lambda conn: outcomes.record(conn, started.transaction_id, approved, 2))
    assert db.write_sync(lambda conn: settlement.settle(conn, 3)) == 1
    return merchant_id, started.order_id


def _report(order_id: int | None, amount: str, *, reason: str = "10.4", rrn: str | None = None) -> Reported:
    return Reported(0, order_id, rrn, amount, None, reason, TODAY)


def _available(db: Database, merchant_id: int) -> int:
    rows = db.read_sync(lambda conn: balance_store.of_merchant(conn, merchant_id))
    return next(b.available for b in rows if b.mode is Mode.SANDBOX)


def test_chargeback_on_a_settled_sale_is_an_approved_transaction_that_debits_the_balance_and_calls_back(
    db: Database,
) -> None:
    merchant_id, order_id = _settled_sale(db)
    assert _available(db, merchant_id) == 1042
    recorded = db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "4.00"), "cli:clerk", 10))
    assert (recorded.order_id, recorded.amount, recorded.new) == (order_id, 400, True)
    assert _available(db, merchant_id) == 642
    view = db.read_sync(lambda conn: order_store.view_by_id(conn, order_id))
    assert view is not None
    latest = view.latest
    assert (latest.tx_type, latest.stage, latest.amount) == ("chargeback", "approved", 400)
    assert latest.processor_rrn == "000000000042"  # the sale's: the acquirer's reference of the money
    queued = db.read_sync(
        lambda conn: conn.execute(
            select(callbacks.c.kind, callbacks.c.fields).where(callbacks.c.transaction_id == latest.id)
        ).all()
    )
    kinds = {kind: orjson.loads(fields) for kind, fields in queued}
    assert set(kinds) == {"server_callback", "notify"}
    assert {(f["type"], f["status"], f["amount"]) for f in kinds.values()} == {("chargeback", "approved", "4.00")}
    assert db.read_sync(ledger_store.check) == []


def test_chargeback_may_take_the_balance_below_zero(db: Database) -> None:
    merchant_id, order_id = _settled_sale(db)
    db.write_sync(lambda conn: ledger_store.adjust(conn, merchant_id, "USD", -1000, "paid out", 5))
    db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "10.42"), "cli:clerk", 10))
    assert _available(db, merchant_id) == 42 - 1042
    assert db.read_sync(ledger_store.check) == []


def test_chargeback_above_what_is_left_is_refused_naming_what_is_left(db: Database) -> None:
    _, order_id = _settled_sale(db)
    db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "10.00", reason="13.1"), "cli:clerk", 10))
    with pytest.raises(chargebacks.Refused) as refused:
        db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "0.43"), "cli:clerk", 11))
    assert refused.value.problems == [f"order {order_id}: amount exceeds what is left to charge back"
                                      " (captured, not returned or charged back): 0.42 USD left"]  # fmt: skip


def test_the_same_chargeback_reported_again_is_the_same_dispute(db: Database) -> None:
    merchant_id, order_id = _settled_sale(db)
    first = db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "1.00"), "cli:clerk", 10))
    again = db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "1.00"), "cli:clerk", 11))
    assert (again.dispute_id, again.new) == (first.dispute_id, False)
    assert _available(db, merchant_id) == 942


def test_chargeback_by_the_acquirers_reference_finds_its_order(db: Database) -> None:
    _, order_id = _settled_sale(db)
    found = db.write_sync(lambda conn: chargebacks.record(conn, _report(None, "1.00", rrn="000000000042"), "x", 10))
    assert found.order_id == order_id
    with pytest.raises(chargebacks.Refused, match="--rrn 999: no sale or capture has it"):
        db.write_sync(lambda conn: chargebacks.record(conn, _report(None, "1.00", rrn="999"), "x", 10))


def test_concurrent_chargebacks_never_take_more_than_was_captured(db: Database) -> None:
    merchant_id, order_id = _settled_sale(db)

    def attempt(n: int) -> bool:
        report = _report(order_id, "3.00", reason=("10.1", "10.2", "10.3", "10.4", "10.5")[n])
        try:
            db.write_sync(lambda conn: chargebacks.record(conn, report, "cli:clerk", 10 + n))
        except chargebacks.Refused:
            return False
        return True

    with ThreadPoolExecutor(5) as pool:
        done = list(pool.map(attempt, range(5)))
    assert done.count(True) == 3
    assert _available(db, merchant_id) == 1042 - 900
    assert db.read_sync(ledger_store.check) == []


def test_a_dispute_won_credits_back_once_and_a_lost_one_nothing(db: Database) -> None:
    merchant_id, order_id = _settled_sale(db)
    won = db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "4.00"), "cli:clerk", 10))
    lost = db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "2.00"), "cli:clerk", 10))
    closed = db.write_sync(lambda conn: chargebacks.close(conn, won.dispute_id, True, "cli:clerk", 20))
    assert (closed["state"], closed["closed_by"]) == ("won", "cli:clerk")
    assert _available(db, merchant_id) == 1042 - 200
    with pytest.raises(chargebacks.DisputeError, match="already closed \\(won\\)"):
        db.write_sync(lambda conn: chargebacks.close(conn, won.dispute_id, True, "cli:clerk", 21))
    db.write_sync(lambda conn: chargebacks.close(conn, lost.dispute_id, False, "cli:clerk", 22))
    assert _available(db, merchant_id) == 1042 - 200
    assert db.read_sync(ledger_store.check) == []
    actions = db.read_sync(
        lambda conn: list(conn.execute(select(audit_log.c.action).order_by(audit_log.c.id)).scalars())
    )
    assert actions == ["chargeback.create", "chargeback.create", "chargeback.close", "chargeback.close"]


def test_a_return_after_a_chargeback_is_held_to_what_is_left(db: Database) -> None:
    from kassa.domain.orders import OrderRuleError, plan_return

    _, order_id = _settled_sale(db)
    db.write_sync(lambda conn: chargebacks.record(conn, _report(order_id, "10.00"), "cli:clerk", 10))

    def state(conn: Connection) -> object:
        return order_store.order_state(conn, order_store.lock_order(conn, order_id))

    assert plan_return(db.write_sync(state), None) == (TxType.REVERSAL, 42)  # type: ignore[arg-type]
    with pytest.raises(OrderRuleError):
        plan_return(db.write_sync(state), 43)  # type: ignore[arg-type]


def test_import_of_a_file_with_a_bad_line_records_nothing(db: Database) -> None:
    merchant_id, order_id = _settled_sale(db)
    lines = [
        Reported(2, order_id, None, "1.00", "USD", "10.4", TODAY),
        Reported(3, order_id, None, "1.00", "EUR", "10.4", TODAY),
        Reported(4, order_id + 99, None, "1.00", "USD", "10.4", TODAY),
    ]
    with pytest.raises(chargebacks.Refused) as refused:
        db.write_sync(lambda conn: chargebacks.import_reports(conn, lines, "cli:clerk", 10))
    assert refused.value.problems == [
        "line 3: currency EUR is not the order's currency USD",
        f"line 4: orderid {order_id + 99}: no such order",
    ]
    count = db.read_sync(
        lambda conn: len(conn.execute(select(transactions.c.id).where(transactions.c.tx_type == "chargeback")).all())
    )
    assert (count, _available(db, merchant_id)) == (0, 1042)


def test_today_is_the_clocks_day_in_utc() -> None:
    assert chargebacks.today(0) == datetime.date(1970, 1, 1)
