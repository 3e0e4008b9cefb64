"""What every operation request goes through, seen from the merchant's side (CONTRACT §1, §4, §5, §12):
signature and ownership checks, field validation, the Accept header and the classic format, the path
forms (doubled slash, endpoint groups), field aliases, the body size limit and the OpenAPI document."""

from __future__ import annotations

import dataclasses
import datetime
import uuid
from collections.abc import Callable, Iterator

import httpx
import pytest

from kassa.api.operations import OPERATIONS, OAuth, Operation
from tests.support import bodies
from tests.support.gateway import (
    JSON_ACCEPT,
    TLS,
    Gateway,
    Merchant,
    classic_body,
    classic_fields,
    new_classic_merchant,
    new_merchant,
    post_without_accept,
    sha1,
)
from tests.support.oauth import key_pair, register_key

CARD = "4111111111111111"
JSON_CONTENT_TYPE = "application/vnd.pay+json; charset=utf-8"
CLASSIC_CONTENT_TYPE = "text/html; charset=utf-8"


def _login() -> str:
    return f"m-{uuid.uuid4().hex[:10]}"


def _order() -> str:
    return f"o-{uuid.uuid4().hex[:10]}"


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, _login())


@pytest.fixture(scope="module")
def other_shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, _login())


@pytest.fixture(scope="module")
def yen_shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, _login(), "JPY")


@pytest.fixture(scope="module")
def classic_shop(shared_gateway: Gateway) -> Merchant:
    return new_classic_merchant(shared_gateway, _login())


def refusal(response: httpx.Response, code: int) -> dict[str, str]:
    """The JSON refusal a merchant reads; asserts its status (400), content type, type and error code."""
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == JSON_CONTENT_TYPE
    body = dict(response.json())
    assert body["type"] == "validation-error", body
    assert body["error-code"] == str(code), body
    assert body["error-message"]
    uuid.UUID(body["serial-number"])
    return body


def accepted(response: httpx.Response) -> dict[str, str]:
    assert response.status_code == 200, response.text
    body = dict(response.json())
    assert body["type"] == "async-response", body
    assert body["status"] == "processing"
    assert body["paynet-order-id"].isdigit()
    return body


# --- control and ownership -------------------------------------------------------------------------------


def test_wrong_control_is_refused_with_code_2(shop: Merchant) -> None:
    client_orderid = _order()
    data = shop.sale_fields(client_orderid, control="0" * 40)
    body = refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 2)
    assert body["merchant-order-id"] == client_orderid


def test_control_signed_for_another_amount_is_refused_with_code_2(shop: Merchant) -> None:
    data = shop.sale_fields(_order())
    data["amount"] = "10.43"
    refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 2)


def test_control_in_upper_case_hex_is_accepted(shop: Merchant) -> None:
    data = shop.sale_fields(_order())
    data["control"] = data["control"].upper()
    accepted(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data))


def test_status_with_another_merchants_login_is_refused_with_code_3(shop: Merchant, other_shop: Merchant) -> None:
    order_id = accepted(shop.sale(_order()))["paynet-order-id"]
    data = {
        "login": other_shop.login,
        "orderid": order_id,
        "control": sha1(other_shop.login, "", order_id, other_shop.control_key),
    }
    refusal(shop.gateway.post(f"/api/v2/status/{shop.endpoint_id}", data), 3)


@pytest.mark.parametrize("endpoint_id", ["987654321987654321", "99999999999999999999", "0"])
def test_unknown_endpoint_is_refused_with_code_3(shop: Merchant, endpoint_id: str) -> None:
    data = shop.sale_fields(_order(), signed_id=int(endpoint_id))
    refusal(shop.gateway.post(f"/api/v2/sale/{endpoint_id}", data), 3)


def test_sale_signed_with_one_merchants_key_to_another_merchants_endpoint_is_refused_with_code_2(
    shop: Merchant, other_shop: Merchant
) -> None:
    data = shop.sale_fields(_order(), signed_id=other_shop.endpoint_id)
    refusal(shop.gateway.post(f"/api/v2/sale/{other_shop.endpoint_id}", data), 2)


# --- fields ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "field",
    ["client_orderid", "currency", "amount", "credit_card_number", "expire_month", "expire_year", "cvv2", "control"],
)
def test_missing_field_is_refused_with_code_1_naming_the_field(shop: Merchant, field: str) -> None:
    data = shop.sale_fields(_order())
    del data[field]
    body = refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 1)
    assert field in body["error-message"]
    assert CARD not in body["error-message"]


def test_empty_field_counts_as_missing(shop: Merchant) -> None:
    data = shop.sale_fields(_order(), credit_card_number="   ")
    body = refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 1)
    assert "credit_card_number" in body["error-message"]


LAST_YEAR = str(datetime.datetime.now(datetime.UTC).year - 1)


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"credit_card_number": "4111111111111112"}, "credit_card_number"),
        ({"credit_card_number": "4111 1111 1111 1112"}, "credit_card_number"),
        ({"credit_card_number": "41111111111111x1"}, "credit_card_number"),
        ({"expire_year": LAST_YEAR}, "expire_year"),
        ({"expire_month": "13"}, "expire_month"),
        ({"expire_month": "00"}, "expire_month"),
        ({"amount": "ten"}, "amount"),
        ({"amount": "10,42"}, "amount"),
        ({"amount": "-10.42"}, "amount"),
        ({"amount": "0"}, "amount"),
        ({"amount": "10.421"}, "amount"),
        ({"cvv2": "12"}, "cvv2"),
        ({"email": "not-an-email"}, "email"),
    ],
    ids=lambda value: "-".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else value,
)
def test_malformed_field_is_refused_with_code_1_naming_the_field(
    shop: Merchant, overrides: dict[str, str], field: str
) -> None:
    data = shop.sale_fields(_order())
    data.update(overrides)  # after signing: the field check comes first
    body = refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 1)
    assert field in body["error-message"]
    for card in (CARD, data["credit_card_number"], data["credit_card_number"].replace(" ", "")):
        assert card not in body["error-message"]
        assert card not in body["error-message"].replace(" ", "")


def test_fraction_of_yen_is_refused_with_code_1_naming_amount(yen_shop: Merchant) -> None:
    data = yen_shop.sale_fields(_order(), amount="2")
    data["amount"] = "1.5"
    body = refusal(yen_shop.gateway.post(f"/api/v2/sale/{yen_shop.endpoint_id}", data), 1)
    assert "amount" in body["error-message"]


def test_whole_yen_amount_is_signed_in_yen(yen_shop: Merchant) -> None:
    data = yen_shop.sale_fields(_order(), amount="500")
    data["control"] = sha1(yen_shop.endpoint_id, data["client_orderid"], "500", data["email"], yen_shop.control_key)
    accepted(yen_shop.gateway.post(f"/api/v2/sale/{yen_shop.endpoint_id}", data))


def test_currency_not_served_by_the_endpoint_is_refused_with_code_8(shop: Merchant) -> None:
    data = shop.sale_fields(_order(), currency="EUR")
    refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 8)


def test_unknown_currency_code_is_refused_with_code_1(shop: Merchant) -> None:
    data = shop.sale_fields(_order(), currency="usd")
    body = refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 1)
    assert "currency" in body["error-message"]


@pytest.mark.parametrize("alias", ["client-order-id", "client-orderid"])
def test_client_orderid_alias_is_accepted_and_answered_with_the_canonical_name(shop: Merchant, alias: str) -> None:
    client_orderid = _order()
    data = shop.sale_fields(client_orderid)
    data[alias] = data.pop("client_orderid")
    body = accepted(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data))
    assert body["merchant-order-id"] == client_orderid


def test_leading_and_trailing_white_space_of_values_is_dropped(shop: Merchant) -> None:
    client_orderid = _order()
    data = shop.sale_fields(client_orderid)
    padded = {name: f"  {value}\t " for name, value in data.items()}
    body = accepted(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", padded))
    assert body["merchant-order-id"] == client_orderid
    final = shop.wait_final(body["paynet-order-id"])
    assert final["status"] == "approved"
    assert final["amount"] == "10.42"
    assert final["cardholder-name"] == "Jane Doe"
    assert final["email"] == "cardholder@example.com"


def test_unknown_fields_are_ignored(shop: Merchant) -> None:
    data = shop.sale_fields(_order(), favourite_colour="blue", **{"x-debug": "1"})
    accepted(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data))


# --- Accept header -----------------------------------------------------------------------------------------


def test_request_without_accept_header_is_refused_with_code_9(shop: Merchant) -> None:
    response = post_without_accept(shop.gateway, f"/api/v2/sale/{shop.endpoint_id}", shop.sale_fields(_order()))
    refusal(response, 9)


@pytest.mark.parametrize("accept", ["text/html", "application/json", "*/*"])
def test_request_with_another_accept_value_is_refused_with_code_9(shop: Merchant, accept: str) -> None:
    response = shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", shop.sale_fields(_order()), {"Accept": accept})
    refusal(response, 9)


def test_accept_with_parameters_and_other_types_is_json(shop: Merchant) -> None:
    headers = {"Accept": "text/html, application/vnd.pay+json; q=0.9"}
    response = shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", shop.sale_fields(_order()), headers)
    accepted(response)
    assert response.headers["content-type"] == JSON_CONTENT_TYPE


def test_accept_media_type_is_matched_case_insensitively(shop: Merchant) -> None:
    # RFC 9110 §8.3.1: type and subtype names are case-insensitive.
    headers = {"Accept": "Application/VND.Pay+JSON"}
    accepted(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", shop.sale_fields(_order()), headers))


# --- classic format ----------------------------------------------------------------------------------------


def assert_classic_sale_answer(response: httpx.Response, merchant: Merchant, client_orderid: str) -> None:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CLASSIC_CONTENT_TYPE
    got = dict(classic_fields(response.content))
    uuid.UUID(got["serial-number"])
    assert got["paynet-order-id"].isdigit()
    expected = classic_body(
        [
            ("type", "async-response"),
            ("status", "processing"),
            ("serial-number", got["serial-number"]),
            ("merchant-order-id", client_orderid),
            ("paynet-order-id", got["paynet-order-id"]),
            ("end-point-id", str(merchant.endpoint_id)),
        ]
    )
    assert response.content == expected


def test_classic_merchant_without_json_accept_gets_the_classic_format_byte_exact(classic_shop: Merchant) -> None:
    client_orderid = f"shop order/{uuid.uuid4().hex[:6]} ü&=+"
    data = classic_shop.sale_fields(client_orderid)
    response = post_without_accept(classic_shop.gateway, f"/api/v2/sale/{classic_shop.endpoint_id}", data)
    assert_classic_sale_answer(response, classic_shop, client_orderid)


def test_classic_merchant_with_another_accept_value_gets_the_classic_format(classic_shop: Merchant) -> None:
    client_orderid = _order()
    data = classic_shop.sale_fields(client_orderid)
    response = classic_shop.gateway.post(f"/api/v2/sale/{classic_shop.endpoint_id}", data, {"Accept": "text/html"})
    assert_classic_sale_answer(response, classic_shop, client_orderid)


def test_classic_merchant_asking_for_json_gets_json(classic_shop: Merchant) -> None:
    response = classic_shop.sale(_order())
    accepted(response)
    assert response.headers["content-type"] == JSON_CONTENT_TYPE


@pytest.mark.parametrize(
    ("signed", "unsigned", "code"),
    [
        ({}, {"control": "0" * 40}, "2"),
        ({}, {"credit_card_number": "4111111111111112"}, "1"),
        ({"currency": "EUR"}, {}, "8"),
    ],
    ids=["wrong-control", "luhn", "currency"],
)
def test_classic_validation_error_still_answers_200_in_the_classic_format(
    classic_shop: Merchant, signed: dict[str, str], unsigned: dict[str, str], code: str
) -> None:
    client_orderid = _order()
    data = classic_shop.sale_fields(client_orderid, **signed)
    data.update(unsigned)
    response = post_without_accept(classic_shop.gateway, f"/api/v2/sale/{classic_shop.endpoint_id}", data)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CLASSIC_CONTENT_TYPE
    got = dict(classic_fields(response.content))
    assert got["error-code"] == code
    assert got["error-message"]
    assert CARD not in got["error-message"]
    expected = classic_body(
        [
            ("type", "validation-error"),
            ("serial-number", got["serial-number"]),
            ("merchant-order-id", client_orderid),
            ("error-message", got["error-message"]),
            ("error-code", code),
        ]
    )
    assert response.content == expected


def test_classic_body_over_64_kib_still_answers_200_in_the_classic_format(classic_shop: Merchant) -> None:
    data = classic_shop.sale_fields(_order(), pad="x" * (65 * 1024))
    response = post_without_accept(classic_shop.gateway, f"/api/v2/sale/{classic_shop.endpoint_id}", data)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == CLASSIC_CONTENT_TYPE
    got = dict(classic_fields(response.content))
    assert got["type"] == "validation-error"
    assert got["error-code"] == "1"


def test_classic_endpoint_of_a_non_classic_merchant_answers_classic(shared_gateway: Gateway) -> None:
    merchant = new_merchant(shared_gateway, _login(), classic=True)
    client_orderid = _order()
    response = post_without_accept(
        shared_gateway, f"/api/v2/sale/{merchant.endpoint_id}", merchant.sale_fields(client_orderid)
    )
    assert_classic_sale_answer(response, merchant, client_orderid)


# --- paths -------------------------------------------------------------------------------------------------


def test_doubled_slash_in_the_path_is_accepted(shop: Merchant) -> None:
    client_orderid = _order()
    response = shop.gateway.post(f"/api/v2//sale/{shop.endpoint_id}", shop.sale_fields(client_orderid))
    assert accepted(response)["merchant-order-id"] == client_orderid


@dataclasses.dataclass(frozen=True)
class Grouped:
    usd: Merchant
    eur: Merchant
    group_id: int


@pytest.fixture(scope="module")
def grouped(shared_gateway: Gateway) -> Grouped:
    usd = new_merchant(shared_gateway, _login())
    eur_endpoint = shared_gateway.cli("endpoint", "create", "--merchant", usd.login, "--currency", "EUR")
    group = shared_gateway.cli(
        "group", "create", "--merchant", usd.login, "--endpoints", f"{usd.endpoint_id},{eur_endpoint['id']}"
    )
    eur = dataclasses.replace(usd, endpoint_id=eur_endpoint["id"], currency="EUR")
    return Grouped(usd, eur, int(group["id"]))


@pytest.mark.parametrize("path", ["/api/v2/sale/group/{gid}", "/api/v2/sale/{gid}", "/api/v2//sale/group/{gid}"])
def test_sale_to_a_group_is_taken_by_the_member_endpoint_of_its_currency(grouped: Grouped, path: str) -> None:
    client_orderid = _order()
    data = grouped.eur.sale_fields(client_orderid, signed_id=grouped.group_id)
    body = accepted(grouped.eur.gateway.post(path.format(gid=grouped.group_id), data))
    assert body["end-point-id"] == str(grouped.eur.endpoint_id)
    assert body["merchant-order-id"] == client_orderid


def test_usd_sale_to_the_same_group_is_taken_by_the_usd_endpoint(grouped: Grouped) -> None:
    data = grouped.usd.sale_fields(_order(), signed_id=grouped.group_id)
    body = accepted(grouped.usd.gateway.post(f"/api/v2/sale/group/{grouped.group_id}", data))
    assert body["end-point-id"] == str(grouped.usd.endpoint_id)


def test_sale_to_a_group_signed_with_the_member_id_is_refused_with_code_2(grouped: Grouped) -> None:
    data = grouped.eur.sale_fields(_order(), signed_id=grouped.eur.endpoint_id)
    refusal(grouped.eur.gateway.post(f"/api/v2/sale/group/{grouped.group_id}", data), 2)


def test_sale_to_a_group_in_a_currency_no_member_serves_is_refused_with_code_8(grouped: Grouped) -> None:
    data = grouped.usd.sale_fields(_order(), currency="GBP", signed_id=grouped.group_id)
    refusal(grouped.usd.gateway.post(f"/api/v2/sale/group/{grouped.group_id}", data), 8)


def test_status_through_the_group_finds_an_order_of_a_member(grouped: Grouped) -> None:
    data = grouped.eur.sale_fields(_order(), signed_id=grouped.group_id)
    order_id = accepted(grouped.eur.gateway.post(f"/api/v2/sale/group/{grouped.group_id}", data))["paynet-order-id"]
    via_group = dataclasses.replace(grouped.eur, endpoint_id=grouped.group_id)
    final = via_group.wait_final(order_id)
    assert final["type"] == "status-response", final
    assert final["status"] == "approved"
    assert final["end-point-id"] == str(grouped.eur.endpoint_id)
    assert final["currency"] == "EUR"


# --- body size ---------------------------------------------------------------------------------------------


def test_body_over_64_kib_is_refused_with_code_1(shop: Merchant) -> None:
    data = shop.sale_fields(_order(), pad="x" * (64 * 1024))
    refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", data), 1)


def test_chunked_body_over_64_kib_is_refused_with_code_1(shop: Merchant) -> None:
    def chunks() -> Iterator[bytes]:
        yield httpx.QueryParams(shop.sale_fields(_order())).__str__().encode()
        for _ in range(17):
            yield b"&pad=" + b"x" * 4096

    response = httpx.post(
        f"{shop.gateway.base}/api/v2/sale/{shop.endpoint_id}",
        content=chunks(),
        headers={**JSON_ACCEPT, "Content-Type": "application/x-www-form-urlencoded"},
        timeout=30,
        verify=TLS,
    )
    refusal(response, 1)


def test_body_of_exactly_64_kib_is_accepted(shop: Merchant) -> None:
    data = shop.sale_fields(_order())
    encoded = str(httpx.QueryParams(data))
    body = encoded + "&pad=" + "x" * (64 * 1024 - len(encoded) - len("&pad="))
    assert len(body.encode()) == 64 * 1024
    response = shop.gateway.post(
        f"/api/v2/sale/{shop.endpoint_id}",
        body,
        {**JSON_ACCEPT, "Content-Type": "application/x-www-form-urlencoded"},
    )
    accepted(response)


def test_body_that_is_not_utf8_is_refused_with_code_1(shop: Merchant) -> None:
    body = str(httpx.QueryParams(shop.sale_fields(_order()))) + "&card_printed_name=Jos%E9"
    headers = {**JSON_ACCEPT, "Content-Type": "application/x-www-form-urlencoded"}
    refusal(shop.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", body, headers), 1)


# --- prefix ------------------------------------------------------------------------------------------------


def test_prefix_is_configurable_down_to_the_root(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_PREFIX="/")
    merchant = new_merchant(gateway, _login())
    root = f"http://127.0.0.1:{gateway.port}"
    data = merchant.sale_fields(_order())
    accepted(
        httpx.post(f"{root}/api/v2/sale/{merchant.endpoint_id}", data=data, headers=JSON_ACCEPT, timeout=30, verify=TLS)
    )
    assert httpx.get(f"{root}/openapi.json", timeout=30, verify=TLS).json()["openapi"] == "3.1.0"
    elsewhere = httpx.post(
        f"{root}/paynet/api/v2/sale/{merchant.endpoint_id}", data=data, headers=JSON_ACCEPT, verify=TLS
    )
    assert elsewhere.status_code == 404


# --- OAuth rows and the OpenAPI document ------------------------------------------------------------------


OAUTH_ROWS = [op for op in OPERATIONS if isinstance(op.signing, OAuth)]


@pytest.fixture(scope="module")
def signing_shop(shop: Merchant) -> Merchant:
    """``shop`` with an RSA key registered, for the OAuth rows."""
    register_key(shop.gateway, shop.login, key_pair()[1])
    return shop


@pytest.mark.parametrize("op", OAUTH_ROWS, ids=[op.code for op in OAUTH_ROWS])
def test_every_oauth_row_refuses_an_unsigned_request_and_reads_a_signed_one(
    signing_shop: Merchant, op: Operation
) -> None:
    """Signed, the request reaches the operation's own checks: these fields are too few for any of them."""
    shop = signing_shop
    data = {"login": shop.login, "client_orderid": _order(), "orderid": "1"}
    unsigned = shop.gateway.post(f"{op.path}/{shop.endpoint_id}", data)
    # str(): the v4 sale's error-code is a JSON number (CONTRACT §18)
    assert (unsigned.status_code, str(unsigned.json()["error-code"])) == (401, "2"), unsigned.text
    response = bodies.post(op, shop, data)
    assert response.headers["content-type"] == JSON_CONTENT_TYPE
    body = response.json()
    if not op.fields:  # an operation of no field (the Hosted Fields ticket) has nothing left to refuse
        assert (response.status_code, body["type"]) == (200, op.response.type), response.text
        return
    assert (response.status_code, body["type"]) == (400, "validation-error"), response.text
    assert str(body["error-code"]) in ("1", "5", "6"), body
    uuid.UUID(body["serial-number"])


REQUEST_SCHEMAS = [
    "TdsCResResultRequest",
    "TdsMethodUrlResultRequest",
    "TdsPaResResultRequest",
    "AccountVerificationFormRequest",
    "AccountVerificationRequest",
    "CaptureRequest",
    "CreateCardRefRequest",
    "GetCardInfoRequest",
    "RebillRequest",
    "PaymentFormRequest",
    "PayoutFormRequest",
    "PayoutRequest",
    "AuthFormRequest",
    "AuthRequest",
    "ReturnRequest",
    "SaleFormRequest",
    "SaleRequest",
    "StatusRequest",
    "VoidRequest",
    "CreateCardRefV4Request",
    "RecurringPaymentForCreation",
    "PayoutCheckRequest",
    "TransferByRefV2Request",
    "TransferFormRequest",
    "TransferFormV4Request",
    "PanEligibilityReceiveRequest",
    "PanEligibilityBothRequest",
    "BankWireTransferRequest",
]
RESPONSE_SCHEMAS = [
    "AsyncResponse",
    "AsyncCheckoutFormRedirect",
    "CardRefAsyncResponse",
    "CardInfoAsyncResponse",
    "StatusResponse",
    "CardRefV4AsyncResponse",
    "CreateRecurringPaymentResponse",
    "ValidationErrorResponse",
    "ServerErrorResponse",
]
OPERATION_PATHS = [
    "/api/3ds/v1/upload-cres-result",
    "/api/3ds/v1/upload-method-url-result",
    "/api/3ds/v1/upload-pares-result",
    "/api/v2/account-verification-form",
    "/api/v2/account-verification",
    "/api/v2/capture",
    "/api/v2/create-card-ref",
    "/api/v2/get-card-info",
    "/api/v2/make-rebill",
    "/api/v2/payment-form",
    "/api/v2/payout-form",
    "/api/v2/payout",
    "/api/v2/preauth-form",
    "/api/v2/preauth",
    "/api/v2/return",
    "/api/v2/sale-form",
    "/api/v2/sale",
    "/api/v2/status",
    "/api/v2/void",
    "/api/v4/create-card-ref",
    "/api/v4/create-recurring-payment",
    "/api/v4/payout-check",
    "/api/v4/payout-pay",
    "/api/v4/transfer",
    "/api/v2/pan-eligibility/send",
    "/api/v2/transfer-by-ref",
    "/api/v2/transfer-form",
    "/api/v4/transfer-form",
    "/api/v2/pan-eligibility/receive",
    "/api/v2/pan-eligibility/both",
    "/api/v2/bank-wire-transfer",
    "/api/v2/make-rebill-sale",
    "/api/v2/make-rebill-preauth",
    "/api/v2/sync/account-verification",
    "/api/v4/payout-by-ref",
    "/api/v4/process-recurring-payments",
    "/api/v4/status",
    "/api/v4/sale",
    "/api/v4/tokenize/create-ephemeral-ticket",
]


def test_openapi_document_names_every_schema_and_operation(shared_gateway: Gateway) -> None:
    response = httpx.get(f"{shared_gateway.base}/openapi.json", timeout=30, verify=TLS)
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == "dev"
    schemas = document["components"]["schemas"]
    for name in (*REQUEST_SCHEMAS, *RESPONSE_SCHEMAS):
        assert name in schemas, name
    assert len(OPERATION_PATHS) == 39
    for path in OPERATION_PATHS:
        assert "post" in document["paths"][f"{path}/{{endpointId}}"], path
        assert "post" in document["paths"][f"{path}/group/{{endpointGroupId}}"], path
    sale = document["paths"]["/api/v2/sale/{endpointId}"]["post"]
    body_ref = sale["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]["$ref"]
    assert body_ref == "#/components/schemas/SaleRequest"
    assert "credit_card_number" in schemas["SaleRequest"]["properties"]


def test_behind_a_trusted_proxy_a_hosted_forms_address_is_at_the_forwarded_host(shop: Merchant) -> None:
    """The customer's browser reaches the gateway where the proxy is: the form's address is there, as the
    host OAuth signs is (the test client is on loopback, a trusted proxy by default)."""
    forwarded = {**JSON_ACCEPT, "X-Forwarded-Host": "pay.example.com"}
    response = shop.gateway.post(f"/api/v2/sale-form/{shop.endpoint_id}", shop.sale_fields("fwd-form-1"), forwarded)
    assert response.status_code == 200, response.text
    assert response.json()["redirect-url"].startswith("http://pay.example.com/paynet/form/")
