"""The SHA-1 ``control`` signature (CONTRACT §4): sha1 of values concatenated, then the control key."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ControlFormula:
    """The names of the values concatenated before the key; a value not sent counts as the empty string."""

    parts: tuple[str, ...]

    def message(self, values: Mapping[str, str]) -> str:
        return "".join(values.get(part, "") for part in self.parts)

    def describe(self) -> str:
        return "sha1(" + " + ".join((*self.parts, "control key")) + ")"


def control_of(parts: Sequence[str], key: str) -> str:
    return hashlib.sha1(("".join(parts) + key).encode(), usedforsecurity=False).hexdigest()


def control_matches(formula: ControlFormula, values: Mapping[str, str], key: str, given: str) -> bool:
    expected = control_of([formula.message(values)], key)
    return hmac.compare_digest(expected.encode(), given.lower().encode())


SALE_LIKE = ControlFormula(("endpoint", "client_orderid", "amount", "email"))
VERIFY_LIKE = ControlFormula(("endpoint", "client_orderid", "email"))
CAPTURE_LIKE = ControlFormula(("login", "client_orderid", "orderid", "amount", "currency"))
ORDER_REF = ControlFormula(("login", "client_orderid", "orderid"))
CARD_INFO = ControlFormula(("login", "cardrefid"))
REBILL = ControlFormula(("login", "client_orderid", "cardrefid", "amount", "currency"))
TRANSFER_BY_REF = ControlFormula(
    ("login", "client_orderid", "source-card-ref-id", "destination-card-ref-id", "amount", "currency")
)
BANK_WIRE = ControlFormula(
    (
        "endpoint", "client_orderid", "payer-fullname", "recipient-name", "recipient-account-number",
        "recipient-bank-bic", "amount", "vat-amount", "currency",
    )
)  # fmt: skip
CALLBACK = ControlFormula(("status", "orderid", "client_orderid"))
