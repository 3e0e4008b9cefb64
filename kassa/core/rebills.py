"""A sale on a stored card with no cardholder present (CONTRACT §13): make-rebill's, and each charge of a
recurring payment. Both open it as ``sale_on`` describes, through ``opening.open_order``."""

from __future__ import annotations

import dataclasses
import datetime
from dataclasses import dataclass

from kassa.domain import cards
from kassa.domain.transactions import TxType
from kassa.storage.orders import NewOrder
from kassa.storage.prepared import Record


@dataclass(frozen=True, slots=True)
class StoredCard:
    card_id: int
    ref_id: int | None  # the card reference charged, when the charge names one
    expiry: cards.Expiry

    @classmethod
    def of(cls, card: Record, ref_id: int | None) -> StoredCard:
        """From a card row (``id``, ``exp_month``, ``exp_year``)."""
        return cls(card["id"], ref_id, cards.Expiry(card["exp_month"], card["exp_year"]))

    def expired_by(self, date: datetime.date) -> bool:
        return self.expiry.passed(date)


def sale_on(new: NewOrder, card: StoredCard) -> NewOrder:
    """``new`` as a sale of ``card``: the stored card is charged, no card is stored again."""
    return dataclasses.replace(new, tx_type=TxType.SALE, card=None, card_id=card.card_id, card_ref_id=card.ref_id)
