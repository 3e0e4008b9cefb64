"""The served OpenAPI document carries each field's constraints from the operation table's validators,
and lists the refusals each operation can answer with (CONTRACT §12)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest

from kassa.api.operations import OPERATIONS, OAuth
from tests.support.gateway import TLS, Gateway


@pytest.fixture
def document(shared_gateway: Gateway) -> dict[str, Any]:
    answer = httpx.get(f"{shared_gateway.base}/openapi.json", timeout=30, verify=TLS)
    assert answer.status_code == 200
    served: dict[str, Any] = answer.json()
    return served


@pytest.mark.backends("sqlite")
def test_request_fields_carry_their_validators_constraints(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    sale = schemas["SaleRequest"]["properties"]
    assert sale["client_orderid"]["maxLength"] == 128
    assert sale["client_orderid"]["minLength"] == 1  # required: an empty value is a missing one
    assert sale["order_desc"]["maxLength"] == 1024
    assert "USD" in sale["currency"]["enum"] and "KWD" in sale["currency"]["enum"]
    assert re.fullmatch(sale["amount"]["pattern"], "10.42")
    assert not re.fullmatch(sale["amount"]["pattern"], "1e5")
    assert re.fullmatch(sale["cvv2"]["pattern"], "123")
    assert not re.fullmatch(sale["expire_month"]["pattern"], "13")
    assert sale["server_callback_url"]["maxLength"] == 1024
    assert not re.fullmatch(sale["server_callback_url"]["pattern"], "http://example.com/a;b")
    assert not re.fullmatch(sale["server_callback_url"]["pattern"], "ftp://example.com/")
    assert re.fullmatch(sale["server_callback_url"]["pattern"], "https://example.com/cb?x=1")
    assert not re.fullmatch(sale["first_name"]["pattern"], "a\x00b")
    assert schemas["TdsMethodUrlResultRequest"]["properties"]["threeDSCompInd"]["enum"] == ["Y", "N", "U"]
    assert schemas["PayoutRequest"]["properties"]["payout_method"]["enum"] == ["card", "bank", "ewallet", "phone"]
    assert schemas["StatusRequest"]["properties"]["by-request-sn"]["format"] == "uuid"


@pytest.mark.backends("sqlite")
def test_every_field_of_every_operation_is_constrained(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    for op in OPERATIONS:
        for name, schema in schemas[op.request_schema]["properties"].items():
            assert {"maxLength", "pattern", "enum", "format"} & set(schema), (op.code, name, schema)
            if "pattern" in schema:
                re.compile(schema["pattern"])


@pytest.mark.backends("sqlite")
def test_responses_list_the_refusals_each_operation_can_answer(document: dict[str, Any]) -> None:
    for op in OPERATIONS:
        for path in (f"{op.path}/{{endpointId}}", f"{op.path}/group/{{endpointGroupId}}"):
            responses = document["paths"][path]["post"]["responses"]
            assert {"200", "400", "429", "500"} <= set(responses), op.code
            assert "Retry-After" in responses["429"]["headers"]
            assert ("401" in responses) == isinstance(op.signing, OAuth), op.code
            assert ("503" in responses) == op.opens_order, op.code  # refused for overload
            assert "Retry-After" in responses.get("503", responses["429"])["headers"]
            assert "501" not in responses, op.code


@pytest.mark.backends("sqlite")
def test_each_operation_names_the_signing_its_row_declares(document: dict[str, Any]) -> None:
    schemes = document["components"]["securitySchemes"]
    assert {name: (s["type"], s["scheme"]) for name, s in schemes.items()} == {
        "oauth1-hmac-sha1": ("http", "OAuth"),
        "oauth1-rsa-sha256": ("http", "OAuth"),
    }
    assert "control key followed by `&`" in schemes["oauth1-hmac-sha1"]["description"]
    assert "within 300 s" in schemes["oauth1-rsa-sha256"]["description"]
    for op in OPERATIONS:
        post = document["paths"][f"{op.path}/{{endpointId}}"]["post"]
        if isinstance(op.signing, OAuth):
            assert post["security"] == [{f"oauth1-{op.signing.value.lower()}": []}], op.code
            assert post["x-signing"]["method"] == op.signing.value
            assert "WWW-Authenticate" in post["responses"]["401"]["headers"]
        else:
            assert post["security"] == [], op.code
            assert post["x-signing"] == {"scheme": "control", "field": "control", "formula": op.signing.describe()}
    assert document["paths"]["/api/v2/payout/{endpointId}"]["post"]["security"] == [{"oauth1-hmac-sha1": []}]
    assert document["paths"]["/api/v4/transfer/{endpointId}"]["post"]["security"] == [{"oauth1-rsa-sha256": []}]


@pytest.mark.backends("sqlite")
def test_v4_operations_do_not_require_the_accept_header(document: dict[str, Any]) -> None:
    for op in OPERATIONS:
        [accept] = [
            p for p in document["paths"][f"{op.path}/{{endpointId}}"]["post"]["parameters"] if p["name"] == "Accept"
        ]
        assert accept["required"] is not op.path.startswith("/api/v4/"), op.code


@pytest.mark.backends("sqlite")
def test_answers_of_recurring_payments_and_v4_card_references_name_their_ids(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    assert "recurring-payment-id" in schemas["StatusResponse"]["properties"]
    assert {"card-ref-id", "unq-card-ref-id", "recurring-payment-id"} <= set(
        schemas["CardRefV4AsyncResponse"]["properties"]
    )
    assert {"status", "recurring-payment-id", "merchant-order-id"} <= set(
        schemas["CreateRecurringPaymentResponse"]["properties"]
    )


@pytest.mark.backends("sqlite")
def test_the_operations_of_contract_17_name_their_fields_and_signing(document: dict[str, Any]) -> None:
    schemas, paths = document["components"]["schemas"], document["paths"]
    wire = schemas["BankWireTransferRequest"]
    assert {"payer-fullname", "recipient-name", "recipient-account-number", "recipient-bank-bic"} <= set(
        wire["required"]
    )
    assert re.fullmatch(wire["properties"]["vat-amount"]["pattern"], "4.17")
    assert "destination-card-ref-id" in schemas["TransferByRefV2Request"]["required"]
    assert "source-card-ref-id" in schemas["TransferByRefV2Request"]["properties"]
    assert "receiving-card-ref-id" in schemas["PanEligibilityReceiveRequest"]["properties"]
    assert "destination-card-no" in schemas["TransferFormV4Request"]["properties"]
    formula = paths["/api/v2/transfer-by-ref/{endpointId}"]["post"]["x-signing"]["formula"]
    assert formula.startswith("sha1(login + client_orderid + source-card-ref-id + destination-card-ref-id")
    assert paths["/api/v4/transfer-form/{endpointId}"]["post"]["security"] == [{"oauth1-rsa-sha256": []}]
    assert paths["/api/v2/pan-eligibility/both/{endpointId}"]["post"]["security"] == [{"oauth1-hmac-sha1": []}]
    form = paths["/api/v2/transfer-form/{endpointId}"]["post"]["responses"]["200"]
    assert form["content"]["application/vnd.pay+json"]["schema"]["$ref"].endswith("AsyncCheckoutFormRedirect")
