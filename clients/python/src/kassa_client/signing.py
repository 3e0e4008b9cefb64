"""The signatures of CONTRACT §4, written from its text: the SHA-1 ``control`` of each formula, and OAuth
1.0a (RFC 5849) with HMAC-SHA1 or RSA-SHA256 (PKCS#1 v1.5)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa


@dataclass(frozen=True, slots=True)
class Formula:
    """The names of the values concatenated before the control key; a value not sent counts as ``""``.
    ``endpoint`` and ``login`` are the client's, the rest the request's fields (amounts in minor units)."""

    parts: tuple[str, ...]

    def control(self, values: Mapping[str, str], key: str) -> str:
        return sha1_hex("".join(values.get(part, "") for part in self.parts) + key)


SALE_LIKE = Formula(("endpoint", "client_orderid", "amount", "email"))
VERIFY_LIKE = Formula(("endpoint", "client_orderid", "email"))
CAPTURE_LIKE = Formula(("login", "client_orderid", "orderid", "amount", "currency"))
ORDER_REF = Formula(("login", "client_orderid", "orderid"))
CARD_INFO = Formula(("login", "cardrefid"))
REBILL = Formula(("login", "client_orderid", "cardrefid", "amount", "currency"))
TRANSFER_BY_REF = Formula(
    ("login", "client_orderid", "source-card-ref-id", "destination-card-ref-id", "amount", "currency")
)
BANK_WIRE = Formula(
    ("endpoint", "client_orderid", "payer-fullname", "recipient-name", "recipient-account-number",
     "recipient-bank-bic", "amount", "vat-amount", "currency")
)  # fmt: skip
CALLBACK = Formula(("status", "orderid", "client_orderid"))
REDIRECT = Formula(("status", "orderid", "merchant_order"))  # CONTRACT §18's spelling of the final redirect


def sha1_hex(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def verify_control(formula: Formula, values: Mapping[str, str], key: str) -> bool:
    """Whether ``values["control"]`` is the formula's signature, compared in constant time."""
    given = values.get("control", "")
    return hmac.compare_digest(formula.control(values, key).encode(), given.lower().encode())


def percent_encode(text: str) -> str:
    """RFC 3986 encoding of UTF-8: only ``A-Z a-z 0-9 - . _ ~`` stay as they are (a space is ``%20``)."""
    return quote(text, safe="-._~")


def base_url(url: str) -> str:
    """RFC 5849 §3.4.1.2: scheme and host in lower case, no default port, the path as sent, no query."""
    parts = urlsplit(url)
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if ":" in host:  # an IPv6 address keeps its brackets
        host = f"[{host}]"
    default = {"http": 80, "https": 443}.get(scheme)
    port = "" if parts.port in (None, default) else f":{parts.port}"
    return f"{scheme}://{host}{port}{parts.path}"


def base_string(method: str, url: str, params: Iterable[tuple[str, str]]) -> str:
    """RFC 5849 §3.4.1: ``METHOD&enc(url)&enc(params)``, params encoded, sorted by name then value."""
    pairs = sorted((percent_encode(name), percent_encode(value)) for name, value in params)
    normalized = "&".join(f"{name}={value}" for name, value in pairs)
    return "&".join((method.upper(), percent_encode(base_url(url)), percent_encode(normalized)))


class Signer:
    """Signs OAuth requests as one merchant: ``oauth_consumer_key`` is the login; HMAC-SHA1's key is the
    control key and ``&`` (no token); RSA-SHA256's is the private key, parsed once here."""

    def __init__(
        self,
        login: str,
        control_key: str | None = None,
        private_key: rsa.RSAPrivateKey | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.login = login
        self.control_key = control_key
        self.private_key = private_key
        self.clock = clock  # oauth_timestamp's source: a sandbox whose test clock moved signs by its time

    def signature(self, method: str, base: str) -> str:
        if method == "HMAC-SHA1":
            if self.control_key is None:
                raise ValueError("HMAC-SHA1 needs the control key")
            key = (self.control_key + "&").encode()  # CONTRACT §4: the control key as written, then "&"
            return base64.b64encode(hmac.digest(key, base.encode(), "sha1")).decode()
        if self.private_key is None:
            raise ValueError("RSA-SHA256 operations (v4) need the merchant's private key")
        signed = self.private_key.sign(base.encode(), padding.PKCS1v15(), hashes.SHA256())
        return base64.b64encode(signed).decode()

    def oauth_params(
        self,
        method: str,
        url: str,
        body: Sequence[tuple[str, str]],
        *,
        timestamp: int | None = None,
        nonce: str | None = None,
    ) -> dict[str, str]:
        """The ``oauth_*`` parameters, ``oauth_signature`` included, for a POST of ``body`` to ``url``."""
        params = {
            "oauth_consumer_key": self.login,
            "oauth_nonce": nonce or secrets.token_hex(16),
            "oauth_signature_method": method,
            "oauth_timestamp": str(int(self.clock()) if timestamp is None else timestamp),
            "oauth_version": "1.0",
        }
        base = base_string("POST", url, [*body, *params.items()])
        params["oauth_signature"] = self.signature(method, base)
        return params


def authorization_header(params: Mapping[str, str]) -> str:
    return "OAuth " + ", ".join(f'{percent_encode(k)}="{percent_encode(v)}"' for k, v in params.items())


def load_private_key(pem: str | bytes | Path, password: bytes | None = None) -> rsa.RSAPrivateKey:
    """An RSA private key from PEM text, bytes or a file path."""
    data = pem.read_bytes() if isinstance(pem, Path) else pem.encode() if isinstance(pem, str) else pem
    key = serialization.load_pem_private_key(data, password=password)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError("the private key is not an RSA key")
    return key
