"""create-card-ref v4 and create-recurring-payment v4 over HTTP (CONTRACT §13), signed with RSA-SHA256 by
oauthlib's client, and the charges a merchant then sees: orders, status, callbacks.

Time-driven tests run on the gateway whose clock they move (``clock_gateway``): it starts at real time
(late 2026) and only moves forward, so schedules start at the gateway's today (a start in the past is
refused) and the clock is moved to each due date. The exact month-end dates of 2026-01-31 are shown on
the scheduler's own clock in tests/engine/test_recurring.py; here the same rule runs from the gateway's
next 31st. Requests are signed with the gateway's time, since the OAuth window is the gateway's clock."""

from __future__ import annotations

import calendar
import datetime
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from kassa.domain.recurring import date_of, midnight_ms
from tests.api.test_card_refs import card_ref_of, refused, stored_card
from tests.support.cards import pan_ending
from tests.support.gateway import Gateway, Merchant, free_port, new_merchant
from tests.support.oauth import key_pair, register_key, signed_post
from tests.support.operations import LEDGER_OK, approved_order, ledger_check
from tests.support.receiver import Receiver, running
from tests.support.recurring import subscribe_due_now

DAY = 86_400
VISA = "4111111111111111"


def _id() -> str:
    return f"r-{uuid.uuid4().hex[:10]}"


def _signer(gateway: Gateway) -> Merchant:
    merchant = new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}")
    register_key(gateway, merchant.login, key_pair()[1])
    return merchant


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    return _signer(shared_gateway)


@pytest.fixture
def clock_shop(clock_gateway: Gateway) -> Merchant:
    return _signer(clock_gateway)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running(Receiver(free_port())) as started:
        yield started


def v4(m: Merchant, operation: str, fields: dict[str, str], *, clock: bool = False) -> httpx.Response:
    """A v4 request signed with the merchant's key; on the gateway whose clock moves, at its time."""
    timestamp = m.gateway.advance(0) // 1000 if clock else None
    address = f"{m.gateway.base}/api/v4/{operation}/{m.endpoint_id}"
    return signed_post(address, fields, login=m.login, private_key_pem=key_pair()[0], timestamp=timestamp)


def card_ref_v4(m: Merchant, client_orderid: str, orderid: str, **extra: str) -> dict[str, str]:
    answer = v4(m, "create-card-ref", {"client-order-id": client_orderid, "orderid": orderid, **extra})
    assert answer.status_code == 200, answer.text
    body = dict(answer.json())
    assert (body["type"], body["status"]) == ("create-card-ref-response", "approved"), body
    return body


def _today(gateway: Gateway) -> datetime.date:
    return date_of(gateway.advance(0))


def subscription(m: Merchant, client_orderid: str, *, clock: bool = False, **fields: str) -> httpx.Response:
    data = {"client_orderid": client_orderid, "amount": "9.90", "currency": m.currency, "order_desc": "Box", **fields}
    return v4(m, "create-recurring-payment", data, clock=clock)


def subscribed(m: Merchant, client_orderid: str, **fields: str) -> str:
    """Creates a recurring payment on the gateway whose clock moves; its recurring-payment-id."""
    answer = subscription(m, client_orderid, clock=True, **fields)
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["type"], body["status"], body["merchant-order-id"]) == (
        "create-recurring-payment-response", "approved", client_orderid,
    )  # fmt: skip
    return str(body["recurring-payment-id"])


def card_fields(pan: str = VISA, month: int = 12, year: int = 2030) -> dict[str, str]:
    return {
        "credit_card_number": pan,
        "expire_month": f"{month:02d}",
        "expire_year": str(year),
        "card_printed_name": "J D",
    }


def move_to(gateway: Gateway, when_ms: int) -> None:
    """Moves the gateway's clock to ``when_ms`` (a tick runs there), and lets its workers finish."""
    gateway.advance(max(0, when_ms - gateway.advance(0)) / 1000)
    time.sleep(0.3)


def charges(m: Merchant, client_orderid: str, count: int) -> list[dict[str, str]]:
    """The final status of ``{client_orderid}-1`` ... ``-count`` (``-n`` or its retries, as named)."""
    return [m.wait_final(_order_of(m, f"{client_orderid}-{n}")) for n in range(1, count + 1)]


def _order_of(m: Merchant, client_orderid: str) -> str:
    answer = m.status(client_orderid=client_orderid)
    assert answer.status_code == 200, f"{client_orderid}: {answer.text}"
    return str(answer.json()["paynet-order-id"])


def _no_order(m: Merchant, client_orderid: str) -> bool:
    return m.status(client_orderid=client_orderid).json().get("error-code") == "5"


# --- create-card-ref v4 --------------------------------------------------------------------------------


def test_card_ref_v4_answers_the_v2_reference_its_unique_id_and_a_recurring_payment(shop: Merchant) -> None:
    orderid = approved_order(shop, "cr4-1")
    first = card_ref_v4(shop, "cr4-1", orderid)
    assert (first["merchant-order-id"], first["paynet-order-id"]) == ("cr4-1", orderid)
    assert first["card-ref-id"] == card_ref_of(shop, "cr4-1", orderid)  # v2's reference of the same order
    assert len(first["unq-card-ref-id"]) == 40 and int(first["unq-card-ref-id"], 16) >= 0
    assert first["recurring-payment-id"].isdigit()
    again = card_ref_v4(shop, "cr4-1", orderid, login=shop.login)
    assert {k: again[k] for k in ("card-ref-id", "unq-card-ref-id", "recurring-payment-id")} == {
        k: first[k] for k in ("card-ref-id", "unq-card-ref-id", "recurring-payment-id")
    }
    shown = shop.gateway.cli("recurring", "show", first["recurring-payment-id"])
    assert (shown["status"], shown["schedule"], shown["card_ref_id"]) == ("active", None, int(first["card-ref-id"]))


def test_unique_card_ref_id_is_one_per_card_number_at_a_merchant_and_differs_across_merchants(
    shop: Merchant, shared_gateway: Gateway
) -> None:
    def unique(m: Merchant, pan: str) -> tuple[str, str]:
        client_orderid = _id()
        orderid = m.sale(client_orderid, credit_card_number=pan).json()["paynet-order-id"]
        assert m.wait_final(orderid)["status"] == "approved"
        body = card_ref_v4(m, client_orderid, orderid)
        return body["card-ref-id"], body["unq-card-ref-id"]

    (ref_1, unq_1), (ref_2, unq_2) = unique(shop, VISA), unique(shop, VISA)
    assert ref_1 != ref_2 and unq_1 == unq_2
    assert unique(shop, "4012888888881881")[1] != unq_1
    assert unique(_signer(shared_gateway), VISA)[1] != unq_1


def test_card_ref_v4_with_another_merchants_login_is_code_3(shop: Merchant) -> None:
    orderid = approved_order(shop, "cr4-login")
    answer = v4(shop, "create-card-ref", {"client_orderid": "cr4-login", "orderid": orderid, "login": "someone"})
    refused(answer, 3)


def test_card_ref_v4_of_an_order_not_approved_is_code_6(shop: Merchant) -> None:
    orderid = shop.sale("cr4-declined", cvv2="999").json()["paynet-order-id"]
    assert shop.wait_final(orderid)["status"] == "declined"
    refused(v4(shop, "create-card-ref", {"client_orderid": "cr4-declined", "orderid": orderid}), 6)


# --- process-recurring-payments: a charge now ----------------------------------------------------------


def _tokenised(shop: Merchant, pan: str = VISA) -> dict[str, str]:
    """The card reference and recurring payment (no schedule) of a sale paid with ``pan``."""
    client_orderid = _id()
    answer = shop.sale(client_orderid, amount="1.00", credit_card_number=pan)
    assert shop.wait_final(answer.json()["paynet-order-id"])["status"] == "approved"
    return card_ref_v4(shop, client_orderid, answer.json()["paynet-order-id"])


def charge_now(m: Merchant, payment_id: str, amount: str = "4.20", **fields: str) -> httpx.Response:
    data = {"recurring-payment-id": payment_id, "amount": amount, "currency": m.currency, **fields}
    return v4(m, "process-recurring-payments", data)


def test_process_recurring_payments_charges_the_payments_card_now_as_a_sale(shop: Merchant) -> None:
    tokenised = _tokenised(shop)
    answer = charge_now(shop, tokenised["recurring-payment-id"], **{"client-order-id": "now-1"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert (body["type"], body["status"], body["merchant-order-id"]) == ("async-response", "processing", "now-1")
    charged = shop.wait_final(body["paynet-order-id"])
    shown = (charged["status"], charged["transaction-type"], charged["amount"], charged["recurring-payment-id"])
    assert shown == ("approved", "sale", "4.20", tokenised["recurring-payment-id"])
    assert charged["card-ref-id"] == tokenised["card-ref-id"]
    unnamed = charge_now(shop, tokenised["recurring-payment-id"]).json()  # its client_orderid made up
    assert unnamed["merchant-order-id"].startswith(f"rp-{tokenised['recurring-payment-id']}-")
    assert ledger_check(shop) == LEDGER_OK


def test_a_charge_now_is_decided_by_the_cards_last_three_digits(shop: Merchant) -> None:
    payment_id = _tokenised(shop, pan_ending("116"))["recurring-payment-id"]
    declined = shop.wait_final(charge_now(shop, payment_id).json()["paynet-order-id"])
    assert (declined["status"], declined["error-code"]) == ("declined", "116")


def test_a_charge_now_is_refused_unsigned_by_the_merchants_key_or_on_a_payment_it_cannot_charge(
    shop: Merchant,
) -> None:
    payment_id = _tokenised(shop)["recurring-payment-id"]
    address = f"{shop.gateway.base}/api/v4/process-recurring-payments/{shop.endpoint_id}"
    fields = {"recurring-payment-id": payment_id, "amount": "1.00", "currency": shop.currency}
    forged = signed_post(address, fields, login=shop.login, private_key_pem=key_pair(2048, 1)[0])
    assert (forged.status_code, forged.json()["error-code"]) == (401, "2")
    refused(charge_now(shop, "999999999"), 5)
    shop.gateway.cli("recurring", "cancel", payment_id)
    body = refused(charge_now(shop, payment_id), 6)
    assert "cancelled" in body["error-message"]


# --- create-recurring-payment: what it answers and refuses ---------------------------------------------


def test_a_repeated_client_orderid_answers_the_same_payment_or_code_4_with_other_fields(shop: Merchant) -> None:
    fields = {**card_fields(), "period": "month", "max-count": "3"}
    first = subscription(shop, "sub-dup", **fields).json()
    assert first["recurring-payment-id"].isdigit()
    assert subscription(shop, "sub-dup", **fields).json()["recurring-payment-id"] == first["recurring-payment-id"]
    refused(subscription(shop, "sub-dup", **{**fields, "max-count": "4"}), 4)


@pytest.mark.parametrize(
    ("fields", "code", "message"),
    [
        ({"cardrefid": "999999999"}, 5, "no such card reference for this merchant"),
        ({**card_fields(), "currency": "EUR"}, 8, "currency EUR is not served by endpoint"),
        ({**card_fields(), "period": "day", "start-date": "2026-01-31"}, 1, "start-date is in the past"),
        ({**card_fields(), "period": "day", "start_date": "2126-02-30"}, 1, "start-date is not a date of the"),
        (
            {**card_fields(), "period": "week", "start-date": "2127-02-01", "finish-date": "2127-01-31"},
            1,
            "finish-date is before start-date",
        ),
        ({**card_fields(), "interval": "2"}, 1, "interval needs a period"),
        ({**card_fields(), "period": "month", "interval": "0"}, 1, "interval must be a whole number of at least 1"),
        ({**card_fields(), "period": "fortnight"}, 1, "period must be one of day, week, month, year"),
        ({}, 1, "cardrefid or the card (credit_card_number, expire_month, expire_year) is required"),
        ({"credit_card_number": VISA, "expire_month": "12"}, 1, "expire_year is required with the card"),
        ({**card_fields(), "cardrefid": "1"}, 1, "credit_card_number cannot be sent with cardrefid"),
        ({**card_fields(), "client_orderid": "x" * 113}, 1, "client_orderid is longer than 112 characters"),
    ],
)
def test_create_recurring_payment_refuses_naming_the_field(
    shop: Merchant, fields: dict[str, str], code: int, message: str
) -> None:
    named = {"client_orderid": _id(), **fields}
    body = refused(subscription(shop, **named), code)
    assert body["error-message"].startswith(message), body


# --- charges, over time --------------------------------------------------------------------------------


def test_a_payment_on_a_card_reference_charges_it_with_a_callback_per_charge(
    clock_shop: Merchant, receiver: Receiver
) -> None:
    ref = stored_card(clock_shop)
    payment_id = subscribed(
        clock_shop, "sub-ref", cardrefid=ref, period="week", **{"max-count": "2"},
        server_callback_url=receiver.url, start_date=_today(clock_shop.gateway).isoformat(),
    )  # fmt: skip
    move_to(clock_shop.gateway, clock_shop.gateway.advance(0) + 7 * DAY * 1000)
    first, second = charges(clock_shop, "sub-ref", 2)
    for charge in (first, second):
        assert (charge["status"], charge["transaction-type"], charge["amount"]) == ("approved", "sale", "9.90")
        assert (charge["recurring-payment-id"], charge["card-ref-id"]) == (payment_id, ref)
    called = receiver.wait_for(2)
    assert sorted((c.query["client_orderid"], c.query["status"]) for c in called) == [
        ("sub-ref-1", "approved"), ("sub-ref-2", "approved"),
    ]  # fmt: skip
    assert ledger_check(clock_shop) == LEDGER_OK


def test_month_steps_from_the_31st_charge_on_each_months_last_day_then_stop(
    clock_shop: Merchant, receiver: Receiver
) -> None:
    gateway = clock_shop.gateway
    start = _today(gateway)
    while start.day != 31:
        start += datetime.timedelta(days=1)
    payment_id = subscribed(
        clock_shop, "sub-31", **card_fields(), period="month", interval="1", server_callback_url=receiver.url,
        **{"start-date": start.isoformat(), "max-count": "4"},
    )  # fmt: skip
    expected = [start]
    for months in (1, 2, 3):  # each following month's last day
        year, month = start.year + (start.month - 1 + months) // 12, (start.month - 1 + months) % 12 + 1
        expected.append(datetime.date(year, month, calendar.monthrange(year, month)[1]))
    for n, due in enumerate(expected, start=1):
        if midnight_ms(due) - 60_000 > gateway.advance(0):  # not when the start is today
            move_to(gateway, midnight_ms(due) - 60_000)
            assert _no_order(clock_shop, f"sub-31-{n}"), f"charge {n} made before {due}"
        move_to(gateway, midnight_ms(due) + 60_000)
        charged = charges(clock_shop, "sub-31", n)[-1]
        assert charged["status"] == "approved"
        assert charged["paynet-processing-date"].startswith(due.isoformat())
    move_to(gateway, midnight_ms(expected[-1]) + 62 * DAY * 1000)
    assert _no_order(clock_shop, "sub-31-5")
    assert {c.query["client_orderid"] for c in receiver.wait_for(4)} == {f"sub-31-{n}" for n in range(1, 5)}
    shown = gateway.cli("recurring", "show", payment_id)
    assert (shown["status"], shown["charges_made"], shown["charges_approved"]) == ("finished", 4, 4)


def test_a_declined_charge_is_tried_three_more_times_a_day_apart(clock_shop: Merchant, receiver: Receiver) -> None:
    gateway = clock_shop.gateway
    payment_id = subscribed(
        clock_shop, "sub-116", **card_fields(pan_ending("116")), period="month", server_callback_url=receiver.url,
        **{"max-count": "1"},
    )  # fmt: skip
    tries = ["sub-116-1", "sub-116-1-r1", "sub-116-1-r2", "sub-116-1-r3", "sub-116-1-r4"]
    for made, name in enumerate(tries[:4]):
        move_to(gateway, gateway.advance(0) + (DAY * 1000 if made else 0))
        final = clock_shop.wait_final(_order_of(clock_shop, name))
        assert (final["status"], final["error-code"]) == ("declined", "116")
        assert _no_order(clock_shop, tries[made + 1])  # the next try waits for its day
    move_to(gateway, gateway.advance(0) + 2 * DAY * 1000)
    assert _no_order(clock_shop, "sub-116-1-r4")
    called = [(c.query["client_orderid"], c.query["status"]) for c in receiver.wait_for(4)]
    assert sorted(called) == [(name, "declined") for name in tries[:4]]
    shown = gateway.cli("recurring", "show", payment_id)
    assert (shown["status"], shown["charges_declined"], len(shown["charges"])) == ("finished", 1, 4)


def test_finish_date_ends_the_schedule(clock_shop: Merchant) -> None:
    gateway = clock_shop.gateway
    today = _today(gateway)
    finish = today + datetime.timedelta(days=2)
    payment_id = subscribed(clock_shop, "sub-fin", **card_fields(), period="day", **{"finish-date": finish.isoformat()})
    for day in range(5):
        move_to(gateway, midnight_ms(today + datetime.timedelta(days=day)) + 60_000)
    assert [c["status"] for c in charges(clock_shop, "sub-fin", 3)] == ["approved"] * 3
    assert _no_order(clock_shop, "sub-fin-4")
    assert gateway.cli("recurring", "show", payment_id)["status"] == "finished"


def test_a_card_expired_by_a_charges_date_stops_the_payment_with_a_declined_final_callback(
    clock_shop: Merchant, receiver: Receiver
) -> None:
    gateway = clock_shop.gateway
    today = _today(gateway)  # the card is valid through this month (and, at real time, not expired)
    payment_id = subscribed(
        clock_shop, "sub-exp", **card_fields(month=today.month, year=today.year), period="month",
        server_callback_url=receiver.url, **{"max-count": "5"},
    )  # fmt: skip
    move_to(gateway, midnight_ms(today) + 40 * DAY * 1000)
    first, second = charges(clock_shop, "sub-exp", 2)
    assert first["status"] == "approved"
    assert (second["status"], second["error-code"], second["error-message"]) == (
        "declined", "101", "Expired card: the recurring payment is stopped",
    )  # fmt: skip
    move_to(gateway, gateway.advance(0) + 70 * DAY * 1000)
    assert _no_order(clock_shop, "sub-exp-3") and _no_order(clock_shop, "sub-exp-2-r1")
    last = [c for c in receiver.wait_for(2) if c.query["client_orderid"] == "sub-exp-2"]
    assert [(c.query["status"], c.query["error_code"]) for c in last] == [("declined", "101")]
    assert gateway.cli("recurring", "show", payment_id)["status"] == "expired"


def test_status_of_a_recurring_charge_names_its_recurring_payment(clock_merchant: Merchant) -> None:
    [payment_id] = subscribe_due_now(clock_merchant, max_count=1)
    clock_merchant.gateway.advance(0)  # a scheduler tick: the charge is due
    final = clock_merchant.wait_final(clock_merchant.wait_order("sub0-1"))
    assert (final["status"], final["transaction-type"], final["amount"]) == ("approved", "sale", "9.90")
    assert final["recurring-payment-id"] == str(payment_id)
    assert "card-ref-id" not in final  # made on card fields, not on a reference
