"""The one read model of an order: the order, its transactions, its card as BIN and last four, where a payout
goes, its amounts in minor units; its status is its latest transaction's (``lifecycle``). Status answers,
callbacks, the final redirect, the console and the CLI all render it; none reads the rows on its own.

Built from the rows a storage read gives (mappings of column names), so that it stays free of SQL. Named
tuples rather than frozen dataclasses: a status call builds five of them, and a frozen dataclass's
``__init__`` sets each field through ``object.__setattr__`` (about 4 µs a call more)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from kassa.domain.cards import mask_stored
from kassa.domain.lifecycle import Stage, Status, status_of
from kassa.domain.orders import OrderState, TxRecord
from kassa.domain.transactions import TxType, order_stage, reported

Row = Mapping[str, Any]
# A dictionary lookup is a tenth of calling the enum (``TxType(text)``), and a status call makes three.
_TX_TYPES: dict[str, TxType] = {member.value: member for member in TxType}
_STAGES: dict[str, Stage] = {member.value: member for member in Stage}


class CardView(NamedTuple):
    """What may be shown of a card: BIN and last four at most."""

    bin: str
    last_four: str
    brand: str | None
    exp_month: int
    exp_year: int
    holder_name: str

    @classmethod
    def of(cls, row: Row) -> CardView:
        return cls(row["bin"], row["last_four"], row["brand"], row["exp_month"], row["exp_year"], row["holder_name"])

    @property
    def masked(self) -> str:
        return mask_stored(self.bin, self.last_four, self.brand)


class DestinationView(NamedTuple):
    """Where a payout goes when it is no card: its kind, its number masked, and the masked name a phone
    payout's check found."""

    kind: str
    masked: str
    recipient_name: str | None

    @classmethod
    def of(cls, row: Row) -> DestinationView:
        return cls(row["kind"], row["masked"], row["recipient_name"])


class TransactionView(NamedTuple):
    id: int
    serial_number: str
    tx_type: TxType
    stage: Stage
    amount: int  # minor units of ``currency``
    currency: str
    approval_code: str | None
    processor_rrn: str | None
    processor_tx_id: str | None
    error_code: str | None
    error_message: str | None
    created_at_ms: int
    updated_at_ms: int
    settled_at_ms: int | None

    @classmethod
    def of(cls, row: Row) -> TransactionView:
        return cls(
            row["id"],
            row["serial_number"],
            _TX_TYPES[row["tx_type"]],
            _STAGES[row["stage"]],
            row["amount"],
            row["currency"],
            row["approval_code"],
            row["processor_rrn"],
            row["processor_tx_id"],
            row["error_code"],
            row["error_message"],
            row["created_at_ms"],
            row["updated_at_ms"],
            row["settled_at_ms"],
        )

    @property
    def status(self) -> Status:
        return status_of(self.stage)

    @property
    def order_stage(self) -> str:
        return order_stage(self.tx_type, self.stage)

    @property
    def reported_type(self) -> str:
        """The type merchants see (a deposit transfer is a ``transfer``)."""
        return reported(self.tx_type)


class OrderHead(NamedTuple):
    """The order's own fields, without its transactions: what a callback about one of them reports."""

    id: int
    endpoint_id: int
    client_orderid: str
    tx_type: TxType
    amount: int  # the initial amount, minor units of ``currency``
    currency: str
    email: str
    card_ref_id: int | None
    recurring_payment_id: int | None
    merchant_data: str | None

    @classmethod
    def of(cls, row: Row) -> OrderHead:
        return cls(
            row["id"],
            row["endpoint_id"],
            row["client_orderid"],
            _TX_TYPES[row["tx_type"]],
            row["amount"],
            row["currency"],
            row["email"],
            row["card_ref_id"],
            row["recurring_payment_id"],
            row["merchant_data"],
        )


class OrderView(NamedTuple):
    head: OrderHead
    transactions: Sequence[TransactionView]  # oldest first; never empty
    card: CardView | None  # none until a hosted form collected it, or for a payout to no card
    destination: DestinationView | None  # a payout's or transfer's when it pays to no card of the order

    @classmethod
    def of(cls, order: Row, transactions: Sequence[Row], card: Row | None, destination: Row | None) -> OrderView:
        return cls(
            OrderHead.of(order),
            [TransactionView.of(tx) for tx in transactions],
            None if card is None else CardView.of(card),
            None if destination is None else DestinationView.of(destination),
        )

    @property
    def latest(self) -> TransactionView:
        return self.transactions[-1]

    @property
    def status(self) -> Status:
        """The order's status: its latest transaction's."""
        return self.latest.status

    @property
    def pays_to(self) -> tuple[str, str]:
        return pays_to(self.destination, self.card.masked if self.card else None)

    def transaction(self, serial_number: str) -> TransactionView | None:
        return next((tx for tx in self.transactions if tx.serial_number == serial_number), None)

    def state(self, *, multi_capture: bool = False) -> OrderState:
        """The order as the order rules see it (multi-capture does not matter for reading amounts)."""
        records = tuple(
            TxRecord(tx.tx_type, tx.stage, tx.amount, tx.settled_at_ms is not None) for tx in self.transactions
        )
        return OrderState(self.head.tx_type, self.head.amount, multi_capture, records)


def pays_to(destination: DestinationView | None, masked_card: str | None) -> tuple[str, str]:
    """Where an order's money goes, as operators see it: the destination's kind and masked number, else its
    card's, else ``none`` (a hosted form has not collected it yet)."""
    if destination is not None:
        return destination.kind, destination.masked
    if masked_card is not None:
        return "card", masked_card
    return "none", "not given yet"
