"""Every operation of CONTRACT §§5-18 through the client against a real Kassa: v2 operations in JSON and in
the classic format (``client``), v4 ones in JSON (their only format)."""

from __future__ import annotations

import time
from decimal import Decimal

import pytest
from samples import CARD, CUSTOMER

from kassa_client import (
    AsyncResponse,
    CardInfo,
    CardRef,
    EphemeralTicket,
    FormRedirect,
    InvalidStateError,
    Kassa,
    RecurringPayment,
    Status,
    verify_redirect,
)
from kassa_client.testing import Sandbox


def approved_sale(client: Kassa, sandbox: Sandbox, amount: str = "10.42", cvv2: str = "123") -> Status:
    sale = client.sale(client_orderid=sandbox.orderid(), amount=amount, currency="USD", cvv2=cvv2, **CARD, **CUSTOMER)
    final = client.wait_for_final(sale.orderid)
    assert final.status == "approved", final
    return final


def card_ref(client: Kassa, sandbox: Sandbox) -> str:
    sale = approved_sale(client, sandbox)
    ref = client.create_card_ref(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
    assert isinstance(ref, CardRef) and ref.card_ref_id
    return ref.card_ref_id


def test_sale_then_status_by_order_by_client_orderid_and_by_request(client: Kassa, kassa_sandbox: Sandbox) -> None:
    oid = kassa_sandbox.orderid()
    sale = client.sale(client_orderid=oid, amount=Decimal("10.42"), currency="USD", cvv2="123", **CARD, **CUSTOMER)
    assert isinstance(sale, AsyncResponse) and sale.status == "processing" and sale.merchant_order_id == oid
    final = client.wait_for_final(sale.orderid)
    assert (final.status, final.transaction_type, final.amount) == ("approved", "sale", Decimal("10.42"))
    assert final.last_four_digits == "1111" and final.bin == "411111"
    assert client.status(client_orderid=oid).paynet_order_id == sale.orderid
    assert client.status(orderid=sale.orderid, by_request_sn=sale.serial_number).by_request_sn == sale.serial_number


def test_amounts_in_minor_units(client: Kassa, kassa_sandbox: Sandbox) -> None:
    sale = client.sale(client_orderid=kassa_sandbox.orderid(), amount_minor=1042, currency="USD", cvv2="123",
                       **CARD, **CUSTOMER)  # fmt: skip
    assert client.wait_for_final(sale.orderid).amount == Decimal("10.42")


def test_preauth_and_partial_capture(client: Kassa, kassa_sandbox: Sandbox) -> None:
    auth = client.preauth(client_orderid=kassa_sandbox.orderid(), amount="20.00", currency="USD", cvv2="123",
                          **CARD, **CUSTOMER)  # fmt: skip
    assert client.wait_for_final(auth.orderid).transaction_type == "preauth"
    client.capture(orderid=auth.orderid, client_orderid=auth.merchant_order_id, amount="15.00", currency="USD")
    final = client.wait_for_final(auth.orderid)
    assert (final.status, final.transaction_type, final.amount) == ("approved", "capture", Decimal("15.00"))


def test_partial_return_of_a_sale(client: Kassa, kassa_sandbox: Sandbox) -> None:
    sale = approved_sale(client, kassa_sandbox)
    client.refund(orderid=sale.orderid, client_orderid=sale.merchant_order_id, amount="2.42", currency="USD")
    final = client.wait_for_final(sale.orderid)
    assert (final.status, final.transaction_type, final.amount) == ("approved", "reversal", Decimal("2.42"))


def test_void_and_a_second_void_is_refused_for_the_state(client: Kassa, kassa_sandbox: Sandbox) -> None:
    sale = approved_sale(client, kassa_sandbox)
    client.void(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
    assert client.wait_for_final(sale.orderid).transaction_type == "void"
    with pytest.raises(InvalidStateError) as refused:
        client.void(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
    assert refused.value.code == "6"


def test_account_verification_async_and_sync(client: Kassa, kassa_sandbox: Sandbox) -> None:
    verify = client.account_verification(client_orderid=kassa_sandbox.orderid(), cvv2="123", **CARD, **CUSTOMER)
    assert client.wait_for_final(verify.orderid).transaction_type == "account-verification"
    sync = client.sync_account_verification(client_orderid=kassa_sandbox.orderid(), cvv2="123", **CARD, **CUSTOMER)
    assert isinstance(sync, Status) and sync.status == "approved" and sync.card_ref_id


@pytest.mark.parametrize("operation", ["sale_form", "preauth_form", "payment_form", "account_verification_form"])
def test_card_forms_paid_on_the_hosted_page(client: Kassa, kassa_sandbox: Sandbox, operation: str) -> None:
    amount = {} if operation == "account_verification_form" else {"amount": "5.00"}
    form = client.request(operation, {
        "client_orderid": kassa_sandbox.orderid(), "currency": "USD", "redirect_url": "https://shop.example/back",
        **amount, **CUSTOMER,
    })  # fmt: skip
    assert isinstance(form, FormRedirect) and form.redirect_url.startswith(kassa_sandbox.base_url)
    back = kassa_sandbox.pay_hosted_form(form.redirect_url)
    verdict = verify_redirect(back, kassa_sandbox.control_key)
    assert verdict.valid and (verdict.status, verdict.orderid) == ("approved", form.orderid)


@pytest.mark.parametrize(("operation", "kind"), [("payout_form", "payout"), ("transfer_form", "transfer")])
def test_payout_and_transfer_forms_paid_on_the_hosted_page(
    client: Kassa, kassa_sandbox: Sandbox, operation: str, kind: str
) -> None:
    form = client.request(operation, {"client_orderid": kassa_sandbox.orderid(), "amount": "1.00", "currency": "USD",
                                      "redirect_url": "https://shop.example/back", **CUSTOMER})  # fmt: skip
    assert isinstance(form, FormRedirect) and "/form/" in form.redirect_url
    back = kassa_sandbox.browser().pay(form.redirect_url, receiving_card="5555555555554444")
    assert verify_redirect(back, kassa_sandbox.control_key).status == "approved"
    assert client.wait_for_final(form.orderid).transaction_type == kind


def test_merchant_hosted_3ds_2_with_method_then_challenge(client: Kassa, kassa_sandbox: Sandbox) -> None:
    sale = client.sale(client_orderid=kassa_sandbox.orderid(), amount="3.00", currency="USD", cvv2="324",
                       redirect_url="https://shop.example/back", **CARD, **CUSTOMER)  # fmt: skip
    method = wait_stage(client, sale.orderid, "sale_3d_method")
    client.upload_method_url_result(
        orderid=sale.orderid, client_orderid=sale.merchant_order_id,
        threeDSServerTransID=method.threeds_server_trans_id, threeDSCompInd="Y", browserIP="203.0.113.7",
    )  # fmt: skip
    challenge = wait_stage(client, sale.orderid, "sale_3d_validating")
    back = kassa_sandbox.browser().challenge(challenge.raw)
    client.upload_cres_result(orderid=sale.orderid, client_orderid=sale.merchant_order_id, cres=back["cres"])
    assert client.wait_for_final(sale.orderid).status == "approved"


def test_merchant_hosted_3ds_1_with_pares(client: Kassa, kassa_sandbox: Sandbox) -> None:
    sale = client.sale(client_orderid=kassa_sandbox.orderid(), amount="3.00", currency="USD", cvv2="322",
                       **CARD, **CUSTOMER)  # fmt: skip
    step = wait_stage(client, sale.orderid, "sale_3d_validating")
    back = kassa_sandbox.browser().challenge(step.raw)
    client.upload_pares_result(
        orderid=sale.orderid, client_orderid=sale.merchant_order_id, pares=back["PaRes"], md=back["MD"]
    )
    assert client.wait_for_final(sale.orderid).status == "approved"


def wait_stage(client: Kassa, orderid: str, stage: str) -> Status:
    for _ in range(200):
        found = client.status(orderid=orderid)
        if found.order_stage == stage:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{orderid} never reached {stage}: {found}")


def test_card_references_card_info_and_rebills(client: Kassa, kassa_sandbox: Sandbox) -> None:
    ref = card_ref(client, kassa_sandbox)
    info = client.get_card_info(cardrefid=ref)
    assert isinstance(info, CardInfo) and (info.bin, info.last_four_digits) == ("411111", "1111")
    for name, kind in (("make_rebill", "sale"), ("make_rebill_sale", "sale"), ("make_rebill_preauth", "preauth")):
        rebill = client.request(name, {"client_orderid": kassa_sandbox.orderid(), "cardrefid": ref,
                                       "amount": "4.00", "currency": "USD"})  # fmt: skip
        final = client.wait_for_final(rebill.raw["paynet-order-id"])
        assert (final.status, final.transaction_type) == ("approved", kind), name


def test_rebill_with_enumerated_amounts(client: Kassa, kassa_sandbox: Sandbox) -> None:
    ref = card_ref(client, kassa_sandbox)
    rebill = client.make_rebill(
        client_orderid=kassa_sandbox.orderid(), cardrefid=ref, amount="9.00", currency="USD",
        enumerate_amounts=["5.00", "3.00"], recurrent_scenario="IRREGULAR",
    )  # fmt: skip
    assert client.wait_for_final(rebill.orderid).status == "approved"


def test_transfer_between_card_references(client: Kassa, kassa_sandbox: Sandbox) -> None:
    source, destination = card_ref(client, kassa_sandbox), card_ref(client, kassa_sandbox)
    transfer = client.transfer_by_ref(client_orderid=kassa_sandbox.orderid(), source_card_ref_id=source,
                                      destination_card_ref_id=destination, amount="1.50", currency="USD")  # fmt: skip
    assert client.wait_for_final(transfer.orderid).transaction_type == "transfer"


def test_bank_wire_transfer(client: Kassa, kassa_sandbox: Sandbox) -> None:
    wire = client.bank_wire_transfer(
        client_orderid=kassa_sandbox.orderid(), amount="12.00", vat_amount="2.00", currency="USD",
        payer_fullname="Shop Ltd", recipient_name="John Smith", recipient_account_number="DE89370400440532013000",
        recipient_bank_bic="DEUTDEFF",
    )  # fmt: skip
    final = client.wait_for_final(wire.orderid)
    assert (final.status, final.transaction_type, final.destination_type) == ("approved", "payout", "bank")
    assert final.destination_account.endswith("3000") and "0532013" not in final.destination_account


def test_payout_to_a_card_signed_with_hmac_sha1(client: Kassa, kassa_sandbox: Sandbox) -> None:
    payout = client.payout(client_orderid=kassa_sandbox.orderid(), amount="3.00", currency="USD", **CARD)
    assert client.wait_for_final(payout.orderid).transaction_type == "payout"


@pytest.mark.parametrize("operation", ["pan_eligibility_send", "pan_eligibility_receive", "pan_eligibility_both"])
def test_pan_eligibility(client: Kassa, kassa_sandbox: Sandbox, operation: str) -> None:
    check = client.request(operation, {"client_orderid": kassa_sandbox.orderid(),
                                       "credit_card_number": CARD["credit_card_number"]})  # fmt: skip
    final = client.wait_for_final(check.raw["paynet-order-id"])
    assert (final.status, final.transaction_type) == ("approved", "pan-eligibility")


def test_v4_status_and_card_reference(kassa_sandbox: Sandbox) -> None:
    client = kassa_sandbox.client
    sale = approved_sale(client, kassa_sandbox)
    assert client.wait_for_final(sale.orderid, v4=True).status == "approved"
    ref = client.create_card_ref_v4(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
    assert ref.card_ref_id and ref.unq_card_ref_id and ref.recurring_payment_id


def test_v4_sale_and_ephemeral_ticket(kassa_sandbox: Sandbox) -> None:
    client = kassa_sandbox.client
    ticket = client.create_ephemeral_ticket()
    assert isinstance(ticket, EphemeralTicket) and ticket.ephemeral_ticket
    sale = client.sale_v4(client_orderid=kassa_sandbox.orderid(), amount="7.00", currency="USD", cvv2="123",
                          **CARD, **CUSTOMER)  # fmt: skip
    assert client.wait_for_final(sale.orderid, v4=True).status == "approved"


def test_recurring_payment_created_charged_now_and_on_schedule(kassa_sandbox: Sandbox) -> None:
    client = kassa_sandbox.client
    ref = card_ref(client, kassa_sandbox)
    payment_id = kassa_sandbox.orderid("sub")
    created = client.create_recurring_payment(client_orderid=payment_id, cardrefid=ref, amount="9.99",
                                              currency="USD", period="day", interval=1,
                                              server_callback_url=kassa_sandbox.callback_url)  # fmt: skip
    assert isinstance(created, RecurringPayment) and created.recurring_payment_id
    now = client.process_recurring_payments(recurring_payment_id=created.recurring_payment_id, amount="9.99",
                                            currency="USD")  # fmt: skip
    assert client.wait_for_final(now.orderid).status == "approved"
    kassa_sandbox.run_recurring(days=1)
    charge = client.status(client_orderid=f"{payment_id}-1")
    assert client.wait_for_final(charge.orderid).status == "approved"


def test_v4_payouts(kassa_sandbox: Sandbox) -> None:
    client = kassa_sandbox.client
    bank = client.payout_v4(client_orderid=kassa_sandbox.orderid(), amount="5.00", currency="USD",
                            account_number="12345678", bank_name="Bank", routing_number="021000021",
                            account_name="John Smith")  # fmt: skip
    assert bank.payout_id == bank.orderid
    assert client.wait_for_final(bank.orderid).transaction_type == "payout"
    ref = card_ref(client, kassa_sandbox)
    by_ref = client.payout_by_ref(client_orderid=kassa_sandbox.orderid(), amount="2.00", currency="USD",
                                  destination_card_ref_id=ref)  # fmt: skip
    assert client.wait_for_final(by_ref.orderid).status == "approved"
    check = client.payout_check(client_orderid=kassa_sandbox.orderid(), amount="2.00", currency="USD", **CARD)
    assert client.wait_for_final(check.orderid).status == "approved"
    paid = client.payout_pay(orderid=check.orderid, client_orderid=check.merchant_order_id)
    assert paid.orderid == check.orderid


def test_v4_transfers(kassa_sandbox: Sandbox) -> None:
    client = kassa_sandbox.client
    transfer = client.transfer(client_orderid=kassa_sandbox.orderid(), amount="2.00", currency="USD", cvv2="123",
                               destination_card_no="5555555555554444", **CARD)  # fmt: skip
    assert client.wait_for_final(transfer.orderid).transaction_type == "transfer"
    by_ref = client.transfer_by_ref_v4(client_orderid=kassa_sandbox.orderid(), amount="2.00", currency="USD",
                                       destination_card_no="5555555555554444")  # fmt: skip
    assert by_ref.transaction_id == by_ref.orderid
    assert client.wait_for_final(by_ref.orderid).status == "approved"
    form = client.transfer_form_v4(client_orderid=kassa_sandbox.orderid(), amount="2.00", currency="USD",
                                   destination_card_no="5555555555554444")  # fmt: skip
    assert isinstance(form, FormRedirect) and form.redirect_url
