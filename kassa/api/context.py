"""What a handler receives (the checked request) and what it returns (an answer of ``answers``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import Connection

from kassa.api import signatures
from kassa.api.answers import Reply
from kassa.api.signatures import NonceSpend
from kassa.core.followups import OrderSignature
from kassa.domain.merchants import Endpoint

if TYPE_CHECKING:
    from kassa.api.operations import Operation
    from kassa.runtime import Services

T = TypeVar("T")


@dataclass(slots=True)
class PendingNonce:
    """An OAuth request's nonce, spent exactly once: in the transaction of the handler's first write, else
    alone once the request is answered (``settle``), so that a replay is refused whatever it reaches."""

    nonce: NonceSpend
    spent: bool = False

    async def settle(self, services: Services) -> None:
        if not self.spent:
            self.spent = True
            await signatures.spend(services, self.nonce)


@dataclass(frozen=True, slots=True)
class OperationRequest:
    op: Operation
    serial: str
    endpoint: Endpoint  # as addressed: an endpoint or a group
    values: dict[str, Any]  # checked field values
    form: dict[str, str]  # canonical field names, trimmed text
    services: Services
    base_url: str  # the gateway's public address with the prefix, for links the customer follows
    # A control still to be checked against the order's amount and currency (``signatures.verify``):
    # the handler must check it before it changes anything.
    order_signature: OrderSignature | None = None
    nonce: PendingNonce | None = None  # an OAuth row's, until spent

    @property
    def merchant_id(self) -> int:
        return self.endpoint.merchant.id

    async def write(self, change: Callable[[Connection], T]) -> T:
        """Every write of a handler: an OAuth request's first one also spends its nonce, first, in the same
        transaction, so that a replay changes nothing and a crash keeps neither. A ``change`` that raises
        rolls the nonce back with it: the pipeline then spends it alone."""
        pending = self.nonce
        if pending is None or pending.spent:
            return await self.services.db.write(change)
        done = await self.services.db.write(partial(signatures.spent_then, pending.nonce, change))
        pending.spent = True
        return await signatures.accepted(self.services, pending.nonce, done)


Handler = Callable[[OperationRequest], Awaitable[Reply]]
