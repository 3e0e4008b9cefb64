"""What a handler receives (the checked request) and what it returns (the reply fields)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kassa.core.followups import OrderSignature
from kassa.domain.merchants import Endpoint

if TYPE_CHECKING:
    from kassa.api.operations import Operation
    from kassa.runtime import Services


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

    @property
    def merchant_id(self) -> int:
        return self.endpoint.merchant.id


Reply = dict[str, str]
Handler = Callable[[OperationRequest], Awaitable[Reply]]
