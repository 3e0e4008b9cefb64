"""A valid, signed body for any row of the operation table, with some fields replaced: for tests that
drive every operation's fields (hostile input, URL rules) rather than one operation's meaning."""

from __future__ import annotations

import contextlib
import uuid

from kassa.api.operations import Operation
from kassa.domain import money
from kassa.signing.control import ControlFormula
from tests.support.gateway import Merchant, sha1

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
}


def body(op: Operation, merchant: Merchant, orderid: str, replaced: dict[str, str] | None = None) -> dict[str, str]:
    """The row's required fields with valid values, then ``replaced``, signed as the row signs."""
    form = {field.name: _valid(field.name, merchant, orderid) for field in op.fields if field.required}
    form.pop("control", None)
    form.update(replaced or {})
    if isinstance(op.signing, ControlFormula):
        form.setdefault("control", control(op.signing, merchant, form))
    return form


def control(formula: ControlFormula, merchant: Merchant, form: dict[str, str]) -> str:
    """The control a merchant computes: the amount in minor units when it is one (anything else as sent)."""
    signed = {**form, "endpoint": str(merchant.endpoint_id)}
    with contextlib.suppress(KeyError, money.AmountError):
        signed["amount"] = str(money.parse_amount(form["amount"], money.currency(form.get("currency", ""))))
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
