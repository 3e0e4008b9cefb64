"""Payouts (CONTRACT §13, and §17's bank wire): money from the merchant's available balance to a card, a
bank account, an e-wallet or a phone; transfers, from the balance or from a card, to a card; and
pan-eligibility checks. The destination is checked here (``domain.destinations``), the order opened with
its reservation by ``core.payouts``, and processed by the worker like any transaction."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from kassa.api.answers import Accepted, PayoutAccepted, TransferAccepted
from kassa.api.context import OperationRequest
from kassa.api.errors import ApiError, Code, field_error
from kassa.api.handlers.card_refs import usable_card
from kassa.api.handlers.common import async_reply, change_order, order_ref, serving_endpoint, serving_within_limits
from kassa.api.handlers.payments import answer_opened, new_card, new_order, order_currency
from kassa.clock import now_ms, today
from kassa.core import payouts, rebills
from kassa.core.errors import PaymentEnded
from kassa.domain import destinations
from kassa.domain.destinations import DestinationError, Kind
from kassa.domain.money import Currency
from kassa.domain.transactions import TxType
from kassa.storage import card_refs as card_ref_store
from kassa.storage import recurring as recurring_store
from kassa.storage.orders import NewOrder
from kassa.storage.payouts import NewDestination
from kassa.storage.prepared import Record
from kassa.vault.keys import pan_context


async def payout(req: OperationRequest) -> Accepted:
    return await _start(req, TxType.PAYOUT)


async def payout_form(req: OperationRequest) -> Accepted:
    """A payout to a card the recipient types on the gateway's page (``pages/checkout``), its amount
    reserved at once: beyond the balance it is declined, and the page shows so and returns to the shop."""
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    return await _open(req, new_order(req, TxType.PAYOUT, endpoint.id, cur, hosted=True), None)


async def payout_check(req: OperationRequest) -> Accepted:
    """v4's first step: the destination checked by the processor, the order registered, no money moved."""
    return await _start(req, TxType.PAYOUT_CHECK)


async def payout_pay(req: OperationRequest) -> Accepted:
    """v4's second step: the payout of an order payout-check registered and approved, made once."""
    ref, now, lease = order_ref(req), now_ms(), req.services.job_lease()
    paid = await change_order(req, lambda conn: payouts.pay(conn, ref, req.serial, now, lease))
    if paid.job is not None and lease is not None:
        req.services.hand_over(paid.job, lease)
    else:
        req.services.wake_workers(callbacks=paid.queued.count > 0)
    return async_reply(paid.serial, ref.client_orderid, paid.order_id, paid.endpoint_id)


async def _start(req: OperationRequest, tx_type: TxType) -> Accepted:
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    new = new_order(req, tx_type, endpoint.id, cur)
    try:
        kind = destinations.kind_of(req.form)
        destination = None if kind is Kind.CARD else _destination(req, kind)
    except DestinationError as problem:
        raise ApiError(Code.FIELD, str(problem)) from None
    if kind is Kind.CARD:
        new = await _to_card(req, new)
    return await _open(req, new, destination)


async def payout_v4(req: OperationRequest) -> PayoutAccepted:
    """v4's one-step payout: v2's, signed as v4, its answer naming the payout (``payout-id``)."""
    reply = await payout(req)
    return PayoutAccepted(**reply.attributes(), payout_id=reply.paynet_order_id)


async def payout_by_ref(req: OperationRequest) -> PayoutAccepted:
    """v4's payout to the card of a card reference of the merchant's (``destination-card-ref-id``): the
    one-step payout to a card, its answer naming the payout (``payout-id``)."""
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    new = await _to_card(req, new_order(req, TxType.PAYOUT, endpoint.id, cur))
    reply = await _open(req, new, None)
    return PayoutAccepted(**reply.attributes(), payout_id=reply.paynet_order_id)


_CARD_REFERENCES = ("sending-card-ref-id", "receiving-card-ref-id")


async def pan_eligibility(req: OperationRequest) -> Accepted:
    """Whether a card can send funds, receive them, or both (the row says which, by the card reference it
    takes): asynchronous, its answer in status and callbacks; no money moves."""
    cur = order_currency(req)
    endpoint = serving_endpoint(req.endpoint, cur.code)
    new = new_order(req, TxType.PAN_ELIGIBILITY, endpoint.id, cur)
    named = [name for name in _CARD_REFERENCES if name in req.values]
    if len({req.values[name] for name in named}) > 1:
        raise field_error(named[1], f"names another card than {named[0]}: an eligibility check is of one card")
    if named:
        stored = await usable_card(req, named[0])
        return await _open(req, dataclasses.replace(new, card_id=stored.card_id), None)
    if "credit_card_number" in req.values:
        return await _open(req, new, _card_number(req, req.values["credit_card_number"]))
    references = " or ".join(spec.name for spec in req.op.fields if spec.name in _CARD_REFERENCES)
    raise field_error("credit_card_number", f"or {references} is required")


async def transfer_by_ref(req: OperationRequest) -> TransferAccepted:
    """From the merchant's balance to a card, by number or by the merchant's card reference; the answer
    names the transfer (``transaction-id``)."""
    card_id = None
    if "destination-card-no" not in req.values and "destination-card-ref-id" in req.values:
        card_id = (await usable_card(req, "destination-card-ref-id")).card_id
    reply = await _deposit_transfer(req, card_id)
    return TransferAccepted(**reply.attributes(), transaction_id=reply.paynet_order_id)


async def transfer_by_ref_v2(req: OperationRequest) -> Accepted:
    """v2: to the card of ``destination-card-ref-id`` from the card of ``source-card-ref-id`` (a transfer
    decided as a sale of the source card: by its ``cvv2``, with 3-D Secure, when its holder typed one; else
    a charge the merchant initiates on the stored card, as a rebill), or from the merchant's balance when no
    source is named (v4 transfer-by-ref's transfer)."""
    destination = await usable_card(req, "destination-card-ref-id")
    if "source-card-ref-id" not in req.values:
        return await _deposit_transfer(req, destination.card_id)
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    source = await usable_card(req, "source-card-ref-id")
    new = dataclasses.replace(new_order(req, TxType.TRANSFER, endpoint.id, cur), card_id=source.card_id)
    if new.cvv_ciphertext is None:  # nobody typed anything: the merchant charges the card it stored
        new = dataclasses.replace(new, card_ref_id=source.ref_id)
    return await _open(req, new, await _stored_card_number(req, destination))


async def transfer_form(req: OperationRequest) -> Accepted:
    """A card-to-card transfer whose source card its holder types on the gateway's page
    (``pages/checkout``), as for a sale form; the receiving card is the one named here, else the page
    asks for it too."""
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    new = new_order(req, TxType.TRANSFER, endpoint.id, cur, hosted=True)
    destination = None
    if "destination-card-no" in req.values:
        destination = _card_number(req, req.values["destination-card-no"])
    elif "destination-card-ref-id" in req.values:
        destination = await _stored_card_number(req, await usable_card(req, "destination-card-ref-id"))
    return await _open(req, new, destination)


async def _stored_card_number(req: OperationRequest, stored: rebills.StoredCard) -> NewDestination:
    """A stored card as the receiving card of a card-to-card transfer, which pays to a card number."""
    sealed = await req.services.db.read(lambda conn: card_ref_store.sealed_number(conn, stored.card_id))
    return _card_number(req, req.services.vault.decrypt(sealed, pan_context(req.merchant_id)))


async def bank_wire_transfer(req: OperationRequest) -> Accepted:
    """A payout to a bank account named by its number (or IBAN) and its bank's BIC, as the v2 payout's bank
    destination; the payer's name and the VAT are kept with it."""
    values = req.values
    if values.get("vat-amount", 0) > values["amount"]:
        raise field_error("vat-amount", "must not exceed amount")
    cur: Currency = values["currency"]
    endpoint = serving_within_limits(req, cur)
    number: str = values["recipient-account-number"]
    is_iban = destinations.looks_like_iban(number)
    account = destinations.BankAccount(
        number=number,
        bank_name=values.get("recipient-bank-name", ""),
        routing_number=None,
        bic=values["recipient-bank-bic"],
        iban=number if is_iban else None,
        holder_name=values["recipient-name"],
        # The VAT as every amount is kept: in minor units (CONTRACT §3).
        extra={name: str(values[name]) for name in ("payer-fullname", "vat-amount") if name in values},
    )
    sealed = payouts.sealed(req.services.vault, req.merchant_id, Kind.BANK, account)
    return await _open(req, new_order(req, TxType.PAYOUT, endpoint.id, cur), sealed)


_TO_PAYMENT = "destination_card_recurring_payment_id"
_FROM_PAYMENT = "card_recurring_payment_id"


async def transfer(req: OperationRequest) -> Accepted:
    """v4 transfer to a card (by number, or the card of a recurring payment): from the merchant's balance
    (``deposit2card=true``), else from a source card, sent or stored, whose holder may have to pass
    3-D Secure as for a sale."""
    if req.values.get("deposit2card") == "true":
        if "destination-card-no" in req.values or _TO_PAYMENT not in req.values:
            return await _deposit_transfer(req, None)
        lender = await recurring_card(req, _TO_PAYMENT)
        return await _deposit_transfer(req, lender.card["id"], [lender])
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    new, source = await _from_source_card(req, new_order(req, TxType.TRANSFER, endpoint.id, cur))
    destination, receiving = await _receiving_card(req)
    return await _open(req, new, destination, [*source, *receiving])


async def _from_source_card(req: OperationRequest, new: NewOrder) -> tuple[NewOrder, list[Lent]]:
    """``new`` with the card it takes from: the one sent, or the one a recurring payment lends."""
    if _FROM_PAYMENT in req.values:
        source = await recurring_card(req, _FROM_PAYMENT)
        return dataclasses.replace(new, card_id=source.card["id"]), [source]
    if "credit_card_number" not in req.values:
        raise field_error("credit_card_number", f"is required (or {_FROM_PAYMENT}, or deposit2card=true)")
    return _with_card_sent(req, new), []


async def _receiving_card(req: OperationRequest) -> tuple[NewDestination, list[Lent]]:
    """The card a card-to-card transfer pays to, sealed as a destination whether sent or lent by a
    recurring payment."""
    if "destination-card-no" in req.values:
        return _card_number(req, req.values["destination-card-no"]), []
    if _TO_PAYMENT not in req.values:
        raise field_error("destination-card-no", f"is required (or {_TO_PAYMENT})")
    stored = await recurring_card(req, _TO_PAYMENT)
    pan = req.services.vault.decrypt(stored.card["pan_ciphertext"], pan_context(req.merchant_id))
    return _card_number(req, pan), [stored]


def _with_card_sent(req: OperationRequest, new: NewOrder) -> NewOrder:
    """``new`` with the card fields sent, whose expiry these operations do not require on their own."""
    for field in ("expire_month", "expire_year"):
        if field not in req.values:
            raise field_error(field, "is required with credit_card_number")
    return dataclasses.replace(new, card=new_card(req))


async def _deposit_transfer(req: OperationRequest, card_id: int | None, lent: Sequence[Lent] = ()) -> Accepted:
    """A transfer from the merchant's balance (a payout, reported as a transfer) to ``card_id`` (which
    ``lent`` may have lent) or to the ``destination-card-no`` sent."""
    cur: Currency = req.values["currency"]
    endpoint = serving_within_limits(req, cur)
    new = new_order(req, TxType.DEPOSIT_TRANSFER, endpoint.id, cur)
    if card_id is not None:
        return await _open(req, dataclasses.replace(new, card_id=card_id), None, lent)
    if "destination-card-no" not in req.values:
        raise field_error("destination-card-no", "is required, or a destination card reference")
    return await _open(req, new, _card_number(req, req.values["destination-card-no"]))


@dataclass(frozen=True, slots=True)
class Lent:
    """The card of a recurring payment a transfer names: the field naming the payment, its id, the card
    (``id``, ``exp_month``, ``exp_year``, ``pan_ciphertext``)."""

    field: str
    payment_id: int
    card: Record


async def recurring_card(req: OperationRequest, field: str) -> Lent:
    """The card of the merchant's recurring payment ``field`` names: code 5 when there is none. Whether the
    payment may still lend it is decided as the order that uses it is written (``_open``, and
    ``core.recurring.charge_now`` for a charge of it)."""
    payment_id, merchant_id = int(req.values[field]), req.merchant_id
    card = await req.services.db.read(lambda conn: recurring_store.card_of(conn, merchant_id, payment_id))
    if card is None:
        raise ApiError(Code.NOT_FOUND, f"no such recurring payment for this merchant ({field})")
    if rebills.StoredCard.of(card, None).expired_by(today()):
        raise field_error(field, "names a card that has expired")
    return Lent(field, payment_id, card)


def _card_number(req: OperationRequest, pan: str) -> NewDestination:
    """A card known by its number alone, sealed like any destination, shown as BIN and last four."""
    return payouts.sealed(req.services.vault, req.merchant_id, Kind.CARD, destinations.CardNumber(pan))


async def _to_card(req: OperationRequest, new: NewOrder) -> NewOrder:
    """The payout paid to the card sent, or to the card a reference names."""
    if "destination-card-ref-id" in req.values:
        stored = await usable_card(req, "destination-card-ref-id")
        return dataclasses.replace(new, card_id=stored.card_id)
    return _with_card_sent(req, new)


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
    return payouts.sealed(req.services.vault, req.merchant_id, kind, details)


async def _open(
    req: OperationRequest, new: NewOrder, destination: NewDestination | None, lent: Sequence[Lent] = ()
) -> Accepted:
    """Opens the order; code 6 when a recurring payment whose card it uses has ended (cancelled: docs/api.md)."""
    payment_ids = [each.payment_id for each in lent]
    try:
        opened = await req.write(lambda conn: payouts.open_payout(conn, new, destination, payment_ids))
    except PaymentEnded as ended:
        field = next(each.field for each in lent if each.payment_id == ended.payment_id)
        message = f"{field} names a recurring payment that is {ended.status}: its card is not used"
        raise ApiError(Code.STATE, message) from None
    return answer_opened(req, new, opened.started, callbacks_queued=opened.queued.count > 0)
