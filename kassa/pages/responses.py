"""Shared bits of customer page handlers: HTML responses."""

from __future__ import annotations

from starlette.responses import HTMLResponse, RedirectResponse, Response

from kassa.pages.rendering import Page, render_page


def html(page: Page, status: int = 200) -> HTMLResponse:
    return HTMLResponse(page.html, status, headers=page.headers)


def message(title: str, text: str, status: int = 200, refresh: int | None = None) -> HTMLResponse:
    return html(render_page("message.html", title=title, message=text, refresh=refresh), status)


def see_other(url: str) -> Response:
    return RedirectResponse(url, status_code=303)
