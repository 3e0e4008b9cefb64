"""Operations on an existing order: capture, return and void (CONTRACT §7), each one state change of
``core.followups`` under the order's lock."""

from __future__ import annotations

from sqlalchemy import Connection

from kassa.api.answers import Accepted
from kassa.api.context import OperationRequest
from kassa.api.errors import field_error
from kassa.api.handlers.common import async_reply, change_order, order_ref
from kassa.clock import now_ms
from kassa.core import followups
from kassa.core.followups import Plan
from kassa.domain.money import Currency
from kassa.domain.orders import plan_capture, plan_return, plan_void
from kassa.domain.transactions import TxType


async def capture(req: OperationRequest) -> Accepted:
    return await _follow_up(req, lambda state, amount: (TxType.CAPTURE, plan_capture(state, amount)))


async def refund(req: OperationRequest) -> Accepted:
    return await _follow_up(req, plan_return)


async def void(req: OperationRequest) -> Accepted:
    return await _follow_up(req, lambda state, _amount: (TxType.VOID, plan_void(state)))


async def _follow_up(req: OperationRequest, plan: Plan) -> Accepted:
    amount: int | None = req.values.get("amount")
    currency: Currency | None = req.values.get("currency")
    if amount is not None and currency is None:
        raise field_error("currency", "is required with amount")
    code = currency.code if currency else None
    ref, now, signature = order_ref(req), now_ms(), req.order_signature

    def change(conn: Connection) -> followups.Added:
        return followups.follow_up(conn, ref, plan, amount, code, req.serial, now, signature)

    added = await change_order(req, change)
    req.services.wake_workers()
    return async_reply(req.serial, ref.client_orderid, added.order_id, added.endpoint_id)
