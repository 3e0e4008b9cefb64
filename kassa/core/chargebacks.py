"""Chargebacks operators record (CONTRACT §16) and the end of their disputes.

A chargeback is a ``chargeback`` transaction on its order, added under the order's row lock as a return
is (``followups``), so that two at once, or a chargeback and a return, never take more than was captured
(``orders.plan_chargeback``); nothing is asked of the acquirer, which reported it: the transaction is
recorded approved through the one path of every outcome (``outcomes.record``: the ledger's posting, the
callbacks of CONTRACT §10). Each is audited as done by whoever recorded it, in the same database
transaction. A file's lines are all recorded in one database transaction, or none.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa import randomness
from kassa.core import outcomes
from kassa.domain import chargebacks, money
from kassa.domain.chargebacks import DisputeState, LineError, Reported
from kassa.domain.lifecycle import Stage
from kassa.domain.operators import Action
from kassa.domain.orders import OrderRuleError, plan_chargeback
from kassa.domain.transactions import TxType
from kassa.processors.interface import Outcome
from kassa.storage import audit_log
from kassa.storage import chargebacks as store
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage.prepared import Record


class Refused(Exception):
    """Reports refused, each problem naming its line (or, typed, its option); nothing was recorded."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class DisputeError(LookupError):
    """No such dispute, or one already closed."""


@dataclass(frozen=True, slots=True)
class Recorded:
    dispute_id: int
    order_id: int
    amount: int
    currency: str
    new: bool  # False: the same report was recorded before (this dispute)


# How a typed report's fields are named in messages (an import file's are its columns: ``COLUMNS``).
TYPED = {
    "order_id": "--order",
    "processor_rrn": "--rrn",
    "amount": "--amount",
    "currency": "--currency",
    "reason_code": "--reason",
    "disputed_on": "--date",
}


def record(conn: Connection, report: Reported, actor: str, now_ms: int) -> Recorded:
    """One chargeback typed by an operator; ``Refused`` naming the option at fault."""
    return _record_all(conn, [report], actor, now_ms, Action.CHARGEBACK_CREATE, TYPED)[0]


def import_reports(conn: Connection, reports: list[Reported], actor: str, now_ms: int) -> list[Recorded]:
    """Every line of a file, or ``Refused`` with a problem per line that cannot be recorded. A line recorded
    before (by an earlier import of the file) is not recorded again."""
    return _record_all(conn, reports, actor, now_ms, Action.CHARGEBACK_IMPORT, chargebacks.COLUMNS)


def _record_all(
    conn: Connection,
    reports: list[Reported],
    actor: str,
    now_ms: int,
    action: Action,
    names: dict[str, str],
) -> list[Recorded]:
    problems: list[tuple[int, str]] = []  # by line
    found: dict[int, int] = {}  # a report's line → its order
    for report in reports:
        try:
            found[report.line] = _order_of(conn, report, names)
        except LineError as problem:
            problems.append((report.line, _problem(report, problem)))
    # Orders locked in one order whatever the file's: two imports at once wait rather than deadlock.
    locked = {order_id: order_store.lock_order(conn, order_id) for order_id in sorted(set(found.values()))}
    done: list[Recorded] = []
    seen: dict[str, int] = {}  # a dispute's key → the line that reported it
    for report in (r for r in reports if r.line in found):
        order = locked[found[report.line]]
        try:
            amount = chargebacks.minor_amount(report, order["currency"], names["amount"])
            key = chargebacks.dedup_key(order["id"], report, amount)
            if key in seen:
                raise LineError(f"repeats line {seen[key]}")
            seen[key] = report.line
            done.append(_recorded(conn, order, report, amount, key, actor, action, now_ms))
        except (LineError, OrderRuleError) as problem:
            problems.append((report.line, _problem(report, problem, order["currency"])))
    if problems:
        raise Refused(
            [text for _, text in sorted(problems)]
        )  # raised inside the unit of work: whatever was written rolls back
    return done


def _order_of(conn: Connection, report: Reported, names: dict[str, str]) -> int:
    if report.order_id is not None:
        if not store.order_exists(conn, report.order_id):
            raise LineError(f"{names['order_id']} {report.order_id}: no such order")
        return report.order_id
    assert report.processor_rrn is not None, "a report names its order or its reference"
    matching = store.orders_of_rrn(conn, report.processor_rrn)
    if not matching:
        raise LineError(f"{names['processor_rrn']} {report.processor_rrn}: no sale or capture has it")
    if len(matching) > 1:
        listed = ", ".join(map(str, matching))
        raise LineError(f"{names['processor_rrn']} {report.processor_rrn} is ambiguous (orders {listed})")
    return matching[0]


def _problem(report: Reported, problem: Exception, currency: str | None = None) -> str:
    text = problem.message if isinstance(problem, OrderRuleError) else str(problem)
    if isinstance(problem, OrderRuleError) and problem.left is not None and currency is not None:
        text += f": {money.format_amount(problem.left, money.currency(currency))} {currency} left"
    if isinstance(problem, OrderRuleError):
        text = f"{report.names}: {text}"
    return f"line {report.line}: {text}" if report.line else text


def _recorded(
    conn: Connection,
    order: Record,
    report: Reported,
    amount: int,
    key: str,
    actor: str,
    action: Action,
    now_ms: int,
) -> Recorded:
    before = store.by_key(conn, key)
    if before is not None:
        return Recorded(before["id"], order["id"], before["amount"], order["currency"], False)
    planned = plan_chargeback(order_store.order_state(conn, order), amount)
    serial = randomness.uuid4()
    tx_id = order_store.insert_transaction(
        conn, order["id"], TxType.CHARGEBACK, planned, order["currency"], serial, now_ms
    )
    rrn = report.processor_rrn or store.money_in_rrn(conn, order["id"])
    outcomes.record(conn, tx_id, Outcome(Stage.APPROVED, processor_rrn=rrn), now_ms)
    new = store.NewDispute(order, tx_id, planned, report.reason_code, report.disputed_on, key, actor)
    dispute_id = store.insert_dispute(conn, new, now_ms)
    after = {
        "dispute": dispute_id,
        "transaction": serial,
        "amount": money.format_amount(planned, money.currency(order["currency"])),
        "currency": order["currency"],
        "reason_code": report.reason_code,
        "date": report.disputed_on,
    }
    audit_log.append(conn, audit_log.Entry(actor, action.code, f"order {order['id']}", after=after), now_ms)
    return Recorded(dispute_id, order["id"], planned, order["currency"], True)


def close(conn: Connection, dispute_id: int, won: bool, actor: str, now_ms: int, address: str = "") -> Record:
    """Ends an open dispute: won credits its amount back to the merchant's balance (once: the dispute is
    locked, and only an open one closes), lost leaves the chargeback standing. The dispute as it now is."""
    found = store.lock_dispute(conn, dispute_id)
    if found is None:
        raise DisputeError(f"no dispute {dispute_id}")
    if found["state"] != DisputeState.OPEN.value:
        raise DisputeError(f"dispute {dispute_id} is already closed ({found['state']})")
    state = DisputeState.WON if won else DisputeState.LOST
    adjustment_id = None
    if won:
        order = store.order(conn, found["order_id"])
        reason = f"chargeback dispute {dispute_id} won"
        adjustment_id = ledger_store.credit_back(conn, order, found["amount"], reason, now_ms)
    closed = store.close(conn, dispute_id, state, actor, adjustment_id, now_ms)
    assert closed, "the dispute is locked and open"
    amount = money.format_amount(found["amount"], money.currency(found["currency"]))
    after = {"state": state.value, "credited": amount if won else None, "currency": found["currency"]}
    target = f"dispute {dispute_id}"
    entry = audit_log.Entry(
        actor, Action.CHARGEBACK_CLOSE.code, target, before={"state": "open"}, after=after, address=address
    )
    audit_log.append(conn, entry, now_ms)
    shown = store.dispute(conn, dispute_id)
    assert shown is not None
    return shown


def today(now_ms: int) -> datetime.date:
    """The day chargebacks are reported on, by the gateway's clock (UTC)."""
    return datetime.datetime.fromtimestamp(now_ms / 1000, datetime.UTC).date()
