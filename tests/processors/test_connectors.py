"""Routing over an endpoint's connections (CONTRACT §16): a first authorization goes to the first connection
whose conditions it matches, and cascades on the endpoint's codes; the acquirer hosts are simulators over
TCP."""

from __future__ import annotations

import itertools
import ssl
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from kassa import crashpoints
from kassa.sandbox.acquirer_host import AcquirerHost
from tests.api.test_payouts import CARD as PAYOUT_CARD
from tests.api.test_payouts import payout
from tests.support.acquirer_host import create_connection, host_on_a_thread, restarted_past_the_lease
from tests.support.balances import credit
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, new_merchant
from tests.support.operations import final
from tests.support.proxy import _self_signed

_names = itertools.count()
MASTERCARD = "5555555555554444"


@pytest.fixture(scope="module")
def hosts() -> Iterator[tuple[AcquirerHost, AcquirerHost]]:
    with host_on_a_thread() as first, host_on_a_thread() as second:
        yield first, second


def _connection(merchant: Merchant, host: AcquirerHost) -> str:
    return create_connection(merchant.gateway, host.port)


def _route(merchant: Merchant, *entries: str, cascade: str | None = None) -> None:
    options = ("--cascade", cascade) if cascade is not None else ()
    merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), *options, *entries)


def _payments(host: AcquirerHost) -> list[dict[str, str]]:
    return [m for m in host.received if m["t"] != "0800"]


def _states(gateway: Gateway, order: str) -> list[tuple[str, str]]:
    """The state and field 39 of each message of the order, as the gateway recorded them."""
    sql = (
        "SELECT m.state, m.response_code FROM acquirer_messages m JOIN transactions t ON t.id = m.transaction_id"
        f" WHERE t.order_id = {int(order)} ORDER BY m.id"
    )
    return [(str(state), str(code)) for state, code in run_sql(gateway.database_url, sql)]


def _sale(merchant: Merchant, **fields: str) -> dict[str, str]:
    return merchant.wait_final(merchant.sale(f"route-{next(_names)}", **fields).json()["paynet-order-id"])


def _host_of(rrn: str, hosts: tuple[AcquirerHost, AcquirerHost]) -> int:
    [index] = [i for i, host in enumerate(hosts) if any(m.get("37") == rrn for m in _payments(host))]
    return index


VISA = {"credit_card_number": "4111111111111111"}


@pytest.mark.parametrize(
    ("conditions", "sales"),
    [
        (
            "brand=MASTERCARD; amount=-1000",
            [({"credit_card_number": MASTERCARD, "amount": "5.00"}, 0), ({**VISA, "amount": "5.00"}, 1),
             ({"credit_card_number": MASTERCARD, "amount": "10.01"}, 1)],
        ),
        ("bin=400000-410000,510000-559999", [(VISA, 1), ({"credit_card_number": MASTERCARD}, 0)]),
        ("currency=EUR; kind=payment", [(VISA, 1)]),
        ("currency=EUR,USD; kind=payment", [(VISA, 0)]),
    ],
)  # fmt: skip
def test_a_sale_goes_to_the_first_connection_whose_conditions_it_matches(
    make_merchant: Callable[..., Merchant],
    hosts: tuple[AcquirerHost, AcquirerHost],
    conditions: str,
    sales: list[tuple[dict[str, str], int]],
) -> None:
    merchant = make_merchant("USD")
    first, second = (_connection(merchant, host) for host in hosts)
    _route(merchant, f"{first}[{conditions}]", second)
    for sale, served_by in sales:
        approved = _sale(merchant, **sale)
        assert approved["status"] == "approved"
        assert _host_of(approved["processor-rrn"], hosts) == served_by


def test_a_payout_goes_to_the_connection_for_payouts_and_a_sale_to_the_one_for_payments(
    make_merchant: Callable[..., Merchant], hosts: tuple[AcquirerHost, AcquirerHost]
) -> None:
    merchant = make_merchant("USD")
    for_payments, for_payouts = (_connection(merchant, host) for host in hosts)
    _route(merchant, f"{for_payments}[kind=payment]", f"{for_payouts}[kind=payout]")
    credit(merchant, "50.00")
    paid = final(merchant, payout(merchant, PAYOUT_CARD, "5.00"))
    sold = _sale(merchant)
    assert (paid["status"], sold["status"]) == ("approved", "approved")
    assert _host_of(paid["processor-rrn"], hosts) == 1
    assert _host_of(sold["processor-rrn"], hosts) == 0


def test_a_sale_no_connection_takes_ends_in_error_907_and_sends_nothing(
    make_merchant: Callable[..., Merchant], hosts: tuple[AcquirerHost, AcquirerHost]
) -> None:
    merchant = make_merchant("USD")
    only_euros = _connection(merchant, hosts[0])
    _route(merchant, f"{only_euros}[currency=EUR]")
    sent = [len(_payments(host)) for host in hosts]
    refused = _sale(merchant)
    assert (refused["status"], refused["error-code"]) == ("error", "907")
    assert "No acquirer connection of this endpoint takes this card" in refused["error-message"]
    assert [len(_payments(host)) for host in hosts] == sent


@pytest.mark.parametrize(
    ("cascade", "first_answers", "outcome", "tries"),
    [
        (None, "51", ("declined", "116"), 1),  # insufficient funds: another acquirer's issuer is the same
        ("116", "51", ("approved", None), 2),
        (None, "05", ("approved", None), 2),  # do not honour is on the default list
        ("none", "91", ("error", "907"), 1),
        ("911,909", "91", ("error", "907"), 1),
    ],
)
def test_an_endpoints_cascade_list_decides_which_outcomes_go_on_to_the_next_connection(
    make_merchant: Callable[..., Merchant],
    hosts: tuple[AcquirerHost, AcquirerHost],
    cascade: str | None,
    first_answers: str,
    outcome: tuple[str, str | None],
    tries: int,
) -> None:
    merchant = make_merchant("USD")
    with host_on_a_thread(answer_with=first_answers) as failing:
        first, second = _connection(merchant, failing), _connection(merchant, hosts[1])
        _route(merchant, first, second, cascade=cascade)
        seen = len(_payments(hosts[1]))
        ended = _sale(merchant)
        assert (ended["status"], ended.get("error-code")) == outcome
        assert len(_payments(failing)) + len(_payments(hosts[1])) - seen == tries
        # Each try recorded as answered, the one cascaded on before the next went out.
        codes = [first_answers, "00"][:tries]
        assert _states(merchant.gateway, ended["paynet-order-id"]) == [("answered", code) for code in codes]


def test_a_sandbox_endpoints_conditions_hold_for_the_built_in_sandbox_too(merchant: Merchant) -> None:
    merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), "sandbox[amount=-1000]")
    assert _sale(merchant, amount="9.99")["status"] == "approved"
    refused = _sale(merchant, amount="10.01")
    assert (refused["status"], refused["error-code"]) == ("error", "907")


def test_a_tls_link_presents_the_client_certificate_sealed_as_the_connections_secret(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    server_certificate, server_key = _self_signed(tmp_path_factory.mktemp("host"))
    client_certificate, client_key = _self_signed(tmp_path_factory.mktemp("client"))
    secret = tmp_path_factory.mktemp("secret") / "client.pem"
    secret.write_text(client_certificate.read_text() + client_key.read_text())
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(server_certificate, server_key)
    server.verify_mode = ssl.CERT_REQUIRED
    server.load_verify_locations(client_certificate)
    data_dir = tmp_path_factory.mktemp("gateway")
    # The acquirer's private CA, trusted as an operator would: OpenSSL's SSL_CERT_FILE.
    trusting = {"SSL_CERT_FILE": str(server_certificate)}
    gateway = Gateway(f"sqlite:///{data_dir / 'kassa.db'}", data_dir, extra_env=trusting).start()
    try:
        with host_on_a_thread(tls=server) as host:
            with_certificate, without = (new_merchant(gateway, f"m-{uuid.uuid4().hex[:10]}") for _ in range(2))
            _tls_connection(with_certificate, host, secret)
            _tls_connection(without, host, None)
            approved = _sale(with_certificate)
            assert approved["status"] == "approved" and _payments(host)[0]["37"] == approved["processor-rrn"]
            refused = _sale(without)  # the host refuses a handshake without a client certificate
            assert (refused["status"], refused["error-code"]) == ("error", "907")
            assert len(_payments(host)) == 1
    finally:
        gateway.stop()


def _tls_connection(merchant: Merchant, host: AcquirerHost, secret: Path | None) -> None:
    options = ("--secret-file", str(secret)) if secret else ()
    _route(merchant, create_connection(merchant.gateway, host.port, "--tls", *options, response_timeout="1"))


def test_an_approval_the_gateway_died_before_recording_is_reversed_and_never_sent_to_another_acquirer(
    gateway_factory: Callable[..., Gateway],
) -> None:
    # The answer is written in the transaction that records the outcome: dying inside it leaves the sale as
    # one sent and never answered (CONTRACT §15), whatever the host had answered.
    doomed = gateway_factory(KASSA_TEST_CLOCK="1", KASSA_TEST_CRASH_POINT=crashpoints.ACQUIRER_ANSWER_UNCOMMITTED)
    merchant = new_merchant(doomed, f"m-{uuid.uuid4().hex[:10]}")
    with host_on_a_thread() as first, host_on_a_thread() as second:
        _route(merchant, _connection(merchant, first), _connection(merchant, second))
        order = merchant.sale(f"route-{next(_names)}").json()["paynet-order-id"]
        assert doomed.process is not None and doomed.process.wait(30) == -9  # answered, nothing of it committed
        [sale] = _payments(first)
        assert _answer_of(first, sale) and not _payments(second)  # the host had approved it

        restarted_past_the_lease(gateway_factory, merchant)
        ended = merchant.wait_final(order)
        assert (ended["status"], ended.get("error-code")) == ("error", "911")
        assert [m["t"] for m in _payments(first)] == ["0200", "0400"]  # the approval reversed, not sent again
        assert _payments(first)[1]["90"][:10] == "0200" + sale["11"]
        assert not _payments(second)  # nor sent to another acquirer


def test_a_try_cascaded_on_before_the_gateway_died_is_the_outcome_when_no_connection_is_left_to_try(
    gateway_factory: Callable[..., Gateway],
) -> None:
    doomed = gateway_factory(KASSA_TEST_CLOCK="1", KASSA_TEST_CRASH_POINT=crashpoints.TRY_CASCADED_ON)
    merchant = new_merchant(doomed, f"m-{uuid.uuid4().hex[:10]}")
    with host_on_a_thread(answer_with="05") as refusing, host_on_a_thread() as second:
        first = _connection(merchant, refusing)
        _route(merchant, first, _connection(merchant, second))
        order = merchant.sale(f"route-{next(_names)}").json()["paynet-order-id"]
        assert doomed.process is not None and doomed.process.wait(30) == -9  # its 05 recorded, cascaded on
        _route(merchant, first)  # meanwhile the second connection no longer serves the endpoint
        restarted_past_the_lease(gateway_factory, merchant)
        ended = merchant.wait_final(order)
        assert (ended["status"], "No acquirer connection" in ended.get("error-message", "")) == ("declined", False)
        assert [m["t"] for m in _payments(refusing)] == ["0200"] and not _payments(second)


def _answer_of(host: AcquirerHost, message: dict[str, str]) -> str:
    """The approval code the host gave ``message``."""
    [answer] = [a for a in host.answered if a.get("37") == message["37"] and a["t"] != "0810"]
    return answer["38"]
