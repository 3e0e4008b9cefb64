"""create-recurring-payment (CONTRACT §13): a subscription that charges a stored card, or the card sent with
it, on a schedule (``domain.recurring``); the scheduler makes the charges (``core.recurring``), and
process-recurring-payments (§17) one more whenever the merchant asks."""

from __future__ import annotations

import dataclasses
from typing import Any

from kassa.api.answers import Accepted, RecurringPayment
from kassa.api.context import OperationRequest
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.card_refs import usable_card
from kassa.api.handlers.common import serving_within_limits
from kassa.api.handlers.payments import answer_opened, new_card, new_order, request_fingerprint
from kassa.api.handlers.payouts import recurring_card
from kassa.clock import now_ms
from kassa.core import rebills, recurring
from kassa.core.errors import PaymentEnded
from kassa.domain.money import Currency
from kassa.domain.recurring import Schedule, ScheduleError, date_of, schedule_of
from kassa.domain.transactions import TxType
from kassa.storage.orders import NewCard
from kassa.storage.recurring import NewPayment

_CARD_FIELDS = ("credit_card_number", "expire_month", "expire_year")


async def create_recurring_payment(req: OperationRequest) -> RecurringPayment:
    values = req.values
    cur: Currency = values["currency"]
    endpoint = serving_within_limits(req, cur)
    _check_card_fields(req.values)
    now = now_ms()
    schedule = _schedule(req.values, now)
    new = NewPayment(
        req.merchant_id,
        endpoint.id,
        now,
        client_orderid=values["client_orderid"],
        amount=values["amount"],
        currency=cur.code,
        order_desc=values.get("order_desc", ""),
        email=values.get("email", ""),
        server_callback_url=values.get("server_callback_url"),
        notify_url=values.get("notify_url"),
        merchant_data=values.get("merchant_data"),
        request_fingerprint=request_fingerprint(req),
        **_schedule_columns(schedule),
    )
    card: NewCard | None = None
    if "cardrefid" in values:
        stored = await usable_card(req)
        new = dataclasses.replace(new, card_id=stored.card_id, card_ref_id=stored.ref_id)
    else:
        card = new_card(req)  # encrypted by the vault as a sale's; the CVV is not asked for, nor kept
    created = await req.write(lambda conn: recurring.create(conn, new, card))
    if not created.created and created.request_fingerprint != new.request_fingerprint:
        raise ApiError(Code.DUPLICATE, "client_orderid was already used with different fields")
    return RecurringPayment(
        serial_number=req.serial,
        status="approved",
        recurring_payment_id=str(created.payment_id),
        merchant_order_id=values["client_orderid"],
    )


async def process_recurring_payments(req: OperationRequest) -> Accepted:
    """A charge now of a recurring payment's card for the ``amount`` and ``currency`` sent: a sale order as a
    rebill's, outside the payment's schedule; its client_orderid the one sent, or made up from the payment
    and the request's serial number."""
    if "client_orderid" not in req.values:
        made_up = f"rp-{req.values['recurring-payment-id']}-{req.serial}"
        req = dataclasses.replace(req, values={**req.values, "client_orderid": made_up})
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    lent = await recurring_card(req, "recurring-payment-id")
    stored = rebills.StoredCard.of(lent.card, lent.card["card_ref_id"])
    new = rebills.charge_on(new_order(req, TxType.SALE, endpoint.id, cur), stored)
    new = dataclasses.replace(new, recurring_payment_id=lent.payment_id)
    try:
        started = await req.write(lambda conn: recurring.charge_now(conn, new))
    except PaymentEnded as ended:
        message = f"recurring-payment-id names a recurring payment that is {ended.status}: its card is not charged"
        raise ApiError(Code.STATE, message) from None
    return answer_opened(req, new, started, callbacks_queued=False)


def _check_card_fields(values: dict[str, Any]) -> None:
    """The card comes one way: by ``cardrefid``, or as the card fields."""
    sent = [name for name in _CARD_FIELDS if name in values]
    if "cardrefid" in values and sent:
        raise field_error(sent[0], "cannot be sent with cardrefid")
    if "cardrefid" not in values and not sent:
        raise field_error("cardrefid", "or the card (credit_card_number, expire_month, expire_year) is required")
    if sent and len(sent) < len(_CARD_FIELDS):
        missing = next(name for name in _CARD_FIELDS if name not in values)
        raise field_error(missing, "is required with the card")


def _schedule(values: dict[str, Any], now: int) -> Schedule | None:
    try:
        return schedule_of(
            period=values.get("period"),
            interval=values.get("interval"),
            start_date=values.get("start-date"),
            finish_date=values.get("finish-date"),
            max_count=values.get("max-count"),
            today=date_of(now),
        )
    except ScheduleError as wrong:
        raise field_error(wrong.field, wrong.problem) from None


def _schedule_columns(schedule: Schedule | None) -> dict[str, Any]:
    if schedule is None:
        return {}
    return {
        "period": schedule.period.value,
        "interval": schedule.interval,
        "start_date": schedule.start.isoformat(),
        "finish_date": schedule.finish.isoformat() if schedule.finish else None,
        "max_count": schedule.max_count,
        "next_charge_at_ms": schedule.due_ms(1),
    }
