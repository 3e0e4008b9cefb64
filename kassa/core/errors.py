"""Why a state change was refused, besides the order rules' own ``OrderRuleError``."""

from __future__ import annotations


class NoSuchOrder(LookupError):
    """No order with that id and client_orderid on the endpoints the request may use."""


class FieldMismatch(ValueError):
    """A request field that contradicts the order it names (a currency other than the order's)."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem


class NotWaiting(Exception):
    """The transaction is not at the 3-D Secure step a message belongs to."""


class SignatureMismatch(Exception):
    """The control matches neither formula, now that the order it names was read (or found missing)."""


class PaymentEnded(Exception):
    """A recurring payment named for its card has ended (cancelled, finished, expired): its card is neither
    charged nor paid to any more."""

    def __init__(self, payment_id: int, status: str) -> None:
        super().__init__(f"recurring payment {payment_id} is {status}")
        self.payment_id = payment_id
        self.status = status
