"""Hosted Fields on the merchant's server side (CONTRACT §18): the ephemeral ticket a checkout page
tokenizes the card with, and the v4 sale, paid with the card a ``hosted_fields_token`` stands for (or
with the card fields, as a v2 sale is)."""

from __future__ import annotations

import dataclasses
import secrets

from kassa.api.answers import Accepted, EphemeralTicket
from kassa.api.context import OperationRequest
from kassa.api.errors import field_error
from kassa.api.handlers import payments
from kassa.api.handlers.common import serving_within_limits
from kassa.api.schemas import HOSTED_FIELDS_TOKEN
from kassa.clock import now_ms
from kassa.core import hosted_fields as core
from kassa.domain.hosted_fields import TICKET_TTL_MS
from kassa.domain.transactions import TxType
from kassa.storage import hosted_fields as store
from kassa.storage.orders import NewCard, NewOrder
from kassa.storage.prepared import Record
from kassa.vault import tokens
from kassa.vault.keys import cvv_context, hosted_cvv_context

TOKEN_FIELD = HOSTED_FIELDS_TOKEN.name
# The card fields a token stands for; card_printed_name is not among them (the token carries no name).
_CARD = ("credit_card_number", "expire_month", "expire_year", "cvv2")


async def create_ephemeral_ticket(req: OperationRequest) -> EphemeralTicket:
    """A ticket for one tokenization within 15 minutes; safe in a page (it pays for nothing by itself)."""
    ticket = secrets.token_urlsafe(32)
    digest, merchant_id, endpoint_id = tokens.digest(ticket), req.merchant_id, req.endpoint.id
    await req.write(lambda conn: store.issue(conn, digest, merchant_id, endpoint_id, now_ms(), TICKET_TTL_MS))
    return EphemeralTicket(serial_number=req.serial, ephemeral_ticket=ticket)


async def sale(req: OperationRequest) -> Accepted:
    token: str | None = req.values.get(TOKEN_FIELD)
    if token is None:
        if missing := next((name for name in _CARD if name not in req.values), None):
            raise field_error(missing, f"is required, or {TOKEN_FIELD} instead of the card fields")
        return await payments.sale(req)
    if sent := [name for name in _CARD if req.form.get(name)]:
        raise field_error(TOKEN_FIELD, f"cannot be sent with card fields ({', '.join(sent)})")
    cur = payments.order_currency(req)
    endpoint = serving_within_limits(req, cur)
    digest = tokens.digest(token)
    row = await req.services.db.read_point(lambda conn: store.by_token(conn, digest))
    addressed = {req.endpoint.id, endpoint.id}  # as addressed, and the member the sale opens at
    if problem := core.token_problem(row, addressed, now_ms()):
        raise field_error(TOKEN_FIELD, problem)
    assert row is not None
    new = payments.new_order(req, TxType.SALE, endpoint.id, cur)
    if row["order_id"] is None:  # else a repeat of the sale that used it: core.sale finds that order
        new = _paid_with(req, row, new)
    try:
        started = await req.write(lambda conn: core.sale(conn, digest, addressed, new))
    except core.TokenRefused as refused:
        raise field_error(TOKEN_FIELD, str(refused)) from None
    return payments.answer_opened(req, new, started, callbacks_queued=False)


def _paid_with(req: OperationRequest, row: Record, new: NewOrder) -> NewOrder:
    """``new`` paid with the token's card: its sealed number as it is, its CVV sealed again for the sale's
    transaction (the transaction keeps it until authorization, as for any sale)."""
    if row["pan_ciphertext"] is None:  # cleared by a concurrent sale between the read and here
        raise field_error(TOKEN_FIELD, "was used already: a token pays for one sale")
    vault = req.services.vault
    card = NewCard(
        pan_ciphertext=bytes(row["pan_ciphertext"]),
        pan_fingerprint=row["pan_fingerprint"],
        bin=row["bin"],
        last_four=row["last_four"],
        brand=row["brand"],
        exp_month=row["exp_month"],
        exp_year=row["exp_year"],
        holder_name=req.values.get("card_printed_name", ""),
    )
    cvv = vault.decrypt(bytes(row["cvv_ciphertext"]), hosted_cvv_context(row["ticket_digest"]))
    return dataclasses.replace(new, card=card, cvv_ciphertext=vault.encrypt(cvv, cvv_context(req.serial)))
