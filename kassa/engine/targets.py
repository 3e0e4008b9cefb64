"""Where the gateway may send callbacks in live mode: public addresses on web ports only (SSRF guard).

Checked when a request names a callback URL and again before each delivery, since a name may resolve
elsewhere later.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

ALLOWED_PORTS = frozenset({80, 443, 8080, 8443})


async def refusal(url: str) -> str | None:
    """Why ``url`` may not receive callbacks in live mode, or None when it may."""
    parts = urlsplit(url)
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "has an invalid port"
    if port not in ALLOWED_PORTS:
        return "must use port 80, 443, 8080 or 8443"
    host = parts.hostname or ""
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return "does not resolve"
    for info in infos:
        if not _public(str(info[4][0])):
            return "points to a private, loopback, link-local or reserved address"
    return None


def _public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not (ip.is_multicast or ip.is_reserved)
