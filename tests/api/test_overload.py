"""Overload (issue 30): while the work a gateway has accepted waits too long to start, it refuses new work at
once (503 with code 11 and ``Retry-After``; the classic format's 200), before it reads the body, and answers
status and follow-ups on the orders it has; everything it accepted still ends and is called back; once the
signal falls below half its threshold it accepts again.

The signal is the age of the oldest due job no worker holds. These tests drive it with an API-only gateway
(``--workers 0``: nothing runs its jobs) whose jobs are seeded due in the past, and watch the gateway's
figures on its operations listener until its sampler (a few times a second) has seen them."""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass

import httpx
import pytest

from kassa.api.operations import OPERATIONS
from tests.ops.test_probes import Samples, scrape, value
from tests.support.databases import fresh_postgres
from tests.support.gateway import (
    TLS,
    Gateway,
    Merchant,
    classic_fields,
    free_port,
    new_classic_merchant,
    new_merchant,
)
from tests.support.operations import void
from tests.support.overload import age_waiting_callbacks, age_waiting_jobs, figures_once
from tests.support.receiver import Receiver, running, silent_host

OVERLOAD = {"KASSA_OVERLOAD_JOB_AGE": "1"}  # the default: test gateways run without it
HOUR = 3600.0
# What the rule of the operation table refuses (``Operation.opens_order``): every operation that opens an
# order, which is new work for the workers. Status, follow-ups, 3-D Secure uploads, card references and
# creating recurring payments (whose charges the scheduler makes) act on what exists, and are answered; a charge
# of one made now (process-recurring-payments) opens an order.
REFUSED = {
    "ACCOUNT_VERIFICATION",
    "ACCOUNT_VERIFICATION_FORM",
    "BANK_WIRE_TRANSFER",
    "PAN_ELIGIBILITY_BOTH",
    "PAN_ELIGIBILITY_RECEIVE",
    "PAN_ELIGIBILITY_SEND",
    "PAYMENTFORM",
    "PAYOUT",
    "PAYOUTFORM",
    "PAYOUT_BY_REF_V4",
    "PAYOUT_V4",
    "PAYOUT_V4_CHECK",
    "SALE_V4",
    "PREAUTH",
    "PREAUTHFORM",
    "PROCESS_RECURRING_V4",
    "REBILL",
    "REBILL_PREAUTH",
    "REBILL_SALE",
    "SALE",
    "SALEFORM",
    "TRANSFER_BY_REF",
    "SYNC_ACCOUNT_VERIFICATION",
    "TRANSFER_BY_REF_V4",
    "TRANSFER_FORM",
    "TRANSFER_FORM_V4",
    "TRANSFER_V4",
}


@dataclass(frozen=True)
class Shedding:
    gateway: Gateway
    merchant: Merchant
    approved: tuple[str, str]  # client_orderid and paynet-order-id of a sale approved before the overload


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shedding(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shedding]:
    """An API-only gateway whose one job has waited an hour: it sheds load for the whole module. Its
    merchant has a sale approved by a gateway with workers that ran before it on the same database."""
    data_dir = tmp_path_factory.mktemp(f"overload-{request.param}")
    with ExitStack() as stack:
        url = f"sqlite:///{data_dir / 'kassa.db'}"
        if request.param == "postgresql":
            url = stack.enter_context(fresh_postgres())
        before = Gateway(url, data_dir, extra_env=OVERLOAD).start()
        shop = new_merchant(before, f"m-{uuid.uuid4().hex[:10]}")
        approved = f"approved-{uuid.uuid4().hex[:8]}"
        approved_order = shop.sale(approved).json()["paynet-order-id"]
        assert shop.wait_final(approved_order)["status"] == "approved"
        before.stop()

        gateway = Gateway(url, data_dir, extra_env=OVERLOAD).start("--workers", "0")
        stack.callback(gateway.stop)
        shop.gateway = gateway
        assert shop.sale(f"waiting-{uuid.uuid4().hex[:8]}").status_code == 200
        age_waiting_jobs(gateway, HOUR)
        figures_once(gateway, shedding=True)
        yield Shedding(gateway, shop, (approved, approved_order))


def a_merchant(gateway: Gateway) -> Merchant:
    return new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}")


def test_an_overloaded_gateway_refuses_a_sale_with_503_code_11_and_retry_after_and_creates_nothing(
    shedding: Shedding,
) -> None:
    shop, client_orderid = a_merchant(shedding.gateway), f"o-{uuid.uuid4().hex[:8]}"
    refused = shop.sale(client_orderid)
    assert refused.status_code == 503
    assert refused.headers["retry-after"] == "1"
    assert refused.headers["content-type"] == "application/vnd.pay+json; charset=utf-8"
    body = refused.json()
    assert (body["type"], body["error-code"]) == ("validation-error", "11")
    assert "merchant-order-id" not in body  # refused before the body was read
    assert "overloaded" in body["error-message"]
    assert shop.status(client_orderid=client_orderid).json()["error-code"] == "5"  # no such order


def test_an_overloaded_gateway_answers_a_request_whose_body_never_arrives(shedding: Shedding) -> None:
    shop = a_merchant(shedding.gateway)
    head = (
        f"POST /paynet/api/v2/sale/{shop.endpoint_id} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        "Accept: application/vnd.pay+json\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        "Content-Length: 4096\r\n\r\nclient_orderid=never-sent-in-full&amount="
    )
    with socket.create_connection(("127.0.0.1", shedding.gateway.port), timeout=5) as sock:
        sock.sendall(head.encode())
        answer = sock.recv(65536)  # a gateway that waited for the body would time out here
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line == b"HTTP/1.1 503 Service Unavailable"
    assert b"\r\nretry-after: 1\r\n" in rest.lower()


def test_an_overloaded_gateway_refuses_a_classic_client_in_the_classic_format(shedding: Shedding) -> None:
    shop = new_classic_merchant(shedding.gateway, f"m-{uuid.uuid4().hex[:10]}")
    refused = shedding.gateway.post(f"/api/v2/sale/{shop.endpoint_id}", shop.sale_fields("classic-1"), headers={})
    assert refused.status_code == 200  # classic clients read any other status as a network failure
    assert refused.headers["content-type"] == "text/html; charset=utf-8"
    assert refused.headers["retry-after"] == "1"
    assert dict(classic_fields(refused.content))["error-code"] == "11"


def test_while_shedding_only_the_operations_that_open_an_order_are_refused(shedding: Shedding) -> None:
    shop = a_merchant(shedding.gateway)
    refused = set()
    for op in OPERATIONS:
        answer = shedding.gateway.post(f"{op.path}/{shop.endpoint_id}", {"client_orderid": "sweep"})
        if answer.status_code == 503:
            assert str(answer.json()["error-code"]) == "11", op.code  # a number on the v4 sale
            refused.add(op.code)
        else:  # answered as always: here, refused for the fields it lacks
            assert str(answer.json()["error-code"]) != "11", op.code
    assert refused == REFUSED
    assert {op.code for op in OPERATIONS if op.opens_order} == REFUSED


def test_while_shedding_status_and_follow_ups_on_existing_orders_are_answered(shedding: Shedding) -> None:
    shop, (client_orderid, order) = shedding.merchant, shedding.approved
    status = shop.status(orderid=order)
    assert (status.status_code, status.json()["status"]) == (200, "approved")
    voided = void(shop, client_orderid, order)
    assert (voided.status_code, voided.json()["type"]) == (200, "async-response"), voided.text


def test_a_shedding_gateway_stays_ready_logs_the_start_once_and_counts_its_refusals(shedding: Shedding) -> None:
    gateway = shedding.gateway
    before = value(scrape(gateway), "kassa_refused_requests_total", reason="overload")
    assert a_merchant(gateway).sale(f"o-{uuid.uuid4().hex[:8]}").status_code == 503
    samples = scrape(gateway)
    assert value(samples, "kassa_refused_requests_total", reason="overload") == before + 1
    assert value(samples, "kassa_overload_shedding") == 1
    assert value(samples, "kassa_overload_job_age_seconds") >= HOUR
    ready = httpx.get(f"{gateway.ops}/readyz", timeout=10, verify=TLS)
    assert (ready.status_code, ready.json()["status"]) == (200, "ready")  # alive and ready: only busy
    assert gateway.log_text().count("load shedding started") == 1


def test_shedding_starts_above_the_threshold_and_stops_only_below_half_of_it(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory("--workers", "0", KASSA_OVERLOAD_JOB_AGE="60", KASSA_TEST_CLOCK="1")
    shop = a_merchant(gateway)
    assert shop.sale("first").status_code == 200

    def seen_at(seconds: float) -> Samples:
        """The figures once the sampler has seen the waiting jobs ``seconds`` old (and younger than 60)."""
        age_waiting_jobs(gateway, seconds)
        return figures_once(gateway, age_between=(seconds, 59))

    assert value(seen_at(45), "kassa_overload_shedding") == 0  # below the threshold
    assert shop.sale("below").status_code == 200
    age_waiting_jobs(gateway, 90)
    figures_once(gateway, shedding=True)
    assert shop.sale("above").status_code == 503
    assert value(seen_at(45), "kassa_overload_shedding") == 1  # fallen, but not below half: still shedding
    assert shop.sale("falling").status_code == 503
    age_waiting_jobs(gateway, 20)
    figures_once(gateway, shedding=False)
    assert shop.sale("fallen").status_code == 200
    assert value(seen_at(45), "kassa_overload_shedding") == 0  # rising again, but not past the threshold
    assert "load shedding stopped" not in gateway.log_text()  # one episode until it has accepted for 10 s
    gateway.advance(10)
    figures_once(gateway, logged="load shedding stopped")


def test_every_sale_accepted_before_shedding_ends_and_is_called_back_and_a_refused_one_leaves_nothing(
    gateway_factory: Callable[..., Gateway],
) -> None:
    api = gateway_factory("--workers", "0", **OVERLOAD)
    shop = a_merchant(api)
    with running(Receiver(free_port())) as receiver:
        accepted = [shop.sale(f"a-{n}", server_callback_url=receiver.url) for n in range(5)]
        orders = [answer.json()["paynet-order-id"] for answer in accepted]
        age_waiting_jobs(api, HOUR)
        figures_once(api, shedding=True)
        assert shop.sale("refused", server_callback_url=receiver.url).status_code == 503
        api.stop()

        shop.gateway = gateway_factory(**OVERLOAD)  # with workers: they run what waits
        assert [shop.wait_final(order)["status"] for order in orders] == ["approved"] * 5
        assert sorted(r.query["orderid"] for r in receiver.wait_for(5)) == sorted(orders)
        figures_once(shop.gateway, shedding=False)
        after = shop.sale("after", server_callback_url=receiver.url)
        assert after.status_code == 200
        assert shop.wait_final(after.json()["paynet-order-id"])["status"] == "approved"
        called_back = {r.query["client_orderid"] for r in receiver.wait_for(6)}
    assert called_back == {*(f"a-{n}" for n in range(5)), "after"}
    assert shop.status(client_orderid="refused").json()["error-code"] == "5"


@pytest.mark.backends("postgresql")
def test_every_process_of_a_server_sheds_when_the_jobs_of_the_database_wait(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory("--processes", "2", "--workers", "0", **OVERLOAD)
    shop = a_merchant(gateway)
    assert shop.sale("waiting").status_code == 200
    age_waiting_jobs(gateway, HOUR)
    samples = figures_once(gateway, processes_shedding=2)  # each reads the signal for itself
    assert value(samples, "kassa_overload_job_age_seconds") >= HOUR
    # New connections: the kernel spreads them over both processes.
    assert [shop.sale(f"refused-{n}").status_code for n in range(8)] == [503] * 8


def test_a_gateway_whose_callbacks_wait_for_the_dispatcher_refuses_new_sales(
    gateway_factory: Callable[..., Gateway],
) -> None:
    """Short of CPU, a gateway may keep up with its jobs and fall behind on its callbacks: that sheds too.
    Here its dispatcher sends one callback at a time and a silent receiver holds that one: the next sale's
    callback, to a receiver that is up, waits for the dispatcher (the jobs' signal is off, 0)."""
    gateway = gateway_factory(
        KASSA_OVERLOAD_CALLBACK_AGE="1", KASSA_CALLBACK_CONCURRENCY="1", KASSA_CALLBACK_TIMEOUT="60"
    )
    shop = a_merchant(gateway)
    with silent_host() as silent_url, running(Receiver(free_port())) as receiver:
        shop.wait_final(shop.sale("held", server_callback_url=silent_url).json()["paynet-order-id"])
        shop.wait_final(shop.sale("waiting", server_callback_url=receiver.url).json()["paynet-order-id"])
        age_waiting_callbacks(gateway, 60)
        samples = figures_once(gateway, shedding=True)
        assert value(samples, "kassa_overload_callback_age_seconds") >= 60
        assert shop.sale("refused").status_code == 503
