"""Routing (CONTRACT §16): which of an endpoint's acquirer connections a first authorization goes to, and
which outcomes send it on to the next one.

Each connection of an endpoint's route may carry conditions: card brand, BIN ranges, currency, amount range
and kind of payment. A first authorization goes to the connections whose conditions all match it, in the
route's order; an outcome whose code is in the endpoint's cascade list sends it on to the next of them.

Operators write a route as text, one entry per connection: its name, then any conditions in brackets,
``acq-eu[brand=VISA,MASTERCARD; bin=400000-499999,510000; currency=EUR; amount=100-500000; kind=payment]``.
``render`` writes an entry back in that form, so what an operator reads is what they may type.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kassa.domain import money
from kassa.domain.acquirers import Connection, serving
from kassa.domain.action_codes import ActionCode
from kassa.domain.cards import Brand
from kassa.domain.merchants import Mode


class Kind(StrEnum):
    """What a first authorization does with the card the conditions read."""

    PAYMENT = "payment"  # charges it: a sale, preauth, verification, rebill, recurring charge, transfer
    PAYOUT = "payout"  # credits it: a payout to a card


# CONTRACT §16's default: the acquirer or the issuer failed, or declined without a reason a second acquirer
# would not share.
DEFAULT_CASCADE = (
    ActionCode.ISSUER_INOPERATIVE,
    ActionCode.SYSTEM_MALFUNCTION,
    ActionCode.ISSUER_TIMED_OUT,
    ActionCode.DO_NOT_HONOUR,
)
MAX_TRIES = 3  # connections tried for one request, at most
MAX_CONDITIONS_TEXT = 2000  # one connection's conditions as ``render`` writes them (their column's length)
_MAX_BIN_DIGITS = 11  # a BIN range's bounds: prefixes of card numbers, as schemes publish them (6 to 11 digits)


class RouteProblem(ValueError):
    """A route or cascade list an operator wrote that cannot be used; the message says which part and why."""


@dataclass(frozen=True, slots=True)
class BinRange:
    """Card numbers whose first ``len(low)`` digits lie from ``low`` to ``high`` (a single BIN: both equal)."""

    low: str
    high: str

    def holds(self, pan: str) -> bool:
        return self.low <= pan[: len(self.low)] <= self.high

    def __str__(self) -> str:
        return self.low if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True, slots=True)
class Payment:
    """What conditions read of a first authorization: the card charged (a payment) or credited (a payout),
    when there is one (a payout to a bank account has none)."""

    kind: Kind
    pan: str | None
    brand: Brand | None
    currency: str
    amount: int  # minor units


@dataclass(frozen=True, slots=True)
class Conditions:
    """What a payment must be for a connection to take it; an empty part matches every payment."""

    brands: frozenset[Brand] = frozenset()
    bins: tuple[BinRange, ...] = ()
    currencies: frozenset[str] = frozenset()
    min_amount: int | None = None
    max_amount: int | None = None
    kinds: frozenset[Kind] = frozenset()

    def match(self, payment: Payment) -> bool:
        if self.kinds and payment.kind not in self.kinds:
            return False
        if self.currencies and payment.currency not in self.currencies:
            return False
        if self.min_amount is not None and payment.amount < self.min_amount:
            return False
        if self.max_amount is not None and payment.amount > self.max_amount:
            return False
        if self.brands and payment.brand not in self.brands:
            return False
        pan = payment.pan
        return not self.bins or (pan is not None and any(r.holds(pan) for r in self.bins))

    def __bool__(self) -> bool:
        return self != _NONE

    def render(self) -> str:
        """The conditions as an operator writes them inside an entry's brackets (empty when there are none)."""
        parts = [
            ("brand", ",".join(sorted(self.brands))),
            ("bin", ",".join(map(str, self.bins))),
            ("currency", ",".join(sorted(self.currencies))),
            ("amount", _amounts_text(self.min_amount, self.max_amount)),
            ("kind", ",".join(sorted(self.kinds))),
        ]
        return "; ".join(f"{name}={value}" for name, value in parts if value)


_NONE = Conditions()


@dataclass(frozen=True, slots=True)
class Entry:
    """One connection of a route, by name, with the conditions it takes payments on."""

    name: str
    conditions: Conditions = field(default=_NONE)

    def render(self) -> str:
        return f"{self.name}[{self.conditions.render()}]" if self.conditions else self.name


@dataclass(frozen=True, slots=True)
class Stop:
    """A connection of an endpoint's route with the conditions it takes payments on there."""

    connection: Connection
    conditions: Conditions = field(default=_NONE)

    def render(self) -> str:
        return Entry(self.connection.name, self.conditions).render()


@dataclass(frozen=True, slots=True)
class Routing:
    """An endpoint's route and cascade list (None: CONTRACT §16's default)."""

    mode: Mode
    stops: tuple[Stop, ...]
    cascade: tuple[ActionCode, ...] | None = None

    @property
    def connections(self) -> tuple[Connection, ...]:
        return tuple(stop.connection for stop in self.stops)

    @property
    def cascade_codes(self) -> frozenset[str]:
        return frozenset(DEFAULT_CASCADE if self.cascade is None else self.cascade)

    def serving(self) -> tuple[Stop, ...]:
        """The stops payments may go to (``domain.acquirers.serving``), in order."""
        usable = {c.id for c in serving(self.mode, self.connections)}
        return tuple(stop for stop in self.stops if stop.connection.id in usable)

    def as_dict(self) -> dict[str, object]:
        """What the CLI's JSON and the audit log show: the route as operators write it, and the cascade list."""
        return {"route": [stop.render() for stop in self.stops], "cascade": render_cascade(self.cascade)}


def changes(before: Routing, after: Routing) -> tuple[dict[str, object], dict[str, object]]:
    """What a change of an endpoint's routing changed, before and after, as its audit entry records it."""
    was, now = before.as_dict(), after.as_dict()
    names = [name for name in now if now[name] != was[name]]
    return {name: was[name] for name in names}, {name: now[name] for name in names}


def _amounts_text(low: int | None, high: int | None) -> str:
    if low is None and high is None:
        return ""
    return f"{'' if low is None else low}-{'' if high is None else high}"


# An entry: a name, then optional conditions in brackets. Entries are separated by commas or new lines
# outside brackets (a console field holds them all; CLI arguments one each).
_ENTRY = re.compile(r"\s*([^\s\[\],]+)[ \t\r]*(?:\[([^\[\]]*)\])?[ \t\r]*")  # \r: a browser's CRLF


def parse_route(texts: Iterable[str]) -> list[Entry]:
    """The entries written in ``texts`` (each holding one entry or several separated by commas or new lines),
    in order. Names are checked against the connections by whoever stores the route."""
    entries: list[Entry] = []
    for text in texts:
        position = 0
        while text[position:].strip():
            found = _ENTRY.match(text, position)
            if found is None:
                raise RouteProblem(f"cannot read the route from {text[position:][:40]!r}: write NAME[conditions]")
            entries.append(Entry(found[1], parse_conditions(found[2] or "", found[1])))
            position = found.end()
            if position < len(text):
                if text[position] not in ",\n":
                    raise RouteProblem(f"cannot read the route after {found[1]!r}: separate entries by commas")
                position += 1
    return entries


_READERS = ("brand", "bin", "currency", "amount", "kind")


def parse_conditions(text: str, name: str) -> Conditions:
    """The conditions written inside the brackets of connection ``name``'s entry (named in refusals)."""
    values: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in text.split(";"))):
        key, equals, value = (s.strip() for s in part.partition("="))
        if not equals or key not in _READERS:
            raise RouteProblem(
                f"{name}: {part[:40]!r} is no condition: write one of {', '.join(_READERS)} as key=value"
            )
        if key in values:
            raise RouteProblem(f"{name}: {key} is given twice")
        values[key] = value
    items = {key: [v.strip() for v in value.split(",") if v.strip()] for key, value in values.items()}
    low, high = _amounts(name, values.get("amount", ""))
    conditions = Conditions(
        brands=frozenset(_brand(name, b) for b in items.get("brand", [])),
        bins=tuple(_bin_range(name, b) for b in items.get("bin", [])),
        currencies=frozenset(_currency(name, c) for c in items.get("currency", [])),
        min_amount=low,
        max_amount=high,
        kinds=frozenset(_kind(name, k) for k in items.get("kind", [])),
    )
    if len(conditions.render()) > MAX_CONDITIONS_TEXT:
        raise RouteProblem(f"{name}: the conditions are longer than {MAX_CONDITIONS_TEXT} characters as written back")
    return conditions


def _brand(name: str, text: str) -> Brand:
    try:
        return Brand(text.upper())
    except ValueError:
        raise RouteProblem(f"{name}: brand {text!r} is none of {', '.join(Brand)}") from None


def _bin_range(name: str, text: str) -> BinRange:
    low, _, high = (s.strip() for s in text.partition("-"))
    high = high or low
    digits = re.compile(rf"[0-9]{{1,{_MAX_BIN_DIGITS}}}")
    if not (digits.fullmatch(low) and digits.fullmatch(high)) or len(low) != len(high) or low > high:
        raise RouteProblem(
            f"{name}: BIN range {text!r} must be a prefix of 1 to {_MAX_BIN_DIGITS} digits, or two of the same "
            "length joined by '-', the lower first"
        )
    return BinRange(low, high)


def _currency(name: str, text: str) -> str:
    try:
        return money.currency(text.upper()).code
    except money.AmountError:
        raise RouteProblem(f"{name}: currency {text!r} is not an ISO 4217 code Kassa knows") from None


def _amounts(name: str, text: str) -> tuple[int | None, int | None]:
    if not text:
        return None, None
    low, dash, high = (s.strip() for s in text.partition("-"))
    whole = re.compile(r"[0-9]{1,15}")
    rule = f"{name}: amount {text!r} must be MIN-MAX in minor units (either may be left out, as in 100- or -5000)"
    if not dash or not (low or high) or not all(whole.fullmatch(s) for s in (low, high) if s):
        raise RouteProblem(rule)
    bounds = (int(low) if low else None, int(high) if high else None)
    if bounds[0] is not None and bounds[1] is not None and bounds[0] > bounds[1]:
        raise RouteProblem(rule)
    return bounds


def _kind(name: str, text: str) -> Kind:
    try:
        return Kind(text.lower())
    except ValueError:
        raise RouteProblem(f"{name}: kind {text!r} is none of {', '.join(Kind)}") from None


def parse_cascade(text: str) -> tuple[ActionCode, ...] | None:
    """An endpoint's cascade list as an operator writes it: action codes separated by commas, ``none`` for
    no cascading, ``default`` (or nothing) for CONTRACT §16's default, which is stored as None."""
    words = [w.strip() for w in text.split(",") if w.strip()]
    if not words or words == ["default"]:
        return None
    if words == ["none"]:
        return ()
    codes: list[ActionCode] = []
    for word in words:
        try:
            codes.append(ActionCode(word))
        except ValueError:
            known = ", ".join(ActionCode)
            raise RouteProblem(f"cascade code {word!r} is none of the action codes {known}") from None
    return tuple(dict.fromkeys(codes))


def render_cascade(codes: Sequence[ActionCode] | None) -> str:
    if codes is None:
        return "default"
    return ",".join(codes) or "none"
