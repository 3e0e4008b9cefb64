"""Renders customer pages from Jinja2 templates, each with a strict Content-Security-Policy: no third
party anything, and inline script only with this response's nonce."""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

_ENV = Environment(loader=PackageLoader("kassa.pages", "templates"), autoescape=select_autoescape(["html"]))


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
