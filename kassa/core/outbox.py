"""The callbacks a transaction's final status queues (CONTRACT §10), written in the same database
transaction as the status change, so a callback is never lost nor sent for a change that rolled back."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from sqlalchemy import Connection

from kassa.domain.callbacks import callback_fields, destination
from kassa.domain.order_view import CardView, OrderHead, TransactionView
from kassa.domain.transactions import TxType, reported, rule
from kassa.storage import callbacks as callback_store
from kassa.storage.callbacks import CallbackLease, Due, Sender
from kassa.storage.prepared import Record


@dataclass(frozen=True, slots=True)
class Queued:
    """The callbacks a status change queued: how many, and those written leased, to deliver now."""

    count: int
    handed: list[Due]


NOTHING_QUEUED = Queued(0, [])


def queue_callbacks(
    conn: Connection, order: Record, tx: Record, now_ms: int, lease: CallbackLease | None, sender: Sender | None = None
) -> Queued:
    """Outbox rows for ``tx`` (as it now stands in the database), which reached a final status: to the
    ``server_callback_url`` for the order's own transaction and for one the acquirer reported (a
    chargeback), to the ``notify_url`` for every one. With a
    ``lease``, those that wait for no earlier callback are written leased, for its owner to deliver at once.
    Without a ``sender`` at hand, it is read only when there is a callback to send."""
    targets = [("notify", order["notify_url"])]
    # A two-step payout's pay reports to the server_callback_url its check named, as the one payout it is.
    tx_type = TxType(tx["tx_type"])
    if reported(tx_type) == reported(TxType(order["tx_type"])) or rule(tx_type).acquirer_reported:
        targets.insert(0, ("server_callback", order["server_callback_url"]))
    targets = [(kind, url) for kind, url in targets if url]
    if not targets:
        return NOTHING_QUEUED
    sender = sender or callback_store.sender_of(conn, order)
    card = CardView.of(sender.card) if sender.card else None
    head, reported_tx = OrderHead.of(order), TransactionView.of(tx)
    fields = callback_fields(order=head, tx=reported_tx, card=card, descriptor=sender.descriptor or "")
    stored = orjson.dumps(fields).decode()
    handed = []
    written = callback_store.add_all(conn, order, tx["id"], targets, stored, now_ms, lease)
    for (_, url), (callback_id, leased) in zip(targets, written, strict=True):
        if leased:
            live, key = sender.mode == "live", sender.control_key_sealed
            due = Due(callback_id, order["id"], url, fields, 0, order["merchant_id"], live, key, destination(url))
            handed.append(due)
    return Queued(len(targets), handed)
