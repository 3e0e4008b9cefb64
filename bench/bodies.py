"""Signed request bodies, generated before a run so the load generator only replays them."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

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
