"""Checks a request's signature against the formula its operation row names (CONTRACT §4)."""

from __future__ import annotations

from typing import Any

from kassa.api.errors import ApiError, Code
from kassa.api.operations import Operation
from kassa.domain.merchants import Endpoint
from kassa.domain.money import Currency
from kassa.signing.control import ControlFormula, control_matches


def verify(op: Operation, endpoint: Endpoint, path_id: str, form: dict[str, str], values: dict[str, Any]) -> None:
    merchant = endpoint.merchant
    if "login" in values and values["login"] != merchant.login:
        raise ApiError(Code.ENDPOINT, f"login does not own endpoint {path_id}")
    if not isinstance(op.signing, ControlFormula):
        raise ApiError(Code.NOT_IMPLEMENTED, f"{op.signing} signing is not implemented yet", http_status=501)
    if not control_matches(op.signing, signed_values(path_id, form, values), merchant.control_key, values["control"]):
        raise ApiError(Code.SIGNATURE, "control does not match: " + op.signing.describe())


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
