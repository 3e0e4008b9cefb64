"""Payouts (CONTRACT §13) through HTTP, signed as merchants sign them (oauthlib's client): money leaves the
merchant's available balance for a card, a bank account, an e-wallet or a phone; a payout beyond the
balance is declined with 116 and moves nothing; concurrent payouts never spend more than is there, on one
process or two; every refusal of a destination names its field; numbers are shown masked."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.support.balances import available, credit
from tests.support.cards import pan_ending
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, cli_run, new_merchant, unreachable_connection
from tests.support.oauth import key_pair, register_key, signed_post
from tests.support.operations import LEDGER_OK, ledger_check

CARD = {
    "credit_card_number": "4111111111111111",
    "card_printed_name": "Jane Doe",
    "expire_month": "12",
    "expire_year": "2030",
}
BANK = {
    "account_number": "12345698765432",
    "bank_name": "Westminster Bank",
    "iban": "GB82WEST12345698765432",
    "bank_bic": "NWBKGB2L",
    "account_name": "Jane Doe",
}
EWALLET = {"ewallet_type": "paypal", "ewallet_wallet": "wallet-7788991"}
PHONE = {"receiver_phone": "+447911123456", "receiver_bank_id": "GBFPS01", "receiver_name": "Jane Doe"}


@pytest.fixture
def payer(make_merchant: Callable[..., Merchant]) -> Merchant:
    """A sandbox merchant with 100.00 USD available."""
    merchant = make_merchant()
    credit(merchant, "100.00")
    return merchant


def payout(m: Merchant, destination: dict[str, str], amount: str = "5.00", **fields: str) -> httpx.Response:
    body = {
        "client_orderid": fields.pop("client_orderid", f"po-{uuid.uuid4().hex[:10]}"),
        "amount": amount,
        "currency": m.currency,
        "order_desc": "Winnings",
        **destination,
        **fields,
    }
    url = f"{m.gateway.base}/api/v2/payout/{m.endpoint_id}"
    # On a gateway whose clock tests move, signed at its time: days ahead of this machine's, a timestamp of
    # the machine's would be refused as outside the replay window.
    clocked = m.gateway.extra_env.get("KASSA_TEST_CLOCK") == "1"
    timestamp = m.gateway.advance(0) // 1000 if clocked else None
    return signed_post(url, body, login=m.login, method="HMAC-SHA1", control_key=m.control_key, timestamp=timestamp)


def outcome(m: Merchant, answer: httpx.Response) -> dict[str, str]:
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["type"] == "async-response"
    return m.wait_final(body["paynet-order-id"])


def refusal(answer: httpx.Response) -> tuple[int, str, str]:
    body = answer.json()
    return answer.status_code, body["error-code"], body["error-message"]


# --- money ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("destination", "kind"), [(CARD, "card"), (BANK, "bank"), (EWALLET, "ewallet"), (PHONE, "phone")]
)
def test_a_payout_to_each_kind_of_destination_is_approved_and_leaves_the_balance(
    payer: Merchant, destination: dict[str, str], kind: str
) -> None:
    status = outcome(payer, payout(payer, destination, "30.00"))
    assert (status["status"], status["transaction-type"], status["order-stage"]) == (
        "approved",
        "payout",
        "payout_approved",
    )
    assert available(payer) == "70.00"
    if kind != "card":
        assert status["destination-type"] == kind
        assert status["destination-account"].startswith("*")
    assert ledger_check(payer) == LEDGER_OK


def test_a_payout_beyond_the_available_balance_is_declined_with_116_and_moves_nothing(payer: Merchant) -> None:
    status = outcome(payer, payout(payer, CARD, "100.01"))
    assert (status["status"], status["error-code"]) == ("declined", "116")
    assert available(payer) == "100.00"
    assert ledger_check(payer) == LEDGER_OK


def test_a_merchant_without_a_balance_pays_nothing_out(make_merchant: Callable[..., Merchant]) -> None:
    empty = make_merchant()
    status = outcome(empty, payout(empty, CARD, "0.01"))
    assert (status["status"], status["error-code"]) == ("declined", "116")


@pytest.mark.parametrize(("ending", "status"), [("116", "declined"), ("500", "error"), ("555", "filtered")])
def test_a_payout_the_sandbox_refuses_gives_its_reservation_back(payer: Merchant, ending: str, status: str) -> None:
    found = outcome(payer, payout(payer, {**BANK, "iban": "", "account_number": "4400" + ending}, "40.00"))
    assert found["status"] == status
    assert available(payer) == "100.00"
    assert ledger_check(payer) == LEDGER_OK


def test_a_payout_to_a_card_the_sandbox_declines_keeps_the_money(payer: Merchant) -> None:
    found = outcome(payer, payout(payer, {**CARD, "credit_card_number": pan_ending("116")}, "40.00"))
    assert (found["status"], found["error-code"]) == ("declined", "116")
    assert available(payer) == "100.00"


def _thirty_payouts(merchants: list[Merchant]) -> Counter[str]:
    def one(n: int) -> str:
        m = merchants[n % len(merchants)]
        status = outcome(merchants[0], payout(m, CARD, "5.00"))
        return f"{status['status']}-{status.get('error-code', '')}"

    with ThreadPoolExecutor(30) as pool:
        return Counter(pool.map(one, range(30)))


def test_thirty_concurrent_payouts_of_5_on_100_approve_exactly_twenty(payer: Merchant) -> None:
    assert _thirty_payouts([payer]) == Counter({"approved-": 20, "declined-116": 10})
    assert available(payer) == "0.00"
    assert ledger_check(payer) == LEDGER_OK


@pytest.mark.backends("postgresql")
def test_concurrent_payouts_spread_over_two_server_processes_approve_exactly_twenty(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first, second = gateway_factory(), gateway_factory()
    merchant = new_merchant(first, f"two-nodes-{uuid.uuid4().hex[:6]}")
    credit(merchant, "100.00")
    on_second = Merchant(second, merchant.login, merchant.control_key, merchant.endpoint_id)
    assert _thirty_payouts([merchant, on_second]) == Counter({"approved-": 20, "declined-116": 10})
    assert available(merchant) == "0.00"
    assert ledger_check(merchant) == LEDGER_OK


# --- destinations ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({**BANK, "iban": "GB83WEST12345698765432"}, "iban"),
        ({**BANK, "bank_bic": "NWBKGB2"}, "bank_bic"),
        ({**BANK, "iban": "", "routing_number": "011000016"}, "routing_number"),
        ({**PHONE, "receiver_phone": "07911123456"}, "receiver_phone"),
        ({**CARD, **EWALLET}, "ewallet"),
        ({**EWALLET, "payout_method": "pigeon"}, "payout_method"),
        ({**BANK, "payout_method": "phone"}, "payout_method"),
        ({"order_desc": "nowhere"}, "payout_method"),
        ({**CARD, "credit_card_number": "4111111111111112"}, "credit_card_number"),
        ({**CARD, "expire_month": ""}, "expire_month"),
    ],
)
def test_a_destination_that_is_not_right_is_refused_with_code_1_naming_the_field(
    payer: Merchant, fields: dict[str, str], named: str
) -> None:
    status, code, message = refusal(payout(payer, fields))
    assert (status, code) == (400, "1")
    assert named in message
    assert available(payer) == "100.00"


def test_a_payout_to_a_card_reference_pays_the_card_it_names(payer: Merchant) -> None:
    from tests.support.operations import approved_order

    order = approved_order(payer, f"ref-{uuid.uuid4().hex[:6]}", amount="1.00")
    ref = payer.gateway.post(
        f"/api/v2/create-card-ref/{payer.endpoint_id}",
        _card_ref_fields(payer, order),
    ).json()["card-ref-id"]
    status = outcome(payer, payout(payer, {"destination-card-ref-id": ref}, "10.00"))
    assert (status["status"], status["last-four-digits"]) == ("approved", "1111")


def _card_ref_fields(m: Merchant, order: str) -> dict[str, str]:
    from tests.support.gateway import sha1

    client_orderid = m.status(orderid=order).json()["merchant-order-id"]
    return {
        "login": m.login,
        "client_orderid": client_orderid,
        "orderid": order,
        "control": sha1(m.login, client_orderid, order, m.control_key),
    }


def test_a_card_reference_of_another_merchant_pays_nothing(
    payer: Merchant, make_merchant: Callable[..., Merchant]
) -> None:
    from tests.support.operations import approved_order

    other = make_merchant()
    order = approved_order(other, "theirs", amount="1.00")
    ref = other.gateway.post(f"/api/v2/create-card-ref/{other.endpoint_id}", _card_ref_fields(other, order))
    status, code, _ = refusal(payout(payer, {"destination-card-ref-id": ref.json()["card-ref-id"]}))
    assert (status, code) == (400, "5")


def test_no_full_account_or_phone_number_is_shown_in_status(payer: Merchant) -> None:
    for destination, number in ((BANK, "GB82WEST12345698765432"), (PHONE, "447911123456"), (EWALLET, "7788991")):
        status = outcome(payer, payout(payer, destination, "1.00"))
        assert number not in str(status)


# --- v4 and operators -----------------------------------------------------------------------------------------


def test_the_v4_bank_payout_of_the_original_gateways_example_answers_its_payout_id(payer: Merchant) -> None:
    register_key(payer.gateway, payer.login, key_pair()[1])
    fields = [
        ("client-order-id", f"v4-{uuid.uuid4().hex[:8]}"),
        ("amount", "12.50"),
        ("currency", "USD"),
        ("order_desc", "Bank payout"),
        ("account_number", "4400123456"),
        ("bank_name", "Example Bank"),
        ("bank_branch", "Main street"),
        ("bank_province", "Ontario"),
        ("bank_city", "Toronto"),
        ("account_name", "Jane Doe"),
    ]
    url = f"{payer.gateway.base}/api/v4/payout/{payer.endpoint_id}"
    answer = signed_post(url, fields, login=payer.login, private_key_pem=key_pair()[0], headers={})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["payout-id"] == body["paynet-order-id"]
    assert payer.wait_final(body["payout-id"])["status"] == "approved"
    assert available(payer) == "87.50"


def payout_by_ref(m: Merchant, fields: dict[str, str], private_key_pem: str | None = None) -> httpx.Response:
    """/api/v4/payout-by-ref, signed with ``private_key_pem`` (default: the key ``key_pair()`` registers)."""
    body = {"client-order-id": f"pbr-{uuid.uuid4().hex[:8]}", "currency": m.currency, "order_desc": "Refund", **fields}
    url = f"{m.gateway.base}/api/v4/payout-by-ref/{m.endpoint_id}"
    return signed_post(url, body, login=m.login, private_key_pem=private_key_pem or key_pair()[0], headers={})


def test_a_payout_by_ref_pays_the_referenced_card_from_the_balance_and_names_its_payout(payer: Merchant) -> None:
    from tests.support.operations import approved_order

    register_key(payer.gateway, payer.login, key_pair()[1])
    order = approved_order(payer, f"ref-{uuid.uuid4().hex[:6]}", amount="1.00")
    ref = payer.gateway.post(f"/api/v2/create-card-ref/{payer.endpoint_id}", _card_ref_fields(payer, order))
    answer = payout_by_ref(payer, {"amount": "12.00", "destination-card-ref-id": ref.json()["card-ref-id"]})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["type"], body["payout-id"]) == ("async-response", body["paynet-order-id"])
    status = payer.wait_final(body["payout-id"])
    shown = (status["status"], status["transaction-type"], status["amount"], status["last-four-digits"])
    assert shown == ("approved", "payout", "12.00", "1111")
    assert available(payer) == "88.00"  # the 1.00 sale is not settled: it is not available yet
    assert ledger_check(payer) == LEDGER_OK


def test_a_payout_by_ref_is_refused_unsigned_by_the_merchants_key_or_without_a_reference_of_its_own(
    payer: Merchant,
) -> None:
    register_key(payer.gateway, payer.login, key_pair()[1])
    forged = payout_by_ref(payer, {"amount": "1.00", "destination-card-ref-id": "1"}, key_pair(2048, 1)[0])
    assert (forged.status_code, forged.json()["error-code"]) == (401, "2")
    assert refusal(payout_by_ref(payer, {"amount": "1.00"}))[:2] == (400, "1")
    assert refusal(payout_by_ref(payer, {"amount": "1.00", "destination-card-ref-id": "99999999"}))[:2] == (400, "5")
    assert available(payer) == "100.00"


def live_endpoint_of(m: Merchant) -> Merchant:
    """The merchant's new live endpoint in its currency, as an operator creates it (with an ISO 8583
    connection it never reaches: its payouts are declined before any is sent)."""
    connection = unreachable_connection(m.gateway)
    created = m.gateway.cli("endpoint", "create", "--merchant", m.login, "--currency", m.currency, "--mode", "live",
                            "--connection", connection)  # fmt: skip
    return Merchant(m.gateway, m.login, m.control_key, created["id"], m.currency)


def balances_of(m: Merchant) -> dict[str, str]:
    """The available balance of each mode in the merchant's currency, as `kassa balance show` tells it."""
    shown = m.gateway.cli("balance", "show", "--merchant", m.login)
    return {b["mode"]: b["available"] for b in shown if b["currency"] == m.currency}


def test_settled_test_card_sales_never_fund_a_live_payout(make_merchant: Callable[..., Merchant]) -> None:
    from tests.support.operations import approved_order

    sandbox = make_merchant()
    approved_order(sandbox, f"big-{uuid.uuid4().hex[:6]}", amount="5000.00")
    live = live_endpoint_of(sandbox)  # while the sale is approved and unsettled, and the balance is 0.00
    sandbox.gateway.cli("settle", "--endpoint", str(sandbox.endpoint_id))
    status = outcome(live, payout(live, CARD, "4000.00"))
    assert (status["status"], status["error-code"]) == ("declined", "116")
    assert balances_of(sandbox) == {"sandbox": "5000.00"}
    assert ledger_check(sandbox) == LEDGER_OK


def test_a_sandbox_endpoint_turned_live_settles_its_sandbox_sales_into_the_sandbox_balance(
    make_merchant: Callable[..., Merchant],
) -> None:
    from tests.support.operations import approved_order

    merchant = make_merchant()
    approved_order(merchant, f"before-{uuid.uuid4().hex[:6]}", amount="700.00")
    run_sql(merchant.gateway.database_url, f"UPDATE endpoints SET mode = 'live' WHERE id = {merchant.endpoint_id}")
    merchant.gateway.cli("settle", "--endpoint", str(merchant.endpoint_id))
    status = outcome(merchant, payout(merchant, CARD, "700.00"))
    assert (status["status"], status["error-code"]) == ("declined", "116")
    assert balances_of(merchant) == {"sandbox": "700.00"}
    assert ledger_check(merchant) == LEDGER_OK


def test_an_operators_credit_reaches_the_sandbox_balance_and_never_the_live_one(
    make_merchant: Callable[..., Merchant],
) -> None:
    merchant = make_merchant()
    live = live_endpoint_of(merchant)
    merchant.gateway.cli("balance", "credit", "--merchant", merchant.login, "--currency", "USD", "--amount", "100.00",
                         "--reason", "test")  # fmt: skip
    assert balances_of(merchant) == {"sandbox": "100.00"}
    status = outcome(live, payout(live, CARD, "5.00"))
    assert (status["status"], status["error-code"]) == ("declined", "116")
    assert outcome(merchant, payout(merchant, CARD, "5.00"))["status"] == "approved"
    assert balances_of(merchant) == {"sandbox": "95.00"}
    assert ledger_check(merchant) == LEDGER_OK


def test_an_operator_cannot_debit_more_than_is_available(payer: Merchant) -> None:
    done = cli_run(payer.gateway, "balance", "debit", "--merchant", payer.login, "--currency", "USD",
                   "--amount", "100.01", "--reason", "test")  # fmt: skip
    assert done.returncode != 0
    assert available(payer) == "100.00"
    payer.gateway.cli("balance", "debit", "--merchant", payer.login, "--currency", "USD", "--amount", "40.00",
                      "--reason", "test")  # fmt: skip
    assert available(payer) == "60.00"
    assert ledger_check(payer) == LEDGER_OK


# --- callbacks and reconciliation -----------------------------------------------------------------------------


@pytest.mark.parametrize(("destination", "number"), [(BANK, "GB82WEST12345698765432"), (PHONE, "447911123456")])
def test_a_payout_calls_back_its_outcome_with_no_account_or_phone_number(
    payer: Merchant, destination: dict[str, str], number: str
) -> None:
    from tests.support.gateway import free_port
    from tests.support.receiver import Receiver, running

    with running(Receiver(free_port())) as receiver:
        answer = payout(payer, destination, "2.00", server_callback_url=receiver.url)
        orderid = answer.json()["paynet-order-id"]
        [callback] = receiver.wait_for(1)
    query = callback.query
    assert (query["status"], query["type"], query["orderid"], query["amount"]) == (
        "approved",
        "payout",
        orderid,
        "2.00",
    )
    assert number not in str(query)


def test_an_unknown_payout_keeps_its_reservation_until_reconciliation_approves_it(clock_gateway: Gateway) -> None:
    merchant = new_merchant(clock_gateway, f"m-{uuid.uuid4().hex[:10]}")
    credit(merchant, "100.00")
    orderid = payout(merchant, {**BANK, "iban": "", "account_number": "4400217"}, "30.00").json()["paynet-order-id"]
    assert merchant.wait_stage(orderid, leaving="payout_processing")["status"] == "unknown"
    shown = clock_gateway.cli("balance", "show", "--merchant", merchant.login)
    assert shown == [{"currency": "USD", "mode": "sandbox", "available": "70.00", "reserved": "30.00"}]
    clock_gateway.advance(61)
    assert merchant.wait_stage(orderid, leaving="payout_unknown")["status"] == "approved"
    shown = clock_gateway.cli("balance", "show", "--merchant", merchant.login)
    assert shown == [{"currency": "USD", "mode": "sandbox", "available": "70.00", "reserved": "0.00"}]
    assert ledger_check(merchant) == LEDGER_OK


# --- payout-check then payout-pay (v4) --------------------------------------------------------------------------


def _v4(m: Merchant, operation: str, fields: list[tuple[str, str]]) -> httpx.Response:
    url = f"{m.gateway.base}/api/v4/{operation}/{m.endpoint_id}"
    return signed_post(url, fields, login=m.login, private_key_pem=key_pair()[0], headers={})


def check(m: Merchant, destination: dict[str, str], amount: str = "20.00") -> tuple[str, str, dict[str, str]]:
    """A payout-check: its client_orderid, orderid and final status."""
    register_key(m.gateway, m.login, key_pair()[1])
    client_orderid = f"chk-{uuid.uuid4().hex[:8]}"
    fields = [("client-order-id", client_orderid), ("amount", amount), ("currency", m.currency), *destination.items()]
    answer = _v4(m, "payout-check", fields)
    assert answer.status_code == 200, answer.text
    orderid = answer.json()["paynet-order-id"]
    return client_orderid, orderid, m.wait_final(orderid)


def pay(m: Merchant, client_orderid: str, orderid: str) -> httpx.Response:
    return _v4(m, "payout-pay", [("client_orderid", client_orderid), ("orderid", orderid), ("login", m.login)])


def test_a_phone_payout_check_moves_no_money_and_shows_the_recipient_name_masked(payer: Merchant) -> None:
    _, _, status = check(payer, PHONE)
    shown = (status["status"], status["order-stage"], status["transaction-type"], status["recipient-name"])
    assert shown == ("approved", "payout_approved", "payout", "J*** D**")
    assert available(payer) == "100.00"


def test_payout_pay_twice_pays_once_and_answers_the_same(payer: Merchant) -> None:
    client_orderid, orderid, _ = check(payer, BANK)
    first, second = pay(payer, client_orderid, orderid), pay(payer, client_orderid, orderid)
    assert first.status_code == second.status_code == 200, first.text
    assert first.json()["serial-number"] == second.json()["serial-number"]
    status = payer.wait_final(orderid, by_request_sn=first.json()["serial-number"])
    assert (status["status"], status["transaction-type"], status["amount"]) == ("approved", "payout", "20.00")
    assert available(payer) == "80.00"
    assert ledger_check(payer) == LEDGER_OK


def test_payout_pay_after_a_failed_check_is_refused_with_code_6(payer: Merchant) -> None:
    client_orderid, orderid, status = check(payer, {**BANK, "iban": "", "account_number": "4400209"})
    assert status["status"] == "declined"
    status_code, code, _ = refusal(pay(payer, client_orderid, orderid))
    assert (status_code, code) == (400, "6")
    assert available(payer) == "100.00"


def test_payout_pay_beyond_the_balance_is_declined_with_116(payer: Merchant) -> None:
    client_orderid, orderid, _ = check(payer, EWALLET, "150.00")
    answer = pay(payer, client_orderid, orderid)
    status = payer.wait_final(orderid, by_request_sn=answer.json()["serial-number"])
    assert (status["status"], status["error-code"]) == ("declined", "116")


def test_payout_pay_of_an_order_that_is_no_checked_payout_is_refused(payer: Merchant) -> None:
    register_key(payer.gateway, payer.login, key_pair()[1])
    one_step = payout(payer, CARD).json()
    status_code, code, _ = refusal(pay(payer, one_step["merchant-order-id"], one_step["paynet-order-id"]))
    assert (status_code, code) == (400, "6")
    status_code, code, _ = refusal(pay(payer, "nothing", "999999999"))
    assert (status_code, code) == (400, "5")


def test_a_payout_sent_twice_with_one_client_orderid_pays_once(payer: Merchant) -> None:
    client_orderid = f"twice-{uuid.uuid4().hex[:8]}"
    first = payout(payer, CARD, "25.00", client_orderid=client_orderid)
    second = payout(payer, CARD, "25.00", client_orderid=client_orderid)
    assert first.json()["paynet-order-id"] == second.json()["paynet-order-id"]
    assert outcome(payer, first)["status"] == "approved"
    assert available(payer) == "75.00"
    different = payout(payer, CARD, "26.00", client_orderid=client_orderid)
    assert refusal(different)[:2] == (400, "4")


def test_a_payout_form_never_submitted_gives_its_reservation_back_when_it_expires(clock_gateway: Gateway) -> None:
    from tests.support.gateway import sha1

    merchant = new_merchant(clock_gateway, f"m-{uuid.uuid4().hex[:10]}")
    credit(merchant, "100.00")
    data = {
        "client_orderid": "form-left", "amount": "30.00", "currency": "USD", "email": "r@example.com",
        "redirect_url": "https://shop.example/return",
    }  # fmt: skip
    data["control"] = sha1(merchant.endpoint_id, "form-left", "3000", "r@example.com", merchant.control_key)
    answer = clock_gateway.post(f"/api/v2/payout-form/{merchant.endpoint_id}", data).json()
    assert answer["type"] == "async-form-response"
    assert available(merchant) == "70.00"
    clock_gateway.advance(1801)
    status = merchant.wait_final(answer["paynet-order-id"])
    assert (status["status"], status["transaction-type"]) == ("declined", "payout")
    assert available(merchant) == "100.00"
    assert ledger_check(merchant) == LEDGER_OK
