"""What a callback says (CONTRACT §10) and when a failed one is tried again."""

from __future__ import annotations

from collections.abc import Mapping

from kassa.domain import money, urls
from kassa.domain.lifecycle import Stage, status_of
from kassa.domain.transactions import TxType, reported
from kassa.signing.control import CALLBACK, control_of


def callback_fields(
    *,
    order: Mapping[str, object],
    tx: Mapping[str, object],
    card: Mapping[str, object] | None,
    descriptor: str,
) -> dict[str, str]:
    """The query fields of a callback (and of the final redirect), ``control`` aside."""
    cur = money.currency(str(tx["currency"]))
    card = card or {}
    fields = {
        "status": status_of(Stage(str(tx["stage"]))).value,
        "merchant_order": str(order["client_orderid"]),
        "client_orderid": str(order["client_orderid"]),
        "orderid": str(order["id"]),
        "type": reported(TxType(str(tx["tx_type"]))),
        "amount": money.format_amount(int(str(tx["amount"])), cur),
        "currency": cur.code,
        "descriptor": descriptor,
        "error_code": str(tx["error_code"] or ""),
        "error_message": str(tx["error_message"] or ""),
        "name": str(card.get("holder_name") or ""),
        "email": str(order["email"] or ""),
        "approval-code": str(tx["approval_code"] or ""),
        "last-four-digits": str(card.get("last_four") or ""),
        "bin": str(card.get("bin") or ""),
        "card-type": str(card.get("brand") or ""),
        "processor-rrn": str(tx["processor_rrn"] or ""),
        "processor-tx-id": str(tx["processor_tx_id"] or ""),
        "merchantdata": str(order["merchant_data"] or ""),
    }
    return fields


def signed(fields: Mapping[str, str], control_key: str) -> dict[str, str]:
    values = {"status": fields["status"], "orderid": fields["orderid"], "client_orderid": fields["client_orderid"]}
    return {**fields, "control": control_of([CALLBACK.message(values)], control_key)}


def retry_delay_ms(attempts: int, base_seconds: float, factor: float) -> int:
    """Delay after the ``attempts``-th failed attempt: growing geometrically. The defaults (15 s, 1.435)
    spread 30 attempts over about 14 days."""
    return int(base_seconds * factor ** (attempts - 1) * 1000)


def destination(url: str) -> str:
    """Where a callback goes, as the delivery limits count it: host and port as the sender connects
    (``shop.example:443``). An address no request can be made to gets one key of its own, so its attempts,
    which fail at once, are limited together."""
    try:
        parsed = urls.sendable(url)
    except urls.UrlError:
        return "unsendable"
    return f"{parsed.raw_host}:{parsed.port}"[:255]


EXCERPT_CHARS = 200


def response_excerpt(body: bytes) -> str:
    """The start of a receiver's answer as operators see it: decoded as UTF-8 whatever it is (undecodable
    bytes become U+FFFD), whitespace runs as one space, other control and unprintable characters dropped,
    at most ``EXCERPT_CHARS`` characters."""
    text = body.decode("utf-8", errors="replace")
    shown = "".join(ch if ch.isprintable() else " " if ch.isspace() else "" for ch in text)
    return " ".join(shown.split())[:EXCERPT_CHARS]
