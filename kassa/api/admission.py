"""Whether a client may ask at all: its address's and its merchant's request rates (CONTRACT §12, code
11), the merchant's allowed networks (code 3), and whether the gateway takes new work now (code 11,
overload). Checked before the body is read and the signature computed, so a refusal costs a fraction of
what the request would."""

from __future__ import annotations

from starlette.types import Scope

from kassa import metrics
from kassa.api.errors import ApiError, Code
from kassa.domain.merchants import Endpoint
from kassa.engine.overload import LoadShedder
from kassa.ratelimit import Limits, retry_after


def client_host(scope: Scope) -> str | None:
    """The client's address: the socket's peer, or what a trusted proxy put in ``X-Forwarded-For``
    (uvicorn has replaced the peer with it when ``KASSA_TRUSTED_PROXIES`` lists the proxy)."""
    client = scope.get("client")
    return client[0] if client else None


def rate_limited(wait_ms: int, reason: str) -> ApiError:
    """``reason``: whose rate, ``address_rate`` or ``merchant_rate``, as counted."""
    metrics.refused(reason)
    return ApiError(Code.RATE, "too many requests", http_status=429, headers={"Retry-After": retry_after(wait_ms)})


def shed(shedder: LoadShedder) -> ApiError:
    """New work refused for overload (``engine.overload``): 503 rather than a rate limit's 429, since the
    client did nothing wrong, with the same code 11 and ``Retry-After``, so a merchant's retry applies."""
    shedder.refused()
    return ApiError(
        Code.RATE,
        "the gateway is overloaded: nothing was created, try again after Retry-After seconds",
        http_status=503,
        headers={"Retry-After": shedder.retry_after},
    )


def admit(limits: Limits, endpoint: Endpoint, host: str | None) -> None:
    """The merchant's allowed networks (code 3), then its request rate: a request from outside them does
    not spend the merchant's budget, so the list shields the budget from strangers who know the endpoint."""
    if not endpoint.merchant.accepts_from(host):
        raise ApiError(Code.ENDPOINT, f"endpoint {endpoint.id} does not accept requests from {host}")
    if wait := limits.merchant_wait_ms(endpoint.merchant.id):
        raise rate_limited(wait, "merchant_rate")
