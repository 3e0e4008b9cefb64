"""A transaction's processing outcome: the stage it moves to (as the transition table allows), the ledger
posting of an approval, the CVV forgotten whatever the outcome, and the callbacks of a final status; for
a worker, all of it fenced by its job's lease, with a reconciliation job for an ``unknown``."""

from __future__ import annotations

from sqlalchemy import Connection

from kassa.core import rebills
from kassa.core.outbox import NOTHING_QUEUED, Queued, queue_callbacks
from kassa.domain import ledger
from kassa.domain.lifecycle import Stage, advance, is_final
from kassa.domain.transactions import Effect, TxType, rule
from kassa.processors.interface import Outcome
from kassa.storage import jobs as job_queue
from kassa.storage import ledger as ledger_store
from kassa.storage import orders as order_store
from kassa.storage import payouts as payout_store
from kassa.storage.callbacks import CallbackLease, Sender
from kassa.storage.jobs import Job, JobKind
from kassa.storage.prepared import Record


def record(
    conn: Connection, transaction_id: int, outcome: Outcome, now_ms: int, callback_lease: CallbackLease | None = None
) -> Queued:
    """Records ``outcome``; returns the callbacks it queued (with a ``callback_lease``, those that can go
    at once are written leased to its owner)."""
    # Read as the lock is granted: whatever changed the transaction before held the lock and has committed.
    context = order_store.locked_outcome_context(conn, transaction_id)
    return _recorded(conn, context, transaction_id, outcome, now_ms, callback_lease)


def _recorded(
    conn: Connection,
    context: tuple[Record, Record, Record | None, Record],
    transaction_id: int,
    outcome: Outcome,
    now_ms: int,
    callback_lease: CallbackLease | None,
) -> Queued:
    order, tx, card, signer = context
    stage = advance(Stage(tx["stage"]), outcome.stage)
    changes = {
        "stage": stage.value,
        "error_code": outcome.error_code,
        "error_message": outcome.error_message,
        "approval_code": outcome.approval_code or tx["approval_code"],
        "processor_rrn": outcome.processor_rrn or tx["processor_rrn"],
        "processor_tx_id": outcome.processor_tx_id or tx["processor_tx_id"],
    }
    order_store.write_outcome(conn, transaction_id, changes, now_ms)
    if outcome.recipient_name:
        payout_store.set_recipient_name(conn, order["id"], outcome.recipient_name)
    if is_final(stage):
        tx_rule = rule(TxType(tx["tx_type"]))
        effect = tx_rule.on_approved if stage is Stage.APPROVED else tx_rule.on_failed
        post(conn, order, transaction_id, effect, tx["amount"], now_ms)
    if not is_final(stage):
        return NOTHING_QUEUED
    final_tx = {**tx, **changes, "updated_at_ms": now_ms}
    return queue_callbacks(conn, order, final_tx, now_ms, callback_lease, Sender.of(card, signer))


def record_for_job(
    conn: Connection,
    job: Job,
    owner: str,
    outcome: Outcome,
    now_ms: int,
    *,
    reconcile_after_ms: int,
    callback_lease: CallbackLease | None = None,
) -> tuple[bool, Queued]:
    """Records a worker's outcome while its lease on ``job`` holds (the job is deleted in the same
    transaction: one job's outcome is recorded once); an ``unknown`` is asked again after
    ``reconcile_after_ms``; a rebill's decline with a lower amount left is tried again at that amount
    instead (``rebills.next_try``). Returns whether it was recorded, and the callbacks it queued. What the
    connector left unrecorded of its answer is written first, whether the lease holds or not: the answer
    came, whichever worker records the outcome."""
    if outcome.unrecorded is not None:
        outcome.unrecorded(conn)
    context = order_store.fenced_outcome_context(conn, job, owner)
    if context is None:
        return False, NOTHING_QUEUED
    if rebills.next_try(conn, context[0], context[1], outcome, now_ms):  # a lower amount, tried next
        return True, NOTHING_QUEUED
    still_unknown = outcome.stage is Stage.UNKNOWN and Stage(context[1]["stage"]) is Stage.UNKNOWN
    # An acquirer still without an answer (a reversal unanswered, CONTRACT §15): asked again later, unchanged.
    queued = (
        NOTHING_QUEUED
        if still_unknown
        else _recorded(conn, context, job.transaction_id, outcome, now_ms, callback_lease)
    )
    if outcome.stage is Stage.UNKNOWN:
        reconcile_at = now_ms + reconcile_after_ms
        job_queue.add(conn, JobKind.RECONCILE, job.transaction_id, run_at_ms=reconcile_at, now_ms=now_ms)
    return True, queued


def post(conn: Connection, order: Record, transaction_id: int, effect: Effect, amount: int, now_ms: int) -> None:
    """Posts what ``effect`` does to the order's accounts (``ledger.posting``)."""
    if ledger.needs_balances(effect):
        balances = ledger_store.order_balances(conn, order["id"])
        multi_capture = order_store.multi_capture_of(conn, order)
    else:  # it only brings money in: no need to read the order's accounts
        balances, multi_capture = ledger.Balances(), False
    posting = ledger.posting(effect, amount, balances, multi_capture=multi_capture)
    ledger_store.post(conn, order, transaction_id, posting, now_ms)


def move_stage(conn: Connection, transaction_id: int, target: Stage, now_ms: int) -> None:
    """A step short of an outcome (3-D Secure), checked by the transition table."""
    stage = advance(order_store.locked_stage(conn, transaction_id), target)
    order_store.set_stage(conn, transaction_id, stage, now_ms)
