"""An acquirer's ISO 8583 dialect, held as data (``dialects/<name>.toml``): the field formats (a pyiso8583
specification), what each kind of message carries, the tags of field 48 and what field 39 means.

Messages are dictionaries of pyiso8583's shape: ``"t"`` the MTI, ``"2"`` to ``"128"`` the data elements,
every value a string as it goes on the wire. Errors never quote a field's value: a message may hold a card.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from importlib import resources
from typing import Any

import iso8583
from iso8583 import specs

from kassa.domain import cards
from kassa.domain.action_codes import ActionCode
from kassa.domain.lifecycle import Stage

Fields = dict[str, str]

_BASES = {"default_ascii": specs.default_ascii, "default": specs.default}
_FRAME = ("h", "t", "p", "1")  # pyiso8583's header, the MTI and the bitmaps: in every specification
_BITMAPS = frozenset({"p", "1"})  # pyiso8583 computes them from the fields present
_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_DIGITS = re.compile(r"[0-9]*")
_OUTCOMES = frozenset({Stage.APPROVED, Stage.DECLINED, Stage.ERROR})
_ORIGINAL_ZEROS = "0" * 11  # the original settlement date and time of field 90, unused in 1987 messages


class DialectError(ValueError):
    """A dialect that does not exist or whose file cannot be used."""


class MessageError(ValueError):
    """A message the dialect cannot encode, or bytes it cannot decode."""


class Kind(StrEnum):
    """The messages the gateway sends (CONTRACT §15), each a table of every dialect file."""

    SALE = "sale"
    PREAUTH = "preauth"
    VERIFICATION = "verification"
    CAPTURE = "capture"
    VOID = "void"
    REFUND = "refund"
    CREDIT = "credit"
    REVERSAL = "reversal"
    SIGN_ON = "sign_on"
    SIGN_OFF = "sign_off"
    ECHO = "echo"


@dataclass(frozen=True, slots=True)
class Message:
    mti: str
    repeat: str | None = None  # the MTI of a repetition, for advices and reversals
    processing_code: str | None = None  # None: the original's
    network_code: str | None = None  # field 70 of network management
    zero_amount: bool = False


@dataclass(frozen=True, slots=True)
class Response:
    """What one value of field 39 means."""

    stage: Stage
    error_code: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class Answer:
    """The outcome an answer carries, and the acquirer's references when it approved."""

    stage: Stage
    error_code: str | None
    error_message: str | None
    approval_code: str | None
    rrn: str | None


@dataclass(frozen=True, slots=True)
class AdditionalData:
    field: str
    tag_size: int
    length_digits: int
    tags: Mapping[str, str]  # what a tag holds (cvv2, eci, ...) → the tag
    initiators: Mapping[str, str]  # who started the transaction (cardholder, recurring, ...) → the value


@dataclass(frozen=True, slots=True)
class Sensitive:
    card_numbers: frozenset[str]
    hidden: frozenset[str]
    hidden_tags: frozenset[str]


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    spec: Mapping[str, Mapping[str, Any]]
    numeric: frozenset[str]
    padding: Mapping[str, tuple[str, str]]  # field → (side, character)
    messages: Mapping[Kind, Message]
    always: Mapping[str, str]
    additional: AdditionalData
    responses: Mapping[str, Response]
    otherwise: Response
    sensitive: Sensitive
    # Each fixed-length field the dialect pads: (its length, the padding character, whether on the left);
    # looked up once a field, as every message's fields are padded.
    fixed: Mapping[str, tuple[int, str, bool]] = dataclasses.field(init=False)
    digits: frozenset[str] = dataclasses.field(init=False)  # the fields that must be digits, the MTI among them

    def __post_init__(self) -> None:
        fixed = {
            name: (int(self.spec[name]["max_len"]), char, side == "left")
            for name, (side, char) in self.padding.items()
            if name in self.spec and self.spec[name]["len_type"] == 0
        }
        object.__setattr__(self, "fixed", fixed)
        object.__setattr__(self, "digits", self.numeric | {"t"})

    def tag(self, meaning: str) -> str:
        """The field 48 tag holding ``meaning`` (``cvv2``, ``eci``, ...)."""
        return self.additional.tags[meaning]


@dataclass(frozen=True, slots=True)
class Original:
    """The original data elements of field 90: the message an advice or reversal names."""

    mti: str
    stan: str
    transmitted: str  # its field 7
    acquirer: str  # its field 32, right-justified in 11 digits

    @classmethod
    def of(cls, fields: Mapping[str, str]) -> Original:
        return cls(fields["t"], fields["11"], fields["7"], fields.get("32", "").rjust(11, "0"))


@functools.cache
def load(name: str) -> Dialect:
    """The dialect of ``dialects/<name>.toml``."""
    if not _NAME.fullmatch(name):
        raise DialectError(f"{name!r} is not a dialect name")
    source = resources.files("kassa.processors.iso8583").joinpath("dialects", f"{name}.toml")
    if not source.is_file():
        raise DialectError(f"no dialect named {name!r}")
    try:
        return _parsed(name, tomllib.loads(source.read_text()))
    except (tomllib.TOMLDecodeError, KeyError, TypeError, ValueError) as problem:
        raise DialectError(f"dialect {name!r}: {type(problem).__name__} {problem}") from None


def _parsed(name: str, data: dict[str, Any]) -> Dialect:
    responses = dict(data["responses"])
    otherwise = _response(responses.pop("otherwise"))
    extra = data["additional_data"]
    sensitive = data["sensitive"]
    return Dialect(
        name=name,
        spec=_spec(data["spec"]),
        numeric=frozenset(data["spec"]["numeric"]),
        padding={field: _padding(side, char) for field, (side, char) in data["padding"].items()},
        messages={kind: Message(**data["messages"][kind.value]) for kind in Kind},
        always=dict(data["always"]),
        additional=AdditionalData(
            extra["field"], int(extra["tag_size"]), int(extra["length_digits"]), extra["tags"], extra["initiators"]
        ),
        responses={code: _response(meaning) for code, meaning in responses.items()},
        otherwise=otherwise,
        sensitive=Sensitive(
            frozenset(sensitive["card_numbers"]), frozenset(sensitive["hidden"]), frozenset(sensitive["hidden_tags"])
        ),
    )


def _spec(data: dict[str, Any]) -> dict[str, Mapping[str, Any]]:
    base = _BASES[data["base"]]
    formats = data.get("formats", {})
    return {field: formats.get(field, base[field]) for field in (*_FRAME, *data["fields"])}


def _padding(side: str, char: str) -> tuple[str, str]:
    if side not in ("left", "right") or len(char) != 1:
        raise ValueError(f"padding must be [left|right, one character], not [{side!r}, {char!r}]")
    return side, char


def _response(meaning: dict[str, str]) -> Response:
    stage = Stage(meaning["outcome"])
    if stage not in _OUTCOMES:
        raise ValueError(f"a response's outcome is approved, declined or error, not {stage}")
    code = meaning.get("error_code")
    return Response(stage, code, None if code is None else ActionCode(code).message)


def encode(dialect: Dialect, fields: Mapping[str, str]) -> bytes:
    """The message as bytes (without the framing length). Fixed-length fields the dialect pads may be
    given shorter; the bitmaps are computed."""
    message = {name: value for name, value in fields.items() if name not in _BITMAPS}
    for name, (width, char, left) in dialect.fixed.items():
        value = message.get(name)
        if value is not None and len(value) < width:
            message[name] = value.rjust(width, char) if left else value.ljust(width, char)
    _check_digits(dialect, message)
    try:
        raw, _ = iso8583.encode(message, dialect.spec)
    except iso8583.EncodeError as problem:
        raise MessageError(str(problem)) from None
    except KeyError as unknown:
        raise MessageError(f"field {unknown.args[0]} is not in the {dialect.name} dialect") from None
    return bytes(raw)


def decode(dialect: Dialect, data: bytes) -> Fields:
    """The fields of a message (without the framing length), the MTI as ``"t"``; no bitmaps."""
    try:
        message, _ = iso8583.decode(data, dialect.spec)
    except iso8583.DecodeError as problem:
        raise MessageError(str(problem)) from None
    except KeyError as unknown:
        raise MessageError(f"field {unknown.args[0]} is not in the {dialect.name} dialect") from None
    found = {field: value for field, value in message.items() if field not in _BITMAPS and field != "h"}
    _check_digits(dialect, found)
    return found


def padded(dialect: Dialect, fields: Mapping[str, str]) -> Fields:
    """``fields`` as ``encode`` sends them and ``decode`` reads them back: fixed-length fields padded."""
    return {field: padded_value(dialect, field, value) for field, value in fields.items()}


def padded_value(dialect: Dialect, name: str, value: str) -> str:
    """``value`` of field ``name`` as it goes on the wire: a fixed-length field the dialect pads, padded."""
    fixed = dialect.fixed.get(name)
    if fixed is None or len(value) >= fixed[0]:
        return value
    width, char, left = fixed
    return value.rjust(width, char) if left else value.ljust(width, char)


def _check_digits(dialect: Dialect, fields: Mapping[str, str]) -> None:
    names = dialect.digits.intersection(fields)
    joined = "".join([fields[name] for name in names])  # one check of them all, on every message
    if not joined or (joined.isascii() and joined.isdigit()):
        return
    for name in sorted(names, key=lambda n: (n != "t", int(n) if n.isdigit() else 0)):
        value = fields[name]
        if value and not (value.isascii() and value.isdigit()):
            raise MessageError(f"field {name} must be digits")


@functools.cache  # a few MTIs, one lookup a message
def answer_mti(mti: str) -> str:
    """The MTI answering ``mti``: its request, advice or notification function plus one, from the origin
    (0200 → 0210, 0221 → 0230, 0401 → 0410)."""
    if len(mti) != 4 or not _DIGITS.fullmatch(mti) or mti[2] not in "024":
        raise MessageError(f"MTI {mti} is not a request, an advice or a notification")
    return f"{mti[:2]}{int(mti[2]) + 1}0"


def answer_of(dialect: Dialect, fields: Mapping[str, str]) -> Answer:
    """The outcome of an answer, by its field 39 (any code the dialect does not list: its ``otherwise``)."""
    code = fields.get("39")
    if code is None:
        raise MessageError("an answer without field 39")
    response = dialect.responses.get(code, dialect.otherwise)
    approval = fields.get("38") if response.stage is Stage.APPROVED else None
    return Answer(response.stage, response.error_code, response.error_message, approval, fields.get("37"))


def build_tlv(dialect: Dialect, items: Mapping[str, str]) -> str:
    """Field 48: each item as its tag, its value's length and the value."""
    spec = dialect.additional
    parts = []
    for tag, value in items.items():
        if len(tag) != spec.tag_size:
            raise MessageError(f"field {spec.field}: a tag is {spec.tag_size} characters")
        if len(value) >= 10**spec.length_digits:
            raise MessageError(f"field {spec.field}: the value of {tag} is too long")
        parts.append(f"{tag}{len(value):0{spec.length_digits}d}{value}")
    return "".join(parts)


def parse_tlv(dialect: Dialect, text: str) -> dict[str, str]:
    """Field 48's items by tag."""
    spec = dialect.additional
    items: dict[str, str] = {}
    at = 0
    while at < len(text):
        start = at + spec.tag_size + spec.length_digits
        length = text[at + spec.tag_size : start]
        if len(length) != spec.length_digits or not _DIGITS.fullmatch(length):
            raise MessageError(f"field {spec.field}: no length at position {at + spec.tag_size}")
        end = start + int(length)
        if end > len(text):
            raise MessageError(f"field {spec.field}: the item at position {at} runs past the field's end")
        items[text[at : at + spec.tag_size]] = text[start:end]
        at = end
    return items


def original_data(original: Original) -> str:
    """Field 90 naming ``original``: MTI, STAN, field 7, field 32 in 11 digits and 11 zeros."""
    text = f"{original.mti}{original.stan}{original.transmitted}{original.acquirer.rjust(11, '0')}{_ORIGINAL_ZEROS}"
    if len(text) != 42 or not _DIGITS.fullmatch(text):
        raise MessageError("field 90: the original's MTI, STAN, field 7 or field 32 is malformed")
    return text


def parse_original_data(text: str) -> Original:
    if len(text) != 42 or not _DIGITS.fullmatch(text):
        raise MessageError("field 90 must be 42 digits")
    return Original(text[:4], text[4:10], text[10:20], text[20:31])


def masked(dialect: Dialect, fields: Mapping[str, str]) -> Fields:
    """The message as logs may show it: card numbers as BIN and last four at most, track data, expiry and
    the like as asterisks, and so the field 48 items that hold a card's secrets."""
    sensitive = dialect.sensitive
    shown = dict(fields)
    for field, value in fields.items():
        if field in sensitive.card_numbers:
            shown[field] = _masked_number(value)
        elif field in sensitive.hidden:
            shown[field] = "*" * len(value)
        elif field == dialect.additional.field:
            shown[field] = _masked_tlv(dialect, value)
    return shown


def _masked_number(value: str) -> str:
    try:
        return cards.mask_pan(value)
    except cards.CardError:  # too short to keep BIN and last four apart: nothing of it is shown
        return "*" * len(value)


def _masked_tlv(dialect: Dialect, value: str) -> str:
    try:
        items = parse_tlv(dialect, value)
    except MessageError:  # unreadable: it could hold anything
        return "*" * len(value)
    hidden = dialect.sensitive.hidden_tags
    return build_tlv(dialect, {tag: "*" * len(item) if tag in hidden else item for tag, item in items.items()})
