"""Hostile values in every field of every operation row, signed as a merchant signs them, against a real
gateway: the answer is never a server error, and a field refusal names a field of the operation (the
hostile one when the value holds a control character). Rows without a handler answer 501 (OAuth rows once
their signature passed, whatever the values).

The number of examples is bounded by the ``kassa`` Hypothesis profile (tests/conftest.py) so that the
whole suite stays fast; ``HYPOTHESIS_PROFILE=thorough`` runs many more."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kassa.api.operations import OPERATIONS, Operation
from tests.support.bodies import body, post
from tests.support.gateway import Gateway, Merchant, new_merchant
from tests.support.oauth import key_pair, register_key
from tests.support.operations import LEDGER_OK, approved_order, ledger_check

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")

HOSTILE = [
    "\x00", "a\x00b", "\x7f", "\x85", "\x9f", "a\x1b[31mb", "\u202eabc", "\ufeff", "ﬀ",
    "\U0001d7d9\U0001d7da", "\u0661\u0662\u0663",
    "' OR '1'='1", "1; DROP TABLE orders; --", "\\", "%00", "%", "<script>alert(1)</script>", "{{7*7}}",
    "${jndi:ldap://x/a}", "-1", "0", "00", "1e309", "NaN", "Infinity", "0x10", "1_000", "+1", "1.", ".5",
    "999999999999999999999999", "1000000000000.001", "10.4200000", "\u0661\u0660\u066b\u0664\u0662",
    "2024-02-30", "0000-00-00",
    "9999-12-31T23:59:60Z", "http://[::1/", "http://127.0.0.1\\@8.8.8.8/", "http://h:99999/", "javascript:alert(1)",
    "http://exa mple.com/", "http://a;b/", "//host/x", "http://", "http://127.0.0.1:9/cb", "A" * 5000,
    "é" * 3000, "\U0001f4b3" * 500,
]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=40),
    st.from_regex(r"[0-9.\-+eE ]{0,25}", fullmatch=True),
)


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Iterator[Merchant]:
    merchant = new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")
    register_key(shared_gateway, merchant.login, key_pair()[1])
    yield merchant
    # After every hostile request: the money the gateway moved is still accounted for.
    assert ledger_check(merchant) == LEDGER_OK


@pytest.fixture(scope="module")
def orderid(shop: Merchant) -> str:
    """An approved sale, so that follow-ups reach their handlers' checks."""
    return approved_order(shop, f"o-{uuid.uuid4().hex[:10]}")


WITH_FIELDS = [op for op in OPERATIONS if op.fields]  # the Hosted Fields ticket has none


@pytest.mark.parametrize("op", WITH_FIELDS, ids=[op.code for op in WITH_FIELDS])
@given(data=st.data())
def test_hostile_field_values_never_make_a_server_error(
    shop: Merchant, orderid: str, op: Operation, data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from([field.name for field in op.fields]), label="field")
    value = data.draw(VALUES, label="value")
    answer = post(op, shop, body(op, shop, orderid, {name: value}))
    reply = answer.json()
    assert answer.status_code < 500, answer.text
    if reply["type"] != "validation-error" or str(reply["error-code"]) != "1":
        return
    message = reply["error-message"]
    if message.startswith("request body"):  # a value too large for the 64 KiB body, once encoded
        return
    assert any(message.startswith(f"{field.name} ") for field in op.fields), message
    if CONTROL.search(value.strip()):
        assert message.startswith(f"{name} "), message
