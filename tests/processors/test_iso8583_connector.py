"""A gateway whose endpoint is routed to an ISO 8583 connection sends its payments to the acquirer's host
(the simulator, over TCP) and reports what the host answered (CONTRACT §15)."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from kassa import crashpoints
from kassa.domain.recurring import date_of, midnight_ms
from kassa.processors.iso8583 import dialect
from kassa.sandbox.acquirer_host import AcquirerHost
from tests.api.test_card_refs import card_ref_of, make_rebill, stored_card
from tests.api.test_payouts import BANK, payout
from tests.api.test_payouts import CARD as PAYOUT_CARD
from tests.api.test_rebills import rebill
from tests.api.test_recurring import card_fields, charges, move_to, subscribed
from tests.api.test_transfers import DESTINATION, SOURCE, money, v2_transfer_by_ref, v4
from tests.api.test_transfers import final as final_transfer
from tests.ops.test_probes import scrape, value
from tests.pages.test_threeds_merchant_hosted import through_acs, upload
from tests.support.acquirer_host import host_on_a_thread, iso_connection, restarted_past_the_lease
from tests.support.balances import available, credit
from tests.support.cards import pan_ending
from tests.support.databases import run_sql
from tests.support.gateway import TLS, Gateway, Merchant, free_port, new_merchant
from tests.support.oauth import key_pair, register_key
from tests.support.operations import account_verification, capture, final, preauth, refund, void
from tests.support.receiver import Receiver, running

_names = itertools.count()


@pytest.fixture(scope="module")
def host() -> Iterator[AcquirerHost]:
    with host_on_a_thread() as found:
        yield found


@pytest.fixture
def iso_merchant(make_merchant: Callable[..., Merchant], host: AcquirerHost) -> Merchant:
    merchant = make_merchant()
    _connect(merchant, f"acq-{next(_names)}-{merchant.endpoint_id}", host, response_timeout="0.5")
    return merchant


def _connect(merchant: Merchant, name: str, host: AcquirerHost, *, response_timeout: str, sockets: str = "1") -> None:
    """An ISO 8583 connection to ``host``, the merchant's endpoint routed to it."""
    _new_connection(merchant.gateway, name, host.port, response_timeout=response_timeout, sockets=sockets)
    merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), name)


def _new_connection(gateway: Gateway, name: str, port: int, *, response_timeout: str, sockets: str = "1") -> None:
    gateway.cli(
        "acquirer", "create", "--name", name, "--host", "127.0.0.1", "--port", str(port),
        "--acquiring-institution-id", "123456", "--terminal-id", "TERM0001", "--card-acceptor-id", "SHOP00000000001",
        "--mcc", "5999", "--response-timeout", response_timeout, "--sockets", sockets,
    )  # fmt: skip


def _sent(host: AcquirerHost, mti: str, rrn: str) -> dict[str, str]:
    return next(m for m in host.received if m["t"] == mti and m.get("37") == rrn)


def test_an_approved_sale_reports_the_hosts_approval_code_and_the_rrn_the_gateway_sent(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    order = iso_merchant.sale("iso-1", cvv2="123").json()["paynet-order-id"]
    final = iso_merchant.wait_final(order)
    assert final["status"] == "approved"
    sent = _sent(host, "0200", final["processor-rrn"])
    assert (sent["3"], sent["4"], sent["41"].strip(), sent["49"]) == ("000000", "000000001042", "TERM0001", "840")
    assert sent["2"] == "4111111111111111" and "CV003123" in sent["48"]
    assert len(final["approval-code"]) == 6


def test_a_decline_gets_the_contracts_code_for_the_hosts_answer(iso_merchant: Merchant) -> None:
    order = iso_merchant.sale("iso-2", cvv2="116").json()["paynet-order-id"]
    final = iso_merchant.wait_final(order)
    assert (final["status"], final["error-code"]) == ("declined", "116")


def test_an_unanswered_sale_is_reversed_and_ends_in_error_911(iso_merchant: Merchant, host: AcquirerHost) -> None:
    order = iso_merchant.sale("iso-3", cvv2="217").json()["paynet-order-id"]  # the host never answers 217
    final = iso_merchant.wait_final(order)
    assert (final["status"], final["error-code"]) == ("error", "911")
    reversal = next(m for m in host.received if m["t"] == "0400" and m["4"] == "000000001042" and m.get("90"))
    assert reversal["90"][:4] == "0200"


def test_a_capture_goes_as_an_advice_naming_the_preauthorization(iso_merchant: Merchant, host: AcquirerHost) -> None:
    order = preauth(iso_merchant, "iso-4", amount="20.00").json()["paynet-order-id"]
    authorized = iso_merchant.wait_final(order)
    assert authorized["status"] == "approved"
    capture(iso_merchant, "iso-4", order, "15.00")
    final = iso_merchant.wait_final(order)
    assert (final["transaction-type"], final["status"]) == ("capture", "approved")
    authorization = _sent(host, "0100", authorized["processor-rrn"])
    advice = next(m for m in host.received if m["t"] == "0220" and m.get("38") == authorized["approval-code"])
    assert (advice["4"], advice["2"], advice["14"]) == ("000000001500", "4111111111111111", "3012")
    assert advice["90"][:10] == "0100" + authorization["11"]


def test_a_sale_sent_when_the_gateway_died_is_reversed_after_restart_never_sent_again(
    gateway_factory: Callable[..., Gateway], host: AcquirerHost
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "iso-crash")
    name = f"acq-crash-{next(_names)}"
    _connect(merchant, name, host, response_timeout="30")
    host.silent.add("4111111111111111")  # the sale reaches the host and waits there
    seen = len(host.received)
    order = merchant.sale("iso-crash-1", cvv2="123").json()["paynet-order-id"]
    _wait(lambda: any(m["t"] == "0200" for m in list(host.received)[seen:]))
    [sent] = [m for m in list(host.received)[seen:] if m["t"] == "0200"]
    gateway.kill()
    host.silent.clear()

    restarted_past_the_lease(gateway_factory, merchant)
    final = merchant.wait_final(order)
    assert (final["status"], final.get("error-code")) == ("error", "911")
    since = [m for m in list(host.received)[seen:] if m["t"] != "0800"]
    assert [m["t"] for m in since] == ["0200", "0400"]  # the sale went once; what followed was its reversal
    assert (since[1]["4"], since[1]["90"][:10]) == (sent["4"], "0200" + sent["11"])


def test_an_approval_whose_last_attempt_failed_before_recording_it_is_reversed_not_left_standing_as_error_500(
    gateway_factory: Callable[..., Gateway], host: AcquirerHost
) -> None:
    """The host approved, the job's one attempt failed writing the answer: the transaction is ``unknown``
    and its reconciliation reverses the approval, as after a crash; it never ends 500 with the money taken.
    The failure is counted for operators to alert on."""
    gateway = gateway_factory(
        KASSA_TEST_CLOCK="1",
        KASSA_TEST_FAIL_POINT=crashpoints.ACQUIRER_ANSWER_UNCOMMITTED,
        KASSA_JOB_MAX_ATTEMPTS="1",
    )
    merchant = new_merchant(gateway, "iso-failed")
    _connect(merchant, f"acq-failed-{next(_names)}", host, response_timeout="5")
    seen = len(host.received)
    order = merchant.sale("iso-failed-1", cvv2="123").json()["paynet-order-id"]
    _wait(lambda: merchant.status(orderid=order).json()["status"] != "processing")
    assert merchant.status(orderid=order).json()["status"] == "unknown"
    final = _final_after(merchant, order, 60)
    assert (final["status"], final["error-code"]) == ("error", "911")
    since = [m for m in list(host.received)[seen:] if m["t"] != "0800"]
    assert [m["t"] for m in since] == ["0200", "0400"]
    assert since[1]["90"][:10] == "0200" + since[0]["11"]
    assert _messages_of_order(gateway, order) == [("0200", "reversed", 1)]
    figures = scrape(gateway)
    assert value(figures, "kassa_job_failures_total", kind="process") == 1
    assert value(figures, "kassa_job_failures_total", kind="reconcile") == 0


DAY = 24 * 3600
CARD = "4111111111111111"  # the card tests' sales and preauths charge
WAITING = ("processing", "unknown")  # the statuses of a transaction not final yet


@pytest.fixture
def silent_host() -> Iterator[AcquirerHost]:
    """A host that takes every message of the test card and answers none: reversals and repetitions neither."""
    with host_on_a_thread(silent={CARD}) as found:
        yield found


def _final_after(merchant: Merchant, order: str, seconds: int) -> dict[str, str]:
    """The order's status once final, the clock moved ``seconds`` on, and a minute more each time the
    transaction is still waiting (its next reconciliation may have been written after the first move)."""
    merchant.gateway.advance(seconds)
    _minutes_until(merchant.gateway, lambda: merchant.status(orderid=order).json()["status"] not in WAITING)
    return dict(merchant.status(orderid=order).json())


def _minutes_until(gateway: Gateway, condition: Callable[[], bool]) -> None:
    """Moves the clock a minute at a time until ``condition`` holds."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        gateway.advance(60)
        time.sleep(0.2)


def _messages_of_order(gateway: Gateway, order: str) -> list[tuple[str, str, int]]:
    """The order's messages as the gateway recorded them: MTI, state, repetitions."""
    return [
        (str(mti), str(state), int(repeats))
        for mti, state, repeats in run_sql(
            gateway.database_url,
            "SELECT m.mti, m.state, m.repeats FROM acquirer_messages m"
            f" JOIN transactions t ON t.id = m.transaction_id WHERE t.order_id = {int(order)} ORDER BY m.id",
        )
    ]


def test_an_unanswered_reversal_is_repeated_each_minute_and_given_up_after_24_hours_ending_the_sale_in_911(
    gateway_factory: Callable[..., Gateway], silent_host: AcquirerHost
) -> None:
    gateway = gateway_factory(KASSA_TEST_CLOCK="1")
    merchant = new_merchant(gateway, "iso-day")
    _connect(merchant, f"acq-day-{next(_names)}", silent_host, response_timeout="0.5")
    with running(Receiver(free_port())) as receiver:
        order = merchant.sale("iso-day-1", cvv2="123", server_callback_url=receiver.url).json()["paynet-order-id"]
        _wait(lambda: [m["t"] for m in _messages_of(silent_host, 0)] == ["0200", "0400"])
        _minutes_until(gateway, lambda: [m["t"] for m in _messages_of(silent_host, 0)] == ["0200", "0400", "0401"])
        final = _final_after(merchant, order, DAY)
        [callback] = receiver.wait_for(1)
    assert (final["status"], final["error-code"]) == ("error", "911")
    assert (callback.query["status"], callback.query["error_code"]) == ("error", "911")
    # Given up, not repeated once more: the reversal went as 0400, then 0401 once a minute until 24 hours.
    assert [m["t"] for m in _messages_of(silent_host, 0)] == ["0200", "0400", "0401"]
    assert _messages_of_order(gateway, order) == [("0200", "abandoned", 2)]
    logged = gateway.log_path.read_text()
    assert "a message unanswered for 24 hours is given up" in logged and CARD not in logged
    figures = scrape(gateway)
    assert sum(v for (metric, _labels), v in figures.items() if metric == "kassa_acquirer_abandoned_total") == 1


def test_an_unanswered_capture_advice_is_repeated_until_given_up_after_24_hours_and_ends_in_911(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(KASSA_TEST_CLOCK="1")
    merchant = new_merchant(gateway, "iso-advice")
    with host_on_a_thread() as quiet:
        _connect(merchant, f"acq-advice-{next(_names)}", quiet, response_timeout="0.5")
        order = preauth(merchant, "iso-advice-1", amount="20.00").json()["paynet-order-id"]
        assert merchant.wait_final(order)["status"] == "approved"
        quiet.silent.add(CARD)  # the host takes the capture's advice and its repetitions, and answers none
        capture(merchant, "iso-advice-1", order, "20.00")
        _wait(lambda: [m["t"] for m in _messages_of(quiet, 0)] == ["0100", "0220"])
        final = _final_after(merchant, order, DAY)
        sent = [m["t"] for m in _messages_of(quiet, 0)]
    assert (final["transaction-type"], final["status"], final["error-code"]) == ("capture", "error", "911")
    assert sent == ["0100", "0220"]  # its first reconciliation came after 24 hours: nothing more was sent
    assert _messages_of_order(gateway, order) == [("0100", "answered", 0), ("0220", "abandoned", 0)]


def _wait(condition: Callable[[], bool], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.02)


def test_a_live_endpoint_whose_iso_connection_is_disabled_sends_nothing_and_its_sale_ends_in_error_907(
    shared_gateway: Gateway, make_merchant: Callable[..., Merchant], host: AcquirerHost
) -> None:
    name = f"acq-off-{next(_names)}"
    _new_connection(shared_gateway, name, host.port, response_timeout="0.5")
    live = make_merchant(live=True, connections=(name,))
    shared_gateway.cli("acquirer", "disable", "--name", name)
    seen = len(host.received)
    final = live.wait_final(live.sale("live-1").json()["paynet-order-id"])
    assert (final["status"], final["error-code"]) == ("error", "907")
    assert _messages_of(host, seen) == []


def test_a_live_endpoint_is_served_by_its_iso_connection(
    gateway_factory: Callable[..., Gateway], host: AcquirerHost
) -> None:
    # A gateway of its own: once this module's host closes, its live endpoint would leave a shared gateway
    # not ready (``/readyz``) for the tests that follow.
    gateway, name = gateway_factory(), f"acq-live-{next(_names)}"
    _new_connection(gateway, name, host.port, response_timeout="0.5")
    live = new_merchant(gateway, "iso-live", live=True, connections=(name,))
    final = live.wait_final(live.sale("live-2").json()["paynet-order-id"])
    assert final["status"] == "approved" and final["processor-rrn"] != ""
    assert _sent(host, "0200", final["processor-rrn"])["41"].strip() == "TERM0001"


def test_operators_see_each_connections_messages_answers_and_signed_on_sockets(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    [name] = iso_merchant.gateway.cli("endpoint", "connections", "--id", str(iso_merchant.endpoint_id))["connections"]
    iso_merchant.wait_final(iso_merchant.sale("iso-m1", cvv2="123").json()["paynet-order-id"])
    iso_merchant.wait_final(iso_merchant.sale("iso-m2", cvv2="116").json()["paynet-order-id"])
    iso_merchant.wait_final(iso_merchant.sale("iso-m3", cvv2="217").json()["paynet-order-id"])
    figures = scrape(iso_merchant.gateway)

    def sample(metric: str, **labels: str) -> float:
        return figures.get((metric, frozenset({"connection": name, **labels}.items())), 0.0)

    assert sample("kassa_acquirer_messages_total", mti="0200", response_code="00") == 1
    assert sample("kassa_acquirer_messages_total", mti="0200", response_code="51") == 1
    assert sample("kassa_acquirer_messages_total", mti="0200", response_code="none") == 1
    assert sample("kassa_acquirer_messages_total", mti="0400", response_code="00") == 1
    assert sample("kassa_acquirer_answer_seconds_count") == 3
    assert sample("kassa_acquirer_sockets_signed_on") >= 1
    assert sample("kassa_acquirer_reversals_pending") == 0


def test_a_live_endpoint_whose_every_connection_is_down_makes_the_process_not_ready(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway, name = gateway_factory(), f"acq-down-{next(_names)}"
    _new_connection(gateway, name, free_port(), response_timeout="0.2")
    live = new_merchant(gateway, "iso-down", live=True, connections=(name,))
    assert httpx.get(f"{gateway.ops}/readyz", timeout=10, verify=TLS).status_code == 200
    final = live.wait_final(live.sale("down-1").json()["paynet-order-id"])
    assert (final["status"], final["error-code"]) == ("error", "907")
    answer = httpx.get(f"{gateway.ops}/readyz", timeout=10, verify=TLS)
    assert answer.status_code == 503
    assert str(live.endpoint_id) in answer.json()["checks"]["acquirers"]


@pytest.mark.backends("postgresql")
def test_two_processes_over_four_sockets_never_reuse_a_stan_and_every_answer_reaches_its_sale(
    gateway_factory: Callable[..., Gateway], host: AcquirerHost
) -> None:
    gateway = gateway_factory("--processes", "2", KASSA_ADDRESS_RATE="0")
    merchant = new_merchant(gateway, "iso-busy")
    name = f"acq-busy-{next(_names)}"
    _connect(merchant, name, host, response_timeout="5", sockets="2")
    seen = len(host.received)
    amounts = {f"busy-{n}": f"{1 + n % 97}.{n % 100:02d}" for n in range(500)}
    with ThreadPoolExecutor(16) as pool:
        accepted = dict(
            zip(amounts, pool.map(lambda c: merchant.sale(c, amount=amounts[c]).json(), amounts), strict=True)
        )
    finals = {c: merchant.wait_final(a["paynet-order-id"], timeout=60) for c, a in accepted.items()}
    assert {f["status"] for f in finals.values()} == {"approved"}
    assert all(f["amount"] == amounts[c] for c, f in finals.items())
    sales = [m for m in list(host.received)[seen:] if m["t"] == "0200"]
    assert len(sales) == 500
    assert len({m["11"] for m in sales}) == 500  # no STAN used twice by the two processes
    by_rrn = {m["37"]: m for m in sales}
    assert all(by_rrn[f["processor-rrn"]]["4"] == f"{int(amounts[c].replace('.', '')):012d}" for c, f in finals.items())


def _create(merchant: Merchant, name: str, port: int, response_timeout: str = "0.5") -> None:
    merchant.gateway.cli(
        "acquirer", "create", "--name", name, "--host", "127.0.0.1", "--port", str(port),
        "--acquiring-institution-id", "123456", "--terminal-id", "TERM0002", "--card-acceptor-id", "SHOP00000000002",
        "--mcc", "5999", "--response-timeout", response_timeout,
    )  # fmt: skip


def test_a_sale_cascades_to_the_next_connection_when_the_first_answers_91_and_its_capture_goes_there(
    make_merchant: Callable[..., Merchant], host: AcquirerHost
) -> None:
    merchant = make_merchant()
    first, second = f"acq-a-{next(_names)}", f"acq-b-{next(_names)}"
    with host_on_a_thread(answer_with="91") as failing:
        _create(merchant, first, failing.port)
        _create(merchant, second, host.port)
        merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), first, second)
        order = preauth(merchant, "cascade-1", amount="20.00").json()["paynet-order-id"]
        authorized = merchant.wait_final(order)
        assert authorized["status"] == "approved"
        [tried] = [m for m in failing.received if m["t"] == "0100"]
        approving = _sent(host, "0100", authorized["processor-rrn"])
        assert tried["37"] != approving["37"] and tried["4"] == approving["4"]
        capture(merchant, "cascade-1", order, "20.00")
        assert merchant.wait_final(order)["status"] == "approved"
        assert not [m for m in failing.received if m["t"] == "0220"]
        assert [m for m in host.received if m["t"] == "0220" and m.get("38") == authorized["approval-code"]]


def test_a_sale_goes_to_the_next_connection_at_once_when_the_first_has_no_socket_signed_on(
    make_merchant: Callable[..., Merchant], host: AcquirerHost
) -> None:
    merchant = make_merchant()
    down, up = f"acq-down-{next(_names)}", f"acq-up-{next(_names)}"
    _create(merchant, down, free_port(), response_timeout="3")
    _create(merchant, up, host.port)
    merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), down, up)
    first = merchant.wait_final(merchant.sale("down-then-up-1").json()["paynet-order-id"])
    assert first["status"] == "approved"
    started = time.monotonic()
    second = merchant.wait_final(merchant.sale("down-then-up-2").json()["paynet-order-id"])
    # The link to the host that is down waited for a sign-on once, as it opened; the second sale waits on
    # nothing there: its response timeout (3 s) never runs.
    assert second["status"] == "approved" and time.monotonic() - started < 3


def _messages_of(host: AcquirerHost, seen: int) -> list[dict[str, str]]:
    return [m for m in list(host.received)[seen:] if m["t"] != "0800"]


def test_a_void_goes_as_a_0400_advice_naming_the_sale(iso_merchant: Merchant, host: AcquirerHost) -> None:
    order = iso_merchant.sale("iso-v1").json()["paynet-order-id"]
    sold = iso_merchant.wait_final(order)
    seen = len(host.received)
    void(iso_merchant, "iso-v1", order)
    voided = iso_merchant.wait_final(order)
    assert (voided["transaction-type"], voided["status"]) == ("void", "approved")
    [advice] = _messages_of(host, seen)
    sale = _sent(host, "0200", sold["processor-rrn"])
    assert (advice["t"], advice["3"], advice["4"], advice["90"][:10]) == (
        "0400",
        "000000",
        sale["4"],
        "0200" + sale["11"],
    )


def test_a_partial_return_goes_as_a_refund_naming_the_sale(iso_merchant: Merchant, host: AcquirerHost) -> None:
    order = iso_merchant.sale("iso-r1", amount="30.00").json()["paynet-order-id"]
    sold = iso_merchant.wait_final(order)
    seen = len(host.received)
    refund(iso_merchant, "iso-r1", order, "12.50")
    returned = iso_merchant.wait_final(order)
    assert (returned["transaction-type"], returned["status"]) == ("reversal", "approved")
    [message] = _messages_of(host, seen)
    sale = _sent(host, "0200", sold["processor-rrn"])
    assert (message["t"], message["3"], message["4"]) == ("0200", "200000", "000000001250")
    assert message["90"][:10] == "0200" + sale["11"] and "CV" not in message.get("48", "")


def test_a_cancel_of_a_preauthorization_goes_as_a_0400_advice_of_its_whole_amount(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    order = preauth(iso_merchant, "iso-c1", amount="25.00").json()["paynet-order-id"]
    held = iso_merchant.wait_final(order)
    seen = len(host.received)
    cancelled = final(iso_merchant, refund(iso_merchant, "iso-c1", order))
    assert (cancelled["transaction-type"], cancelled["status"]) == ("cancel", "approved")
    [advice] = _messages_of(host, seen)
    authorization = _sent(host, "0100", held["processor-rrn"])
    assert (advice["t"], advice["3"], advice["4"], advice["90"][:10]) == (
        "0400",
        "000000",
        "000000002500",
        "0100" + authorization["11"],
    )


def test_a_full_return_goes_as_a_refund_of_the_whole_sale(iso_merchant: Merchant, host: AcquirerHost) -> None:
    order = iso_merchant.sale("iso-r2", amount="30.00").json()["paynet-order-id"]
    sold = iso_merchant.wait_final(order)
    seen = len(host.received)
    returned = final(iso_merchant, refund(iso_merchant, "iso-r2", order, "30.00"))
    assert (returned["transaction-type"], returned["status"]) == ("reversal", "approved")
    [message] = _messages_of(host, seen)
    assert (message["t"], message["3"], message["4"]) == ("0200", "200000", "000000003000")
    assert message["90"][:10] == "0200" + _sent(host, "0200", sold["processor-rrn"])["11"]


# CONTRACT §15's table: field 39 → the outcome and error-code merchants see.
RESPONSE_CODES = {
    "00": ("approved", None), "08": ("approved", None), "11": ("approved", None),
    "51": ("declined", "116"), "54": ("declined", "101"), "57": ("declined", "119"),
    "41": ("declined", "208"), "43": ("declined", "209"), "14": ("declined", "111"),
    "61": ("declined", "121"), "65": ("declined", "123"), "91": ("error", "907"), "96": ("error", "909"),
    "05": ("declined", "100"), "N7": ("declined", "100"),
}  # fmt: skip


def test_each_response_code_of_the_contract_gives_its_outcome_and_error_code(
    make_merchant: Callable[..., Merchant],
) -> None:
    merchant = make_merchant()
    with host_on_a_thread() as answering:
        iso_connection(merchant, answering)
        for code, outcome in RESPONSE_CODES.items():
            answering.answer_with = code
            ended = merchant.wait_final(merchant.sale(f"iso-code-{code}").json()["paynet-order-id"])
            assert (ended["status"], ended.get("error-code")) == outcome, code


def test_an_account_verification_is_a_0100_of_nothing(iso_merchant: Merchant, host: AcquirerHost) -> None:
    seen = len(host.received)
    verified = final(iso_merchant, account_verification(iso_merchant, "iso-av1"))
    assert verified["status"] == "approved"
    [message] = _messages_of(host, seen)
    assert (message["t"], message["3"], message["4"]) == ("0100", "000000", "000000000000")


def test_a_payout_to_a_card_is_an_original_credit_to_it(iso_merchant: Merchant, host: AcquirerHost) -> None:
    credit(iso_merchant, "50.00")
    seen = len(host.received)
    paid = final(iso_merchant, payout(iso_merchant, PAYOUT_CARD, "5.00"))
    assert paid["status"] == "approved"
    [message] = _messages_of(host, seen)
    assert (message["t"], message["3"], message["4"], message["2"]) == (
        "0200",
        "260000",
        "000000000500",
        "4111111111111111",
    )


def test_a_payout_to_a_bank_account_cannot_go_over_the_link_and_ends_in_error(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    credit(iso_merchant, "50.00")
    seen = len(host.received)
    failed = final(iso_merchant, payout(iso_merchant, BANK, "5.00"))
    assert (failed["status"], failed["error-code"]) == ("error", "907") and _messages_of(host, seen) == []
    assert "pays cards only" in failed["error-message"]
    assert available(iso_merchant) == "50.00"  # what it reserved is given back


def test_a_rebill_on_a_stored_card_is_merchant_initiated_and_carries_no_cvv(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    order = iso_merchant.sale("iso-rb0").json()["paynet-order-id"]
    assert iso_merchant.wait_final(order)["status"] == "approved"
    ref = card_ref_of(iso_merchant, "iso-rb0", order)
    seen = len(host.received)
    rebilled = final(iso_merchant, make_rebill(iso_merchant, "iso-rb1", ref, "7.00"))
    assert rebilled["status"] == "approved"
    [message] = _messages_of(host, seen)
    assert (message["t"], message["4"], message["48"]) == ("0200", "000000000700", "MI001U")


def test_a_rebills_recurrent_scenario_reaches_field_48_as_its_mit_indicator(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    order = iso_merchant.sale("iso-sc0").json()["paynet-order-id"]
    assert iso_merchant.wait_final(order)["status"] == "approved"
    ref = card_ref_of(iso_merchant, "iso-sc0", order)
    for scenario, indicator in (("REGULAR", "MI001R"), ("IRREGULAR", "MI001U")):
        seen = len(host.received)
        answer = make_rebill(iso_merchant, f"iso-sc-{scenario}", ref, "7.00", recurrent_scenario=scenario)
        assert final(iso_merchant, answer)["status"] == "approved"
        [message] = _messages_of(host, seen)
        assert (message["t"], message["48"]) == ("0200", indicator)


def test_a_rebill_preauth_tries_each_enumerated_amount_as_an_authorization_until_one_is_approved(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    order = iso_merchant.sale("iso-en0").json()["paynet-order-id"]
    assert iso_merchant.wait_final(order)["status"] == "approved"
    ref = card_ref_of(iso_merchant, "iso-en0", order)
    seen = len(host.received)
    answer = rebill(iso_merchant, "make-rebill-preauth", ref, "21.16", client_orderid="iso-en1", **{
        "enumerate_amounts": "11.16,10.00,5.00",
    })  # fmt: skip
    held = final(iso_merchant, answer)
    assert (held["status"], held["transaction-type"], held["amount"]) == ("approved", "preauth", "10.00")
    tries = _messages_of(host, seen)  # the host lacks funds for amounts ending in 116
    assert [(m["t"], m["4"]) for m in tries] == [
        ("0100", "000000002116"), ("0100", "000000001116"), ("0100", "000000001000"),
    ]  # fmt: skip
    assert _sent(host, "0100", held["processor-rrn"]) == tries[-1]
    assert final(iso_merchant, capture(iso_merchant, "iso-en1", held["paynet-order-id"]))["status"] == "approved"
    advice = _messages_of(host, seen + 3)[0]
    assert (advice["t"], advice["4"], advice["90"][:10]) == ("0220", "000000001000", "0100" + tries[-1]["11"])


def test_the_3ds_result_reaches_field_48(iso_merchant: Merchant, host: AcquirerHost) -> None:
    seen = len(host.received)
    order = iso_merchant.sale("iso-3ds", cvv2="325").json()["paynet-order-id"]  # attempted: ECI, no challenge
    assert iso_merchant.wait_final(order)["status"] == "approved"
    [message] = _messages_of(host, seen)
    items = dialect.parse_tlv(host.dialect, message["48"])
    assert (items["CV"], items["EC"], items["MI"]) == ("325", "06", "C") and len(items["CA"]) == 28
    # EMV 3-D Secure 2.x: the directory server's transaction id, as stored with the authentication.
    [authentication] = [t["three_ds"] for t in iso_merchant.gateway.cli("order", "show", order)["transactions"]]
    assert (authentication["version"], items["DS"]) == ("2.2.0", authentication["ds_trans_id"])
    assert str(uuid.UUID(items["DS"])) == items["DS"]


def test_a_3ds_1_0_2_authentication_reaches_field_48_without_a_directory_server_id(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    seen = len(host.received)
    order = iso_merchant.sale("iso-3ds1", cvv2="322").json()["paynet-order-id"]  # a 1.0.2 challenge
    step = iso_merchant.wait_stage(order, leaving="sale_processing")
    assert step["threeds-version"] == "1.0.2"
    back = through_acs(step, term_url="https://shop.example/term")  # the right code
    upload(iso_merchant, "upload-pares-result", order, "iso-3ds1", pares=back.fields["PaRes"], md=back.fields["MD"])
    assert iso_merchant.wait_final(order)["status"] == "approved"
    [message] = _messages_of(host, seen)
    items = dialect.parse_tlv(host.dialect, message["48"])
    assert (items["CV"], items["EC"], items["MI"]) == ("322", "05", "C") and "DS" not in items


def _transfer(merchant: Merchant, destination: str, amount: str = "40.00") -> dict[str, str]:
    """A v4 transfer of ``amount`` from the test card (CVV2 123) to the card ``destination``; its final status."""
    register_key(merchant.gateway, merchant.login, key_pair()[1])
    fields = [*money(merchant, amount), *SOURCE, ("cvv2", "123"), ("destination-card-no", destination)]
    return final_transfer(merchant, v4(merchant, "transfer", fields))


def test_a_card_to_card_transfer_charges_the_source_card_then_credits_the_receiving_one(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    seen = len(host.received)
    status = _transfer(iso_merchant, DESTINATION)
    assert (status["status"], status["transaction-type"]) == ("approved", "transfer")
    charge, credit = _messages_of(host, seen)
    assert (charge["t"], charge["3"], charge["4"], charge["2"]) == ("0200", "000000", "000000004000", CARD)
    assert dialect.parse_tlv(host.dialect, charge["48"]) == {"CV": "123", "MI": "C"}
    assert (credit["t"], credit["3"], credit["4"], credit["2"]) == ("0200", "260000", "000000004000", DESTINATION)
    assert "48" not in credit and "14" not in credit
    # The merchant sees the charge's references: what the cardholder's statement and a chargeback name.
    assert status["processor-rrn"] == charge["37"] != credit["37"] and len(status["approval-code"]) == 6


@pytest.mark.parametrize(
    ("typed", "charged_as"), [({}, {"MI": "U"}), ({"cvv2": "123"}, {"CV": "123", "MI": "C"})], ids=["stored", "typed"]
)
def test_a_v2_transfer_by_ref_charges_a_stored_card_as_the_merchants_unless_its_holder_typed_the_cvv2(
    iso_merchant: Merchant, host: AcquirerHost, typed: dict[str, str], charged_as: dict[str, str]
) -> None:
    source, destination = stored_card(iso_merchant), stored_card(iso_merchant, DESTINATION)
    seen = len(host.received)
    answer = v2_transfer_by_ref(iso_merchant, f"iso-tr2-{next(_names)}", destination, "40.00", source, **typed)
    assert final_transfer(iso_merchant, answer)["status"] == "approved"
    charge, credit = _messages_of(host, seen)
    assert (charge["3"], credit["3"]) == ("000000", "260000")
    assert dialect.parse_tlv(host.dialect, charge["48"]) == charged_as


def test_a_transfer_whose_credit_is_refused_voids_its_charge_and_is_declined_as_the_credit_was(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    seen = len(host.received)
    status = _transfer(iso_merchant, pan_ending("116"))  # the host answers its credit 51
    assert (status["status"], status["error-code"]) == ("declined", "116")
    charge, credit, void = _messages_of(host, seen)
    assert (charge["t"], charge["3"], credit["t"], credit["3"]) == ("0200", "000000", "0200", "260000")
    assert (void["t"], void["3"], void["4"], void["2"]) == ("0400", "000000", charge["4"], CARD)
    assert dialect.parse_original_data(void["90"]) == dialect.Original.of(charge)


def test_a_transfer_whose_credit_goes_unanswered_reverses_the_credit_voids_the_charge_and_ends_in_911(
    iso_merchant: Merchant, host: AcquirerHost
) -> None:
    seen = len(host.received)
    status = _transfer(iso_merchant, pan_ending("217"))  # the host never answers its credit
    assert (status["status"], status["error-code"]) == ("error", "911")
    charge, credit, reversal, void = _messages_of(host, seen)
    assert (reversal["t"], reversal["3"], reversal["2"]) == ("0400", "260000", credit["2"])
    assert dialect.parse_original_data(reversal["90"]) == dialect.Original.of(credit)
    assert (void["t"], void["3"], void["2"]) == ("0400", "000000", CARD)
    assert dialect.parse_original_data(void["90"]) == dialect.Original.of(charge)


def test_a_recurring_payments_scheduled_charges_are_merchant_initiated_sales_without_cvv2(
    clock_gateway: Gateway, host: AcquirerHost
) -> None:
    merchant = new_merchant(clock_gateway, f"iso-rec-{next(_names)}")
    register_key(clock_gateway, merchant.login, key_pair()[1])
    _connect(merchant, f"acq-rec-{next(_names)}", host, response_timeout="0.5")
    seen = len(host.received)
    payment_id = subscribed(merchant, "sub-iso", **card_fields(), period="day", **{"max-count": "2"})
    move_to(clock_gateway, midnight_ms(date_of(clock_gateway.advance(0))) + DAY * 1000 + 60_000)
    charged = charges(merchant, "sub-iso", 2)
    assert [(c["status"], c["recurring-payment-id"]) for c in charged] == [("approved", payment_id)] * 2
    sent = _messages_of(host, seen)  # one message a charge, nothing else
    assert [m["37"] for m in sent] == [c["processor-rrn"] for c in charged]
    for message in sent:
        assert (message["3"], message["4"], message["2"], message["14"]) == ("000000", "000000000990", CARD, "3012")
        assert dialect.parse_tlv(host.dialect, message["48"]) == {"MI": "R"}  # recurring; no CV


def test_a_transfer_whose_credit_was_in_flight_when_the_gateway_died_has_it_reversed_and_its_charge_voided(
    gateway_factory: Callable[..., Gateway], host: AcquirerHost
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "iso-transfer-crash")
    _connect(merchant, f"acq-tcrash-{next(_names)}", host, response_timeout="30")
    register_key(gateway, merchant.login, key_pair()[1])
    receiving = pan_ending("444")
    host.silent.add(receiving)  # the credit reaches the host and waits there
    seen = len(host.received)
    fields = [*money(merchant, "40.00"), *SOURCE, ("cvv2", "123"), ("destination-card-no", receiving)]
    order = v4(merchant, "transfer", fields).json()["paynet-order-id"]
    _wait(lambda: [m["t"] + m["3"] for m in _messages_of(host, seen)] == ["0200000000", "0200260000"])
    gateway.kill()
    host.silent.clear()

    restarted_past_the_lease(gateway_factory, merchant)
    status = merchant.wait_final(order)
    assert (status["status"], status.get("error-code")) == ("error", "911")
    charge, credit, reversal, void = _messages_of(host, seen)  # nothing was sent again as new
    assert dialect.parse_original_data(reversal["90"]) == dialect.Original.of(credit)
    assert dialect.parse_original_data(void["90"]) == dialect.Original.of(charge)
    assert (reversal["3"], void["3"], void["2"]) == ("260000", "000000", CARD)
