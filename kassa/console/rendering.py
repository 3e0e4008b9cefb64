"""Console pages from Jinja2 templates, with a strict Content-Security-Policy: scripts and styles only
from the console's own vendored files, nothing inline, no framing."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.responses import HTMLResponse

from kassa.clock import date_time_text
from kassa.domain.link_status import ago
from kassa.domain.money import currency, format_amount

_ENV = Environment(
    loader=PackageLoader("kassa.console", "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.filters["when"] = lambda ms: "" if ms is None else date_time_text(ms).replace("T", " ").removesuffix("Z")
_ENV.filters["ago"] = ago  # milliseconds past: ``{{ (now - at_ms)|ago }}``
_ENV.filters["money"] = lambda minor, code: format_amount(minor, currency(code))

HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-content-type-options": "nosniff",
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
    "x-frame-options": "DENY",
}


def render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    return HTMLResponse(_ENV.get_template(template).render(**context), status, headers=HEADERS)
