"""Operations on an existing order: capture, return and void (CONTRACT §7).

Each runs as one unit of work that locks the order row, asks the order rules whether the operation is
allowed given every transaction of the order (those still processing count as if approved), and adds
the new transaction with its job. Concurrent requests on one order therefore queue on the row lock,
on one node or many, and can never move more money than the rules allow.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Connection

from kassa.api.context import OperationRequest, Reply
from kassa.api.errors import field_error
from kassa.api.handlers.common import async_reply, locked_order, refusal
from kassa.clock import now_ms
from kassa.domain.lifecycle import Stage, TxType
from kassa.domain.money import Currency
from kassa.domain.orders import OrderRuleError, OrderState, plan_capture, plan_return, plan_void
from kassa.storage import orders as order_store

Plan = Callable[[OrderState, int | None], tuple[TxType, int]]


@dataclass(frozen=True, slots=True)
class Added:
    order_id: int
    endpoint_id: int


async def capture(req: OperationRequest) -> Reply:
    return await _follow_up(req, lambda state, amount: (TxType.CAPTURE, plan_capture(state, amount)))


async def refund(req: OperationRequest) -> Reply:
    return await _follow_up(req, plan_return)


async def void(req: OperationRequest) -> Reply:
    return await _follow_up(req, lambda state, _amount: (TxType.VOID, plan_void(state)))


async def _follow_up(req: OperationRequest, plan: Plan) -> Reply:
    values = req.values
    order_id: int = values["orderid"]
    amount: int | None = values.get("amount")
    if amount is not None and "currency" not in values:
        raise field_error("currency", "is required with amount")
    endpoint_ids = req.endpoint.member_ids()
    now = now_ms()

    def unit(conn: Connection) -> Added:
        order = locked_order(conn, endpoint_ids, order_id, values["client_orderid"])
        currency: Currency | None = values.get("currency")
        if currency is not None and currency.code != order["currency"]:
            raise field_error("currency", f"must be the order's currency {order['currency']}")
        try:
            tx_type, planned = plan(order_store.order_state(conn, order), amount)
        except OrderRuleError as refused:
            raise refusal(refused) from None
        order_store.add_transaction(conn, order, tx_type, planned, req.serial, now, stage=Stage.PROCESSING)
        return Added(order["id"], order["endpoint_id"])

    added = await req.services.db.write(unit)
    req.services.wake_workers()
    return async_reply(req.serial, values["client_orderid"], added.order_id, added.endpoint_id)
