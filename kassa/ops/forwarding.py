"""Headers a reverse proxy sets, believed from the proxies in ``KASSA_TRUSTED_PROXIES`` only."""

from __future__ import annotations

from starlette.types import Receive, Scope, Send
from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

from kassa.web.addresses import TRUSTED_PEER


class ProxyHeaders(ProxyHeadersMiddleware):
    """uvicorn's own ``X-Forwarded-For`` and ``X-Forwarded-Proto`` handling (the client's address and the
    scheme), which also marks a request that came from a trusted proxy: OAuth signs the host the client
    addressed, which such a proxy passes in ``X-Forwarded-Host`` (``web.addresses.addressed``). uvicorn
    replaces the peer's address with the client's, so whether the peer was trusted is known only here."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:  # type: ignore[override]
        client = scope.get("client")
        if scope["type"] == "http" and client and client[0] in self.trusted_hosts:
            scope[TRUSTED_PEER] = True
        await super().__call__(scope, receive, send)  # type: ignore[arg-type]
