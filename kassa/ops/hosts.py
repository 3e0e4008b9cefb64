"""The ``Host`` names the operator-facing listeners (the console, the operations listener) answer to.

A web page on any site can have a visitor's browser send requests to a private address: with DNS
rebinding, a name of the page's own resolves to the listener's address, and the browser, taking the
listener for the page's site, lets the page read what it answers (the console's pages, the metrics).
Such a request names the page's host in ``Host``; a listener that answers only the names it is known by
answers it 421 (Misdirected Request) and gives the page nothing. An IP address is no rebinding name: a
page can only be served from an address by the server at that address.

The merchant API is not guarded so: merchants reach it through proxies and names the gateway cannot know.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from kassa.settings import host_literal

# ``host[:port]``, the host a name, an IPv4 address or a bracketed IPv6 one (RFC 9110 §7.2).
_HOST_HEADER = re.compile(r"(\[[^\]]*\]|[^:\[\]]*)(?::[0-9]*)?")
_MISDIRECTED = PlainTextResponse(
    "Misdirected request: this listener answers to its own host names only (KASSA_OPERATOR_HOSTS)\n",
    421,
    headers={"Cache-Control": "no-store"},
)


def _address(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class HostRule:
    """The names a listener answers to: ``names``, and any IP address on a bind to every interface
    (``any_address``: the client may use any of the machine's) or any loopback address on a loopback bind."""

    names: frozenset[str]
    any_address: bool
    any_loopback: bool

    @classmethod
    def of(cls, bound: str, configured: Iterable[str]) -> HostRule:
        """The rule of a listener bound to ``bound`` (``HOST`` of its ``HOST:PORT``), with the operator's
        ``configured`` names (``KASSA_OPERATOR_HOSTS``, in ``host_literal``'s form)."""
        own = host_literal(bound) or bound
        address = _address(own)
        every = address is not None and address.is_unspecified
        loopback = own == "localhost" or (address is not None and address.is_loopback)
        names = set(configured)
        if not every:
            names.add(own)
        if every or loopback:
            names.add("localhost")
        return cls(frozenset(names), any_address=every, any_loopback=loopback)

    def accepts(self, header: str | None) -> bool:
        """Whether a request whose ``Host`` header is ``header`` (None: none sent) is answered."""
        found = _HOST_HEADER.fullmatch(header) if header else None
        name = host_literal(found[1]) if found else None
        if name is None:
            return False
        if name in self.names:
            return True
        address = _address(name)
        return address is not None and (self.any_address or (self.any_loopback and address.is_loopback))


class HostGuard:
    """ASGI middleware: an HTTP request that does not name one of ``rule``'s hosts in its one ``Host``
    header is answered 421 before the application sees it."""

    def __init__(self, app: ASGIApp, rule: HostRule) -> None:
        self.app = app
        self.rule = rule

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            hosts = [value for name, value in scope["headers"] if name == b"host"]
            if len(hosts) != 1 or not self.rule.accepts(hosts[0].decode("latin-1")):
                await _MISDIRECTED(scope, receive, send)
                return
        await self.app(scope, receive, send)


def guarded(app: ASGIApp, bound: str, configured: Iterable[str]) -> HostGuard:
    """``app`` answering only the hosts of a listener bound to ``bound`` (see ``HostRule.of``)."""
    return HostGuard(app, HostRule.of(bound, configured))
