"""Checks a request's signature against the formula its operation row names (CONTRACT §4)."""

from __future__ import annotations

import hashlib
from functools import partial
from typing import TYPE_CHECKING, Any

from kassa.api.errors import ApiError, Code
from kassa.core.followups import OrderSignature
from kassa.domain.merchants import Endpoint
from kassa.domain.money import Currency
from kassa.signing.control import ControlFormula, control_matches

if TYPE_CHECKING:  # the operation table imports the handlers, which refuse with ``mismatch``
    from kassa.api.operations import Operation


def verify(
    op: Operation, endpoint: Endpoint, path_id: str, form: dict[str, str], values: dict[str, Any]
) -> OrderSignature | None:
    """Refuses a request whose signature does not match; None when it does. A capture or return without
    amount and currency may instead be signed as the original gateway's PHP client signs it, with the
    order's amount and currency: the check that remains, once the order is known, is returned."""
    merchant = endpoint.merchant
    if "login" in values and values["login"] != merchant.login:
        raise ApiError(Code.ENDPOINT, f"login does not own endpoint {path_id}")
    if not isinstance(op.signing, ControlFormula):
        raise ApiError(Code.NOT_IMPLEMENTED, f"{op.signing} signing is not implemented yet", http_status=501)
    signed = signed_values(path_id, form, values)
    if control_matches(op.signing, signed, merchant.control_key, values["control"]):
        return None
    if op.order_amount_signing and "amount" not in values and "currency" not in values:
        return partial(_signs_order, op.signing, signed, merchant.control_key, values["control"])
    raise mismatch(op)


def replay_digest(op: Operation, path_id: str, form: dict[str, str], values: dict[str, Any]) -> str:
    """What a request and its replays share: the values its control signs, and the control. Unsigned
    fields, their order and spelling do not count (a replay may add or change them at will); the control
    does, so that a request whose control is still to be checked never reaches another's answer."""
    assert isinstance(op.signing, ControlFormula)
    signed = op.signing.message(signed_values(path_id, form, values))
    return hashlib.sha256(f"{signed}\n{values['control'].lower()}".encode()).hexdigest()


def mismatch(op: Operation) -> ApiError:
    """The one refusal of a control that does not match, however it was found out."""
    assert isinstance(op.signing, ControlFormula)
    return ApiError(Code.SIGNATURE, "control does not match: " + op.signing.describe())


def _signs_order(
    formula: ControlFormula, signed: dict[str, str], key: str, given: str, amount: int, currency: str
) -> bool:
    return control_matches(formula, {**signed, "amount": str(amount), "currency": currency}, key, given)


def signed_values(path_id: str, form: dict[str, str], values: dict[str, Any]) -> dict[str, str]:
    """The texts a formula concatenates: the fields as sent, but the amount in minor units."""
    signed = dict(form)
    signed["endpoint"] = path_id
    if "amount" in values:
        signed["amount"] = str(values["amount"])
    cur = values.get("currency")
    if isinstance(cur, Currency):
        signed["currency"] = cur.code
    return signed
