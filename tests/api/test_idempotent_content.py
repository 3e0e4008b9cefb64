"""What an Idempotency-Key compares between a request and its repeat: the body, but an OAuth row's without
its ``oauth_*`` fields, since a retry must be signed again (its first nonce is spent)."""

from __future__ import annotations

from urllib.parse import urlencode

from kassa.api.operations import OPERATIONS, OAuth
from kassa.api.signatures import idempotent_content
from kassa.web.forms import form_pairs

FIELDS = [("client-order-id", "o-1"), ("amount", "10.42"), ("order_desc", "a b")]


def _content(signed: list[tuple[str, str]], oauth: bool) -> bytes:
    op = next(op for op in OPERATIONS if isinstance(op.signing, OAuth) == oauth)
    body = urlencode(signed).encode()
    return idempotent_content(op, body, form_pairs(body))


def test_two_signings_of_one_oauth_request_compare_equal() -> None:
    first = [*FIELDS, ("oauth_nonce", "1"), ("oauth_timestamp", "100"), ("oauth_signature", "x")]
    retry = [*FIELDS, ("oauth_nonce", "2"), ("oauth_timestamp", "160"), ("oauth_signature", "y")]
    assert _content(first, oauth=True) == _content(retry, oauth=True) == urlencode(FIELDS).encode()


def test_another_field_value_still_differs() -> None:
    changed = [(name, "11.00" if name == "amount" else value) for name, value in FIELDS]
    assert _content(FIELDS, oauth=True) != _content(changed, oauth=True)


def test_a_control_rows_body_is_compared_as_sent() -> None:
    body = [*FIELDS, ("oauth_nonce", "1")]
    assert _content(body, oauth=False) == urlencode(body).encode()
