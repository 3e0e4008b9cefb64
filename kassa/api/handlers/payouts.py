"""Payouts (CONTRACT §13): money from the merchant's available balance to a card, a bank account, an
e-wallet or a phone. The destination is checked here (``domain.destinations``), the payout opened with
its reservation by ``core.payouts``, and processed by the worker like any transaction."""

from __future__ import annotations

import dataclasses

import orjson

from kassa.api.context import OperationRequest, Reply
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.card_refs import usable_card
from kassa.api.handlers.common import async_reply, change_order, order_ref, serving_endpoint
from kassa.api.handlers.payments import new_card, new_order
from kassa.clock import now_ms
from kassa.core import payouts
from kassa.core.payouts import NewDestination
from kassa.domain import destinations
from kassa.domain.destinations import DestinationError, Kind
from kassa.domain.money import Currency
from kassa.domain.transactions import TxType
from kassa.storage.orders import NewOrder
from kassa.vault.keys import destination_context


async def payout(req: OperationRequest) -> Reply:
    return await _start(req, TxType.PAYOUT)


async def payout_check(req: OperationRequest) -> Reply:
    """v4's first step: the destination checked by the processor, the order registered, no money moved."""
    return await _start(req, TxType.PAYOUT_CHECK)


async def payout_pay(req: OperationRequest) -> Reply:
    """v4's second step: the payout of an order payout-check registered and approved, made once."""
    ref, now, lease = order_ref(req), now_ms(), req.services.job_lease()
    paid = await change_order(req, lambda conn: payouts.pay(conn, ref, req.serial, now, lease))
    if paid.job is not None and lease is not None:
        req.services.hand_over(paid.job, lease)
    else:
        req.services.wake_workers(callbacks=paid.queued.count > 0)
    return async_reply(paid.serial, ref.client_orderid, paid.order_id, paid.endpoint_id)


async def _start(req: OperationRequest, tx_type: TxType) -> Reply:
    cur: Currency = req.values["currency"]
    endpoint = serving_endpoint(req.endpoint, cur.code)
    if problem := endpoint.amount_limit_problem(req.values["amount"]):
        raise ApiError(Code.AMOUNT, problem)
    new = new_order(req, tx_type, endpoint.id, cur)
    try:
        kind = destinations.kind_of(req.form)
        destination = None if kind is Kind.CARD else _destination(req, kind)
    except DestinationError as problem:
        raise ApiError(Code.FIELD, str(problem)) from None
    if kind is Kind.CARD:
        new = await _to_card(req, new)
    return await _open(req, new, destination)


async def payout_v4(req: OperationRequest) -> Reply:
    """v4's one-step payout: v2's, signed as v4, its answer naming the payout (``payout-id``)."""
    reply = await payout(req)
    return {**reply, "payout-id": reply["paynet-order-id"]}


async def _to_card(req: OperationRequest, new: NewOrder) -> NewOrder:
    """The payout paid to the card sent, or to the card a reference names."""
    if "destination-card-ref-id" in req.values:
        stored = await usable_card(req, "destination-card-ref-id")
        return dataclasses.replace(new, card_id=stored.card_id)
    for field in ("expire_month", "expire_year"):
        if field not in req.values:
            raise field_error(field, "is required with credit_card_number")
    return dataclasses.replace(new, card=new_card(req))


def _destination(req: OperationRequest, kind: Kind) -> NewDestination:
    """A bank account, e-wallet or phone as stored: its fields sealed, its number masked."""
    form = req.form
    match kind:
        case Kind.BANK:
            details: destinations.Destination = destinations.bank_account(form)
        case Kind.EWALLET:
            details = destinations.ewallet(form)
        case Kind.PHONE:
            details = destinations.phone(form)
        case _:
            raise AssertionError(kind)
    number = destinations.number_of(details)
    sealed = req.services.vault.encrypt(orjson.dumps(details).decode(), destination_context(req.merchant_id))
    return NewDestination(kind.value, sealed, destinations.mask_account(number))


async def _open(req: OperationRequest, new: NewOrder, destination: NewDestination | None) -> Reply:
    opened = await req.write(lambda conn: payouts.open_payout(conn, new, destination))
    started = opened.started
    if not started.created and started.request_fingerprint != new.request_fingerprint:
        raise ApiError(Code.DUPLICATE, "client_orderid was already used with different fields")
    if started.job is not None and new.lease is not None:
        req.services.hand_over(started.job, new.lease)
    elif started.created:
        req.services.wake_workers(callbacks=opened.queued.count > 0)
    return async_reply(started.serial, req.values["client_orderid"], started.order_id, started.endpoint_id)
