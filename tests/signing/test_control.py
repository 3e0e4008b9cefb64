"""The control formulas of CONTRACT §4."""

from __future__ import annotations

import hashlib

from kassa.signing.control import ORDER_REF, SALE_LIKE, control_matches, control_of

KEY = "B17F59B4-A7DC-41B4-8FF9-37D2DB2B1C3E"


def reference(text: str) -> str:
    return hashlib.sha1(text.encode(), usedforsecurity=False).hexdigest()


def test_sale_control_concatenates_endpoint_order_amount_email_and_key() -> None:
    values = {"endpoint": "1", "client_orderid": "902B4FF5", "amount": "1042", "email": "john@example.com"}
    expected = reference("1902B4FF51042john@example.com" + KEY)
    assert control_matches(SALE_LIKE, values, KEY, expected)
    assert control_matches(SALE_LIKE, values, KEY, expected.upper())


def test_missing_value_counts_as_empty_string() -> None:
    values = {"login": "merchant", "client_orderid": "902B4FF5"}
    assert control_matches(ORDER_REF, values, KEY, reference("merchant902B4FF5" + KEY))


def test_a_different_key_does_not_match() -> None:
    values = {"endpoint": "1", "client_orderid": "a", "amount": "1", "email": ""}
    assert not control_matches(SALE_LIKE, values, "other", control_of(["1a1"], KEY))


def test_non_ascii_control_is_a_mismatch_not_a_crash() -> None:
    assert not control_matches(ORDER_REF, {}, KEY, "ä" * 40)


def test_formula_describes_itself_for_error_messages() -> None:
    assert ORDER_REF.describe() == "sha1(login + client_orderid + orderid + control key)"
