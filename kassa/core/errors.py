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
