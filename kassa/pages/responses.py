"""Shared bits of customer page handlers: HTML responses and form bodies."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from kassa.pages.rendering import Page, render_page
from kassa.web.forms import FormError, parse_form, read_body


def html(page: Page, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page.html, status, headers=page.headers)


def message(title: str, text: str, status: int = 200, refresh: int | None = None) -> HTMLResponse:
    return html(render_page("message.html", title=title, message=text, refresh=refresh), status)


def see_other(url: str) -> Response:
    return RedirectResponse(url, status_code=303)


async def form_fields(request: Request) -> dict[str, str] | None:
    """The posted form, first value per name, or None when the body is unreadable."""
    try:
        pairs = parse_form(await read_body(request.receive, request.headers.get("content-length", "")))
    except FormError:
        return None
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields
