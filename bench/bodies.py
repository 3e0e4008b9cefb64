"""Signed request bodies, generated before a run so the load generator only replays them."""

from __future__ import annotations

import base64
import hashlib
import hmac
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

from kassa.api.schemas import CLIENT_ORDERID_MAX
from kassa.signing import oauth

SALE_AMOUNT = "10.42"
SALE_AMOUNT_MINOR = "1042"
SALE_EMAIL = "cardholder@example.com"


@dataclass(frozen=True)
class MerchantKeys:
    """What a merchant needs to sign requests: its login, control key and endpoint."""

    login: str
    control_key: str
    endpoint_id: int


def sha1_hex(*parts: object) -> str:
    return hashlib.sha1("".join(str(part) for part in parts).encode(), usedforsecurity=False).hexdigest()


def sale_fields(merchant: MerchantKeys, client_orderid: str) -> dict[str, str]:
    """A sale the sandbox approves (CVV2 123), signed per CONTRACT §4."""
    control = sha1_hex(merchant.endpoint_id, client_orderid, SALE_AMOUNT_MINOR, SALE_EMAIL, merchant.control_key)
    return {
        "client_orderid": client_orderid,
        "order_desc": "Benchmark order",
        "amount": SALE_AMOUNT,
        "currency": "USD",
        "email": SALE_EMAIL,
        "ipaddress": "203.0.113.7",
        "credit_card_number": "4111111111111111",
        "card_printed_name": "Jane Doe",
        "expire_month": "12",
        "expire_year": "2030",
        "cvv2": "123",
        "control": control,
    }


def refused_fields(merchant: MerchantKeys) -> dict[str, str]:
    """A sale's fields refused at the first one checked: a client_orderid one character too long."""
    return sale_fields(merchant, "r" * (CLIENT_ORDERID_MAX + 1))


def payout_fields(client_orderid: str) -> dict[str, str]:
    """A payout to a card the sandbox approves (what ``oauth_bodies`` signs)."""
    return {
        "client_orderid": client_orderid,
        "order_desc": "Benchmark payout",
        "amount": SALE_AMOUNT,
        "currency": "USD",
        "ipaddress": "203.0.113.7",
        "credit_card_number": "4111111111111111",
        "card_printed_name": "Jane Doe",
        "expire_month": "12",
        "expire_year": "2030",
    }


def sale_body(merchant: MerchantKeys, client_orderid: str) -> str:
    return urlencode(sale_fields(merchant, client_orderid))


def sale_bodies(merchant: MerchantKeys, prefix: str, count: int) -> Iterator[str]:
    """``count`` sales with distinct client_orderids ``{prefix}-{n}``."""
    return (sale_body(merchant, f"{prefix}-{n}") for n in range(count))


def callback_sale_bodies(merchant: MerchantKeys, prefix: str, count: int, callback_url: str) -> Iterator[str]:
    """Like ``sale_bodies`` with a ``server_callback_url``; it is not part of the control formula (§4)."""
    for n in range(count):
        fields = sale_fields(merchant, f"{prefix}-{n}")
        fields["server_callback_url"] = callback_url
        yield urlencode(fields)


def status_body(merchant: MerchantKeys, orderid: str) -> str:
    """A status request by orderid alone: control = sha1(login + "" + orderid + key)."""
    control = sha1_hex(merchant.login, "", orderid, merchant.control_key)
    return urlencode({"login": merchant.login, "orderid": orderid, "control": control})


def write_lines(path: Path, bodies: Iterable[str]) -> int:
    """One URL-encoded body per line (URL encoding leaves no newline inside a body)."""
    count = 0
    with path.open("w", encoding="ascii") as out:
        for body in bodies:
            out.write(body)
            out.write("\n")
            count += 1
    return count


@dataclass(frozen=True)
class OAuthSigner:
    """Signs bodies as an OAuth 1.0a client would, the ``oauth_*`` parameters in the body (so that the
    load generator replays plain bodies): HMAC-SHA1 with the control key, or RSA-SHA256 with ``rsa_key``.
    The base string is Kassa's own (``kassa.signing.oauth``): the tests prove it against oauthlib, and
    oauthlib loads the private key again for every signature (26 ms each)."""

    login: str
    control_key: str
    rsa_key: RSAPrivateKey | None = None

    def body(self, url: str, fields: dict[str, str], nonce: str, timestamp: int) -> str:
        protocol = {
            "oauth_consumer_key": self.login,
            "oauth_nonce": nonce,
            "oauth_signature_method": oauth.HMAC_SHA1 if self.rsa_key is None else oauth.RSA_SHA256,
            "oauth_timestamp": str(timestamp),
            "oauth_version": "1.0",
        }
        base = oauth.base_string("POST", url, [*fields.items(), *protocol.items()]).encode()
        if self.rsa_key is None:
            digest = hmac.new(f"{self.control_key}&".encode(), base, hashlib.sha1).digest()
        else:
            digest = self.rsa_key.sign(base, padding.PKCS1v15(), hashes.SHA256())
        return urlencode({**fields, **protocol, "oauth_signature": base64.b64encode(digest).decode()})


def oauth_bodies(
    signer: OAuthSigner, url: str, prefix: str, count: int, fields: Sequence[dict[str, str]] = ()
) -> Iterator[str]:
    """``count`` bodies with distinct nonces ``{prefix}-{n}``, signed now: ``fields`` in turn, else
    payouts to a card with distinct client_orderids."""
    now = int(time.time())
    for n in range(count):
        signed = fields[n % len(fields)] if fields else payout_fields(f"{prefix}-{n}")
        yield signer.body(url, signed, f"{prefix}-{n}", now)


def card_ref_fields(client_orderid: str, orderid: str) -> dict[str, str]:
    """create-card-ref's fields (v2 and v4): the approved order to keep the card of."""
    return {"client_orderid": client_orderid, "orderid": orderid}


def card_ref_bodies(merchant: MerchantKeys, orders: Sequence[tuple[str, str]], count: int) -> Iterator[str]:
    """``count`` v2 create-card-ref bodies, control-signed, of the (client_orderid, orderid) ``orders`` in
    turn: after the first round each call answers the reference made before, as a v4 call signed with
    OAuth does (CONTRACT §4: sha1(login + client_orderid + orderid + key))."""
    bodies = [
        urlencode(
            {
                "login": merchant.login,
                **card_ref_fields(client_orderid, orderid),
                "control": sha1_hex(merchant.login, client_orderid, orderid, merchant.control_key),
            }
        )
        for client_orderid, orderid in orders
    ]
    return (bodies[n % len(bodies)] for n in range(count))
