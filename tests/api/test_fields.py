"""Field rules seen by merchants over HTTP, on every row of the operation table: URLs the gateway could
not send to and control characters in any field are refused with code 1 naming the field, never a 500."""

from __future__ import annotations

import uuid
from itertools import cycle

import pytest

from kassa.api import fields as f
from kassa.api.operations import OPERATIONS, Operation
from tests.support.bodies import body, post
from tests.support.gateway import Gateway, Merchant, new_merchant
from tests.support.oauth import key_pair, register_key

BUILT = [op for op in OPERATIONS if op.handler is not None]
URL_FIELDS = {op.code: [field.name for field in op.fields if field.check is f.url] for op in OPERATIONS}
TAKES_URLS = [op for op in BUILT if URL_FIELDS[op.code]]


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Merchant:
    merchant = new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")
    register_key(shared_gateway, merchant.login, key_pair()[1])  # for the rows signed with OAuth RSA-SHA256
    return merchant


def _post(op: Operation, shop: Merchant, replaced: dict[str, str]) -> dict[str, str]:
    response = post(op, shop, body(op, shop, "1", replaced))
    assert response.status_code == 400, (op.code, replaced, response.text)
    answer: dict[str, str] = response.json()
    return answer


UNSENDABLE = [
    "http://127.0.0.1\\@8.8.8.8/",
    "http://h:99999/",
    "http://[::1/",
    "http://example.com/a b",
    "http://example.com/\x01",
    "http://example.com/\x7f",
    "http://example.com/\x85x",
    "http://example.com/a;b",
    "http://example.com/a,b",
    "http://user:secret@example.com/",
    "http://example.com:0/",
]


@pytest.mark.parametrize("url", UNSENDABLE)
def test_url_the_sender_cannot_use_is_refused_naming_the_field_on_every_operation(shop: Merchant, url: str) -> None:
    assert len(TAKES_URLS) >= 8
    for op in TAKES_URLS:
        for name in URL_FIELDS[op.code]:
            answer = _post(op, shop, {name: url})
            assert str(answer["error-code"]) == "1", (op.code, name, answer)  # a number on the v4 sale
            assert answer["error-message"].startswith(f"{name} "), (op.code, name, answer)
            assert "secret" not in answer["error-message"]


def test_internationalised_host_name_is_accepted(shop: Merchant) -> None:
    answer = shop.sale(
        f"o-{uuid.uuid4().hex[:10]}", redirect_url="https://пример.рф/возврат", site_url="http://bücher.de/"
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["type"] == "async-response"


# NUL and the other C0 controls, DEL and C1 controls, each in turn, in every field of every row.
CONTROLS = ["\x00", "\x01", "\x1b", "\x7f", "\x80", "\x85", "\x9f"]


def test_control_character_in_any_field_is_refused_naming_the_field(shop: Merchant) -> None:
    controls = cycle(CONTROLS)
    for op in BUILT:
        for field in op.fields:
            if field.name == "control":
                continue
            value = f"4{next(controls)}1"
            answer = _post(op, shop, {field.name: value})
            assert str(answer["error-code"]) == "1", (op.code, field.name, repr(value), answer)
            assert answer["error-message"].startswith(f"{field.name} "), (op.code, field.name, answer)


@pytest.mark.parametrize("name", ["email", "order_desc", "server_callback_url", "merchant_data", "city"])
def test_nul_in_a_signed_sale_is_refused_not_stored(shop: Merchant, name: str) -> None:
    value = {"email": "jane\x00@example.com", "server_callback_url": "http://example.com/\x00"}.get(name, "a\x00b")
    answer = shop.sale(f"o-{uuid.uuid4().hex[:10]}", **{name: value})
    assert answer.status_code == 400, answer.text
    assert answer.json()["error-code"] == "1"
    assert answer.json()["error-message"].startswith(f"{name} ")
