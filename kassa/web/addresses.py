"""The gateway's public address, and those of its customer-facing pages below it (with the prefix)."""

from __future__ import annotations

from collections.abc import Mapping

from starlette.requests import Request
from starlette.types import Scope

from kassa.settings import Settings

# Set in the ASGI scope of a request whose peer is a proxy of KASSA_TRUSTED_PROXIES (``ops/forwarding.py``).
TRUSTED_PEER = "kassa.trusted_peer"


def addressed(scope: Scope, headers: Mapping[str, str]) -> tuple[str, str]:
    """The scheme and host the client addressed: the request's own, or behind a trusted proxy what it
    forwarded (uvicorn has put ``X-Forwarded-Proto`` in the scope; ``X-Forwarded-Host`` is read here, its
    last value, the one the proxy next to us set). What OAuth signs, and where customers' links point
    (``base_url``). The Host header directly: building request.url is slow, and needed only without one
    (HTTP/1.0)."""
    forwarded = headers.get("x-forwarded-host") if scope.get(TRUSTED_PEER) else None
    if forwarded:
        return scope["scheme"], forwarded.rpartition(",")[2].strip()
    return scope["scheme"], headers.get("host") or Request(scope).url.netloc


def base_url(settings: Settings, scheme: str, host: str) -> str:
    """KASSA_PUBLIC_URL, else ``scheme://host``, with the API prefix: where customers reach the gateway."""
    origin = settings.public_url or f"{scheme}://{host}"
    return origin.rstrip("/") + settings.prefix


def public_base(request: Request, settings: Settings) -> str:
    """``base_url`` for a page request."""
    return base_url(settings, *addressed(request.scope, request.headers))


def form(base: str, token: str) -> str:
    return f"{base}/form/{token}"


def checkout(base: str, token: str) -> str:
    return f"{base}/checkout/{token}"


def acs_method(base: str) -> str:
    return f"{base}/acs/method"


def acs_challenge(base: str) -> str:
    return f"{base}/acs/challenge"


def acs_pareq(base: str) -> str:
    return f"{base}/acs/pareq"


def method_notification(base: str) -> str:
    return f"{base}/3ds/method-notification"


def challenge_return(base: str) -> str:
    """Where the ACS sends CRes/PaRes back for gateway-hosted flows (notification URL / TermUrl)."""
    return f"{base}/3ds/complete"
