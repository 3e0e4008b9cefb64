"""The final redirect (CONTRACT §10): the customer's browser is sent back to the merchant's
``redirect_url`` by an auto-submitting POST form carrying the same signed fields as the callback."""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urlsplit

from kassa.domain.callbacks import signed
from kassa.pages.rendering import Page, render_page


def final_redirect(redirect_url: str, fields: Mapping[str, str], control_key: str) -> Page:
    parts = urlsplit(redirect_url)
    origin = f"{parts.scheme}://{parts.netloc}"
    return render_page(
        "autopost.html",
        form_action=origin,
        action=redirect_url,  # its own query stays on the action URL
        fields=signed(fields, control_key),
        message="Returning you to the merchant…",
    )
