"""Renders customer pages from Jinja2 templates, each with a strict Content-Security-Policy: no third
party anything, and inline script only with this response's nonce."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape

_ENV = Environment(loader=PackageLoader("kassa.pages", "templates"), autoescape=select_autoescape(["html"]))


# A host as a CSP source may name it: DNS labels, an IPv4 address, or a bracketed IPv6 address. Nothing
# else, so no `;`, `,`, space, quote or control character can end the directive and start another.
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")


def origin_source(url: str) -> str | None:
    """The origin of an http(s) ``url`` written as a CSP source (``https://shop.example:8443``), built
    from its checked parts; None when it has none a policy could name safely (white space or control
    characters anywhere, userinfo, a bad port, a host with other characters). International host names
    are named in their punycode form."""
    if not url.isprintable() or " " in url:  # urlsplit would quietly drop tabs and newlines
        return None
    try:
        parts = urlsplit(url)
        port = parts.port
        host = (parts.hostname or "").encode("idna").decode("ascii")
    except (ValueError, UnicodeError):
        return None
    if ":" in host:  # an IPv6 address, which urlsplit gives without its brackets
        host = f"[{host}]"
    if parts.scheme not in ("http", "https") or "@" in parts.netloc or not _HOST.fullmatch(host):
        return None
    return f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")


@dataclass(frozen=True, slots=True)
class Page:
    html: str
    headers: dict[str, str]


def render_page(template: str, *, form_action: str = "'self'", framed: bool = False, **context: Any) -> Page:
    """``framed`` pages run inside another site's hidden iframe (the 3DS Method step), so any page may
    frame them; every other page refuses to be framed (clickjacking)."""
    nonce = secrets.token_urlsafe(16)
    html = _ENV.get_template(template).render(nonce=nonce, **context)
    ancestors = "*" if framed else "'none'"
    csp = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src 'self' data:; "
        f"form-action {form_action}; frame-ancestors {ancestors}; frame-src 'self'; base-uri 'none'"
    )
    return Page(
        html,
        {
            "content-security-policy": csp,
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cache-control": "no-store",
        },
    )
