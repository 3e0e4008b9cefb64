"""Risk rules (CONTRACT §16): block lists, velocity limits and amounts above which 3-D Secure is required,
that an endpoint's or a merchant's first authorizations are screened by before they leave the gateway, as
plain data and pure decisions. Storage counts the velocity and keeps the rules; ``core.opening`` runs them
in the order's opening transaction.

A 3-D Secure rule is decided in two steps: when the order is opened, whether the payment is above the
rule's amount (``above_threshold``: the worker then asks the issuer for a challenge); when the issuer
offers no authentication, the rules the payment was above filter it (``unauthenticated``)."""

from __future__ import annotations

import bisect
import ipaddress
import math
import socket
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from kassa.domain import money
from kassa.domain.transactions import Flow, TxType, rule

# A window is counted in this many buckets: a sale leaves the count at most a twelfth of the window late.
BUCKETS_PER_WINDOW = 12
MIN_BUCKET_MS = 1_000


class Kind(StrEnum):
    CARD = "card"  # block list of card fingerprints
    BIN = "bin"  # block list of BINs and BIN ranges
    EMAIL = "email"  # block list of e-mail addresses
    IP = "ip"  # block list of customer IP addresses and networks
    COUNT = "count"  # at most ``limit`` sales per key over the window
    SUM = "sum"  # at most ``limit`` minor units of ``currency`` per key over the window
    THREE_DS = "three-ds-above"  # a cardholder's payment above ``threshold`` must be authenticated (3-D Secure)


class Per(StrEnum):
    """What a velocity limit counts by."""

    CARD = "card"
    EMAIL = "email"
    IP = "ip"


class Mode(StrEnum):
    ENFORCE = "enforce"
    DRY_RUN = "dry-run"  # counts what it would filter, filters nothing


BLOCK_LISTS = frozenset({Kind.CARD, Kind.BIN, Kind.EMAIL, Kind.IP})
VELOCITY = frozenset({Kind.COUNT, Kind.SUM})

# The error-code of an order a rule filtered, by the rule's kind: outside §12's 1-11 and 500 and the
# action codes 100-909 (docs/risk.md). 40xx block lists, 41xx velocity limits, 42xx authentication.
ERROR_CODES: Mapping[Kind, str] = {
    Kind.CARD: "4001",
    Kind.BIN: "4002",
    Kind.EMAIL: "4003",
    Kind.IP: "4004",
    Kind.COUNT: "4101",
    Kind.SUM: "4102",
    Kind.THREE_DS: "4201",
}

_LISTED: Mapping[Kind, str] = {
    Kind.CARD: "the card is on a block list",
    Kind.BIN: "the card's BIN is on a block list",
    Kind.EMAIL: "the e-mail address is on a block list",
    Kind.IP: "the customer's IP address is on a block list",
}


class RuleError(ValueError):
    """A rule that cannot be made as asked; the message names the option."""


@dataclass(frozen=True, slots=True)
class Sale:
    """What rules look at in an order being opened."""

    merchant_id: int
    endpoint_id: int
    amount: int
    currency: str
    card_fingerprint: str | None
    bin: str | None
    email: str
    ip: str | None
    # A sale or preauth of the cardholder's own (not a rebill or recurring charge, which the merchant
    # initiates, nor a payout, transfer or verification): the payments 3-D Secure rules compare.
    cardholder_payment: bool = False


@dataclass(frozen=True, slots=True)
class Velocity:
    per: Per
    limit: int
    window_ms: int
    currency: str | None = None  # a sum's: only sales in it are summed

    bucket_ms: int = field(init=False, repr=False, compare=False)  # worked out once: read for every sale

    def __post_init__(self) -> None:
        object.__setattr__(self, "bucket_ms", max(MIN_BUCKET_MS, self.window_ms // BUCKETS_PER_WINDOW))


@dataclass(frozen=True, slots=True)
class Threshold:
    """A 3-D Secure rule's: payments in ``currency`` above ``amount`` minor units are to be authenticated."""

    amount: int
    currency: str


@dataclass(frozen=True, slots=True)
class Rule:
    id: int
    kind: Kind
    mode: Mode
    merchant_id: int | None = None  # the scope: a merchant's endpoints, or one endpoint
    endpoint_id: int | None = None
    entries: tuple[str, ...] = ()  # a block list's
    velocity: Velocity | None = None
    threshold: Threshold | None = None  # a 3-D Secure rule's
    _list: BlockList = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if (self.merchant_id is None) == (self.endpoint_id is None):
            raise RuleError("a rule applies to one merchant or one endpoint (--merchant or --endpoint)")
        object.__setattr__(self, "_list", BlockList.of(self.kind, self.entries))

    def applies_to(self, sale: Sale) -> bool:
        return self.endpoint_id == sale.endpoint_id or self.merchant_id == sale.merchant_id

    def listed(self, sale: Sale) -> bool:
        """A block list's: whether the sale's card, BIN, e-mail or IP address is on it."""
        return self._list.holds(_listed_value(self.kind, sale))

    @property
    def error_code(self) -> str:
        return ERROR_CODES[self.kind]

    def error_message(self) -> str:
        """Which limit refused the order; never which list entry."""
        if self.threshold is not None:
            t = self.threshold
            return (
                f"Refused by risk rule {self.id}: 3-D Secure is required above {t.amount} {t.currency} minor units"
                " and the card's issuer offered no authentication"
            )
        if self.velocity is None:
            return f"Refused by risk rule {self.id}: {_LISTED[self.kind]}"
        v = self.velocity
        amount = f"{v.limit} {v.currency} minor units" if self.kind is Kind.SUM else f"{v.limit} sales"
        return f"Refused by risk rule {self.id}: more than {amount} per {v.per.value} in {describe_window(v.window_ms)}"


def _listed_value(kind: Kind, sale: Sale) -> str | None:
    match kind:
        case Kind.CARD:
            return sale.card_fingerprint
        case Kind.BIN:
            return sale.bin
        case Kind.EMAIL:
            return normalized_email(sale.email) or None
        case Kind.IP:
            return sale.ip
    return None


def velocity_key(rule: Rule, sale: Sale) -> str | None:
    """What a velocity rule counts the sale under; None when the sale has nothing to count by (no card
    sent, no e-mail, no IP address) or is in another currency than a sum's."""
    v = rule.velocity
    assert v is not None, "a velocity rule has its limit"
    if v.currency is not None and v.currency != sale.currency:
        return None
    match v.per:
        case Per.CARD:
            return sale.card_fingerprint
        case Per.EMAIL:
            return normalized_email(sale.email) or None
        case Per.IP:
            return sale.ip or None


def exceeds(rule: Rule, so_far: int, sale: Sale) -> bool:
    """Whether the sale being opened would take the key over the rule's limit, ``so_far`` being what the
    key's sales before it came to over the window: their number for a count, their amount for a sum."""
    v = rule.velocity
    assert v is not None, "a velocity rule has its limit"
    if rule.kind is Kind.COUNT:
        return so_far + 1 > v.limit
    return so_far + sale.amount > v.limit


def bucket_of(velocity: Velocity, now_ms: int) -> int:
    """The start of the bucket a sale at ``now_ms`` is counted in."""
    return now_ms - now_ms % velocity.bucket_ms


def window_start(velocity: Velocity, now_ms: int) -> int:
    """The first bucket counted at ``now_ms``: the window's buckets, the current one included."""
    return bucket_of(velocity, now_ms) - (BUCKETS_PER_WINDOW - 1) * velocity.bucket_ms


@dataclass(frozen=True, slots=True)
class BlockList:
    """Entries looked up by hash (exact values), by bisection (BIN ranges) or by one hash per prefix
    length (IP networks): cost does not grow with the list."""

    exact: frozenset[str] = frozenset()
    ranges: tuple[tuple[int, int], ...] = ()  # BIN ranges, sorted and merged
    networks: Mapping[int, frozenset[int]] = field(default_factory=dict)  # IP: prefix length → networks

    @staticmethod
    def of(kind: Kind, entries: Iterable[str]) -> BlockList:
        entries = tuple(entries)
        match kind:
            case Kind.BIN:
                singles = {e for e in entries if "-" not in e}
                return BlockList(frozenset(singles), _merged(_bin_range(e) for e in entries if "-" in e))
            case Kind.IP:
                return BlockList(networks=_networks(entries))
            case Kind.EMAIL:
                return BlockList(frozenset(normalized_email(e) for e in entries))
            case _:
                return BlockList(frozenset(entries))

    def holds(self, value: str | None) -> bool:
        if not value:
            return False
        if self.networks:
            return _in_networks(self.networks, value)
        if value in self.exact:
            return True
        if not self.ranges:
            return False
        n = int(value)
        # The last range starting at or before n: tuples compared in C, no key function called a step.
        i = bisect.bisect_right(self.ranges, (n, math.inf)) - 1
        return i >= 0 and n <= self.ranges[i][1]


def _bin_range(entry: str) -> tuple[int, int]:
    lo, hi = entry.split("-", 1)
    return int(lo), int(hi)


def _merged(ranges: Iterable[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if merged and lo <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return tuple(merged)


def _networks(entries: Iterable[str]) -> dict[int, frozenset[int]]:
    by_length: dict[int, set[int]] = {}
    for entry in entries:
        net = ipaddress.ip_network(entry, strict=False)
        # IPv6 lengths are kept apart from IPv4's by an offset: one key space for both families.
        length = net.prefixlen + (0 if net.version == 4 else 1000)
        by_length.setdefault(length, set()).add(int(net.network_address))
    return {length: frozenset(nets) for length, nets in by_length.items()}


def _in_networks(networks: Mapping[int, frozenset[int]], value: str) -> bool:
    found = _address(value)
    if found is None:
        return False  # a customer IP the merchant sent malformed is on no list
    n, bits, offset = found
    for length, nets in networks.items():
        prefix = length - offset
        if 0 <= prefix <= bits and (n >> (bits - prefix) << (bits - prefix) if prefix else 0) in nets:
            return True
    return False


def _address(value: str) -> tuple[int, int, int] | None:
    """An IP address as a number, its bits and its family's prefix-length offset; None when it is not one.
    An IPv4 address is read by the C library (``ipaddress`` took 2.7 µs a sale, ``inet_pton`` 0.3), which
    like ``ipaddress`` refuses octets with leading zeros; anything else is left to ``ipaddress``."""
    try:
        return int.from_bytes(socket.inet_pton(socket.AF_INET, value)), 32, 0
    except (OSError, ValueError):  # not IPv4, or a NUL in it
        pass
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    return (int(address), 32, 0) if address.version == 4 else (int(address), 128, 1000)


def normalized_email(email: str) -> str:
    return email.strip().lower()


# Checking what an operator types


def checked_entries(kind: Kind, entries: Sequence[str]) -> tuple[str, ...]:
    """A block list's entries as stored, or ``RuleError`` naming the first bad one."""
    if kind not in BLOCK_LISTS:
        if entries:
            raise RuleError(f"--value is for block lists, not for a {kind.value} limit")
        return ()
    if not entries:
        raise RuleError(f"a {kind.value} block list needs at least one --value")
    return tuple(_checked_entry(kind, e.strip()) for e in entries)


def _checked_entry(kind: Kind, entry: str) -> str:
    match kind:
        case Kind.CARD:
            if len(entry) != 64 or any(c not in "0123456789abcdef" for c in entry):
                raise RuleError("--value: a card is named by its fingerprint (64 hex digits; kassa order show)")
        case Kind.BIN:
            parts = entry.split("-")
            if len(parts) > 2 or not all(len(p) == 6 and p.isdigit() for p in parts) or parts[0] > parts[-1]:
                raise RuleError(f"--value: {entry[:40]!r} is not a 6-digit BIN or a range like 400000-400099")
        case Kind.EMAIL:
            if "@" not in entry or len(entry) > 254:
                raise RuleError(f"--value: {entry[:40]!r} is not an e-mail address")
            return normalized_email(entry)
        case Kind.IP:
            try:
                return str(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                raise RuleError(f"--value: {entry[:40]!r} is not an IP address or network") from None
    return entry


_UNITS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def parse_window(text: str) -> int:
    """``30m``, ``1h``, ``7d`` in milliseconds; at least a minute, at most 90 days."""
    unit = _UNITS.get(text[-1:]) if text else None
    if unit is None or not text[:-1].isdigit():
        raise RuleError("--window: a number and a unit, s, m, h or d (30m, 24h, 7d)")
    ms = int(text[:-1]) * unit
    if not 60_000 <= ms <= 90 * 86_400_000:
        raise RuleError("--window: at least 1m and at most 90d")
    return ms


def describe_window(ms: int) -> str:
    for unit in ("d", "h", "m", "s"):
        if ms % _UNITS[unit] == 0:
            return f"{ms // _UNITS[unit]}{unit}"
    return f"{ms}ms"


def checked_velocity(
    kind: Kind, per: str | None, limit: int | None, window: str | None, currency: str | None
) -> Velocity | None:
    """A velocity limit's settings, or ``RuleError`` naming the option missing or wrong."""
    if kind not in VELOCITY:
        if per or limit is not None or window:
            raise RuleError(f"--per, --limit and --window are for limits (count, sum), not for a {kind.value} rule")
        if currency and kind is not Kind.THREE_DS:
            raise RuleError(f"--currency is for sum limits and {Kind.THREE_DS.value} rules, not for {kind.value}")
        return None
    if per not in {p.value for p in Per}:
        raise RuleError("--per: card, email or ip")
    if limit is None or limit < 1:
        raise RuleError("--limit: a whole number of at least 1 (sales for count, minor units for sum)")
    if window is None:
        raise RuleError("--window is required for a limit (30m, 24h, 7d)")
    if kind is Kind.SUM and not currency:
        raise RuleError("--currency is required for a sum limit (amounts are summed in one currency)")
    if kind is Kind.COUNT and currency:
        raise RuleError("--currency is for sum limits")
    return Velocity(Per(per), limit, parse_window(window), currency.upper() if currency else None)


def checked_threshold(kind: Kind, amount: int | None, currency: str | None) -> Threshold | None:
    """A 3-D Secure rule's amount and currency, or ``RuleError`` naming the option missing or wrong."""
    if kind is not Kind.THREE_DS:
        if amount is not None:
            raise RuleError(f"--amount is for a {Kind.THREE_DS.value} rule, not for a {kind.value} rule")
        return None
    if amount is None or amount < 0:
        raise RuleError("--amount: the minor units above which 3-D Secure is required (50000 is 500.00 EUR)")
    code = (currency or "").strip().upper()
    if not code:
        raise RuleError(f"--currency is required for a {kind.value} rule (only payments in it are compared)")
    try:
        money.currency(code)
    except money.AmountError:
        raise RuleError(f"--currency: {code[:8]!r} is not an ISO 4217 currency code") from None
    return Threshold(amount, code)


# Screening


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the rules decided for a sale: the rule that filters it (None: it goes on), and the dry-run
    rules that would have."""

    filtered_by: Rule | None = None
    would_filter: tuple[Rule, ...] = ()


PASSED = Verdict()


def screen_lists(rules: Sequence[Rule], sale: Sale) -> Verdict:
    """The block lists' verdict: the first enforcing list (in id order) that holds the sale filters it;
    every dry-run list that holds it would have."""
    filtering: Rule | None = None
    would: list[Rule] = []
    for listing in rules:
        if listing.kind in BLOCK_LISTS and listing.listed(sale):
            if listing.mode is Mode.DRY_RUN:
                would.append(listing)
            elif filtering is None:
                filtering = listing
    return Verdict(filtering, tuple(would)) if filtering or would else PASSED


def applicable(rules: Iterable[Rule], sale: Sale) -> tuple[Rule, ...]:
    return tuple(rule for rule in rules if rule.applies_to(sale))


def cardholder_payment(tx_type: TxType, *, merchant_initiated: bool) -> bool:
    """Whether 3-D Secure rules compare a first authorization: a sale, a preauth or a card-to-card transfer
    the cardholder makes (a transfer charges its source card as a sale does, the way stolen cards are
    cashed out), sent with the card or on a hosted form. A rebill or a recurring charge is initiated by the
    merchant with nobody there to authenticate; a payout pays money to a card; a verification moves none."""
    return rule(tx_type).flow in (Flow.AUTHORIZE, Flow.TRANSFER) and not merchant_initiated


def above_threshold(rules: Iterable[Rule], sale: Sale) -> tuple[Rule, ...]:
    """The 3-D Secure rules the sale must be authenticated for: a cardholder's own sale or preauth, in the
    rule's currency, above its amount (a payment of exactly the amount is not above it)."""
    if not sale.cardholder_payment:
        return ()
    return tuple(
        rule
        for rule in rules
        if (t := rule.threshold) is not None and t.currency == sale.currency and sale.amount > t.amount
    )


def three_ds_mode(rules: Sequence[Rule]) -> Mode | None:
    """How a payment above ``rules``' amounts is treated: an enforcing rule among them mandates a challenge
    and filters it when the issuer offers no authentication; dry-run ones alone only count it (the payment
    goes exactly as without them); None when there are none."""
    if not rules:
        return None
    return Mode.ENFORCE if any(r.mode is Mode.ENFORCE for r in rules) else Mode.DRY_RUN


def unauthenticated(rules: Sequence[Rule]) -> Verdict:
    """The verdict on a payment whose issuer offered no authentication, by the 3-D Secure rules it is
    above: the first enforcing one (in id order) filters it; every dry-run one would have."""
    ordered = sorted(rules, key=lambda r: r.id)
    enforcing = next((r for r in ordered if r.mode is Mode.ENFORCE), None)
    return Verdict(enforcing, tuple(r for r in ordered if r.mode is Mode.DRY_RUN))
