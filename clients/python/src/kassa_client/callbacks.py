"""What a merchant's web handlers need, for any framework: a callback's or a final redirect's fields in, a
verdict out; and the redirect that sends a customer to a hosted form."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from kassa_client import signing
from kassa_client.models import FINAL_STATUSES, FormRedirect


@dataclass(frozen=True, slots=True)
class Verdict:
    """``valid``: the ``control`` is the gateway's for these fields. Only then are the others to be believed;
    even so, a final redirect is not the final word (status and callbacks are)."""

    valid: bool
    status: str
    orderid: str
    client_orderid: str
    type: str
    fields: Mapping[str, str]

    @property
    def is_final(self) -> bool:
        return self.status in FINAL_STATUSES

    def __bool__(self) -> bool:
        return self.valid


def _one(values: Mapping[str, str | list[str]], name: str) -> str:
    value = values.get(name, "")
    return value[0] if isinstance(value, list) and value else value if isinstance(value, str) else ""


def verify_callback(query: Mapping[str, str | list[str]], control_key: str) -> Verdict:
    """A callback's query fields (CONTRACT §10: a GET to ``server_callback_url`` or ``notify_url``), checked
    against control = sha1(status + orderid + client_orderid + control key), in constant time. Takes a plain
    mapping or one of lists (``parse_qs``)."""
    fields = {name: _one(query, name) for name in query}
    client_orderid = fields.get("client_orderid") or fields.get("merchant_order", "")
    values = {**fields, "client_orderid": client_orderid}
    valid = bool(fields.get("control")) and signing.verify_control(signing.CALLBACK, values, control_key)
    return Verdict(
        valid, fields.get("status", ""), fields.get("orderid", ""), client_orderid, fields.get("type", ""), fields
    )


def verify_redirect(form: Mapping[str, str | list[str]], control_key: str) -> Verdict:
    """The fields the customer's browser POSTs to ``redirect_url`` after a hosted page or 3-D Secure: the
    callback's, or (CONTRACT §18) ``status``, ``orderid``, ``merchant_order`` and their control."""
    return verify_callback(form, control_key)


@dataclass(frozen=True, slots=True)
class Redirect:
    """An HTTP answer sending the customer's browser to the hosted page: ``status`` and ``headers`` for a
    plain redirect, ``html`` for a page (an iframe's or a single-page app's) that navigates by itself."""

    url: str
    status: int = 303
    headers: Mapping[str, str] | None = None
    html: str = ""


def hosted_form_redirect(answer: FormRedirect | str) -> Redirect:
    """The redirect to the hosted page of a form operation's answer (``redirect_url``)."""
    url = answer if isinstance(answer, str) else answer.redirect_url
    if not url.startswith(("https://", "http://")):
        raise ValueError("the hosted page's address must be absolute http(s)")
    quoted = escape(url, quote=True)
    page = (
        f'<!doctype html><meta http-equiv="refresh" content="0;url={quoted}">'
        f'<title>Payment</title><p><a href="{quoted}">Continue to payment</a></p>'
    )
    return Redirect(url, 303, {"Location": url, "Cache-Control": "no-store"}, page)
