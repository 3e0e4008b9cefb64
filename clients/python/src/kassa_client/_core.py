"""What the sync and async clients share: building a signed request from an operation's row and the
caller's fields, reading an answer into its type or an exception, and when a failed try may be repeated.
No I/O here: the clients only send and sleep."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal
from urllib.parse import unquote_plus, urlencode

import httpx

from kassa_client import money
from kassa_client.errors import BY_CODE, KassaError, ServerError, ValidationError
from kassa_client.models import Answer, parse
from kassa_client.operations import Operation
from kassa_client.params import HYPHENATED
from kassa_client.signing import Formula, Signer, authorization_header

Format = Literal["json", "classic"]
JSON_TYPE = "application/vnd.pay+json"
_REFUSALS = frozenset({"validation-error", "error"})
_AMOUNT_FIELDS = ("amount", "vat-amount")


@dataclass(frozen=True, slots=True)
class Config:
    base_url: str  # scheme, host, port and prefix: "https://gate.example/paynet"
    endpoint_id: int | str
    login: str
    control_key: str
    signer: Signer
    format: Format = "json"
    group: bool = False  # endpoint_id names an endpoint group: the path's group form
    max_retries: int = 2
    backoff: float = 0.5  # seconds before the first retry; doubled each time, capped at 8, with jitter
    user_agent: str = "kassa-client-python/0.1"


@dataclass(frozen=True, slots=True)
class Prepared:
    url: str
    headers: dict[str, str]
    body: bytes
    retryable: bool  # a read, or a write the caller gave an Idempotency-Key


def wire_fields(op: Operation, config: Config, fields: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The body's pairs: names in the contract's spelling, amounts as the currency writes them."""
    given = dict(fields)
    given.pop("idempotency_key", None)
    extra = given.pop("extra", None) or {}
    currency = str(given.get("currency", ""))
    minor = given.pop("amount_minor", None)
    if minor is not None:
        if "amount" in given:
            raise TypeError("pass amount or amount_minor, not both")
        given["amount"] = money.from_minor(int(minor), _needs(currency))
    pairs: list[tuple[str, str]] = [("login", config.login)] if op.login else []
    for name, value in given.items():
        wire = name.replace("_", "-")
        wire = wire if wire in HYPHENATED else name
        pairs.append((wire, _text(wire, value, currency)))
    pairs += [(str(k), str(v)) for k, v in extra.items()]
    if isinstance(op.signing, Formula):
        pairs.append(("control", op.signing.control(_signed_values(config, pairs), config.control_key)))
    return pairs


def _needs(currency: str) -> str:
    if not currency:
        raise TypeError("an amount needs its currency (its exponent decides the minor units)")
    return currency


def _text(name: str, value: Any, currency: str) -> str:
    if name in _AMOUNT_FIELDS:
        return money.wire(value, _needs(currency))
    if name == "enumerate_amounts" and not isinstance(value, str):
        return ",".join(money.wire(v, _needs(currency)) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        raise TypeError(f"{name}: floats are not sent; use Decimal or str")
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def _signed_values(config: Config, pairs: list[tuple[str, str]]) -> dict[str, str]:
    """The values a control formula reads: the request's, amounts in minor units, and who signs."""
    values = dict(pairs)
    for name in _AMOUNT_FIELDS:
        if values.get(name):
            values[name] = str(money.to_minor(values[name], values.get("currency", "")))
    values.update(endpoint=str(config.endpoint_id), login=config.login)
    return values


def prepare(op: Operation, config: Config, fields: Mapping[str, Any]) -> Prepared:
    """The request of one try (OAuth signs each try afresh: a nonce is accepted once)."""
    pairs = wire_fields(op, config, fields)
    where = "group/" if config.group else ""
    url = f"{config.base_url.rstrip('/')}{op.path}/{where}{config.endpoint_id}"
    headers = {"Content-Type": "application/x-www-form-urlencoded", "User-Agent": config.user_agent}
    if config.format == "json" or op.v4:
        headers["Accept"] = JSON_TYPE
    else:
        headers["Accept"] = "text/html"
    if not isinstance(op.signing, Formula):
        headers["Authorization"] = authorization_header(config.signer.oauth_params(op.signing, url, pairs))
    key = fields.get("idempotency_key")
    if key is not None:
        headers["Idempotency-Key"] = str(key)
    return Prepared(url, headers, urlencode(pairs).encode(), retryable=op.reads or key is not None)


def read(op: Operation, response: httpx.Response) -> Answer:
    """The answer as ``op``'s type; raises the refusal's ``KassaError``, ``ServerError`` for anything
    that is not the contract's."""
    values = decode(response)
    if values is None:
        raise ServerError(
            f"HTTP {response.status_code}: not an answer of the API: {response.text[:200]!r}",
            http_status=response.status_code,
        )
    if values.get("type") in _REFUSALS or ("error-code" in values and response.status_code >= 400):
        raise refusal(values, response)
    if response.status_code >= 400:
        raise ServerError(f"HTTP {response.status_code}", http_status=response.status_code, raw=values)
    return parse(op.answer, values)


def decode(response: httpx.Response) -> dict[str, str] | None:
    """A JSON or a classic (``key=value\\n&...``) body as a flat mapping; None when it is neither."""
    kind = response.headers.get("content-type", "")
    try:
        if "json" in kind:
            loaded = json.loads(response.content)
            if not isinstance(loaded, dict):
                return None
            return {str(k): "" if v is None else str(v) for k, v in loaded.items()}
        if kind.startswith("text/html") and b"=" in response.content and b"<" not in response.content[:1]:
            return classic(response.text)
    except ValueError:
        return None
    return None


def classic(text: str) -> dict[str, str]:
    pairs = (part.partition("=") for part in text.split("&"))
    return {name.strip(): unquote_plus(value.removesuffix("\n")) for name, _, value in pairs if name.strip()}


def refusal(values: Mapping[str, str], response: httpx.Response) -> KassaError:
    code = values.get("error-code", "")
    message = values.get("error-message", "")
    kind = BY_CODE.get(code, KassaError)
    # CONTRACT §12: a field's refusal (code 1) names the field first in its message.
    field = message.split(" ", 1)[0] if kind is ValidationError and message else None
    retry_after = response.headers.get("retry-after")
    return kind(
        message,
        code=code,
        field=field,
        serial_number=values.get("serial-number", ""),
        http_status=response.status_code,
        merchant_order_id=values.get("merchant-order-id", ""),
        retry_after=float(retry_after) if retry_after and retry_after.isdigit() else None,
        raw=values,
    )


def retry_delay(prepared: Prepared, config: Config, attempt: int, outcome: httpx.Response | Exception) -> float | None:
    """Seconds to wait before try ``attempt + 1``, or None when the outcome stands: only retryable
    requests, only after a network failure, a 5xx or a 429, never after a refusal of the request itself."""
    if not prepared.retryable or attempt >= config.max_retries:
        return None
    if isinstance(outcome, httpx.Response):
        if outcome.status_code != 429 and outcome.status_code < 500:
            return None
        after = outcome.headers.get("retry-after", "")
        if after.isdigit():
            return min(float(after), 30.0)
    elif not isinstance(outcome, httpx.TransportError):
        return None
    return float(min(config.backoff * 2**attempt, 8.0) * (0.5 + random.random() / 2))  # noqa: S311 - jitter
