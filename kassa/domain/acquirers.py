"""Acquirer connections (CONTRACT §15): what an endpoint's payments are sent to, as data an operator keeps.

A connection is the built-in sandbox (§9), which has no settings, or a host-to-host ISO 8583 link with the
settings below. An endpoint is served by an ordered list of connections (its route, §16); ``route_problem``
is the rule such a list must keep. Each refusal names the field or connection at fault.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from ipaddress import ip_address
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric.types import PublicKeyTypes
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat, load_pem_private_key

from kassa.domain.merchants import Mode


class Kind(StrEnum):
    SANDBOX = "sandbox"
    ISO8583 = "iso8583"


SANDBOX_NAME = "sandbox"  # the built-in connection every database has (migration 0022)
DEFAULT_RESPONSE_TIMEOUT_MS = 20_000  # §15: unanswered after this, a request is `unknown`
MAX_RESPONSE_TIMEOUT_MS = 300_000
DEFAULT_SOCKETS = 1
# Sockets per process: each signs on and echoes on its own, and an acquirer counts them against the
# terminal; a few carry any one process's traffic.
MAX_SOCKETS = 8
DEFAULT_DIALECT = "reference"
MAX_SECRET_LENGTH = 16 * 1024  # a PEM private key of RSA 4096 is about 3.3 KiB

# What each setting is called in messages: the ISO 8583 field it fills, where it fills one.
LABELS = {
    "host": "host",
    "port": "port",
    "tls": "TLS",
    "acquiring_institution_id": "acquiring institution id (field 32)",
    "terminal_id": "terminal id (field 41)",
    "card_acceptor_id": "card acceptor id (field 42)",
    "mcc": "merchant category code (field 18)",
    "response_timeout": "response timeout",
    "sockets": "sockets per process",
    "dialect": "dialect",
}
REQUIRED = ("host", "port", "acquiring_institution_id", "terminal_id", "card_acceptor_id", "mcc")
_TEXT_DEFAULTS = {"tls": False, "response_timeout": "20", "sockets": str(DEFAULT_SOCKETS), "dialect": DEFAULT_DIALECT}
_FIXED_LENGTH = {"terminal_id": 8, "card_acceptor_id": 15}

_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")
_HOST_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_DIALECT = re.compile(r"[a-z0-9][a-z0-9_-]{0,31}")
_PRINTABLE_ASCII = re.compile(r"[ -~]+")


class SettingProblem(ValueError):
    """A setting an operator gave that cannot be used; ``field`` names it, the message says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def name_problem(name: str) -> str | None:
    if not _NAME.fullmatch(name):
        return (
            "name must be 1 to 64 lower-case letters, digits, dots, dashes or underscores, "
            "starting with a letter or digit"
        )
    return None


@dataclass(frozen=True, slots=True)
class LinkSettings:
    """How to reach an acquirer's ISO 8583 host and what to tell it: the values are those sent on the wire
    (the ids at their fields' full length)."""

    host: str
    port: int
    tls: bool
    acquiring_institution_id: str
    terminal_id: str
    card_acceptor_id: str
    mcc: str
    response_timeout_ms: int = DEFAULT_RESPONSE_TIMEOUT_MS
    sockets: int = DEFAULT_SOCKETS
    dialect: str = DEFAULT_DIALECT

    def __post_init__(self) -> None:
        _check_host(self.host)
        if not 1 <= self.port <= 65535:
            raise SettingProblem("port", "port must be a whole number from 1 to 65535")
        if not (self.acquiring_institution_id.isascii() and self.acquiring_institution_id.isdigit()) or not (
            1 <= len(self.acquiring_institution_id) <= 11
        ):
            raise SettingProblem(
                "acquiring_institution_id", f"{LABELS['acquiring_institution_id']} must be 1 to 11 digits"
            )
        for field, length in _FIXED_LENGTH.items():
            value = getattr(self, field)
            if len(value) != length or not _PRINTABLE_ASCII.fullmatch(value) or not value.strip():
                raise SettingProblem(field, f"{LABELS[field]} must be {length} printable ASCII characters")
        if not (self.mcc.isascii() and self.mcc.isdigit() and len(self.mcc) == 4):
            raise SettingProblem("mcc", f"{LABELS['mcc']} must be 4 digits")
        if not 0 < self.response_timeout_ms <= MAX_RESPONSE_TIMEOUT_MS:
            raise SettingProblem("response_timeout", _TIMEOUT_RULE)
        if not 1 <= self.sockets <= MAX_SOCKETS:
            raise SettingProblem("sockets", f"{LABELS['sockets']} must be a whole number from 1 to {MAX_SOCKETS}")
        if not _DIALECT.fullmatch(self.dialect):
            raise SettingProblem(
                "dialect", "dialect must be a name of 1 to 32 lower-case letters, digits, dashes or underscores"
            )

    @property
    def response_timeout_seconds(self) -> Decimal:
        return Decimal(self.response_timeout_ms) / 1000

    def as_dict(self) -> dict[str, Any]:
        """The settings as the CLI's JSON and the audit log show them."""
        return asdict(self)


_TIMEOUT_RULE = (
    f"response timeout must be a number of seconds above 0 and at most {MAX_RESPONSE_TIMEOUT_MS // 1000}, "
    "to the millisecond"
)


def _check_host(host: str) -> None:
    try:
        ip_address(host)
        return
    except ValueError:
        pass
    labels = host.removesuffix(".").split(".")
    # A last label of digits alone would be an address written wrong (``10.0.0.300``), not a name.
    if len(host) > 253 or not all(_HOST_LABEL.fullmatch(label) for label in labels) or labels[-1].isdigit():
        raise SettingProblem("host", "host must be a host name or an IP address")


def read_link(values: Mapping[str, str | bool], base: LinkSettings | None = None) -> LinkSettings:
    """Settings from what an operator typed (CLI options, a console form): text, and a bool for ``tls``.
    A setting not given is ``base``'s (an update) or its default (a creation, where REQUIRED ones must be
    given); an optional one given empty is its default. Ids shorter than their field are padded with spaces
    on the right, as the field is sent."""
    given = {**(_as_values(base) if base else _TEXT_DEFAULTS), **values}
    for field in REQUIRED:
        if given.get(field, "") == "":
            raise SettingProblem(field, f"{LABELS[field]} is required")
    text = {name: str(value) or str(_TEXT_DEFAULTS[name]) for name, value in given.items() if name != "tls"}
    return LinkSettings(
        host=text["host"],
        port=_whole(text["port"], "port"),
        tls=bool(given["tls"]),
        acquiring_institution_id=text["acquiring_institution_id"],
        terminal_id=_padded(text["terminal_id"], "terminal_id"),
        card_acceptor_id=_padded(text["card_acceptor_id"], "card_acceptor_id"),
        mcc=text["mcc"],
        response_timeout_ms=_milliseconds(text["response_timeout"]),
        sockets=_whole(text["sockets"], "sockets"),
        dialect=text["dialect"],
    )


def _as_values(link: LinkSettings) -> dict[str, str | bool]:
    values: dict[str, str | bool] = {name: str(value) for name, value in link.as_dict().items()}
    del values["response_timeout_ms"]
    values["response_timeout"] = str(link.response_timeout_seconds)
    values["tls"] = link.tls
    return values


def _whole(text: str, field: str) -> int:
    if not (text.isascii() and text.isdigit()) or len(text) > 9:
        rule = "from 1 to 65535" if field == "port" else f"from 1 to {MAX_SOCKETS}"
        raise SettingProblem(field, f"{LABELS[field]} must be a whole number {rule}")
    return int(text)


def _padded(text: str, field: str) -> str:
    length = _FIXED_LENGTH[field]
    if len(text) > length or not _PRINTABLE_ASCII.fullmatch(text) or not text.strip():
        raise SettingProblem(
            field,
            f"{LABELS[field]} must be 1 to {length} printable ASCII characters (a shorter one is padded with spaces)",
        )
    return text.ljust(length)


def _milliseconds(text: str) -> int:
    try:
        milliseconds = Decimal(text) * 1000 if len(text) <= 12 else Decimal("NaN")
    except InvalidOperation:
        raise SettingProblem("response_timeout", _TIMEOUT_RULE) from None
    if not milliseconds.is_finite() or milliseconds != milliseconds.to_integral_value():
        raise SettingProblem("response_timeout", _TIMEOUT_RULE)
    return int(milliseconds)


def secret_problem(secret: str) -> str | None:
    """A secret (a TLS client certificate with its private key, a MAC key) as read from a file or standard
    input."""
    if not secret.strip():
        return "the secret is empty"
    if len(secret) > MAX_SECRET_LENGTH:
        return f"the secret is longer than {MAX_SECRET_LENGTH // 1024} KiB"
    return client_certificate_problem(secret) if holds_client_certificate(secret) else None


def holds_client_certificate(secret: str) -> bool:
    """Whether a secret is meant as the link's TLS client certificate (it holds one) rather than another key."""
    return _CERTIFICATE in secret


def client_certificate_problem(secret: str) -> str | None:
    """What keeps a secret from being a TLS client certificate, or None: it needs the certificate (chain) and
    the first certificate's private key, unencrypted, both PEM."""
    try:
        certificate = x509.load_pem_x509_certificates(secret.encode())[0]
        key = load_pem_private_key(secret.encode(), password=None)
    except (ValueError, TypeError):
        return "a client certificate must come with its private key, unencrypted, both PEM in the one secret"
    if _public(certificate.public_key()) != _public(key.public_key()):
        return "the secret's private key is not the key of its (first) certificate"
    return None


_CERTIFICATE = "-----BEGIN CERTIFICATE-----"


def _public(key: PublicKeyTypes) -> bytes:
    return key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)


@dataclass(frozen=True, slots=True)
class Connection:
    """An acquirer connection: the sandbox, or an ISO 8583 link with its settings (``link``). Whether a
    secret is sealed for it is known here; the secret itself is opened only where it is used."""

    id: int
    name: str
    kind: Kind
    link: LinkSettings | None
    enabled: bool = True
    has_secret: bool = False

    def __post_init__(self) -> None:
        if (self.kind is Kind.ISO8583) != (self.link is not None):
            needs = "needs its link settings" if self.link is None else "has no settings"
            raise ValueError(f"a connection of kind {self.kind.value} {needs}")

    def as_dict(self) -> dict[str, Any]:
        """What the CLI's JSON and the audit log show of it: whether a secret is set, never the secret."""
        shown = {"name": self.name, "kind": self.kind.value, "enabled": self.enabled, "secret": self.has_secret}
        return {**shown, **(self.link.as_dict() if self.link else {})}


def changes(
    before: Connection, after: Connection, *, new_secret: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """What a change of a connection changed, before and after, as its audit entry records it; a new
    secret is named as such (both sides say only "set"), never shown."""
    was, now = before.as_dict(), after.as_dict()
    names = [name for name in now if was.get(name) != now[name] or (new_secret and name == "secret")]
    shown_after = {name: "new" if new_secret and name == "secret" else now[name] for name in names}
    return {name: was.get(name) for name in names}, shown_after


def route_problem(mode: Mode, route: Sequence[Connection]) -> str | None:
    """What is wrong with ``route`` as the ordered connections of an endpoint in ``mode``, or None.

    A connection appears once; the sandbox serves sandbox endpoints only; an endpoint needs a connection it
    can route to (a disabled one is skipped, but may stay listed for when it is enabled again), and a live
    endpoint an ISO 8583 one."""
    seen: set[str] = set()
    for connection in route:
        if connection.name in seen:
            return f"connection {connection.name} is listed twice"
        seen.add(connection.name)
        if connection.kind is Kind.SANDBOX and mode is Mode.LIVE:
            return f"connection {connection.name} is a sandbox: it serves sandbox endpoints only"
    if serving(mode, route):
        return None
    if mode is Mode.LIVE:
        return "a live endpoint needs at least one enabled ISO 8583 connection"
    return "an endpoint needs at least one enabled connection"


def serving(mode: Mode, route: Sequence[Connection]) -> tuple[Connection, ...]:
    """The connections of an endpoint's route in ``mode`` that payments may go to, in its order: the enabled
    ones, and for a live endpoint only ISO 8583 ones (nothing real may be approved by the sandbox)."""
    return tuple(c for c in route if c.enabled and (mode is Mode.SANDBOX or c.kind is Kind.ISO8583))
