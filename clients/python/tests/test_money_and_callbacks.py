"""Amounts by the currency's exponent, and the merchant-side helpers for callbacks, final redirects and the
hosted form redirect."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from urllib.parse import parse_qs

import pytest

from kassa_client import from_minor, hosted_form_redirect, to_minor, verify_callback, verify_redirect
from kassa_client.money import wire

KEY = "0123456789abcdef"


def test_minor_units_follow_iso_4217_exponents() -> None:
    assert (to_minor("10.42", "USD"), to_minor(500, "JPY"), to_minor("1.234", "KWD")) == (1042, 500, 1234)
    assert from_minor(1042, "USD") == Decimal("10.42") and from_minor(500, "JPY") == Decimal(500)
    assert wire(Decimal("10.4"), "USD") == "10.40"


def test_too_many_fraction_digits_and_floats_are_refused() -> None:
    with pytest.raises(ValueError, match="fraction digits"):
        to_minor("1.5", "JPY")
    with pytest.raises(TypeError):
        to_minor(1.5, "USD")  # type: ignore[arg-type]


def signed(status: str, orderid: str, client_orderid: str) -> str:
    return hashlib.sha1(f"{status}{orderid}{client_orderid}{KEY}".encode(), usedforsecurity=False).hexdigest()


def test_a_callbacks_query_is_verified_from_a_plain_or_a_parse_qs_mapping() -> None:
    query = f"status=approved&orderid=7&client_orderid=o-1&type=sale&control={signed('approved', '7', 'o-1')}"
    verdict = verify_callback(parse_qs(query), KEY)
    assert verdict.valid and verdict.is_final and (verdict.orderid, verdict.type) == ("7", "sale")
    assert not verify_callback({**verdict.fields, "status": "declined"}, KEY)
    assert not verify_callback({"status": "approved", "orderid": "7", "client_orderid": "o-1"}, KEY)


def test_a_v4_final_redirect_names_the_order_merchant_order() -> None:
    form = {"status": "approved", "orderid": "7", "merchant_order": "o-1", "control": signed("approved", "7", "o-1")}
    assert verify_redirect(form, KEY).client_orderid == "o-1"
    assert verify_redirect(form, KEY).valid


def test_hosted_form_redirect_is_a_303_and_a_page() -> None:
    redirect = hosted_form_redirect("https://gate.example/paynet/form/abc?x=1&y=2")
    assert redirect.status == 303 and redirect.headers == {
        "Location": "https://gate.example/paynet/form/abc?x=1&y=2", "Cache-Control": "no-store"
    }  # fmt: skip
    assert "x=1&amp;y=2" in redirect.html
    with pytest.raises(ValueError):
        hosted_form_redirect("javascript:alert(1)")
