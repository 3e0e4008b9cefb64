"""Risk rules seen by a merchant (CONTRACT §16): a sale a rule refuses is answered ``async-response`` as
any other, ends ``filtered`` with the kind's error-code and the limit named, is called back, and reaches
no acquirer; a velocity limit holds across gateway processes sharing one database; above a 3-D Secure
rule's amount the issuer is asked for a challenge, and a cardholder's payment it does not authenticate is
filtered."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from kassa.processors.iso8583.dialect import Kind as MessageKind
from tests.api.test_card_refs import make_rebill, stored_card
from tests.api.test_payouts import CARD, outcome, payout
from tests.api.test_transfers import DESTINATION, SOURCE, money, v4
from tests.pages.test_threeds_merchant_hosted import through_acs, upload
from tests.support.acquirer_host import host_on_a_thread, iso_connection
from tests.support.balances import available, credit
from tests.support.gateway import TLS, Gateway, Merchant, free_port, new_merchant
from tests.support.oauth import key_pair, register_key
from tests.support.operations import LEDGER_OK, final, ledger_check
from tests.support.receiver import Receiver, running
from tests.support.recurring import subscribe_due_now


def _rule(merchant: Merchant, *args: str) -> int:
    created = merchant.gateway.cli("rule", "create", "--endpoint", str(merchant.endpoint_id), *args)
    rule_id: int = created["id"]
    return rule_id


def test_a_filtered_sale_is_answered_as_any_and_ends_filtered_with_its_callback(merchant: Merchant) -> None:
    rule_id = _rule(merchant, "--kind", "email", "--value", "fraud@example.com")
    with running(Receiver(free_port())) as receiver:
        answer = merchant.sale("rr-1", email="Fraud@example.com", server_callback_url=receiver.url)
        assert answer.status_code == 200 and answer.json()["type"] == "async-response"
        status = merchant.wait_final(answer.json()["paynet-order-id"])
        assert (status["status"], status["order-stage"], status["error-code"]) == ("filtered", "sale_filtered", "4003")
        assert status["error-message"] == f"Refused by risk rule {rule_id}: the e-mail address is on a block list"
        [callback] = receiver.wait_for(1)
        assert (callback.query["status"], callback.query["orderid"]) == ("filtered", answer.json()["paynet-order-id"])
    passed = merchant.sale("rr-2", email="cardholder@example.com")
    assert merchant.wait_final(passed.json()["paynet-order-id"])["status"] == "approved"
    shown = merchant.gateway.cli("order", "show", answer.json()["paynet-order-id"])
    assert shown["filtered_by_rule"] == rule_id


def _card_messages(host: object) -> list[str]:
    """The card numbers of the financial messages the host received (sign-on and echoes left out)."""
    network = host.dialect.messages[MessageKind.ECHO].mti  # type: ignore[attr-defined]
    return [m.get("2", "") for m in host.received if m["t"] != network]  # type: ignore[attr-defined]


def test_a_filtered_sale_sends_nothing_to_the_acquirer(merchant: Merchant) -> None:
    with host_on_a_thread() as host:
        iso_connection(merchant, host)
        _rule(merchant, "--kind", "bin", "--value", "411100-411199")
        filtered = merchant.sale("rr-acq-1")
        assert merchant.wait_final(filtered.json()["paynet-order-id"])["status"] == "filtered"
        other = merchant.sale("rr-acq-2", credit_card_number="5555555555554444")
        assert merchant.wait_final(other.json()["paynet-order-id"])["status"] == "approved"
        assert _card_messages(host) == ["5555555555554444"]


@pytest.mark.backends("postgresql")
def test_ten_concurrent_sales_on_two_processes_pass_a_limit_of_five_exactly_five_times(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first = gateway_factory()
    second = gateway_factory()
    merchant = new_merchant(first, f"m-{uuid.uuid4().hex[:10]}")
    _rule(merchant, "--kind", "count", "--per", "card", "--limit", "5", "--window", "1h")
    # A limit no sale reaches: each sale locks two keys at once, as the other sales do.
    _rule(merchant, "--kind", "sum", "--per", "email", "--limit", "10000000", "--window", "1d", "--currency", "USD")
    on_second = Merchant(second, merchant.login, merchant.control_key, merchant.endpoint_id)
    shops = [merchant, on_second] * 5
    with ThreadPoolExecutor(10) as pool:
        answers = list(pool.map(lambda n: shops[n].sale(f"rr-c-{n}").json(), range(10)))
    finals = [merchant.wait_final(a["paynet-order-id"]) for a in answers]
    assert sorted(f["status"] for f in finals) == ["approved"] * 5 + ["filtered"] * 5
    assert {f["error-code"] for f in finals if f["status"] == "filtered"} == {"4101"}


def test_a_payout_to_a_listed_card_is_filtered_and_gives_its_reservation_back(merchant: Merchant) -> None:
    credit(merchant, "100.00")
    _rule(merchant, "--kind", "bin", "--value", "411111")
    found = outcome(merchant, payout(merchant, CARD, "40.00"))
    assert (found["status"], found["error-code"]) == ("filtered", "4002")
    assert available(merchant) == "100.00"
    assert ledger_check(merchant) == LEDGER_OK


def test_a_recurring_charge_on_a_listed_card_is_filtered(clock_merchant: Merchant) -> None:
    # Due tomorrow by the gateway's clock, so that no tick of its scheduler charges it before the rule exists.
    today = datetime.datetime.fromtimestamp(clock_merchant.gateway.advance(0) / 1000, datetime.UTC).date()
    subscribe_due_now(clock_merchant, max_count=1, start=today + datetime.timedelta(days=1))
    _rule(clock_merchant, "--kind", "bin", "--value", "411111")
    clock_merchant.gateway.advance(86_400)  # the charge is due
    final = clock_merchant.wait_final(clock_merchant.wait_order("sub0-1"))
    assert (final["status"], final["error-code"]) == ("filtered", "4002")


def test_a_hosted_forms_sale_is_screened_when_its_card_is_collected(merchant: Merchant) -> None:
    _rule(merchant, "--kind", "bin", "--value", "411111")
    data = merchant.sale_fields("rr-form-1")
    for card_field in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2"):
        del data[card_field]
    opened = merchant.gateway.post(f"/api/v2/sale-form/{merchant.endpoint_id}", data).json()
    card = {"cc-number": "4111 1111 1111 1111", "cc-name": "Jane Doe", "cc-exp": "12/30", "cc-csc": "123"}
    submitted = httpx.post(opened["redirect-url"], data=card, verify=TLS, timeout=30)
    assert submitted.status_code == 303, submitted.text
    final = merchant.wait_final(opened["paynet-order-id"])
    assert (final["status"], final["error-code"]) == ("filtered", "4002")
    checkout = httpx.get(submitted.headers["location"], verify=TLS, timeout=30)
    assert checkout.status_code == 200 and "filtered" in checkout.text  # the final redirect to the shop


def _three_ds_above(merchant: Merchant, amount: str, currency: str = "USD", *extra: str) -> int:
    return _rule(merchant, "--kind", "three-ds-above", "--amount", amount, "--currency", currency, *extra)


def test_above_the_amount_a_card_to_card_transfer_its_issuer_does_not_authenticate_is_filtered(
    make_merchant: Callable[..., Merchant],
) -> None:
    sender = make_merchant()
    register_key(sender.gateway, sender.login, key_pair()[1])
    _three_ds_above(sender, "1000")
    fields = [*money(sender, "40.00"), *SOURCE, ("cvv2", "111"), ("destination-card-no", DESTINATION)]
    status = final(sender, v4(sender, "transfer", fields))
    assert (status["status"], status["transaction-type"], status["error-code"]) == ("filtered", "transfer", "4201")


def test_above_the_amount_a_card_its_issuer_does_not_authenticate_is_filtered_and_sends_nothing(
    merchant: Merchant,
) -> None:
    with host_on_a_thread() as host:
        iso_connection(merchant, host)
        rule_id = _three_ds_above(merchant, "1000")
        with running(Receiver(free_port())) as receiver:
            above = merchant.sale("rr-3ds-1", cvv2="111", amount="10.01", server_callback_url=receiver.url)
            assert above.json()["type"] == "async-response"
            final = merchant.wait_final(above.json()["paynet-order-id"])
            assert (final["status"], final["order-stage"], final["error-code"]) == ("filtered", "sale_filtered", "4201")
            assert final["error-message"] == (
                f"Refused by risk rule {rule_id}: 3-D Secure is required above 1000 USD minor units"
                " and the card's issuer offered no authentication"
            )
            [callback] = receiver.wait_for(1)
            assert callback.query["status"] == "filtered"
        at_the_amount = merchant.sale("rr-3ds-2", cvv2="111", amount="10.00", credit_card_number="5555555555554444")
        assert merchant.wait_final(at_the_amount.json()["paynet-order-id"])["status"] == "approved"
        assert _card_messages(host) == ["5555555555554444"]
    shown = merchant.gateway.cli("order", "show", above.json()["paynet-order-id"])
    assert shown["filtered_by_rule"] == rule_id
    assert merchant.gateway.cli("rule", "show", str(rule_id))["filtered"] == {"last_day": 1, "last_30_days": 1}


@pytest.mark.parametrize("cvv2", ["123", "321"])
def test_above_the_amount_a_card_its_issuer_can_authenticate_is_challenged_and_approved(
    merchant: Merchant, cvv2: str
) -> None:
    rule_id = _three_ds_above(merchant, "1000")
    client_orderid = f"rr-3ds-c-{cvv2}"
    order = merchant.sale(client_orderid, cvv2=cvv2, redirect_url="https://shop.example/back").json()
    challenge = merchant.wait_stage(order["paynet-order-id"], leaving="sale_processing")
    assert challenge["order-stage"] == "sale_3d_validating", challenge  # the issuer was asked for a challenge
    back = through_acs(challenge)
    done = upload(merchant, "upload-cres-result", order["paynet-order-id"], client_orderid, cres=back.fields["cres"])
    assert done.json()["type"] == "async-response", done.text
    assert merchant.wait_final(order["paynet-order-id"])["status"] == "approved"
    assert merchant.gateway.cli("rule", "show", str(rule_id))["filtered"] == {"last_day": 0, "last_30_days": 0}


def test_attempted_authentication_passes_a_three_ds_rule(merchant: Merchant) -> None:
    _three_ds_above(merchant, "1000")
    attempted = merchant.sale("rr-3ds-a", cvv2="325")
    assert merchant.wait_final(attempted.json()["paynet-order-id"])["status"] == "approved"


def test_below_the_amount_or_in_another_currency_a_three_ds_rule_compares_nothing(merchant: Merchant) -> None:
    _three_ds_above(merchant, "5000")
    _three_ds_above(merchant, "100", "EUR")  # the merchant sells in USD
    below = merchant.sale("rr-3ds-b", cvv2="111", amount="49.99")
    assert merchant.wait_final(below.json()["paynet-order-id"])["status"] == "approved"
    plain = merchant.sale("rr-3ds-p", cvv2="123", amount="49.99")  # asked no challenge: approved at once
    assert merchant.wait_final(plain.json()["paynet-order-id"])["status"] == "approved"


def test_a_rebill_above_the_amount_is_not_filtered(merchant: Merchant) -> None:
    ref = stored_card(merchant)  # 4111 1111 1111 1111: the sandbox decides a rebill by its last digits, 111
    _three_ds_above(merchant, "1000")
    rebill = make_rebill(merchant, "rr-3ds-r", ref, "50.00")
    assert merchant.wait_final(rebill.json()["paynet-order-id"])["status"] == "approved"


def test_a_dry_run_three_ds_rule_counts_what_it_would_filter_and_filters_nothing(merchant: Merchant) -> None:
    rule_id = _three_ds_above(merchant, "1000", "USD", "--dry-run")
    counted = merchant.sale("rr-3ds-d", cvv2="111")
    assert merchant.wait_final(counted.json()["paynet-order-id"])["status"] == "approved"
    # No challenge is asked in dry run: the payment goes as without the rule, approved unauthenticated, and
    # is counted too (enforced, its issuer would have been asked to challenge).
    plain = merchant.sale("rr-3ds-d2", cvv2="123")
    assert merchant.wait_final(plain.json()["paynet-order-id"])["status"] == "approved"
    authenticated = merchant.sale("rr-3ds-d3", cvv2="325")
    assert merchant.wait_final(authenticated.json()["paynet-order-id"])["status"] == "approved"
    below = merchant.sale("rr-3ds-d4", cvv2="111", amount="10.00")
    assert merchant.wait_final(below.json()["paynet-order-id"])["status"] == "approved"
    assert merchant.gateway.cli("rule", "show", str(rule_id))["filtered"] == {"last_day": 2, "last_30_days": 2}
    assert merchant.gateway.cli("order", "show", counted.json()["paynet-order-id"])["filtered_by_rule"] is None


def test_a_hosted_forms_sale_above_the_amount_is_filtered_when_its_issuer_does_not_authenticate(
    merchant: Merchant,
) -> None:
    _three_ds_above(merchant, "1000")
    data = merchant.sale_fields("rr-3ds-form")
    for card_field in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2"):
        del data[card_field]
    opened = merchant.gateway.post(f"/api/v2/sale-form/{merchant.endpoint_id}", data).json()
    card = {"cc-number": "4111 1111 1111 1111", "cc-name": "Jane Doe", "cc-exp": "12/30", "cc-csc": "111"}
    submitted = httpx.post(opened["redirect-url"], data=card, verify=TLS, timeout=30)
    assert submitted.status_code == 303, submitted.text
    final = merchant.wait_final(opened["paynet-order-id"])
    assert (final["status"], final["error-code"]) == ("filtered", "4201")
