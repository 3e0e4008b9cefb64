"""Renders customer pages from Jinja2 templates, each with a strict Content-Security-Policy: no third
party anything, and inline script only with this response's nonce."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from kassa.domain import urls

_ENV = Environment(loader=PackageLoader("kassa.pages", "templates"), autoescape=select_autoescape(["html"]))


def origin_source(url: str) -> str | None:
    """The origin of ``url`` written as a CSP source (``https://shop.example:8443``), or None when the URL
    is not one the gateway sends anyone to (``domain.urls``): what is left of it then cannot end the
    directive and start another. International host names are named in their punycode form."""
    try:
        return urls.origin(urls.sendable(url))
    except urls.UrlError:
        return None


@dataclass(frozen=True, slots=True)
class Page:
    html: str
    headers: dict[str, str]


def render_page(
    template: str, *, form_action: str = "'self'", framed: bool = False, fetches: bool = False, **context: Any
) -> Page:
    """``framed`` pages run inside another site's iframe (the 3DS Method step, Hosted Fields), so any page
    may frame them; every other page refuses to be framed (clickjacking). ``fetches``: the page's script
    makes requests to the gateway (Hosted Fields' tokenization)."""
    nonce = secrets.token_urlsafe(16)
    html = _ENV.get_template(template).render(nonce=nonce, **context)
    ancestors = "*" if framed else "'none'"
    csp = (
        f"default-src 'none'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src 'self' data:; "
        f"form-action {form_action}; frame-ancestors {ancestors}; frame-src 'self'; base-uri 'none'"
    )
    if fetches:
        csp += "; connect-src 'self'"
    return Page(
        html,
        {
            "content-security-policy": csp,
            "x-content-type-options": "nosniff",
            "referrer-policy": "no-referrer",
            "cache-control": "no-store",
        },
    )
