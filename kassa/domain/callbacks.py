"""What a callback says (CONTRACT §10) and when a failed one is tried again."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kassa.domain import money, urls
from kassa.domain.order_view import CardView, OrderHead, TransactionView
from kassa.signing.control import CALLBACK, control_of


def callback_fields(*, order: OrderHead, tx: TransactionView, card: CardView | None, descriptor: str) -> dict[str, str]:
    """The query fields of a callback (and of the final redirect) about ``tx``, ``control`` aside."""
    cur = money.currency(tx.currency)
    return {
        "status": tx.status.value,
        "merchant_order": order.client_orderid,
        "client_orderid": order.client_orderid,
        "orderid": str(order.id),
        "type": tx.reported_type,
        "amount": money.format_amount(tx.amount, cur),
        "currency": cur.code,
        "descriptor": descriptor,
        "error_code": tx.error_code or "",
        "error_message": tx.error_message or "",
        "name": card.holder_name if card else "",
        "email": order.email or "",
        "approval-code": tx.approval_code or "",
        "last-four-digits": card.last_four if card else "",
        "bin": card.bin if card else "",
        "card-type": (card.brand or "") if card else "",
        "processor-rrn": tx.processor_rrn or "",
        "processor-tx-id": tx.processor_tx_id or "",
        "merchantdata": order.merchant_data or "",
    }


def signed(fields: Mapping[str, str], control_key: str) -> dict[str, str]:
    values = {"status": fields["status"], "orderid": fields["orderid"], "client_orderid": fields["client_orderid"]}
    return {**fields, "control": control_of([CALLBACK.message(values)], control_key)}


def retry_delay_ms(attempts: int, base_seconds: float, factor: float) -> int:
    """Delay after the ``attempts``-th failed attempt: growing geometrically. The defaults (15 s, 1.435)
    spread 30 attempts over about 14 days."""
    return int(base_seconds * factor ** (attempts - 1) * 1000)


@dataclass(frozen=True, slots=True)
class Outage:
    """A destination's run of failures: how many times in a row it could not be reached (attempts that were
    in flight together count once), when the last of them ended, and when one callback may try it again.
    A destination with ``failures`` gets one attempt at a time, a probe, from ``probe_at_ms`` on."""

    failures: int = 0
    failed_at_ms: int = 0
    probe_at_ms: int = 0


REACHABLE = Outage()
# Answers that speak for the server rather than for the callback: it is down, overloaded or behind a proxy
# whose upstream is gone. Any other answer, 500 included, shows a receiver that is there.
_UNAVAILABLE = frozenset({429, 502, 503, 504})


def unreachable(http_status: int | None, error: str | None) -> bool:
    """Whether an attempt's outcome says its destination is down: no answer (refused, timed out, no route,
    an address refused by the SSRF guard) or an answer of ``_UNAVAILABLE``. A URL that cannot be sent says
    nothing of its destination (all such URLs share one key)."""
    if http_status is None:
        return not (error or "").startswith("unsendable")
    return http_status in _UNAVAILABLE


@dataclass(frozen=True, slots=True)
class RetrySchedule:
    """When a failed callback is tried again, and when a destination that could not be reached is."""

    base_seconds: float
    factor: float
    max_attempts: int

    def retry_at_ms(self, attempts: int, ended_ms: int) -> int | None:
        """When a callback whose ``attempts``-th attempt failed at ``ended_ms`` is tried again; None when
        that was its last."""
        if attempts >= self.max_attempts:
            return None
        return ended_ms + retry_delay_ms(attempts, self.base_seconds, self.factor)

    def outage_after(self, outage: Outage, *, reached: bool, started_ms: int, ended_ms: int) -> Outage:
        """The destination's outage once an attempt that started at ``started_ms`` ended. Reached: over.
        Not reached: one failure more, and the next probe as far off as a callback's next attempt after as
        many failures (the schedule's last delay at most, so a destination is never given up); unless the
        attempt started before the last failure ended, which it then shares."""
        if reached:
            return REACHABLE
        if outage.failures and started_ms < outage.failed_at_ms:
            return outage
        failures = outage.failures + 1
        delay = retry_delay_ms(max(1, min(failures, self.max_attempts - 1)), self.base_seconds, self.factor)
        return Outage(failures, ended_ms, ended_ms + delay)


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
