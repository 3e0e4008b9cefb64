"""The final redirect (CONTRACT §10): the customer's browser is sent back to the merchant's
``redirect_url`` by an auto-submitting POST form carrying the same signed fields as the callback."""

from __future__ import annotations

from collections.abc import Mapping

from kassa.domain.callbacks import signed
from kassa.pages.rendering import Page, origin_source, render_page


def final_redirect(redirect_url: str, fields: Mapping[str, str], control_key: str) -> Page | None:
    """None when ``redirect_url``'s origin cannot be named in the page's policy safely (it would be
    its form-action): the customer is not sent there."""
    origin = origin_source(redirect_url)
    if origin is None:
        return None
    return render_page(
        "autopost.html",
        form_action=origin,
        action=redirect_url,  # its own query stays on the action URL
        fields=signed(fields, control_key),
        message="Returning you to the merchant…",
    )
