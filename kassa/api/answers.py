"""The answers of the operation table, one declared type each: its fields in the order they go out, each
with its wire name, its kind (what its text holds), a description and when it is present. Handlers return
these types; ``rendering`` writes them in either format, ``openapi`` documents them from the same
declarations, so the document names every field an answer can carry and no other.

Every value is text on the wire (CONTRACT §1), a JSON number only where an operation's row says so
(``operations.Response.numbers``). An attribute left ``None`` is a field the answer does not carry."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from operator import attrgetter
from typing import Any, ClassVar, TypeVar

from kassa.domain.lifecycle import Status


class Kind(StrEnum):
    """What a field's text holds; each is a JSON Schema of its own (``schema``)."""

    TEXT = "text"
    ID = "id"  # a decimal integer id
    AMOUNT = "amount"  # a decimal amount in major units (``10.42``)
    CURRENCY = "currency"  # ISO 4217 alphabetic
    STATUS = "status"  # CONTRACT §6
    UUID = "uuid"
    URL = "url"
    DATE_TIME = "date-time"  # UTC, to the second
    DIGITS = "digits"


_SCHEMAS: dict[Kind, dict[str, Any]] = {
    Kind.TEXT: {"type": "string"},
    Kind.ID: {"type": "string", "pattern": "^[0-9]+$"},
    Kind.AMOUNT: {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"},
    Kind.CURRENCY: {"type": "string", "pattern": "^[A-Z]{3}$"},
    Kind.STATUS: {"type": "string", "enum": [status.value for status in Status]},
    Kind.UUID: {"type": "string", "format": "uuid"},
    Kind.URL: {"type": "string", "format": "uri"},
    Kind.DATE_TIME: {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"},
    Kind.DIGITS: {"type": "string", "pattern": "^[0-9]+$"},
}


def schema(kind: Kind) -> dict[str, Any]:
    return dict(_SCHEMAS[kind])


@dataclass(frozen=True, slots=True)
class Field:
    """A field as the document gives it: ``when`` None for a field every answer of its type carries."""

    name: str
    kind: Kind
    description: str
    when: str | None = None


def wire(kind: Kind, description: str, *, when: str | None = None, name: str | None = None) -> Any:
    """Declares an attribute of an answer: its field's kind and description; ``when`` it is present (else
    always, and the attribute is required); ``name`` on the wire when not the attribute's with hyphens."""
    spec = {"kind": kind, "description": description, "when": when, "name": name}
    if when is None:
        return dataclasses.field(metadata=spec)
    return dataclasses.field(default=None, metadata=spec)


def part(of: type[Reply], when: str) -> Any:
    """Declares an attribute holding a group of fields (another answer type), written in its place."""
    return dataclasses.field(default=None, metadata={"part": of, "when": when})


@dataclass(slots=True, kw_only=True)
class Reply:
    """An answer as a handler returns it, ``type`` aside (the pipeline writes it, from the row). Subclasses
    are declared with ``@answer``, which works out once what writing them takes. Not frozen: a frozen
    dataclass's ``__init__`` sets each field through ``object.__setattr__``, 7 µs more on a status call."""

    FIELDS: ClassVar[tuple[Field, ...]] = ()  # every field it may carry, in order
    _NAMES: ClassVar[tuple[str | None, ...]] = ()  # wire names; None for a part
    _VALUES: ClassVar[Any] = None  # attrgetter of every attribute, in order
    _ATTRIBUTES: ClassVar[tuple[str, ...]] = ()

    def write(self, into: dict[str, str]) -> dict[str, str]:
        """Adds the answer's fields to ``into``, in order, leaving out those it does not carry."""
        for name, value in zip(self._NAMES, self._VALUES(self)):  # noqa: B905 (equal by construction)
            if value is None:
                continue
            if name is None:
                value.write(into)
            else:
                into[name] = value
        return into

    def attributes(self) -> dict[str, Any]:
        """The attributes as keyword arguments, to build a richer answer from this one."""
        return {name: getattr(self, name) for name in self._ATTRIBUTES}


R = TypeVar("R", bound=type[Reply])


def answer(cls: R) -> R:
    """Works out the fields of an answer type once, at import: the request path reflects on nothing."""
    fields: list[Field] = []
    names: list[str | None] = []
    for spec in dataclasses.fields(cls):
        meta = spec.metadata
        if "part" in meta:
            fields += [dataclasses.replace(f, when=f.when or meta["when"]) for f in meta["part"].FIELDS]
            names.append(None)
            continue
        name = meta["name"] or spec.name.replace("_", "-")
        fields.append(Field(name, meta["kind"], meta["description"], meta["when"]))
        names.append(name)
    attributes = tuple(spec.name for spec in dataclasses.fields(cls))
    assert len(attributes) > 1, "attrgetter of one attribute gives no tuple"
    cls.FIELDS, cls._NAMES, cls._ATTRIBUTES = tuple(fields), tuple(names), attributes
    cls._VALUES = attrgetter(*attributes)
    return cls


def field_names(cls: type[Reply]) -> Iterator[str]:
    return (f.name for f in cls.FIELDS)


_SERIAL = "the request's serial number (its transaction's, for an operation that starts one)"
_ORDER_ID = "the gateway's order id"
_CLIENT_ORDER = "the merchant's order id (client_orderid)"
_ENDPOINT = "the endpoint the order is on (a group's member, when a group was addressed)"


@answer
@dataclass(slots=True, kw_only=True)
class Accepted(Reply):
    """An operation accepted for asynchronous processing: its outcome comes by status and callbacks."""

    status: str = wire(Kind.STATUS, "processing: the outcome comes by status and callbacks")
    serial_number: str = wire(Kind.UUID, _SERIAL)
    merchant_order_id: str = wire(Kind.TEXT, _CLIENT_ORDER)
    paynet_order_id: str = wire(Kind.ID, _ORDER_ID)
    end_point_id: str = wire(Kind.ID, _ENDPOINT)


@answer
@dataclass(slots=True, kw_only=True)
class FormAccepted(Accepted):
    """A hosted form opened: the customer is sent to ``redirect-url``."""

    redirect_url: str = wire(Kind.URL, "the gateway's page to send the customer to")


@answer
@dataclass(slots=True, kw_only=True)
class PayoutAccepted(Accepted):
    payout_id: str = wire(Kind.ID, "the payout: its order id")


@answer
@dataclass(slots=True, kw_only=True)
class TransferAccepted(Accepted):
    transaction_id: str = wire(Kind.ID, "the transfer: its order id")


@answer
@dataclass(slots=True, kw_only=True)
class CardReference(Reply):
    serial_number: str = wire(Kind.UUID, _SERIAL)
    status: str = wire(Kind.STATUS, "approved")
    merchant_order_id: str = wire(Kind.TEXT, "the client_orderid of the order whose card is referenced")
    paynet_order_id: str = wire(Kind.ID, "the order whose card is referenced")
    card_ref_id: str = wire(Kind.ID, "the card reference, for make-rebill and the card-ref-id fields")


@answer
@dataclass(slots=True, kw_only=True)
class CardReferenceV4(CardReference):
    unq_card_ref_id: str = wire(Kind.TEXT, "the same for every reference of the same card number at this merchant")
    recurring_payment_id: str = wire(Kind.ID, "the recurring payment (no schedule) that lends the card")


_CARD = "when the order has a card"


@answer
@dataclass(slots=True, kw_only=True)
class CardInfo(Reply):
    """What may be shown of a stored card: BIN and last four digits at most."""

    serial_number: str = wire(Kind.UUID, _SERIAL)
    bin: str = wire(Kind.DIGITS, "the card number's first six digits")
    last_four_digits: str = wire(Kind.DIGITS, "the card number's last four digits")
    expire_month: str = wire(Kind.DIGITS, "two digits")
    expire_year: str = wire(Kind.DIGITS, "four digits")
    card_printed_name: str | None = wire(Kind.TEXT, "the cardholder's name", when="when one was given")
    card_type: str | None = wire(Kind.TEXT, "the card's brand (visa, mastercard, ...)", when="when known")


@answer
@dataclass(slots=True, kw_only=True)
class EphemeralTicket(Reply):
    serial_number: str = wire(Kind.UUID, _SERIAL)
    ephemeral_ticket: str = wire(
        Kind.TEXT, "one tokenization of a card within 15 minutes, for a checkout page", name="ephemeralTicket"
    )


@answer
@dataclass(slots=True, kw_only=True)
class RecurringPayment(Reply):
    serial_number: str = wire(Kind.UUID, _SERIAL)
    status: str = wire(Kind.STATUS, "approved")
    recurring_payment_id: str = wire(Kind.ID, "the recurring payment")
    merchant_order_id: str = wire(Kind.TEXT, "the client_orderid sent")


@answer
@dataclass(slots=True, kw_only=True)
class CardShown(Reply):
    """A card as status reports it: BIN and last four digits at most."""

    bin: str = wire(Kind.DIGITS, "the card number's first six digits")
    last_four_digits: str = wire(Kind.DIGITS, "the card number's last four digits")
    card_exp_month: str = wire(Kind.DIGITS, "two digits")
    card_exp_year: str = wire(Kind.DIGITS, "four digits")
    cardholder_name: str | None = wire(Kind.TEXT, "the name on the card", when="when one was given")
    card_type: str | None = wire(Kind.TEXT, "the card's brand (visa, mastercard, ...)", when="when known")


_METHOD = "when the 3-D Secure Method step is next"
_CHALLENGE = "when the 3-D Secure challenge is next"


@answer
@dataclass(slots=True, kw_only=True)
class BrowserStep(Reply):
    """What the customer's browser must do next (CONTRACT §8): the gateway's page, and the raw 3-D Secure
    data for a merchant that runs the step itself."""

    redirect_to: str = wire(Kind.URL, "the gateway's page that runs the step")
    html: str = wire(Kind.TEXT, "a page that sends the browser to redirect-to")
    threeds_version: str = wire(Kind.TEXT, "the 3-D Secure version (1.0.2, 2.2.0)")
    threeds_server_trans_id: str = wire(Kind.TEXT, "the 3DS Server's transaction id")
    threeds_method_url: str | None = wire(Kind.URL, "the ACS's Method page", when=_METHOD)
    threeds_method_data: str | None = wire(Kind.TEXT, "threeDSMethodData to post there", when=_METHOD)
    acs_url: str | None = wire(Kind.URL, "the ACS's address to post the challenge to", when=_CHALLENGE)
    pareq: str | None = wire(Kind.TEXT, "PaReq to post to acs-url", when="when a 3-D Secure 1.0.2 challenge is next")
    md: str | None = wire(Kind.TEXT, "MD to post to acs-url", when="when a 3-D Secure 1.0.2 challenge is next")
    creq: str | None = wire(Kind.TEXT, "creq to post to acs-url", when="when a 3-D Secure 2.x challenge is next")


@answer
@dataclass(slots=True, kw_only=True)
class DestinationShown(Reply):
    destination_type: str = wire(Kind.TEXT, "bank, ewallet, phone or card (a transfer's receiving card)")
    destination_account: str = wire(Kind.TEXT, "its number, masked")
    recipient_name: str | None = wire(
        Kind.TEXT, "the name the processor found for the phone, masked", when="when a phone payout's check found one"
    )


def _when(what: str) -> str:
    return f"when {what}"


@answer
@dataclass(slots=True, kw_only=True)
class OrderStatus(Reply):
    """The state of an order as one of its transactions leaves it (CONTRACT §5): its latest, or the one
    ``by-request-sn`` names."""

    serial_number: str = wire(Kind.UUID, "this request's serial number")
    status: str = wire(Kind.STATUS, "the transaction's status")
    merchant_order_id: str = wire(Kind.TEXT, _CLIENT_ORDER)
    paynet_order_id: str = wire(Kind.ID, _ORDER_ID)
    transaction_type: str = wire(Kind.TEXT, "the transaction's type as merchants see it (sale, capture, ...)")
    order_stage: str = wire(Kind.TEXT, "the transaction's type and stage (sale_approved, ...)")
    amount: str = wire(Kind.AMOUNT, "the transaction's amount")
    currency: str = wire(Kind.CURRENCY, "the order's currency")
    end_point_id: str = wire(Kind.ID, _ENDPOINT)
    initial_amount: str = wire(Kind.AMOUNT, "the order's amount")
    captured_amount: str = wire(Kind.AMOUNT, "taken from the cardholder so far")
    refunded_amount: str = wire(Kind.AMOUNT, "returned so far")
    paynet_processing_date: str = wire(Kind.DATE_TIME, "when the transaction last changed")
    card: CardShown | None = part(CardShown, _CARD)
    descriptor: str | None = wire(Kind.TEXT, "the endpoint's descriptor", when=_when("the endpoint has one"))
    card_ref_id: str | None = wire(Kind.ID, "the card reference", when=_when("the order has one"))
    recurring_payment_id: str | None = wire(
        Kind.ID, "the recurring payment", when=_when("the order charges one's card")
    )
    email: str | None = wire(Kind.TEXT, "the customer's email", when=_when("one was given"))
    approval_code: str | None = wire(Kind.TEXT, "the issuer's approval code", when=_when("the acquirer gave one"))
    processor_rrn: str | None = wire(Kind.TEXT, "the acquirer's retrieval reference", when=_when("known"))
    processor_tx_id: str | None = wire(Kind.TEXT, "the acquirer's transaction id", when=_when("known"))
    error_message: str | None = wire(Kind.TEXT, "why it failed", when=_when("the transaction failed"))
    error_code: str | None = wire(Kind.TEXT, "the failure's code", when=_when("the transaction failed"))
    browser: BrowserStep | None = part(BrowserStep, "when the transaction waits for the customer's browser")
    destination: DestinationShown | None = part(DestinationShown, "when a payout goes to no card of the order")
    by_request_sn: str | None = wire(Kind.TEXT, "by-request-sn, as sent", when=_when("it was sent"))


@answer
@dataclass(slots=True, kw_only=True)
class VerificationStatus(OrderStatus):
    """A synchronous account verification's status; ``card-ref-id`` the reference an approved one stores."""

    phone: str | None = wire(Kind.TEXT, "the phone sent", when=_when("one was sent"))
