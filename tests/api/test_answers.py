"""Typed answers (``kassa.api.answers``): written in their declared order without the fields they do not
carry, documented from the same declarations, and checked against the document (``tests.support.answers``):
a check that must be able to fail."""

from __future__ import annotations

import uuid

import httpx
import pytest

from kassa.api import answers
from kassa.api.answers import Accepted, CardShown, FormAccepted, OrderStatus
from kassa.api.openapi import document
from kassa.api.operations import OPERATIONS, STATUS
from tests.support.answers import Received, problems, recorded
from tests.support.gateway import JSON_ACCEPT, TLS, Gateway

SERIAL = str(uuid.uuid4())


def accepted() -> dict[str, str]:
    return {
        "type": "async-response", "status": "processing", "serial-number": SERIAL, "merchant-order-id": "o-1",
        "paynet-order-id": "12", "end-point-id": "3",
    }  # fmt: skip


def test_an_answer_is_written_in_declared_order_without_the_fields_it_does_not_carry() -> None:
    status = OrderStatus(
        serial_number=SERIAL, status="approved", merchant_order_id="o-1", paynet_order_id="12",
        transaction_type="sale", order_stage="sale_approved", amount="10.42", currency="EUR", end_point_id="3",
        initial_amount="10.42", captured_amount="10.42", refunded_amount="0.00",
        paynet_processing_date="2026-11-26T10:00:00Z",
        card=CardShown(bin="411111", last_four_digits="1111", card_exp_month="03", card_exp_year="2030"),
        email="a@example.com",
    )  # fmt: skip
    written = status.write({"type": "status-response"})
    assert list(written)[:2] == ["type", "serial-number"]
    assert list(written)[13:18] == [
        "paynet-processing-date",
        "bin",
        "last-four-digits",
        "card-exp-month",
        "card-exp-year",
    ]
    assert written["email"] == "a@example.com"
    assert "cardholder-name" not in written and "descriptor" not in written


def test_a_richer_answer_is_built_from_a_plainer_one() -> None:
    plain = Accepted(
        status="processing", serial_number=SERIAL, merchant_order_id="o-1", paynet_order_id="12", end_point_id="3"
    )
    form = FormAccepted(**plain.attributes(), redirect_url="https://gateway.example/form/x")
    assert list(form.write({}))[-1] == "redirect-url"


def test_every_answer_schema_names_its_fields_with_their_kinds_and_allows_no_other() -> None:
    schemas = document("", 300)["components"]["schemas"]
    for op in OPERATIONS:
        schema = schemas[op.response.schema]
        assert schema["additionalProperties"] is False, op.code
        for field in op.response.answer.FIELDS:
            declared = schema["properties"][field.name]
            assert declared["description"] and "type" in declared, (op.code, field.name)
            assert (field.name in schema["required"]) is (field.when is None), (op.code, field.name)


def test_a_status_answer_documents_when_its_card_and_browser_step_are_present() -> None:
    properties = document("", 300)["components"]["schemas"][STATUS.schema]["properties"]
    assert properties["bin"]["description"].endswith("Present when the order has a card.")
    assert "3-D Secure 1.0.2" in properties["pareq"]["description"]
    assert properties["paynet-processing-date"]["pattern"].startswith("^[0-9]{4}")


def test_an_answer_that_matches_its_schema_passes_the_check() -> None:
    assert problems([Received("/api/v2/sale", 200, accepted())]) == []


def test_an_answer_with_a_field_the_document_does_not_name_fails_the_check() -> None:
    [problem] = problems([Received("/api/v2/sale", 200, {**accepted(), "surprise": "1"})])
    assert problem.startswith("/api/v2/sale (HTTP 200, type async-response)")
    assert "'surprise' was unexpected" in problem


def test_an_answer_without_a_required_field_fails_the_check() -> None:
    answer = accepted()
    del answer["end-point-id"]
    [problem] = problems([Received("/api/v2/sale", 200, answer)])
    assert '"end-point-id" is a required property' in problem


@pytest.mark.parametrize(
    ("field", "value"), [("serial-number", "not-a-uuid"), ("paynet-order-id", "12a"), ("status", "fine")]
)
def test_an_answer_whose_value_is_not_of_its_kind_fails_the_check(field: str, value: str) -> None:
    [problem] = problems([Received("/api/v2/sale", 200, {**accepted(), field: value})])
    assert f"{field}:" in problem


def test_an_answer_of_a_status_the_document_does_not_declare_fails_the_check() -> None:
    assert problems([Received("/api/v2/status", 418, {"type": "x"})]) == [
        "/api/v2/status answered HTTP 418, which the document does not declare"
    ]


def test_kinds_have_a_schema_each() -> None:
    assert {kind: answers.schema(kind)["type"] for kind in answers.Kind} == dict.fromkeys(answers.Kind, "string")


def test_a_classic_answer_is_checked_as_the_json_answer_it_stands_for() -> None:
    classic = {**accepted(), "surprise": "1"}
    [problem] = problems([Received("/api/v2/sale", 200, classic, classic=True)])
    assert problem.startswith("/api/v2/sale (classic, as HTTP 200, type async-response)")
    refusal = {"type": "validation-error", "serial-number": SERIAL, "error-message": "x", "error-code": "1"}
    assert problems([Received("/api/v2/sale", 400, refusal, classic=True)]) == []


def test_an_answer_a_test_gets_with_its_own_httpx_post_is_checked_too(shared_gateway: Gateway) -> None:
    before = len(recorded())
    httpx.post(
        f"{shared_gateway.base}/api/v2/status/1", data={"login": "nobody"}, headers=JSON_ACCEPT, timeout=30, verify=TLS
    )
    httpx.get(f"{shared_gateway.base}/api/v2/status/1", timeout=30, verify=TLS)  # no operation's answer: not kept
    [kept] = recorded()[before:]
    assert (kept.path, kept.body["type"]) == ("/api/v2/status", "validation-error")
