"""OAuth 1.0a requests as a merchant's code signs them: with oauthlib's client, never with Kassa's own
verifier, so that the tests prove the gateway against an independent signer.

``signed_post(url, fields, login=..., private_key_pem=...)`` posts a request signed with RSA-SHA256
(``control_key=...`` and ``method="HMAC-SHA1"`` for HMAC), the ``oauth_*`` parameters in the
Authorization header, the body or both (``where``). ``key_pair()`` gives RSA keys (cached per size: a
2048-bit key takes a tenth of a second to make); ``register_key`` stores a public key for a merchant as
``kassa key add`` does (tests/ops covers the command itself), but without its check that no other merchant
has the key: many tests' merchants share ``key_pair()``'s."""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Literal
from urllib.parse import urlencode

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from oauthlib.oauth1 import SIGNATURE_TYPE_AUTH_HEADER, SIGNATURE_TYPE_BODY, Client
from oauthlib.oauth1.rfc5849.utils import parse_authorization_header, unescape

from tests.support.gateway import JSON_ACCEPT, TLS, Gateway

Fields = Mapping[str, str] | Sequence[tuple[str, str]]
Where = Literal["header", "body", "both"]
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def key_pair(bits: int = 2048, which: int = 0) -> tuple[str, str]:
    """(private PEM, public SPKI PEM) of an RSA key; ``which`` tells apart keys of one size."""
    return _key_pair(bits, which)


@functools.cache  # behind ``key_pair``: the cache tells ``f()`` and ``f(2048, 0)`` apart
def _key_pair(bits: int, which: int) -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


@functools.cache
def _loaded(private_key_pem: str) -> Any:
    """The key object oauthlib signs with (through PyJWT, which takes one as it is): given the PEM, it loads
    and checks the key again for every request, 40 ms of CPU, most of an RSA-signed test's time."""
    return serialization.load_pem_private_key(private_key_pem.encode(), password=None)


def with_exponent(public_pem: str, exponent: int) -> str:
    """The SPKI PEM of an RSA public key with ``public_pem``'s modulus and the public exponent ``exponent``."""
    key = serialization.load_pem_public_key(public_pem.encode())
    assert isinstance(key, rsa.RSAPublicKey)
    public = rsa.RSAPublicNumbers(exponent, key.public_numbers().n).public_key()
    return public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def sign(
    url: str,
    fields: Fields,
    *,
    login: str,
    method: str = "RSA-SHA256",
    private_key_pem: str | None = None,
    control_key: str | None = None,
    where: Where = "header",
    timestamp: int | None = None,
    nonce: str | None = None,
) -> tuple[dict[str, str], str]:
    """The headers (Authorization when ``where`` is header or both) and the form body of a signed POST."""
    body = urlencode(list(fields.items()) if isinstance(fields, Mapping) else list(fields))
    client = Client(
        login,
        client_secret=control_key,
        signature_method=method,
        signature_type=SIGNATURE_TYPE_BODY if where == "body" else SIGNATURE_TYPE_AUTH_HEADER,
        rsa_key=None if private_key_pem is None else _loaded(private_key_pem),
        timestamp=str(int(time.time()) if timestamp is None else timestamp),
        nonce=nonce or uuid.uuid4().hex,
    )
    _, headers, signed_body = client.sign(url, http_method="POST", body=body, headers=FORM)
    if where == "both":  # the original gateway's examples repeat the header's parameters in the body
        protocol = [(name, unescape(value)) for name, value in parse_authorization_header(headers["Authorization"])]
        signed_body = "&".join(filter(None, (signed_body, urlencode(protocol))))
    return dict(headers), signed_body


def signed_post(
    url: str,
    fields: Fields,
    *,
    login: str,
    method: str = "RSA-SHA256",
    private_key_pem: str | None = None,
    control_key: str | None = None,
    where: Where = "header",
    timestamp: int | None = None,
    nonce: str | None = None,
    headers: Mapping[str, str] = JSON_ACCEPT,
) -> httpx.Response:
    """POSTs ``fields`` to ``url`` (the full address, as the merchant signs it) signed with oauthlib."""
    signed_headers, body = sign(
        url,
        fields,
        login=login,
        method=method,
        private_key_pem=private_key_pem,
        control_key=control_key,
        where=where,
        timestamp=timestamp,
        nonce=nonce,
    )
    return httpx.post(url, content=body, headers={**headers, **signed_headers}, timeout=30, verify=TLS)


def register_key(gateway: Gateway, login: str, public_pem: str, mode: str = "sandbox") -> int:
    """Stores ``public_pem`` as a key of merchant ``login`` (the rows ``kassa key add`` writes, whoever else
    has the key); its id."""
    from kassa.clock import now_ms
    from kassa.domain.merchants import Mode
    from kassa.signing.rsa_keys import read_public_key
    from kassa.storage import merchant_keys, merchants
    from kassa.storage.database import open_database

    key = read_public_key(public_pem)

    def add(conn: Any) -> int:
        return merchant_keys.add(conn, merchants.merchant_id(conn, login), Mode(mode), key, now_ms()).id

    db = open_database(gateway.database_url, threads=1)
    try:
        return db.write_sync(add)
    finally:
        db.close()


def revoke_key(gateway: Gateway, key_id: int) -> None:
    """Revokes a key as ``kassa key revoke`` does."""
    from kassa.clock import now_ms
    from kassa.storage import merchant_keys
    from kassa.storage.database import open_database

    db = open_database(gateway.database_url, threads=1)
    try:
        db.write_sync(lambda conn: merchant_keys.revoke(conn, key_id, now_ms()))
    finally:
        db.close()
