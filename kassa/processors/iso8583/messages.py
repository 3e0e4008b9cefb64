"""The messages of CONTRACT §15 for the seam's requests, in a dialect: pure mapping, no I/O.

``build`` gives the message a request sends (its MTI and processing code from the dialect's table of
kinds); ``reversal_of`` the 0400 (0401) reversing a request left unanswered; ``repeat_of`` an advice or a
reversal repeated (0221, 0401). Values come out as they go on the wire: numbers zero-padded, 41, 42 and 43
space-padded, so what is stored of a message sent is what the acquirer saw.

Choices the contract leaves open, in the reference dialect:

- A payout check (``Credit`` with ``check_only``) is an account status inquiry: a 0100 with the credit's
  processing code (``260000``) and field 4 = 0, as the verification kind sends it; nothing is moved, and no
  capture ever follows it.
- A transfer from a card to a card is two messages, as §15's table has them: the charge of its source card,
  a sale (0200 ``000000``, ``charge_of``), and once that is approved the original credit to the receiving
  card (0200 ``260000``, field 2 the receiving card, ``credit_of``); a credit that fails is followed by the
  charge's void (0400 naming the charge, ``void_of``). ``build`` gives a transfer's first message.
- Only cards (``Card``, ``CardNumber``) can be paid: a bank account, e-wallet or phone is ``Unsupported``.
- The gateway's time is UTC, so fields 12 and 13 (its local time) are UTC as field 7 is.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, assert_never

from kassa.domain import money
from kassa.domain.destinations import CardNumber
from kassa.processors.interface import (
    Authorize,
    Capture,
    Card,
    Credit,
    Initiator,
    Original,
    Refund,
    Request,
    Reverse,
    ThreeDSResult,
    Transfer,
    Verify,
)
from kassa.processors.iso8583 import dialect as iso
from kassa.processors.iso8583.dialect import Dialect, Fields, Kind

_DESCRIPTOR = 40
# What a reversal does not take over from the message it reverses: its own identity and times are new,
# an answer's fields are no request's, and field 48's CVV2 goes in the first authorization only.
_NOT_REVERSED = frozenset({"t", "7", "11", "12", "13", "38", "39", "48", "90"})
_INITIATORS = {
    Initiator.CARDHOLDER: "cardholder",
    Initiator.RECURRING: "recurring",
    Initiator.UNSCHEDULED: "unscheduled",
}


class Unsupported(ValueError):
    """A request the dialect cannot carry (a payout to a bank account, a follow-up of an original that never
    went over ISO 8583): nothing can be sent for it."""


@dataclass(frozen=True, slots=True)
class Terminal:
    """Who the gateway is to the acquirer on one connection."""

    acquirer: str  # field 32, the acquiring institution id: up to 11 digits
    terminal_id: str  # field 41: up to 8 characters
    acceptor_id: str  # field 42, the card acceptor (merchant) id: up to 15 characters
    mcc: str  # field 18, the merchant category code: 4 digits

    def __post_init__(self) -> None:
        if not (self.acquirer.isdigit() and self.acquirer.isascii() and len(self.acquirer) <= 11):
            raise ValueError("the acquiring institution id (field 32) is 1 to 11 digits")
        if not (0 < len(self.terminal_id) <= 8 and self.terminal_id.isascii()):
            raise ValueError("the terminal id (field 41) is 1 to 8 ASCII characters")
        if not (0 < len(self.acceptor_id) <= 15 and self.acceptor_id.isascii()):
            raise ValueError("the card acceptor id (field 42) is 1 to 15 ASCII characters")
        if not (len(self.mcc) == 4 and self.mcc.isdigit() and self.mcc.isascii()):
            raise ValueError("the merchant category code (field 18) is 4 digits")


@dataclass(frozen=True, slots=True)
class SentOriginal:
    """What a follow-up needs of the message that carried its original, as it was sent, besides what the
    seam's ``Original`` holds (STAN and field 7): its MTI, which field 90 names, and its processing code,
    which a void repeats."""

    mti: str
    processing_code: str

    @classmethod
    def of(cls, sent: Mapping[str, str]) -> SentOriginal:
        return cls(sent["t"], sent["3"])


def build(
    dialect: Dialect,
    terminal: Terminal,
    request: Request,
    stan: str,
    rrn: str,
    now: datetime,
    *,
    original: SentOriginal | None = None,
    card: Card | None = None,
) -> Fields:
    """The message ``request`` sends. A follow-up (capture, void, refund) names its original in field 90
    from ``original`` and the request's ``Original``; it carries fields 2 and 14 when ``card``, the order's
    card, is given."""
    common = _common(dialect, terminal, request.currency, request.descriptor, stan, rrn, now)
    match request:
        case Authorize():
            kind = Kind.SALE if request.capture else Kind.PREAUTH
            return _charge(dialect, kind, common, request.amount, request.card, request.initiator, request.three_ds)
        case Verify():
            return _charge(dialect, Kind.VERIFICATION, common, 0, request.card, request.initiator, request.three_ds)
        case Transfer():  # its first message, the charge (``charge_of``); the credit follows it
            return _charge(
                dialect, Kind.SALE, common, request.amount, request.card, request.initiator, request.three_ds
            )
        case Credit():
            return _credit(dialect, common, request)
        case Capture():
            if request.original.approval_code is None:
                raise Unsupported("a capture names its authorization's approval code, and it has none")
            fields = _follow_up(dialect, Kind.CAPTURE, common, request.amount, terminal, request.original, original)
            return {**fields, **_card(card), "38": request.original.approval_code}
        case Reverse():
            fields = _follow_up(
                dialect, Kind.VOID, common, request.original.amount, terminal, request.original, original
            )
            return {**fields, **_card(card)}
        case Refund():
            fields = _follow_up(dialect, Kind.REFUND, common, request.amount, terminal, request.original, original)
            return {**fields, **_card(card)}
        case _:
            assert_never(request)


def charge_of(transfer: Transfer) -> Authorize:
    """A transfer's first message: the sale of its source card, as the cardholder's own payment is sent."""
    return Authorize(
        **_base(transfer), card=transfer.card, capture=True, initiator=transfer.initiator, three_ds=transfer.three_ds
    )


def credit_of(transfer: Transfer) -> Credit:
    """A transfer's second message, once its charge is approved: the original credit to the receiving card."""
    return Credit(**_base(transfer), destination=transfer.destination)


def void_of(transfer: Transfer, charge: Original) -> Reverse:
    """The void of a transfer's approved charge, ``charge`` as it was sent, when its credit failed: the money
    taken from the source card is given back before settlement."""
    return Reverse(**_base(transfer), original=charge, card=replace(transfer.card, cvv=None))


def _base(transfer: Transfer) -> dict[str, Any]:
    return {name: getattr(transfer, name) for name in ("order_id", "serial", "amount", "currency", "descriptor")}


def reversal_of(dialect: Dialect, sent: Mapping[str, str], stan: str, now: datetime, repeat: bool = False) -> Fields:
    """The reversal (0400, or 0401 when ``repeat``) of ``sent``, a request that went unanswered: field 90
    names it, fields 3 and 4 are its own; its card and references go again, its CVV2 never."""
    if sent.get("t") not in _requests(dialect):
        raise ValueError("only an authorization, a sale, a refund or a credit is reversed")
    message = dialect.messages[Kind.REVERSAL]
    mti = message.repeat if repeat and message.repeat else message.mti
    kept = {field: value for field, value in sent.items() if field not in _NOT_REVERSED}
    return {**kept, "t": mti, **_times(now), "11": _stan(stan), "90": iso.original_data(iso.Original.of(sent))}


def repeat_of(dialect: Dialect, advice: Mapping[str, str]) -> Fields:
    """An advice or a reversal sent again (0220 → 0221, 0400 → 0401): the same message, STAN and times
    included, so that the acquirer knows it for the same one; a repetition stays one."""
    mti = advice.get("t")
    for message in dialect.messages.values():
        if message.repeat is not None and mti in (message.mti, message.repeat):
            return {**advice, "t": message.repeat}
    raise ValueError(f"a message of MTI {mti} is not repeated")


def network(dialect: Dialect, kind: Kind, terminal: Terminal, stan: str, now: datetime) -> Fields:
    """A network management message (sign-on, sign-off, echo); field 41 lets its answer be matched as any
    other's."""
    message = dialect.messages[kind]
    if message.network_code is None:
        raise ValueError(f"{kind} is no network management message")
    return {
        "t": message.mti,
        "7": _times(now)["7"],
        "11": _stan(stan),
        "41": _terminal_id(terminal),
        "70": message.network_code,
    }


def _common(
    dialect: Dialect, terminal: Terminal, currency: str, descriptor: str, stan: str, rrn: str, now: datetime
) -> Fields:
    """The fields of every financial message that depend on neither the card nor the flow."""
    if not (0 < len(rrn) <= 12 and rrn.isascii() and rrn.isalnum()):
        raise ValueError("a retrieval reference number (field 37) is 1 to 12 letters or digits")
    return {
        **_times(now),
        "11": _stan(stan),
        "18": terminal.mcc,
        **dialect.always,
        "32": terminal.acquirer,
        "37": rrn.rjust(12, "0"),
        "41": _terminal_id(terminal),
        "42": terminal.acceptor_id.ljust(15),
        "43": _descriptor(descriptor),
        "49": money.numeric_code(money.currency(currency)),
    }


def _charge(
    dialect: Dialect,
    kind: Kind,
    common: Fields,
    amount: int,
    card: Card,
    initiator: Initiator,
    three_ds: ThreeDSResult | None,
) -> Fields:
    """A message charging or checking the cardholder's card, field 48 saying how the cardholder took part."""
    message = dialect.messages[kind]
    fields = {"t": message.mti, **_card(card), "3": _processing_code(message), "4": _amount(message, amount), **common}
    return {**fields, dialect.additional.field: _additional(dialect, card.cvv, initiator, three_ds)}


def _credit(dialect: Dialect, common: Fields, request: Credit) -> Fields:
    destination = request.destination
    if isinstance(destination, CardNumber):
        receiving = {"2": destination.number}
    elif isinstance(destination, Card):
        receiving = _card(destination)
    else:
        raise Unsupported(f"the {dialect.name} dialect pays cards only, not a {type(destination).__name__}")
    credit = dialect.messages[Kind.CREDIT]
    if request.check_only:
        check = dialect.messages[Kind.VERIFICATION]
        return {"t": check.mti, **receiving, "3": _processing_code(credit), "4": _amount(check, 0), **common}
    return {"t": credit.mti, **receiving, "3": _processing_code(credit), "4": _amount(credit, request.amount), **common}


def _follow_up(
    dialect: Dialect,
    kind: Kind,
    common: Fields,
    amount: int,
    terminal: Terminal,
    original: Original,
    sent: SentOriginal | None,
) -> Fields:
    """A message acting on an earlier authorization, field 90 naming it."""
    if sent is None:
        raise ValueError(f"a {kind} needs the original message as it was sent")
    if original.stan is None or original.transmitted_at is None:
        raise Unsupported(f"the original of this {kind} was not sent over ISO 8583")
    message = dialect.messages[kind]
    processing_code = message.processing_code or sent.processing_code
    names = iso.Original(sent.mti, original.stan, original.transmitted_at, terminal.acquirer)
    return {
        "t": message.mti,
        "3": processing_code,
        "4": _amount(message, amount),
        **common,
        "90": iso.original_data(names),
    }


def _card(card: Card | None) -> Fields:
    if card is None:
        return {}
    return {"2": card.pan, "14": f"{card.exp_year % 100:02d}{card.exp_month:02d}"}


def _additional(dialect: Dialect, cvv: str | None, initiator: Initiator, three_ds: ThreeDSResult | None) -> str:
    """Field 48: the CVV2 when the request has one (the first authorization only: it is never stored after
    it), the 3-D Secure result when authentication ran, and who initiated the payment."""
    items: dict[str, str] = {}
    if cvv:
        items[dialect.tag("cvv2")] = cvv
    if three_ds is not None:
        for meaning, value in (
            ("eci", three_ds.eci),
            ("cavv", three_ds.cavv),
            ("ds_transaction_id", three_ds.ds_trans_id),
        ):
            if value:
                items[dialect.tag(meaning)] = value
    items[dialect.tag("initiator")] = dialect.additional.initiators[_INITIATORS[initiator]]
    return iso.build_tlv(dialect, items)


def _requests(dialect: Dialect) -> frozenset[str]:
    """The MTIs of the requests a reversal may name (an advice is repeated instead)."""
    kinds = (Kind.SALE, Kind.PREAUTH, Kind.VERIFICATION, Kind.REFUND, Kind.CREDIT)
    return frozenset(dialect.messages[kind].mti for kind in kinds)


def _processing_code(message: iso.Message) -> str:
    assert message.processing_code is not None, "a financial request of the dialect has a processing code"
    return message.processing_code


def _amount(message: iso.Message, amount: int) -> str:
    minor = 0 if message.zero_amount else amount
    if not 0 <= minor < 10**12:
        raise ValueError("an amount (field 4) is 0 to 12 digits of minor units")
    return f"{minor:012d}"


def _times(now: datetime) -> Fields:
    """Fields 7 (transmission, UTC), 12 and 13 (the gateway's time, UTC too)."""
    if now.tzinfo is None:
        raise ValueError("message times are aware datetimes")
    moment = now.astimezone(UTC).strftime("%m%d%H%M%S")
    return {"7": moment, "12": moment[4:], "13": moment[:4]}


def _stan(stan: str) -> str:
    if not (0 < len(stan) <= 6 and stan.isdigit() and stan.isascii()):
        raise ValueError("a STAN (field 11) is 1 to 6 digits")
    return stan.zfill(6)


def _terminal_id(terminal: Terminal) -> str:
    return terminal.terminal_id.ljust(8)


@functools.lru_cache(maxsize=1024)  # an endpoint's descriptor, on each of its payments
def _descriptor(descriptor: str) -> str:
    """Field 43: the descriptor in printable ASCII (accents dropped, anything else a space), cut or padded to 40."""
    plain = unicodedata.normalize("NFKD", descriptor).encode("ascii", "ignore").decode()
    printable = "".join(char if char.isprintable() else " " for char in plain)
    return printable[:_DESCRIPTOR].ljust(_DESCRIPTOR)
