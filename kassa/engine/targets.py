"""Where the gateway may send callbacks in live mode: public addresses on web ports only (SSRF guard).

Checked when a request names a callback URL and again before each delivery, since a name may resolve
elsewhere later. A name may even answer differently between the check and the connection (DNS
rebinding), so a live callback connects only to addresses ``PublicResolver`` let through: the check gives
the reason early, the resolver makes sure.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver

from kassa.domain import urls

ALLOWED_PORTS = frozenset({80, 443, 8080, 8443})
NOT_PUBLIC = "points to a private, loopback, link-local or reserved address"


class NotPublic(OSError):
    """A name resolved to an address live callbacks may not reach."""


class PublicResolver(AbstractResolver):
    """The system's resolver (``getaddrinfo``, as ``refusal`` uses), answering only names whose every
    address is public: aiohttp connects to what this answers, and to nothing else."""

    def __init__(self) -> None:
        self._system = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        answers = await self._system.resolve(host, port, family)
        if not all(_public(answer["host"]) for answer in answers):
            raise NotPublic(NOT_PUBLIC)
        return answers

    async def close(self) -> None:
        await self._system.close()


async def refusal(url: str) -> str | None:
    """Why ``url`` may not receive callbacks in live mode, or None when it may; parsed by the rule of every
    URL the gateway sends to (``domain.urls``), as the sender will parse it."""
    try:
        parsed = urls.sendable(url)
    except urls.UrlError as problem:
        return str(problem)
    return await refusal_of(parsed.raw_host or "", parsed.port)


async def refusal_of(host: str, port: int | None) -> str | None:
    """Why ``host`` and ``port`` may not receive callbacks in live mode, or None when they may."""
    if port not in ALLOWED_PORTS:
        return "must use port 80, 443, 8080 or 8443"
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return "does not resolve"
    for info in infos:
        if not _public(str(info[4][0])):
            return NOT_PUBLIC
    return None


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)
