"""A valid, signed body for any row of the operation table, with some fields replaced, and its POST signed
as the row signs (``control`` in the body, or OAuth): for tests that drive every operation's fields
(hostile input, URL rules) rather than one operation's meaning. OAuth rows signed with RSA-SHA256 need
the merchant to have ``key_pair()``'s public key registered (``tests.support.oauth.register_key``)."""

from __future__ import annotations

import contextlib
import uuid

import httpx

from kassa.api.operations import OAuth, Operation
from kassa.domain import money
from kassa.signing.control import ControlFormula
from tests.support.gateway import Merchant, sha1
from tests.support.oauth import key_pair, signed_post

# A value every field of that name accepts, for the required fields of each row.
_VALID = {
    "amount": "1.00",
    "credit_card_number": "4111111111111111",
    "expire_month": "12",
    "expire_year": "2030",
    "cvv2": "123",
    "cres": "eyJ0cmFuc1N0YXR1cyI6IlkifQ",
    "threeDSCompInd": "Y",
    "pares": "eJxLTEoGAAJNASk",
    "cardrefid": "1",
    "recipient-account-number": "40817810099910004312",
    "recipient-bank-bic": "DEUTDEFF",
    "recurring-payment-id": "1",
}


def body(op: Operation, merchant: Merchant, orderid: str, replaced: dict[str, str] | None = None) -> dict[str, str]:
    """The row's required fields with valid values, then ``replaced``, signed as the row signs."""
    form = {field.name: _valid(field.name, merchant, orderid) for field in op.fields if field.required}
    form.pop("control", None)
    form.update(replaced or {})
    if isinstance(op.signing, ControlFormula):
        form.setdefault("control", control(op.signing, merchant, form))
    return form


def post(op: Operation, merchant: Merchant, form: dict[str, str]) -> httpx.Response:
    """``form`` posted to the row's path, with the OAuth signature the row asks for (none for a control row:
    ``body`` put its control in the form)."""
    if not isinstance(op.signing, OAuth):
        return merchant.gateway.post(f"{op.path}/{merchant.endpoint_id}", form)
    address = f"{merchant.gateway.base}{op.path}/{merchant.endpoint_id}"
    if op.signing is OAuth.HMAC_SHA1:
        return signed_post(address, form, login=merchant.login, method="HMAC-SHA1", control_key=merchant.control_key)
    return signed_post(address, form, login=merchant.login, private_key_pem=key_pair()[0])


def control(formula: ControlFormula, merchant: Merchant, form: dict[str, str]) -> str:
    """The control a merchant computes: amounts in minor units when they are amounts (anything else as sent)."""
    signed = {**form, "endpoint": str(merchant.endpoint_id)}
    for name in ("amount", "vat-amount"):
        with contextlib.suppress(KeyError, money.AmountError):
            signed[name] = str(money.parse_amount(form[name], money.currency(form.get("currency", ""))))
    return sha1(*(signed.get(part, "") for part in formula.parts), merchant.control_key)


def _valid(name: str, merchant: Merchant, orderid: str) -> str:
    match name:
        case "login":
            return merchant.login
        case "client_orderid":
            return f"o-{uuid.uuid4().hex[:12]}"
        case "orderid":
            return orderid
        case "currency":
            return merchant.currency
        case "threeDSServerTransID":
            return str(uuid.uuid4())
        case _:
            return _VALID.get(name, "x")
